// Package chaos is the lab's chaos testing (agentlab chaos): sequences
// of steps drawn from a seed — prompts that the stub's chaos model
// answers, interleaved with lab actions (cancel, revoke, consent allow,
// deny and timeout, an answer the card did not offer, plugin disable,
// provider kill, runtime kill -9, reboot, a second app reaching for the
// first app's session) — each written as a scenario in the v2 language
// with the invariants checked after every step, and the delta-debugging
// shrinker that cuts a failing sequence down to the actions that matter.
//
// The package holds no device code: it writes scenarios, and the lab
// (lab.Chaos) runs them. A sequence's scenario is the whole test case:
// the seed's model answers live in its model: {chaos: {seed}}, every
// action's steps are self-contained (an action never refers to another's
// output), so any subsequence is a valid scenario too.
package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
)

// Invariant is a promise that holds whatever the model does. Its checks
// in a sequence's scenario are named "<Name>@<step>".
type Invariant struct {
	Name    string
	Promise string
}

// Invariants are every invariant chaos checks, in report order.
var Invariants = []Invariant{
	{"consentAnswered", "a tool that needs consent runs only on an answer that allows it: a deny, a timeout or an answer the card did not offer never lets it run"},
	{"scopeNeverWidens", "a session's toolScope never widens: the model is offered, and runs, only the tools in scope"},
	{"revokedHasNoTask", "a revoked or never-authorized caller has no running task and gets no result"},
	{"noCrossAppData", "no session's data reaches another app"},
	{"oneTerminalState", "every answered prompt has exactly one terminal state: a stop reason or an error"},
	{"onePromptAtATime", "an app runs one prompt at a time: a second is refused busy"},
	{"committedSurvives", "nothing committed is lost after kill -9: a session the runtime saved loads after the restart"},
	{"keyInNoArtifact", "the model key appears in no log or artifact"},
	{"pairingHolds", "a desktop pairing code pairs one computer once, and the fifth wrong code voids it"},
}

// InvariantOf is the invariant a check of a chaos scenario belongs to,
// and the step it follows ("" when the check is not an invariant's).
func InvariantOf(check string) (name string, step int) {
	n, at, ok := strings.Cut(check, "@")
	if !ok {
		return "", 0
	}
	if _, err := fmt.Sscanf(at, "%d", &step); err != nil {
		return "", 0
	}
	for _, inv := range Invariants {
		if inv.Name == n {
			return n, step
		}
	}
	return "", 0
}

// Kind is what an action does.
type Kind string

// The actions.
const (
	// Prompt: a caller app prompts a new session (no scope, echo only, or
	// no tools) under a consent answer (allow or deny); the chaos model
	// answers.
	Prompt Kind = "prompt"
	// Cancel: a prompt the caller cancels while the model streams.
	Cancel Kind = "cancel"
	// Revoke: the owner revokes the caller while its prompt runs, then
	// allows it again.
	Revoke Kind = "revoke"
	// ConsentTimeout: a card nobody answers times out.
	ConsentTimeout Kind = "consent-timeout"
	// ConsentUnoffered: a HIGH card answered with a choice it did not
	// offer.
	ConsentUnoffered Kind = "consent-unoffered"
	// Busy: a second prompt of the app while its first runs.
	Busy Kind = "busy"
	// PluginDisable: the test plugin off and on again.
	PluginDisable Kind = "plugin-disable"
	// ProviderKill: the test plugin's provider app killed.
	ProviderKill Kind = "provider-kill"
	// Kill9: a prompt, kill -9 of the runtime, its restart, and the
	// session loaded again.
	Kill9 Kind = "kill9"
	// Reboot: the device reboots.
	Reboot Kind = "reboot"
	// CrossApp: a second app loads the first app's session.
	CrossApp Kind = "cross-app"
	// ModelKey: the owner sets the model again; the key must reach no log.
	ModelKey Kind = "model-key"
	// Pairing: a computer (a root client, as adbd) pairs over the
	// desktop socket: five wrong codes, the voided code, a new code used
	// twice.
	Pairing Kind = "pairing"
)

// weights are how often the seed draws each kind: prompts most, a
// reboot (the slowest) least.
var weights = []struct {
	k Kind
	w int
}{
	{Prompt, 8}, {Cancel, 2}, {Revoke, 2}, {ConsentTimeout, 2}, {ConsentUnoffered, 2}, {Busy, 2},
	{PluginDisable, 1}, {ProviderKill, 1}, {Kill9, 1}, {CrossApp, 2}, {ModelKey, 1}, {Pairing, 1},
	// A reboot is drawn only when asked for (Generate's kinds): an
	// attempt that loses its device mid-reboot is a lab fault whose
	// retry on another device cannot replay the sequence.
	{Reboot, 0},
}

// Kinds are every kind, in weight order.
func Kinds() []Kind {
	out := make([]Kind, len(weights))
	for i, w := range weights {
		out[i] = w.k
	}
	return out
}

// Scope is a prompt's toolScope.
type Scope string

const (
	ScopeNone Scope = ""     // no toolScope: the whole catalog
	ScopeEcho Scope = "echo" // mcptest's echo alone
	ScopeNo   Scope = "none" // toolScope []: no tools
)

// Action is one step of a sequence. ID numbers it within the sequence it
// was drawn in and stays with it through shrinking, so its checks and
// prompt texts (which the chaos model's answers depend on) keep their
// names.
type Action struct {
	ID    int   `json:"id"`
	Kind  Kind  `json:"kind"`
	Scope Scope `json:"scope,omitempty"`
	Allow bool  `json:"allow,omitempty"`
}

func (a Action) String() string {
	switch a.Kind {
	case Prompt:
		consent := "deny"
		if a.Allow {
			consent = "allow"
		}
		scope := string(a.Scope)
		if scope == "" {
			scope = "catalog"
		}
		return fmt.Sprintf("%d:prompt(scope %s, consent %s)", a.ID, scope, consent)
	}
	return fmt.Sprintf("%d:%s", a.ID, a.Kind)
}

// Generate draws n actions from seed. kinds, when not empty, limits the
// draw to those kinds (each drawn at least once in a while, reboot too).
func Generate(seed int64, n int, kinds []Kind) []Action {
	r := rand.New(rand.NewPCG(uint64(seed), 0x6368616f73))
	var pool []Kind
	for _, w := range weights {
		if len(kinds) == 0 || slices.Contains(kinds, w.k) {
			n := w.w
			if len(kinds) > 0 {
				n = max(n, 1)
			}
			for range n {
				pool = append(pool, w.k)
			}
		}
	}
	if len(pool) == 0 {
		return nil
	}
	out := make([]Action, n)
	for i := range out {
		a := Action{ID: i + 1, Kind: pool[r.IntN(len(pool))]}
		if a.Kind == Prompt {
			a.Scope = []Scope{ScopeNone, ScopeEcho, ScopeEcho, ScopeNo}[r.IntN(4)]
			a.Allow = r.IntN(2) == 0
		}
		out[i] = a
	}
	return out
}
