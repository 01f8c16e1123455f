package callerchan_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The upstream third-party caller regression (spec §10.3) as Go tests:
// each case names its checks, and every named check must be asserted and
// true. Apps are helper processes under their own uids using the caller
// SDK against an in-process runtime on real sockets.

var cases = map[string][]string{
	"unauthorized-pending": {"openReturnsPending", "openDoesNotBlock", "recorded", "hasRequestId", "packageFromUid", "digest64", "labelIsAppName", "sameRequestOnRetry", "noChannelOpened"},
	"allow-usable":         {"sawPendingWhileConnecting", "allowed", "waitedWithCallbacks", "connected", "promptDone", "gotText", "usageCounted"},
	"usable-no-scope":      {"noScopeConnects", "noScopeAnswered", "emptyScopeConnects"},
	"catalog-tools":        {"noScopeCompleted", "noScopeShowsFinalName", "noScopeResultReachedModel", "scopeWithoutEchoBlocksIt", "scopeWithEchoCompletes", "scopedEventShowsOriginalName"},
	"denied-cooldown":      {"denyAccepted", "sdkReportsDenied", "stateDenied", "cooldownOpenIsDenied", "noNewCardInCooldown", "askedAgainAfterCooldown"},
	"pending-timeout":      {"wasPending", "noOneDecidedCountsAsDenied", "sdkSawDenied", "cardWithdrawn"},
	"abandon":              {"wasPending", "cardWithdrawnWithoutDenial"},
	"revoke-closes":        {"channelWasOpen", "taskWasRunning", "revokeAccepted", "serverClosedChannelAtOnce", "tasksCancelled", "cancelRecorded", "slotFreed", "sdkSawDisconnect", "promptEndedDisconnected", "afterRevokeDenied", "reAllowedPromptRuns"},
	"revoke-after-detach":  {"detached", "noChannelLeft", "taskOutlivedItsChannel", "revokeAccepted", "tasksCancelled", "cancelRecorded"},
	"spoofed-name": {"opened", "registryHasOnlyRealPackage", "claimedNameNotRecorded", "notesNotGranted",
		"cardSeen", "cardCallerIsApp", "cardCallerPackageIsReal", "initiatorLineNamesRealPackage", "cardHasNoClaimedName"},
	"list-shape":       {"pendingKeys", "allowedKeys", "deniedKeys", "usageKeys", "pendingHasRequestOnly", "allowedHasNoRequest", "deniedHasUntil"},
	"settings-actions": {"answerAllows", "secondAnswerIgnored", "denyThenCooldown", "allowClearsCooldown", "removeForgets", "unknownPackageNotFound"},
	"sessions": {"created", "twoTurns", "sessionId", "listWithTitles", "loadOnOtherConnection", "loadComplete", "loadOrdered", "loadContinuable",
		"resumeNoReplay", "forkCarriesTurns", "modeDefault", "modeReadOnlyVisibleOnLoad", "modeChat", "modeCannotWiden", "noModelsSelectable", "setModelUnsupported",
		"mcpLoopbackRejected", "mcpCloudMetadataRejected", "mcpPrivateNetRejected", "mcpUserinfoRejected", "mcpCRLFHeaderRejected",
		"mcpForbiddenHeaderRejected", "mcpRejectedLeavesNoSession", "mcpUnreachableCreatedWithStatus", "closeKeepsSession",
		"deleteIsNotFound", "deleteLikeNeverExisted", "tokenNotInLogs", "hostNotInLogs"},
	"shared-uid":        {"sharedUidRefused", "nothingRemembered", "aloneIsAskedNormally"},
	"signature-changed": {"installed", "oldChannelClosed", "askedAgain", "pendingNotAllowed", "flaggedSignatureChanged", "newDigest", "oldGrantNotInherited"},
}

// checks collects one case's named checks.
type checks struct {
	t    *testing.T
	name string
	mu   sync.Mutex
	got  map[string]bool
}

func (c *checks) check(name string, ok bool, detail ...any) {
	c.t.Helper()
	if !slices.Contains(cases[c.name], name) {
		c.t.Fatalf("check %q is not in case %s", name, c.name)
	}
	c.mu.Lock()
	c.got[name] = ok
	c.mu.Unlock()
	if !ok {
		c.t.Errorf("%s/%s failed %v", c.name, name, detail)
	}
}

