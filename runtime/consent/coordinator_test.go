package consent

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
)

var src = &catalog.ToolID{Plugin: "mcptest", Server: "test", Tool: "echo"}

func writeReq(id string) Request {
	return Request{
		ID: id, ToolName: "mcp__mcptest__test__echo", Source: src, Risk: catalog.RiskWrite,
		Arguments: json.RawMessage(`{"text":"hi"}`),
		Caller:    Initiator{Kind: CallerApp, UID: 10123, Package: "org.example.notes", Label: "Notes"},
		Options:   Options(Offer{Risk: catalog.RiskWrite, Rememberable: true, Source: src, WritebackAvailable: true, AlwaysAllowOffered: true}),
	}
}

// waitPending waits until n cards are pending.
func waitPending(t *testing.T, c *Coordinator, n int) []View {
	t.Helper()
	var v []View
	require.Eventually(t, func() bool { v = c.Pending(); return len(v) == n }, 10*time.Second, 2*time.Millisecond, "want %d pending", n)
	return v
}

func TestCoordinatorAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		answer   Choice
		choice   Choice
		decision string
		text     string
	}{
		{"allow once", AllowOnce, AllowOnce, "allow", ""},
		{"session", AllowForSession, AllowForSession, "allowForSession", ""},
		{"always", AlwaysAllow, AlwaysAllow, "allowAlways", ""},
		{"deny", Deny, Deny, "deny:user", TextDeclined},
		{"not a choice", Choice("MAYBE"), Deny, "deny:user", TextDeclined},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := NewCoordinator(nil)
			done := make(chan Outcome, 1)
			go func() { done <- c.Ask(context.Background(), writeReq("req_1")) }()
			waitPending(t, c, 1)
			if c.Decision("req_1") != "pending" {
				t.Fatalf("decision %q", c.Decision("req_1"))
			}
			if !c.Respond("req_1", tc.answer) {
				t.Fatal("Respond = false")
			}
			out := <-done
			if out.Choice != tc.choice || out.Decision() != tc.decision || out.RequestID != "req_1" || out.End != EndAnswered {
				t.Fatalf("outcome %+v", out)
			}
			if tc.text != "" && out.DenialText() != tc.text {
				t.Fatalf("text %q", out.DenialText())
			}
			if c.Respond("req_1", AllowOnce) {
				t.Fatal("second Respond = true")
			}
			if c.Decision("req_1") != tc.decision {
				t.Fatalf("decision after %q", c.Decision("req_1"))
			}
			rec := c.Recent()
			if len(rec) != 1 || rec[0].AnsweredWith != string(tc.choice) || rec[0].Tool != "mcp__mcptest__test__echo" || rec[0].Args != `{"text":"hi"}` {
				t.Fatalf("recent %+v", rec)
			}
		})
	}
}

func TestCoordinatorEnds(t *testing.T) {
	t.Parallel()
	t.Run("timeout counts from creation", func(t *testing.T) {
		t.Parallel()
		c := NewCoordinator(&CoordinatorOptions{Timeout: 50 * time.Millisecond})
		start := time.Now()
		out := c.Ask(context.Background(), writeReq(""))
		if out.End != EndTimedOut || out.Decision() != "deny:timeout" || out.DenialText() != TextTimedOut || out.EventReason() != "timeout" {
			t.Fatalf("outcome %+v", out)
		}
		if time.Since(start) < 50*time.Millisecond || !strings.HasPrefix(out.RequestID, "req_") {
			t.Fatalf("ended early or id %q", out.RequestID)
		}
		if len(c.Pending()) != 0 || c.Respond(out.RequestID, AllowOnce) {
			t.Fatal("timed-out card still answerable")
		}
	})
	t.Run("task cancelled withdraws the card", func(t *testing.T) {
		t.Parallel()
		c := NewCoordinator(nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan Outcome, 1)
		go func() { done <- c.Ask(ctx, writeReq("req_c")) }()
		waitPending(t, c, 1)
		cancel()
		out := <-done
		if out.End != EndCancelled || out.EventReason() != "client" || out.DenialText() != TextCancelled || out.Decision() != "deny:client" {
			t.Fatalf("outcome %+v", out)
		}
		if len(c.Pending()) != 0 {
			t.Fatal("card not withdrawn")
		}
	})
	t.Run("close", func(t *testing.T) {
		t.Parallel()
		c := NewCoordinator(nil)
		done := make(chan Outcome, 1)
		go func() { done <- c.Ask(context.Background(), writeReq("req_x")) }()
		waitPending(t, c, 1)
		c.Close()
		if out := <-done; out.End != EndClosed || out.Allowed() {
			t.Fatalf("outcome %+v", out)
		}
		if out := c.Ask(context.Background(), writeReq("req_y")); out.DenyReason != DenyUnavailable {
			t.Fatalf("after close %+v", out)
		}
	})
}

