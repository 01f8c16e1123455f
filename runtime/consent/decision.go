package consent

import (
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// HookDecision is the merged decision of the PreToolUse hooks that
// matched a call. A deny is handled before consent (tool_blocked); an
// allow only means "no objection" and never skips consent.
type HookDecision string

const (
	HookNone  HookDecision = ""
	HookAllow HookDecision = "allow"
	HookAsk   HookDecision = "ask"
)

// Need is what RiskPolicy decides about one call.
type Need uint8

const (
	// NotNeeded: READ, runs without consent and without a consent event.
	NotNeeded Need = iota + 1
	// RunByPolicy: WRITE with the user's "always"; consent.resolved
	// {decision: allow, reason: "policy"}.
	RunByPolicy
	// RunRemembered: WRITE remembered in this session ("don't ask again in
	// this conversation"); consent.resolved reason "remembered".
	RunRemembered
	// Ask: the user must answer a consent card.
	Ask
)

// String names the need for logs and events.
func (n Need) String() string {
	switch n {
	case NotNeeded:
		return "not_needed_read"
	case RunByPolicy:
		return "policy"
	case RunRemembered:
		return "remembered"
	case Ask:
		return "ask"
	}
	return ""
}

// Requirement is RiskPolicy.consentRequirement (spec §5.2), in order:
//  1. a hook asked → Ask (even for READ);
//  2. READ → NotNeeded;
//  3. HIGH → Ask, every time (ignores "always" and session memory);
//  4. WRITE: approval "always" → RunByPolicy; else remembered in this
//     session → RunRemembered; else Ask.
//
// An unknown hook decision is treated as a hook asking, and an invalid
// risk as HIGH (fail closed). A caller policy may only tighten the result
// afterwards.
func Requirement(risk catalog.Risk, hook HookDecision, approval catalog.Approval, remembered bool) Need {
	if hook != HookNone && hook != HookAllow {
		return Ask
	}
	switch risk {
	case catalog.RiskRead:
		return NotNeeded
	case catalog.RiskWrite:
		if approval == catalog.ApprovalAlways {
			return RunByPolicy
		}
		if remembered {
			return RunRemembered
		}
	}
	return Ask
}

// Choice is an answer a consent card offers (spec §5.4).
type Choice string

const (
	AllowOnce       Choice = "ALLOW_ONCE"
	AllowForSession Choice = "ALLOW_FOR_SESSION"
	AlwaysAllow     Choice = "ALWAYS_ALLOW"
	Deny            Choice = "DENY"
)

// Offer is what decides a card's choices.
type Offer struct {
	Risk catalog.Risk
	// Rememberable: the caller policy lets this call be remembered for the
	// session.
	Rememberable bool
	// Source is the plugin tool's id; nil for session MCP tools and
	// builtins, which are never always-allowed.
	Source *catalog.ToolID
	// WritebackAvailable: the "always allow" write to the policy store can
	// be made (the extension host is connected).
	WritebackAvailable bool
	// AlwaysAllowOffered: the caller policy permits offering "always"
	// (false for session MCP tools and under the strict caller policy).
	AlwaysAllowOffered bool
}

// Options lists a card's choices (spec §5.4): ALLOW_ONCE first, then
// ALLOW_FOR_SESSION iff rememberable and WRITE, then ALWAYS_ALLOW iff the
// call has a source, is WRITE, write-back is available and always-allow
// is offered, and DENY last. HIGH calls thus get only ALLOW_ONCE and DENY.
func Options(o Offer) []Choice {
	out := []Choice{AllowOnce}
	if o.Rememberable && o.Risk == catalog.RiskWrite {
		out = append(out, AllowForSession)
	}
	if o.Source != nil && o.Risk == catalog.RiskWrite && o.WritebackAvailable && o.AlwaysAllowOffered {
		out = append(out, AlwaysAllow)
	}
	if faultinject.Enabled && faultinject.Active(faultinject.HighOffersAlwaysAllow) && o.Risk == catalog.RiskHigh {
		out = append(out, AlwaysAllow) // injected fault
	}
	return append(out, Deny)
}

// Resolve maps an answer to the choice that takes effect: an answer not
// in the card's options counts as DENY.
func Resolve(options []Choice, answer Choice) Choice {
	for _, c := range options {
		if c == answer {
			return c
		}
	}
	if faultinject.Enabled && faultinject.Active(faultinject.UnofferedAnswerAllows) {
		return AllowOnce // injected fault
	}
	return Deny
}