func runCase(t *testing.T, name string, f func(*testing.T, *checks)) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		c := &checks{t: t, name: name, got: map[string]bool{}}
		f(t, c)
		var passed []string
		for _, n := range cases[name] {
			ok, seen := c.got[n]
			if !seen {
				t.Errorf("%s/%s was not checked", name, n)
			} else if ok {
				passed = append(passed, n)
			}
		}
		t.Logf("%s: %d/%d checks passed: %s", name, len(passed), len(cases[name]), strings.Join(passed, ", "))
	})
}

func digestOf(b byte) string { return strings.Repeat(fmt.Sprintf("%02x", b), 32) }

var uidSeq = struct {
	sync.Mutex
	next int
}{next: 20100}

func newUID() int {
	uidSeq.Lock()
	defer uidSeq.Unlock()
	uidSeq.next++
	return uidSeq.next
}

func notesApp() callers.App {
	return callers.App{UID: newUID(), Package: "org.agentos.test.acp.client", Label: "ACP Test Client", SigningDigest: digestOf(0x5a)}
}

// preAllow authorizes app as the owner would after its first request.
func preAllowInProcess(t testing.TB, rt *runtimeEnv, a callers.App) {
	t.Helper()
	_, err := rt.reg.OpenChannel(a, func() {})
	var ref *callers.Refusal
	if !errors.As(err, &ref) || ref.Reason != callers.ReasonPending {
		t.Fatalf("first open: %v", err)
	}
	if ok, err := rt.reg.Answer(ref.RequestID, true); !ok || err != nil {
		t.Fatalf("answer: %v %v", ok, err)
	}
}

func openLine(r helperReply) (reason, requestID string, opened bool) {
	var m struct {
		Method string `json:"method"`
		Error  *struct {
			Data struct {
				Reason    string `json:"reason"`
				RequestID string `json:"requestId"`
			} `json:"data"`
		} `json:"error"`
	}
	json.Unmarshal([]byte(r.Line), &m)
	if m.Error != nil {
		return m.Error.Data.Reason, m.Error.Data.RequestID, false
	}
	return "", "", m.Method == "_org.agentos/channel"
}

func lastText(evs []helperEvent) string {
	var b strings.Builder
	for _, e := range evs {
		if e.Type == "text" {
			b.WriteString(e.Text)
		}
	}
	return b.String()
}

func toolEvents(evs []helperEvent) []helperEvent {
	var out []helperEvent
	for _, e := range evs {
		if e.Type == "tool" {
			out = append(out, e)
		}
	}
	return out
}

func done(evs []helperEvent) string {
	if len(evs) > 0 && evs[len(evs)-1].Type == "done" {
		return evs[len(evs)-1].StopReason
	}
	return ""
}

func scopeOf(refs ...acpclient.ToolRef) *[]acpclient.ToolRef { return &refs }

// backends are the runtimes the cases run against.
var backends = []struct {
	name string
	open func(t *testing.T, cfg callers.Config) backend
}{
	{"inprocess", func(t *testing.T, cfg callers.Config) backend { return newRuntime(t, cfg) }},
	{"agentosd", func(t *testing.T, cfg callers.Config) backend { return newBinaryRuntime(t, cfg) }},
}

// Every case runs against both backends, every named check asserted in
// each.
func TestThirdPartyRegression(t *testing.T) {
	testenv.NeedRoot(t)
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			for _, name := range sortedCases() {
				runCase(t, name, func(t *testing.T, c *checks) {
					caseFuncs[name](t, c, func(cfg callers.Config) backend { return be.open(t, cfg) })
				})
			}
		})
	}
}

