package callerchan_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
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
	"spoofed-name":         {"opened", "registryHasOnlyRealPackage", "claimedNameNotRecorded", "notesNotGranted"},
	"list-shape":           {"pendingKeys", "allowedKeys", "deniedKeys", "usageKeys", "pendingHasRequestOnly", "allowedHasNoRequest", "deniedHasUntil"},
	"settings-actions":     {"answerAllows", "secondAnswerIgnored", "denyThenCooldown", "allowClearsCooldown", "removeForgets", "unknownPackageNotFound"},
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
func preAllow(t *testing.T, rt *runtimeEnv, a callers.App) {
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

func needRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: apps run as helper processes under their own uids")
	}
}

func TestThirdPartyRegression(t *testing.T) {
	needRoot(t)
	runCase(t, "unauthorized-pending", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{})
		a := notesApp()
		rt.install(a)
		h := rt.startApp(a.UID)
		r := h.do(map[string]any{"op": "raw"})
		reason, id, _ := openLine(r)
		c.check("openReturnsPending", reason == "authorization_pending", r.Line)
		c.check("openDoesNotBlock", r.ElapsedMs < 2000, r.ElapsedMs)
		it, ok := rt.item(a.Package)
		c.check("recorded", ok && it.State == callers.StatePending, it)
		c.check("hasRequestId", id != "" && it.RequestID == id)
		c.check("packageFromUid", it.PackageName == a.Package)
		c.check("digest64", regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(it.SigningDigest))
		c.check("labelIsAppName", it.Label == "ACP Test Client", it.Label)
		_, id2, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("sameRequestOnRetry", id2 == id)
		c.check("noChannelOpened", rt.srv.Stats().Open == 0)
	})
	runCase(t, "allow-usable", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{})
		a := notesApp()
		rt.install(a)
		h := rt.startApp(a.UID)
		res := make(chan helperReply, 1)
		go func() { res <- h.do(map[string]any{"op": "connect", "maxWaitMs": 20000}) }()
		start := time.Now()
		waitFor(t, 10*time.Second, func() bool { return rt.pendingRequest(a.Package) != "" })
		// Let the app wait for two retries, as a user would take a moment.
		time.Sleep(time.Until(start.Add(2200 * time.Millisecond)))
		ok, _ := rt.reg.Answer(rt.pendingRequest(a.Package), true)
		r := <-res
		it, _ := rt.item(a.Package)
		c.check("sawPendingWhileConnecting", len(r.Waits) > 0 && r.Waits[0].RequestID != "", r.Waits)
		c.check("allowed", ok && it.State == callers.StateAllowed)
		c.check("waitedWithCallbacks", len(r.Waits) >= 2 && r.Waits[1].WaitedMs >= 900, r.Waits)
		c.check("connected", r.Err == nil, r.Err)
		s := h.do(map[string]any{"op": "new"})
		p := h.do(map[string]any{"op": "prompt", "session": s.Session, "text": "hello"})
		c.check("promptDone", done(p.Events) == "end_turn", p.Events, p.Err)
		c.check("gotText", lastText(p.Events) == "echo: hello", lastText(p.Events))
		it, _ = rt.item(a.Package)
		c.check("usageCounted", it.Usage.PromptsTotal == 1 && it.Usage.PromptsLastHour == 1, it.Usage)
	})
	runCase(t, "usable-no-scope", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{})
		a := notesApp()
		rt.install(a)
		preAllow(t, rt, a)
		h := rt.startApp(a.UID)
		h.do(map[string]any{"op": "connect"})
		s := h.do(map[string]any{"op": "new"})
		c.check("noScopeConnects", s.Err == nil && s.Session != "", s.Err)
		p := h.do(map[string]any{"op": "prompt", "session": s.Session, "text": "hi"})
		c.check("noScopeAnswered", done(p.Events) == "end_turn", p.Err)
		e := h.do(map[string]any{"op": "new", "scope": []acpclient.ToolRef{}})
		p2 := h.do(map[string]any{"op": "prompt", "session": e.Session, "text": "hi"})
		c.check("emptyScopeConnects", e.Err == nil && done(p2.Events) == "end_turn", e.Err, p2.Err)
	})
	runCase(t, "catalog-tools", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{})
		a := notesApp()
		rt.install(a)
		preAllow(t, rt, a)
		h := rt.startApp(a.UID)
		h.do(map[string]any{"op": "connect"})
		const final = "mcp__mcptest__test__echo"
		s := h.do(map[string]any{"op": "new"})
		p := h.do(map[string]any{"op": "prompt", "session": s.Session, "text": "call " + final + " ping"})
		tools := toolEvents(p.Events)
		last := helperEvent{}
		if len(tools) > 0 {
			last = tools[len(tools)-1]
		}
		c.check("noScopeCompleted", last.Status == "COMPLETED", tools)
		c.check("noScopeShowsFinalName", last.Tool == final && last.Ref == "", last)
		c.check("noScopeResultReachedModel", strings.Contains(lastText(p.Events), `result: {"echo":"ping"}`), lastText(p.Events))

		s2 := h.do(map[string]any{"op": "new", "scope": scopeOf(acpclient.ToolRef{Plugin: "mcptest", Tool: "stats"})})
		p2 := h.do(map[string]any{"op": "prompt", "session": s2.Session, "text": "call " + final + " ping"})
		t2 := toolEvents(p2.Events)
		c.check("scopeWithoutEchoBlocksIt", len(t2) > 0 && t2[len(t2)-1].Status == "FAILED" &&
			strings.HasPrefix(t2[len(t2)-1].Result, "[agentos:tool_not_in_catalog]"), t2)

		s3 := h.do(map[string]any{"op": "new", "scope": scopeOf(acpclient.ToolRef{Plugin: "mcptest", Tool: "echo"})})
		p3 := h.do(map[string]any{"op": "prompt", "session": s3.Session, "text": "call " + final + " ping"})
		t3 := toolEvents(p3.Events)
		var l3 helperEvent
		if len(t3) > 0 {
			l3 = t3[len(t3)-1]
		}
		c.check("scopeWithEchoCompletes", l3.Status == "COMPLETED", t3)
		c.check("scopedEventShowsOriginalName", l3.Tool == "echo" && l3.Ref == "mcptest:echo", l3)
	})
	runCase(t, "denied-cooldown", func(t *testing.T, c *checks) {
		const cooldown = 2 * time.Second
		rt := newRuntime(t, callers.Config{DenyCooldown: cooldown})
		a := notesApp()
		rt.install(a)
		h := rt.startApp(a.UID)
		res := make(chan helperReply, 1)
		go func() { res <- h.do(map[string]any{"op": "connect", "maxWaitMs": 20000}) }()
		waitFor(t, 10*time.Second, func() bool { return rt.pendingRequest(a.Package) != "" })
		ok, _ := rt.reg.Answer(rt.pendingRequest(a.Package), false)
		deniedAt := time.Now()
		c.check("denyAccepted", ok)
		r := <-res
		c.check("sdkReportsDenied", r.Err != nil && r.Err.Code == "DENIED", r.Err)
		it, _ := rt.item(a.Package)
		c.check("stateDenied", it.State == callers.StateDenied && it.DeniedUntil != nil && *it.DeniedUntil > it.DecidedAt, it)
		reason, _, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("cooldownOpenIsDenied", reason == "denied", reason)
		c.check("noNewCardInCooldown", len(rt.reg.List().Cards) == 0)
		time.Sleep(time.Until(deniedAt.Add(cooldown + 50*time.Millisecond)))
		reason, id, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("askedAgainAfterCooldown", reason == "authorization_pending" && id != "", reason)
	})
	runCase(t, "pending-timeout", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{PendingTTL: 2 * time.Second})
		a := notesApp()
		rt.install(a)
		h := rt.startApp(a.UID)
		r := h.do(map[string]any{"op": "connect", "maxWaitMs": 20000, "retryMs": 250})
		c.check("wasPending", len(r.Waits) > 0, r.Waits)
		it, _ := rt.item(a.Package)
		c.check("noOneDecidedCountsAsDenied", it.State == callers.StateDenied, it.State)
		c.check("sdkSawDenied", r.Err != nil && r.Err.Code == "DENIED", r.Err)
		c.check("cardWithdrawn", len(rt.reg.List().Cards) == 0)
	})
	runCase(t, "abandon", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{AbandonAfter: 500 * time.Millisecond})
		a := notesApp()
		rt.install(a)
		h := rt.startApp(a.UID)
		reason, _, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("wasPending", reason == "authorization_pending")
		gone := waitFor(t, 5*time.Second, func() bool { _, ok := rt.item(a.Package); return !ok })
		c.check("cardWithdrawnWithoutDenial", gone && len(rt.reg.List().Cards) == 0)
	})
	runCase(t, "revoke-closes", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{})
		a := notesApp()
		rt.install(a)
		preAllow(t, rt, a)
		h := rt.startApp(a.UID)
		h.do(map[string]any{"op": "connect"})
		s := h.do(map[string]any{"op": "new"})
		h.do(map[string]any{"op": "promptAsync", "session": s.Session, "text": "hold"})
		owner := fmt.Sprintf("uid:%d", a.UID)
		c.check("channelWasOpen", rt.srv.Stats().ThirdParty == 1)
		c.check("taskWasRunning", waitFor(t, 5*time.Second, func() bool { return rt.eng.Usage(owner).Running == 1 }))
		start := time.Now()
		err := rt.reg.Set(context.Background(), a.Package, callers.StateDenied)
		c.check("revokeAccepted", err == nil, err)
		d := h.do(map[string]any{"op": "waitDone"})
		c.check("serverClosedChannelAtOnce", d.Err == nil && time.Since(start) < 3*time.Second, time.Since(start))
		u := rt.eng.Usage(owner)
		c.check("tasksCancelled", u.Running == 0 && u.Queued == 0 && time.Since(start) < time.Second, u, time.Since(start))
		revs := rt.reg.List().Revocations
		c.check("cancelRecorded", len(revs) == 1 && len(revs[0].CancelRequested) == 1 && revs[0].ClosedChannels == 1, revs)
		c.check("slotFreed", waitFor(t, 2*time.Second, func() bool { return rt.quota.Usage(owner).Active == 0 }))
		c.check("sdkSawDisconnect", d.Err == nil)
		w := h.do(map[string]any{"op": "wait"})
		c.check("promptEndedDisconnected", w.Err != nil && w.Err.Code == "DISCONNECTED", w.Err)
		reason, _, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("afterRevokeDenied", reason == "denied", reason)
		rt.reg.Set(context.Background(), a.Package, callers.StateAllowed)
		h2 := rt.startApp(a.UID)
		h2.do(map[string]any{"op": "connect"})
		s2 := h2.do(map[string]any{"op": "new"})
		p := h2.do(map[string]any{"op": "prompt", "session": s2.Session, "text": "again"})
		c.check("reAllowedPromptRuns", done(p.Events) == "end_turn", p.Err)
	})
	runCase(t, "revoke-after-detach", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{})
		a := notesApp()
		rt.install(a)
		preAllow(t, rt, a)
		h := rt.startApp(a.UID)
		h.do(map[string]any{"op": "connect"})
		s := h.do(map[string]any{"op": "new"})
		h.do(map[string]any{"op": "promptAsync", "session": s.Session, "text": "hold"})
		owner := fmt.Sprintf("uid:%d", a.UID)
		waitFor(t, 5*time.Second, func() bool { return rt.eng.Usage(owner).Running == 1 })
		r := h.do(map[string]any{"op": "disconnect"})
		c.check("detached", r.Err == nil)
		c.check("noChannelLeft", waitFor(t, 5*time.Second, func() bool { return rt.srv.Stats().Open == 0 }))
		c.check("taskOutlivedItsChannel", rt.eng.Usage(owner).Running == 1)
		start := time.Now()
		err := rt.reg.Set(context.Background(), a.Package, callers.StateDenied)
		c.check("revokeAccepted", err == nil, err)
		u := rt.eng.Usage(owner)
		c.check("tasksCancelled", u.Running == 0 && u.Queued == 0 && time.Since(start) < time.Second, u)
		revs := rt.reg.List().Revocations
		c.check("cancelRecorded", len(revs) == 1 && revs[0].ClosedChannels == 0 && len(revs[0].CancelRequested) == 1, revs)
	})
	runCase(t, "spoofed-name", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{})
		spoof := callers.App{UID: newUID(), Package: "org.example.spoof", Label: "Spoof", SigningDigest: digestOf(0x77)}
		notes := callers.App{UID: newUID(), Package: "org.agentos.sample.notes", Label: "Notes", SigningDigest: digestOf(0x78)}
		rt.install(spoof)
		rt.install(notes)
		preAllow(t, rt, spoof)
		h := rt.startApp(spoof.UID) // its clientInfo claims "org.agentos.sample.notes"
		r := h.do(map[string]any{"op": "connect"})
		s := h.do(map[string]any{"op": "new"})
		p := h.do(map[string]any{"op": "prompt", "session": s.Session, "text": "hi"})
		c.check("opened", r.Err == nil && done(p.Events) == "end_turn", r.Err, p.Err)
		list := rt.reg.List().Callers
		c.check("registryHasOnlyRealPackage", len(list) == 1 && list[0].PackageName == spoof.Package, list)
		_, claimed := rt.item(notes.Package)
		c.check("claimedNameNotRecorded", !claimed)
		reason, _, _ := openLine(rt.startApp(notes.UID).do(map[string]any{"op": "raw"}))
		c.check("notesNotGranted", reason == "authorization_pending", reason)
	})
	runCase(t, "list-shape", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{})
		mk := func(pkg string, b byte) callers.App {
			return callers.App{UID: newUID(), Package: pkg, Label: pkg, SigningDigest: digestOf(b)}
		}
		pending, allowed, denied := mk("org.example.pending", 1), mk("org.example.allowed", 2), mk("org.example.denied", 3)
		preAllow(t, rt, allowed)
		rt.reg.OpenChannel(pending, func() {})
		rt.reg.OpenChannel(denied, func() {})
		rt.reg.Set(context.Background(), denied.Package, callers.StateDenied)
		rt.reg.OpenChannel(allowed, func() {}) // lastUsedAt
		keys := map[string][]string{}
		var usage []string
		for _, it := range rt.reg.List().Callers {
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
		it, _ := rt.item(denied.Package)
		c.check("deniedHasUntil", slices.Contains(keys["denied"], "deniedUntil") && it.DeniedUntil != nil && *it.DeniedUntil > 0, keys["denied"])
	})
	runCase(t, "settings-actions", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{})
		a := notesApp()
		rt.install(a)
		h := rt.startApp(a.UID)
		_, id, _ := openLine(h.do(map[string]any{"op": "raw"}))
		ok, _ := rt.reg.Answer(id, true)
		it, _ := rt.item(a.Package)
		c.check("answerAllows", ok && it.State == callers.StateAllowed)
		ok2, _ := rt.reg.Answer(id, false)
		it, _ = rt.item(a.Package)
		c.check("secondAnswerIgnored", !ok2 && it.State == callers.StateAllowed)
		rt.reg.Set(context.Background(), a.Package, callers.StateDenied)
		reason, _, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("denyThenCooldown", reason == "denied", reason)
		rt.reg.Set(context.Background(), a.Package, callers.StateAllowed)
		_, _, opened := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("allowClearsCooldown", opened)
		rt.reg.Set(context.Background(), a.Package, callers.StateRemoved)
		_, present := rt.item(a.Package)
		reason, _, _ = openLine(h.do(map[string]any{"op": "raw"}))
		c.check("removeForgets", !present && reason == "authorization_pending", reason)
		err := rt.reg.Set(context.Background(), "org.example.unknown", callers.StateAllowed)
		c.check("unknownPackageNotFound", errors.Is(err, callers.ErrNotFound), err)
	})
	runCase(t, "shared-uid", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{})
		uid := newUID()
		rt.install(callers.App{UID: uid, Package: "org.example.shared.a", Label: "A", SigningDigest: digestOf(9)})
		rt.install(callers.App{UID: uid, Package: "org.example.shared.b", Label: "B", SigningDigest: digestOf(9)})
		h := rt.startApp(uid)
		reason, _, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("sharedUidRefused", reason == "not_open", reason)
		c.check("nothingRemembered", len(rt.reg.List().Callers) == 0)
		rt.mu.Lock()
		rt.pkgs[uid] = rt.pkgs[uid][:1]
		rt.mu.Unlock()
		reason, _, _ = openLine(h.do(map[string]any{"op": "raw"}))
		c.check("aloneIsAskedNormally", reason == "authorization_pending", reason)
	})
	runCase(t, "signature-changed", func(t *testing.T, c *checks) {
		rt := newRuntime(t, callers.Config{})
		a := notesApp()
		rt.install(a)
		preAllow(t, rt, a)
		h := rt.startApp(a.UID)
		h.do(map[string]any{"op": "connect"})
		// The package is updated with another signer (package table feed).
		resigned := a
		resigned.SigningDigest = digestOf(0x99)
		rt.mu.Lock()
		rt.pkgs[a.UID] = []callers.App{resigned}
		rt.mu.Unlock()
		rt.reg.Reinstalled(a.Package, resigned.SigningDigest)
		c.check("installed", true)
		d := h.do(map[string]any{"op": "waitDone"})
		c.check("oldChannelClosed", d.Err == nil, d.Err)
		reason, _, _ := openLine(h.do(map[string]any{"op": "raw"}))
		c.check("askedAgain", reason == "authorization_pending", reason)
		it, _ := rt.item(a.Package)
		c.check("pendingNotAllowed", it.State == callers.StatePending)
		c.check("flaggedSignatureChanged", rt.reg.List().SignatureChanged[a.Package])
		c.check("newDigest", it.SigningDigest == resigned.SigningDigest)
		r := h.do(map[string]any{"op": "connect", "maxWaitMs": 1500, "retryMs": 300})
		c.check("oldGrantNotInherited", r.Err != nil && r.Err.Code == "AUTHORIZATION_PENDING_TIMEOUT", r.Err)
	})
	runCase(t, "sessions", sessionsCase)
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