// The 17th pending request is denied UNAVAILABLE at once; a repeated id
// too.
func TestCoordinatorLimits(t *testing.T) {
	t.Parallel()
	c := NewCoordinator(nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for i := range DefaultMaxPending {
		wg.Add(1)
		go func() { defer wg.Done(); c.Ask(ctx, writeReq(fmt.Sprintf("req_%02d", i))) }()
	}
	waitPending(t, c, DefaultMaxPending)
	out := c.Ask(context.Background(), writeReq("req_17"))
	if out.DenyReason != DenyUnavailable || out.Decision() != "deny:unavailable" || out.EventReason() != "unavailable" {
		t.Fatalf("17th: %+v", out)
	}
	if out := c.Ask(context.Background(), writeReq("req_03")); out.DenyReason != DenyUnavailable {
		t.Fatalf("duplicate id: %+v", out)
	}
	if len(c.Pending()) != DefaultMaxPending {
		t.Fatal("the refused requests changed the queue")
	}
	cancel()
	wg.Wait()
	// A finished id cannot be reused either.
	if out := c.Ask(context.Background(), writeReq("req_00")); out.DenyReason != DenyUnavailable {
		t.Fatalf("reused finished id: %+v", out)
	}
}

func TestCoordinatorAutoModes(t *testing.T) {
	t.Parallel()
	highOpts := Options(Offer{Risk: catalog.RiskHigh, Rememberable: true, Source: src, WritebackAvailable: true, AlwaysAllowOffered: true})
	tests := []struct {
		mode     AutoMode
		high     bool
		decision string
	}{
		{AutoAllow, false, "allowForSession"},
		{AutoAllow, true, "allow"}, // no session option on HIGH: allow once
		{AutoAllowOnce, false, "allow"},
		{AutoDeny, false, "deny:user"},
	}
	for _, tc := range tests {
		c := NewCoordinator(nil)
		c.SetMode(tc.mode)
		r := writeReq("")
		if tc.high {
			r.Risk, r.Options = catalog.RiskHigh, highOpts
		}
		out := c.Ask(context.Background(), r)
		if out.Decision() != tc.decision || out.Auto != tc.mode || out.Choice == AlwaysAllow {
			t.Errorf("mode %s high=%v: %+v", tc.mode, tc.high, out)
		}
		if rec := c.Recent(); len(rec) != 1 || !strings.HasPrefix(rec[0].AnsweredWith, "auto:") {
			t.Errorf("recent %+v", rec)
		}
	}
	for _, s := range []string{"allow", "allowOnce", "allow-once", "deny", "off"} {
		if _, ok := ParseAutoMode(s); !ok {
			t.Errorf("ParseAutoMode(%q) failed", s)
		}
	}
	if _, ok := ParseAutoMode("always"); ok {
		t.Error("always is not a mode")
	}
}

func TestCoordinatorRecentBounded(t *testing.T) {
	t.Parallel()
	c := NewCoordinator(nil)
	c.SetMode(AutoAllowOnce)
	r := writeReq("")
	r.Arguments = json.RawMessage(`{"text":"` + strings.Repeat("a", 500) + `"}`)
	for range DefaultRecent + 7 {
		c.Ask(context.Background(), r)
		r.ID = ""
	}
	rec := c.Recent()
	if len(rec) != DefaultRecent {
		t.Fatalf("%d recent entries", len(rec))
	}
	if n := len([]rune(rec[0].Args)); n > RecentArgsChars {
		t.Fatalf("args summary of %d chars", n)
	}
	c.SetNotice(rec[len(rec)-1].RequestID, "saved nothing")
	if c.Recent()[len(rec)-1].Notice != "saved nothing" {
		t.Fatal("notice not kept")
	}
}

func TestSessionMemory(t *testing.T) {
	t.Parallel()
	var m SessionMemory
	if m.Remembered("ses_1", "t") {
		t.Fatal("empty memory remembers")
	}
	m.Remember("ses_1", "t")
	if !m.Remembered("ses_1", "t") || m.Remembered("ses_2", "t") || m.Remembered("ses_1", "u") {
		t.Fatal("memory mixes sessions or tools")
	}
	m.Forget("ses_1")
	if m.Remembered("ses_1", "t") {
		t.Fatal("forgotten session remembers")
	}
}

// TestConsentSurfaceCheck is consent_surface_check (spec §10.7): 16
// named checks of what cards offer and how answers, timeouts and the
// queue behave, driven through injected requests as the owner's tool
// does.
func TestConsentSurfaceCheck(t *testing.T) {
	t.Parallel()
	checks := map[string]bool{}
	c := NewCoordinator(nil)
	inject := func(r Request) string {
		id, out, ok := c.Post(r)
		if !ok {
			t.Fatalf("inject refused: %+v", out)
		}
		return id
	}
	choices := func(v View) []Choice {
		var out []Choice
		for _, o := range v.Options {
			out = append(out, o.Choice)
		}
		return out
	}
	byID := func(id string) (View, bool) {
		for _, v := range c.Pending() {
			if v.RequestID == id {
				return v, true
			}
		}
		return View{}, false
	}

	w := writeReq("")
	w.Arguments = json.RawMessage("{\"text\":\"a\u202eb\u200bc\"}")
	wid := inject(w)
	wv, ok := byID(wid)
	checks["writeCardShown"] = ok
	checks["writeOptionsExact"] = slices.Equal(choices(wv), []Choice{AllowOnce, AllowForSession, AlwaysAllow, Deny})
	checks["writeTitle"] = wv.Title == "要允许「mcp__mcptest__test__echo」吗？" || wv.Title == "要允许「echo」吗？"
	checks["writeRiskLabel"] = wv.Risk == catalog.RiskWrite && wv.Card.RiskLabel == "会修改数据"
	checks["appInitiatorNamesPackage"] = wv.CallerKind == CallerApp && wv.CallerPackage == "org.example.notes" &&
		strings.Contains(wv.InitiatorLine, "org.example.notes")
	checks["sourceLine"] = wv.SourceLine == "来自插件「mcptest」 · 服务器「test」"
	checks["argsSanitized"] = wv.ArgumentsPreview == `{"text":"abc"}`

	nr := writeReq("")
	nr.Options = Options(Offer{Risk: catalog.RiskWrite, Rememberable: false, Source: src, WritebackAvailable: true, AlwaysAllowOffered: true})
	nrid := inject(nr)
	nrv, _ := byID(nrid)
	checks["noRememberNoSession"] = slices.Equal(choices(nrv), []Choice{AllowOnce, AlwaysAllow, Deny})

	h := writeReq("")
	h.Risk = catalog.RiskHigh
	h.ToolName = "mcp__mcptest__test__wipe"
	h.Options = Options(Offer{Risk: catalog.RiskHigh, Rememberable: true, Source: src, WritebackAvailable: true, AlwaysAllowOffered: true})
	hid := inject(h)
	hv, _ := byID(hid)
	checks["highOptions"] = slices.Equal(choices(hv), []Choice{AllowOnce, Deny})
	checks["highDestructiveMarked"] = len(hv.Options) == 2 && hv.Options[0].Destructive && !hv.Options[1].Destructive

	// FIFO: the queue shows the three in order of arrival.
	p := c.Pending()
	checks["fifoOrder"] = len(p) == 3 && p[0].RequestID == wid && p[1].RequestID == nrid && p[2].RequestID == hid &&
		p[0].Card.QueuePosition == 0 && p[2].Card.QueuePosition == 2 && p[1].Card.QueueSize == 3

	// Any card can be answered by id, not only the head.
	checks["answerByIdOutOfOrder"] = c.Respond(hid, AllowForSession) && len(c.Pending()) == 2 && c.Decision(wid) == "pending"
	checks["notOfferedIsDeny"] = c.Decision(hid) == "deny:user"
	checks["respondAcceptedOnce"] = !c.Respond(hid, AllowOnce) && c.Respond(wid, AllowOnce) && !c.Respond(wid, AllowOnce)
	c.Respond(nrid, Deny)

	tr := writeReq("")
	tr.Timeout = 300 * time.Millisecond
	tid := inject(tr)
	require.Eventually(t, func() bool { return c.Decision(tid) != "pending" }, 10*time.Second, 2*time.Millisecond)
	checks["timeoutDenies"] = c.Decision(tid) == "deny:timeout"
	_, still := byID(tid)
	checks["timedOutCardRemoved"] = !still && !c.Respond(tid, AllowOnce)

	if len(checks) != 16 {
		t.Fatalf("%d checks, want 16", len(checks))
	}
	for name, ok := range checks {
		if !ok {
			t.Errorf("check %s failed", name)
		}
	}
}

// FuzzCoordinatorRespond answers with arbitrary ids and choices: only a
// pending id is ever accepted, at most once, and the effective choice is
// always one the card offered (anything else denies).
func FuzzCoordinatorRespond(f *testing.F) {
	f.Add("req_a", "ALLOW_ONCE", "ALWAYS_ALLOW", true)
	f.Add("req_a", "req_a", "ALLOW_FOR_SESSION", false)
	f.Add("", "", "", true)
	f.Add("req_\x00", "DENY", "allow_once", false)
	f.Fuzz(func(t *testing.T, id, choice1, choice2 string, high bool) {
		c := NewCoordinator(nil)
		r := writeReq("req_a")
		if high {
			r.Risk = catalog.RiskHigh
			r.Options = Options(Offer{Risk: catalog.RiskHigh, Source: src, WritebackAvailable: true, AlwaysAllowOffered: true})
		}
		done := make(chan Outcome, 1)
		go func() { done <- c.Ask(context.Background(), r) }()
		for len(c.Pending()) == 0 {
			time.Sleep(50 * time.Microsecond)
		}
		ok1 := c.Respond(id, Choice(choice1))
		if ok1 != (id == "req_a") {
			t.Fatalf("Respond(%q) = %v", id, ok1)
		}
		ok2 := c.Respond("req_a", Choice(choice2))
		if ok1 && ok2 {
			t.Fatal("answered twice")
		}
		out := <-done
		want := Choice(choice1)
		if !ok1 {
			want = Choice(choice2)
		}
		if !slices.Contains(r.Options, want) {
			want = Deny
		}
		if out.Choice != want || !slices.Contains(r.Options, out.Choice) {
			t.Fatalf("choice %q, want %q (options %v)", out.Choice, want, r.Options)
		}
		if high && (out.Choice == AlwaysAllow || out.Choice == AllowForSession) {
			t.Fatal("a HIGH card took a remembering choice")
		}
	})
}

// The card's 60 s timeout runs on the runtime's clock: nothing ends it a
// moment early, reaching it denies with reason timeout, and the card
// counts down on the same clock (the lab advances it instead of waiting).
func TestCoordinatorTimeoutOnTheClock(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	clk := clocktest.New(t0)
	c := NewCoordinator(&CoordinatorOptions{Clock: clk})
	done := make(chan Outcome, 1)
	go func() { done <- c.Ask(context.Background(), writeReq("req_t")) }()
	v := waitPending(t, c, 1)
	require.Equal(t, DefaultTimeout.Milliseconds(), v[0].RemainingMs)
	require.Equal(t, t0.UnixMilli(), v[0].Card.CreatedAtMillis)

	clk.Advance(DefaultTimeout - time.Millisecond)
	v = waitPending(t, c, 1)
	assert.Equal(t, int64(1), v[0].RemainingMs)
	select {
	case out := <-done:
		t.Fatalf("ended before its timeout: %+v", out)
	default:
	}
	clk.Advance(time.Millisecond)
	out := <-done
	assert.Equal(t, EndTimedOut, out.End)
	assert.Equal(t, "deny:timeout", out.Decision())
	assert.Empty(t, c.Pending())
	assert.False(t, c.Respond("req_t", AllowOnce), "a timed-out card is still answerable")
}