func sortedCases() []string {
	var names []string
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

type opener func(cfg callers.Config) backend

var caseFuncs = map[string]func(t *testing.T, c *checks, open opener){
	"unauthorized-pending": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{})
		a := rt.install(notesApp(), "")
		h := rt.startApp(a.UID)
		r := h.do(map[string]any{"op": "raw"})
		reason, id, _ := openLine(r)
		c.check("openReturnsPending", reason == "authorization_pending", r.Line)
		c.check("openDoesNotBlock", r.ElapsedMs < 2000, r.ElapsedMs)
		v := rt.snapshot()
		it, ok := v.item(a.Package)
		c.check("recorded", ok && it.State == callers.StatePending, it)
		c.check("hasRequestId", id != "" && it.RequestID == id)
		c.check("packageFromUid", it.PackageName == a.Package && len(v.Callers) == 1)
		c.check("digest64", regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(it.SigningDigest) && it.SigningDigest == a.SigningDigest)
		c.check("labelIsAppName", it.Label == "ACP Test Client", it.Label)
		_, id2, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("sameRequestOnRetry", id2 == id)
		c.check("noChannelOpened", rt.snapshot().Channels.Open == 0)
	},
	"allow-usable": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{})
		a := rt.install(notesApp(), "")
		h := rt.startApp(a.UID)
		res := make(chan helperReply, 1)
		go func() { res <- h.do(map[string]any{"op": "connect", "maxWaitMs": 20000}) }()
		start := time.Now()
		var id string
		require.Eventually(t, func() bool {
			it, _ := rt.snapshot().item(a.Package)
			id = it.RequestID
			return id != ""
		}, 10*time.Second, 5*time.Millisecond)
		// Let the app wait for two retries, as a user would take a moment.
		time.Sleep(time.Until(start.Add(2200 * time.Millisecond)))
		ok := rt.answer(id, true)
		r := <-res
		it, _ := rt.snapshot().item(a.Package)
		c.check("sawPendingWhileConnecting", len(r.Waits) > 0 && r.Waits[0].RequestID == id, r.Waits)
		c.check("allowed", ok && it.State == callers.StateAllowed)
		c.check("waitedWithCallbacks", len(r.Waits) >= 2 && r.Waits[1].WaitedMs >= 900, r.Waits)
		c.check("connected", r.Err == nil, r.Err)
		s := h.do(map[string]any{"op": "new"})
		p := h.do(map[string]any{"op": "prompt", "session": s.Session, "text": "hello"})
		c.check("promptDone", done(p.Events) == "end_turn", p.Events, p.Err)
		c.check("gotText", lastText(p.Events) == "hello", lastText(p.Events))
		it, _ = rt.snapshot().item(a.Package)
		c.check("usageCounted", it.Usage.PromptsTotal == 1 && it.Usage.PromptsLastHour == 1, it.Usage)
	},
	"usable-no-scope": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{})
		a := rt.install(notesApp(), "")
		rt.preAllow(a)
		h := rt.startApp(a.UID)
		h.do(map[string]any{"op": "connect"})
		s := h.do(map[string]any{"op": "new"})
		c.check("noScopeConnects", s.Err == nil && s.Session != "", s.Err)
		p := h.do(map[string]any{"op": "prompt", "session": s.Session, "text": "hi"})
		c.check("noScopeAnswered", done(p.Events) == "end_turn", p.Err)
		e := h.do(map[string]any{"op": "new", "scope": []acpclient.ToolRef{}})
		p2 := h.do(map[string]any{"op": "prompt", "session": e.Session, "text": "hi"})
		c.check("emptyScopeConnects", e.Err == nil && done(p2.Events) == "end_turn", e.Err, p2.Err)
	},
	"catalog-tools": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{})
		rt.testPlugin(consent.AutoAllow)
		a := rt.install(notesApp(), "")
		rt.preAllow(a)
		h := rt.startApp(a.UID)
		h.do(map[string]any{"op": "connect"})
		const final = "mcp__mcptest__test__echo"
		s := h.do(map[string]any{"op": "new"})
		p := h.do(map[string]any{"op": "prompt", "session": s.Session, "text": callPrompt("ping")})
		var firstDone, secondDone helperEvent
		for _, e := range toolEvents(p.Events) {
			if e.Status == "COMPLETED" && firstDone.ID == "" {
				firstDone = e
			} else if e.Status == "COMPLETED" {
				secondDone = e
			}
		}
		c.check("noScopeCompleted", firstDone.Status == "COMPLETED", toolEvents(p.Events))
		c.check("noScopeShowsFinalName", firstDone.Tool == final && firstDone.Ref == "", firstDone)
		// The second call's arguments were taken from the first result.
		c.check("noScopeResultReachedModel", secondDone.Result == "got ping" && done(p.Events) == "end_turn", secondDone)

		s2 := h.do(map[string]any{"op": "new", "scope": scopeOf(acpclient.ToolRef{Plugin: "mcptest", Tool: "stats"})})
		p2 := h.do(map[string]any{"op": "prompt", "session": s2.Session, "text": callPrompt("ping")})
		t2 := toolEvents(p2.Events)
		c.check("scopeWithoutEchoBlocksIt", len(t2) > 0 && t2[len(t2)-1].Status == "FAILED" &&
			strings.HasPrefix(t2[len(t2)-1].Result, "[agentos:tool_not_in_catalog]"), t2)

		s3 := h.do(map[string]any{"op": "new", "scope": scopeOf(acpclient.ToolRef{Plugin: "mcptest", Tool: "echo"})})
		p3 := h.do(map[string]any{"op": "prompt", "session": s3.Session, "text": callPrompt("ping")})
		t3 := toolEvents(p3.Events)
		var l3 helperEvent
		if len(t3) > 0 {
			l3 = t3[len(t3)-1]
		}
		c.check("scopeWithEchoCompletes", l3.Status == "COMPLETED", t3)
		c.check("scopedEventShowsOriginalName", l3.Tool == "echo" && l3.Ref == "mcptest:echo", l3)
	},
	"denied-cooldown": func(t *testing.T, c *checks, open opener) {
		const cooldown = 2 * time.Second
		rt := open(callers.Config{DenyCooldown: cooldown})
		a := rt.install(notesApp(), "")
		h := rt.startApp(a.UID)
		res := make(chan helperReply, 1)
		go func() { res <- h.do(map[string]any{"op": "connect", "maxWaitMs": 20000}) }()
		var id string
		require.Eventually(t, func() bool {
			it, _ := rt.snapshot().item(a.Package)
			id = it.RequestID
			return id != ""
		}, 10*time.Second, 5*time.Millisecond)
		ok := rt.answer(id, false)
		deniedAt := time.Now()
		c.check("denyAccepted", ok)
		r := <-res
		c.check("sdkReportsDenied", r.Err != nil && r.Err.Code == "DENIED", r.Err)
		it, _ := rt.snapshot().item(a.Package)
		c.check("stateDenied", it.State == callers.StateDenied && it.DeniedUntil != nil && *it.DeniedUntil > it.DecidedAt, it)
		reason, _, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("cooldownOpenIsDenied", reason == "denied", reason)
		c.check("noNewCardInCooldown", len(rt.snapshot().Cards) == 0)
		time.Sleep(time.Until(deniedAt.Add(cooldown + 100*time.Millisecond)))
		reason, id2, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("askedAgainAfterCooldown", reason == "authorization_pending" && id2 != "" && id2 != id, reason)
	},
	"pending-timeout": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{PendingTTL: 2 * time.Second})
		a := rt.install(notesApp(), "")
		h := rt.startApp(a.UID)
		r := h.do(map[string]any{"op": "connect", "maxWaitMs": 20000, "retryMs": 250})
		c.check("wasPending", len(r.Waits) > 0, r.Waits)
		it, _ := rt.snapshot().item(a.Package)
		c.check("noOneDecidedCountsAsDenied", it.State == callers.StateDenied, it.State)
		c.check("sdkSawDenied", r.Err != nil && r.Err.Code == "DENIED", r.Err)
		c.check("cardWithdrawn", len(rt.snapshot().Cards) == 0)
	},
	"abandon": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{AbandonAfter: 500 * time.Millisecond})
		a := rt.install(notesApp(), "")
		h := rt.startApp(a.UID)
		reason, _, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("wasPending", reason == "authorization_pending")
		gone := assert.Eventually(t, func() bool { _, ok := rt.snapshot().item(a.Package); return !ok }, 5*time.Second, 5*time.Millisecond)
		c.check("cardWithdrawnWithoutDenial", gone && len(rt.snapshot().Cards) == 0)
	},
	"revoke-closes": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{})
		a := rt.install(notesApp(), "")
		rt.preAllow(a)
		h := rt.startApp(a.UID)
		h.do(map[string]any{"op": "connect"})
		s := h.do(map[string]any{"op": "new"})
		h.do(map[string]any{"op": "promptAsync", "session": s.Session, "text": holdPrompt})
		active := func() int { it, _ := rt.snapshot().item(a.Package); return it.Usage.ActiveTasks }
		c.check("channelWasOpen", rt.snapshot().Channels.ThirdParty == 1)
		c.check("taskWasRunning", assert.Eventually(t, func() bool { return active() == 1 }, 5*time.Second, 5*time.Millisecond))
		start := time.Now()
		err := rt.set(a.Package, callers.StateDenied)
		cancelled := time.Since(start)
		c.check("revokeAccepted", err == nil, err)
		d := h.do(map[string]any{"op": "waitDone"})
		c.check("serverClosedChannelAtOnce", d.Err == nil && time.Since(start) < 3*time.Second, time.Since(start))
		// Revocation waits for the tasks to stop before it answers.
		c.check("tasksCancelled", active() == 0 && cancelled < time.Second, cancelled)
		revs := rt.snapshot().Revocations
		c.check("cancelRecorded", len(revs) == 1 && len(revs[0].CancelRequested) == 1 && revs[0].ClosedChannels == 1, revs)
		c.check("slotFreed", assert.Eventually(t, func() bool { return rt.slotFree(a) }, 2*time.Second, 5*time.Millisecond))
		c.check("sdkSawDisconnect", d.Err == nil)
		w := h.do(map[string]any{"op": "wait"})
		c.check("promptEndedDisconnected", w.Err != nil && w.Err.Code == "DISCONNECTED", w.Err)
		reason, _, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("afterRevokeDenied", reason == "denied", reason)
		rt.set(a.Package, callers.StateAllowed)
		h2 := rt.startApp(a.UID)
		h2.do(map[string]any{"op": "connect"})
		s2 := h2.do(map[string]any{"op": "new"})
		p := h2.do(map[string]any{"op": "prompt", "session": s2.Session, "text": "again"})
		c.check("reAllowedPromptRuns", done(p.Events) == "end_turn", p.Err)
	},
	"revoke-after-detach": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{})
		a := rt.install(notesApp(), "")
		rt.preAllow(a)
		h := rt.startApp(a.UID)
		h.do(map[string]any{"op": "connect"})
		s := h.do(map[string]any{"op": "new"})
		h.do(map[string]any{"op": "promptAsync", "session": s.Session, "text": holdPrompt})
		active := func() int { it, _ := rt.snapshot().item(a.Package); return it.Usage.ActiveTasks }
		require.Eventually(t, func() bool { return active() == 1 }, 5*time.Second, 5*time.Millisecond)
		r := h.do(map[string]any{"op": "disconnect"})
		c.check("detached", r.Err == nil)
		c.check("noChannelLeft", assert.Eventually(t, func() bool {
			return rt.snapshot().Channels.Open == 0
		}, 5*time.Second, 5*time.Millisecond))
		c.check("taskOutlivedItsChannel", active() == 1)
		start := time.Now()
		err := rt.set(a.Package, callers.StateDenied)
		c.check("revokeAccepted", err == nil, err)
		c.check("tasksCancelled", active() == 0 && time.Since(start) < time.Second, time.Since(start))
		revs := rt.snapshot().Revocations
		c.check("cancelRecorded", len(revs) == 1 && revs[0].ClosedChannels == 0 && len(revs[0].CancelRequested) == 1, revs)
	},
	"spoofed-name": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{})
		rt.testPlugin(consent.AutoOff) // consent cards wait for the owner
		spoof := rt.install(callers.App{UID: newUID(), Package: "org.example.spoof", Label: "Spoof", SigningDigest: digestOf(0x77)}, "")
		notes := rt.install(callers.App{UID: newUID(), Package: "org.agentos.sample.notes", Label: "Notes", SigningDigest: digestOf(0x78)}, "")
		rt.preAllow(spoof)
		h := rt.startApp(spoof.UID) // its clientInfo claims "org.agentos.sample.notes"
		r := h.do(map[string]any{"op": "connect"})
		s := h.do(map[string]any{"op": "new"})
		p := h.do(map[string]any{"op": "prompt", "session": s.Session, "text": "hi"})
		c.check("opened", r.Err == nil && done(p.Events) == "end_turn", r.Err, p.Err)
		list := rt.snapshot().Callers
		c.check("registryHasOnlyRealPackage", len(list) == 1 && list[0].PackageName == spoof.Package, list)
		_, claimed := rt.snapshot().item(notes.Package)
		c.check("claimedNameNotRecorded", !claimed)
		reason, _, _ := openLine(rt.startApp(notes.UID).do(map[string]any{"op": "raw"}))
		c.check("notesNotGranted", reason == "authorization_pending", reason)

		// The app's model calls a WRITE tool: the owner's card names the
		// app the uid belongs to, never the name it claimed.
		h.do(map[string]any{"op": "promptAsync", "session": s.Session, "text": writePrompt})
		var cards []consent.View
		seen := assert.Eventually(t, func() bool { cards = rt.pendingCards(); return len(cards) > 0 }, 20*time.Second, 5*time.Millisecond)
		c.check("cardSeen", seen && len(cards) == 1, cards)
		var card consent.View
		if len(cards) > 0 {
			card = cards[0]
		}
		c.check("cardCallerIsApp", card.CallerKind == consent.CallerApp && card.Card.Caller.Kind == consent.CallerApp &&
			card.Card.Caller.UID == spoof.UID, card.CallerKind, card.Card.Caller)
		c.check("cardCallerPackageIsReal", card.CallerPackage == spoof.Package && card.Card.Caller.PackageName == spoof.Package,
			card.CallerPackage, card.Card.Caller)
		c.check("initiatorLineNamesRealPackage", strings.Contains(card.InitiatorLine, "（"+spoof.Package+"）") &&
			strings.Contains(card.InitiatorLine, spoof.Label), card.InitiatorLine)
		whole, _ := json.Marshal(card)
		c.check("cardHasNoClaimedName", len(whole) > 2 && !strings.Contains(strings.ToLower(string(whole)), "notes"), string(whole))
		// The owner declines; the turn goes on without the call.
		answered := card.RequestID != "" && rt.answerCard(card.RequestID, consent.Deny)
		w := h.do(map[string]any{"op": "wait"})
		if !answered || done(w.Events) != "end_turn" {
			t.Errorf("after the owner's answer (%v): %v %v", answered, w.Events, w.Err)
		}
	},
	"list-shape": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{})
		mk := func(pkg string, b byte) callers.App {
			return rt.install(callers.App{UID: newUID(), Package: pkg, Label: pkg, SigningDigest: digestOf(b)}, "")
		}
		pending, allowed, denied := mk("org.example.pending", 1), mk("org.example.allowed", 2), mk("org.example.denied", 3)
		rt.preAllow(allowed)
		rt.startApp(pending.UID).do(map[string]any{"op": "raw"})
		rt.startApp(denied.UID).do(map[string]any{"op": "raw"})
		rt.set(denied.Package, callers.StateDenied)
		rt.startApp(allowed.UID).do(map[string]any{"op": "raw"}) // lastUsedAt
		keys := map[string][]string{}
		var usage []string
		for _, it := range rt.snapshot().Callers {
			b, _ := json.Marshal(it)
			keys[string(it.State)] = objectKeys(b)
			u, _ := json.Marshal(it.Usage)
			usage = objectKeys(u)
		}
		order := []string{"packageName", "label", "signingDigest", "state", "requestId", "firstSeenAt", "decidedAt", "lastUsedAt", "deniedUntil", "requestedAt", "usage"}
		inOrder := func(ks []string) bool {
			idx := -1
			for _, k := range ks {
				i := slices.Index(order, k)
				if i <= idx {
					return false
				}
				idx = i
			}
			return len(ks) > 0
		}
		c.check("pendingKeys", inOrder(keys["pending"]), keys["pending"])
		c.check("allowedKeys", inOrder(keys["allowed"]), keys["allowed"])
		c.check("deniedKeys", inOrder(keys["denied"]), keys["denied"])
		c.check("usageKeys", slices.Equal(usage, []string{"promptsTotal", "promptsLastHour", "activeChannels", "activeTasks"}), usage)
		p := keys["pending"]
		c.check("pendingHasRequestOnly", slices.Contains(p, "requestId") && slices.Contains(p, "requestedAt") && !slices.Contains(p, "decidedAt"), p)
		al := keys["allowed"]
		c.check("allowedHasNoRequest", slices.Contains(al, "decidedAt") && !slices.Contains(al, "requestId") && !slices.Contains(al, "requestedAt"), al)
		it, _ := rt.snapshot().item(denied.Package)
		c.check("deniedHasUntil", slices.Contains(keys["denied"], "deniedUntil") && it.DeniedUntil != nil && *it.DeniedUntil > 0, keys["denied"])
	},
	"settings-actions": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{})
		a := rt.install(notesApp(), "")
		h := rt.startApp(a.UID)
		_, id, _ := openLine(h.do(map[string]any{"op": "raw"}))
		ok := rt.answer(id, true)
		it, _ := rt.snapshot().item(a.Package)
		c.check("answerAllows", ok && it.State == callers.StateAllowed)
		ok2 := rt.answer(id, false)
		it, _ = rt.snapshot().item(a.Package)
		c.check("secondAnswerIgnored", !ok2 && it.State == callers.StateAllowed)
		rt.set(a.Package, callers.StateDenied)
		reason, _, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("denyThenCooldown", reason == "denied", reason)
		rt.set(a.Package, callers.StateAllowed)
		_, _, opened := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("allowClearsCooldown", opened)
		rt.set(a.Package, callers.StateRemoved)
		_, present := rt.snapshot().item(a.Package)
		reason, _, _ = openLine(h.do(map[string]any{"op": "raw"}))
		c.check("removeForgets", !present && reason == "authorization_pending", reason)
		err := rt.set("org.example.unknown", callers.StateAllowed)
		c.check("unknownPackageNotFound", errors.Is(err, errNotFound), err)
	},
	"shared-uid": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{})
		uid := newUID()
		sa := rt.install(callers.App{UID: uid, Package: "org.example.shared.a", Label: "A", SigningDigest: digestOf(9)}, "org.example.shared")
		sb := rt.install(callers.App{UID: uid, Package: "org.example.shared.b", Label: "B", SigningDigest: digestOf(9)}, "org.example.shared")
		if sa.UID != sb.UID {
			t.Fatalf("shared uid not shared: %d %d", sa.UID, sb.UID)
		}
		h := rt.startApp(sa.UID)
		reason, _, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("sharedUidRefused", reason == "not_open", reason)
		c.check("nothingRemembered", len(rt.snapshot().Callers) == 0)
		rt.uninstall(sb.Package)
		reason, _, _ = openLine(h.do(map[string]any{"op": "raw"}))
		c.check("aloneIsAskedNormally", reason == "authorization_pending", reason)
	},
	"signature-changed": func(t *testing.T, c *checks, open opener) {
		rt := open(callers.Config{})
		a := rt.install(notesApp(), "")
		rt.preAllow(a)
		h := rt.startApp(a.UID)
		h.do(map[string]any{"op": "connect"})
		// The package is updated with another signer; the package table's
		// change feed reaches the registry.
		resigned := rt.resign(a)
		c.check("installed", resigned.SigningDigest != a.SigningDigest && resigned.UID == a.UID)
		d := h.do(map[string]any{"op": "waitDone"})
		c.check("oldChannelClosed", d.Err == nil, d.Err)
		reason, _, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("askedAgain", reason == "authorization_pending", reason)
		v := rt.snapshot()
		it, _ := v.item(a.Package)
		c.check("pendingNotAllowed", it.State == callers.StatePending)
		c.check("flaggedSignatureChanged", v.SignatureChanged[a.Package])
		c.check("newDigest", it.SigningDigest == resigned.SigningDigest)
		r := h.do(map[string]any{"op": "connect", "maxWaitMs": 1500, "retryMs": 300})
		c.check("oldGrantNotInherited", r.Err != nil && r.Err.Code == "AUTHORIZATION_PENDING_TIMEOUT", r.Err)
	},
	"sessions": sessionsCase,
}

func objectKeys(b []byte) []string {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.Token()
	var keys []string
	for dec.More() {
		tok, _ := dec.Token()
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		dec.Decode(&skip)
	}
	return keys
}

// TestCaseTableIsComplete keeps the case table in step with spec §10.3
// (the live case needs a real vendor and is out of scope here).
func TestCaseTableIsComplete(t *testing.T) {
	var names []string
	for n := range cases {
		names = append(names, n)
	}
	sort.Strings(names)
	want := []string{"abandon", "allow-usable", "catalog-tools", "denied-cooldown", "list-shape", "pending-timeout",
		"revoke-after-detach", "revoke-closes", "sessions", "settings-actions", "shared-uid", "signature-changed",
		"spoofed-name", "unauthorized-pending", "usable-no-scope"}
	if !slices.Equal(names, want) {
		t.Fatalf("cases = %v", names)
	}
}
