package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/engine/enginetest"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/store"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	desktop = engine.Caller{Kind: engine.CallerDesktop, UID: 2000, Label: "desktop"}
	app     = engine.Caller{Kind: engine.CallerApp, UID: 10001, Package: "org.example.notes"}
	app2    = engine.Caller{Kind: engine.CallerApp, UID: 10002, Package: "org.example.sms"}
	self    = engine.Caller{Kind: engine.CallerSelf, UID: 10000}
)

type harness struct {
	t     *testing.T
	path  string
	st    *store.Store
	e     *engine.Engine
	tools *enginetest.Tools
	model *enginetest.Model
}

func newHarness(t *testing.T, configure func(*engine.Options)) *harness {
	t.Helper()
	h := &harness{t: t, path: filepath.Join(t.TempDir(), "agentos.db"), tools: &enginetest.Tools{}, model: &enginetest.Model{}}
	h.open(configure)
	return h
}

func (h *harness) open(configure func(*engine.Options)) {
	h.t.Helper()
	st, err := store.Open(context.Background(), h.path)
	if err != nil {
		h.t.Fatal(err)
	}
	opts := &engine.Options{
		Store:  st,
		Tools:  h.tools,
		Models: engine.StaticModel(model.Config{Provider: "scripted", Model: "m1", Choices: []string{"m1", "m2"}}, h.model),
		Limits: engine.Limits{CancelWait: 5 * time.Second, CancelGrace: 100 * time.Millisecond},
	}
	if configure != nil {
		configure(opts)
	}
	e, err := engine.New(context.Background(), opts)
	if err != nil {
		h.t.Fatal(err)
	}
	h.st, h.e = st, e
	h.t.Cleanup(h.close)
}

func (h *harness) close() {
	if h.e == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.e.Close(ctx); err != nil {
		h.t.Errorf("engine close: %v", err)
	}
	h.st.Close()
	h.e = nil
}

func (h *harness) session(c engine.Caller, scope []engine.ToolScopeEntry) string {
	h.t.Helper()
	info, err := h.e.NewSession(context.Background(), c, "/work", scope)
	if err != nil {
		h.t.Fatal(err)
	}
	return info.ID
}

func prompt(text string) engine.Prompt {
	content, _ := json.Marshal([]map[string]string{{"type": "text", "text": text}})
	return engine.Prompt{Content: content, Text: text, Chars: len(text)}
}

func (h *harness) submit(c engine.Caller, id, text string) *engine.Turn {
	h.t.Helper()
	turn, err := h.e.Submit(context.Background(), c, id, prompt(text))
	if err != nil {
		h.t.Fatalf("submit: %v", err)
	}
	return turn
}

func wait(t *testing.T, turn *engine.Turn) (string, error) {
	t.Helper()
	select {
	case <-turn.Done():
	case <-time.After(20 * time.Second):
		t.Fatalf("task %s did not end", turn.TaskID())
	}
	return turn.Result()
}

func (h *harness) run(c engine.Caller, id, text string) (string, error) {
	h.t.Helper()
	return wait(h.t, h.submit(c, id, text))
}

func (h *harness) events(id string) []store.Event {
	h.t.Helper()
	evs, err := h.st.Events(context.Background(), id, 0, 10000)
	if err != nil {
		h.t.Fatal(err)
	}
	return evs
}

// types lists event types, with the tool events' call ids.
func types(evs []store.Event) string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Type)
	}
	return strings.Join(out, " ")
}

func body[T any](t *testing.T, ev store.Event) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(ev.Body, &v); err != nil {
		t.Fatalf("%s body %s: %v", ev.Type, ev.Body, err)
	}
	return v
}

func find(evs []store.Event, typ string) []store.Event {
	var out []store.Event
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

func codeOf(err error) errcode.Code { return errcode.CodeOf(err) }

func TestPromptStreamsAndCompletes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	id := h.session(desktop, nil)
	h.model.Push(enginetest.Text("Hel", "lo"), enginetest.Text("again"))
	turn := h.submit(desktop, id, "  \n first line\nsecond")
	if stop, err := wait(t, turn); stop != engine.StopEndTurn || err != nil {
		t.Fatalf("result %q %v", stop, err)
	}
	evs := h.events(id)
	text := ""
	for _, ev := range find(evs, engine.EvMessageDelta) {
		text += body[engine.TextBody](t, ev).Text
	}
	if text != "Hello" {
		t.Fatalf("logged text %q", text)
	}
	if got := types(evs); !strings.HasPrefix(got, "session.created task.queued task.started message.delta") ||
		!strings.HasSuffix(got, "task.completed") {
		t.Fatalf("events: %s", got)
	}
	for i, ev := range evs {
		if ev.Seq != int64(i+1) {
			t.Fatalf("seq gap at %d: %d", i, ev.Seq)
		}
	}
	if end := body[engine.TaskEndBody](t, evs[len(evs)-1]); end.StopReason != "end_turn" {
		t.Fatalf("end body %+v", end)
	}
	info, _ := h.e.Session(context.Background(), desktop, id)
	if info.Title != "first line" {
		t.Fatalf("title %q", info.Title)
	}
	row, err := h.st.Task(context.Background(), turn.TaskID())
	if err != nil || row.State != store.TaskCompleted || string(row.Content) != `[{"text":"  \n first line\nsecond","type":"text"}]` {
		t.Fatalf("task row %+v %v", row, err)
	}

	// The second prompt sees the first turn, rebuilt from the log.
	if stop, err := h.run(desktop, id, "more"); stop != "end_turn" || err != nil {
		t.Fatal(stop, err)
	}
	reqs := h.model.Requests()
	msgs := reqs[1].Messages
	if len(msgs) != 3 || msgs[0].Text != "  \n first line\nsecond" || msgs[1].Role != model.RoleAssistant ||
		msgs[1].Text != "Hello" || msgs[2].Text != "more" {
		t.Fatalf("conversation: %+v", msgs)
	}
	if !strings.HasPrefix(reqs[0].System, "You are AgentOS, an assistant running on the user's Android phone.") {
		t.Fatalf("system prompt %q", reqs[0].System)
	}
	if reqs[0].Model != "m1" || len(reqs[0].Tools) != 5 {
		t.Fatalf("request model %q tools %d", reqs[0].Model, len(reqs[0].Tools))
	}
}

func TestToolRoundTrip(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.tools.Section = "## Skills from installed plugins"
	id := h.session(desktop, nil)
	h.model.Push(
		enginetest.Calls(enginetest.Call("c1", "echo", map[string]string{"text": "pong"}),
			enginetest.Call("c1", "big", map[string]int{"n": 40000})),
		enginetest.Text("done"))
	if stop, err := h.run(desktop, id, "go"); stop != "end_turn" || err != nil {
		t.Fatal(stop, err)
	}
	evs := h.events(id)
	want := "session.created task.queued task.started tool.call tool.call tool.dispatched tool.result tool.settled " +
		"tool.dispatched tool.result tool.settled message.delta task.completed"
	if got := types(evs); got != want {
		t.Fatalf("events\n got %s\nwant %s", got, want)
	}
	calls := find(evs, engine.EvToolCall)
	if a, b := body[engine.ToolCallBody](t, calls[0]), body[engine.ToolCallBody](t, calls[1]); a.ToolCallID != "c1" || b.ToolCallID != "c1_2" ||
		string(a.Arguments) != `{"text":"pong"}` {
		t.Fatalf("calls %+v %+v", a, b)
	}
	results := find(evs, engine.EvToolResult)
	if r := body[engine.ToolResultBody](t, results[0]); r.Text != "pong" || r.IsError || r.Length != 4 {
		t.Fatalf("echo result %+v", r)
	}
	big := body[engine.ToolResultBody](t, results[1])
	line := "\n[agentos:tool_result_too_large] Result truncated from 40000 to 32768 characters."
	if big.Length != 40000 || !strings.HasSuffix(big.Text, line) || len(big.Text) != 32768+len(line) {
		t.Fatalf("big result length %d text %d", big.Length, len(big.Text))
	}
	if s := body[engine.ToolSettledBody](t, find(evs, engine.EvToolSettled)[0]); s.Outcome != "completed" || s.IsError {
		t.Fatalf("settled %+v", s)
	}
	rows, _ := h.st.Tasks(context.Background(), store.TaskQuery{SessionID: id})
	tc, _ := h.st.ToolCalls(context.Background(), rows[0].ID)
	if len(tc) != 2 || tc[0].DispatchedAt.IsZero() || tc[0].Outcome != "completed" {
		t.Fatalf("tool call rows %+v", tc)
	}
	reqs := h.model.Requests()
	if !strings.HasSuffix(reqs[0].System, "\n\n## Skills from installed plugins") {
		t.Fatalf("system section missing: %q", reqs[0].System)
	}
	m := reqs[1].Messages
	if len(m) != 4 || len(m[1].ToolCalls) != 2 || m[2].Role != model.RoleTool || m[2].ToolCallID != "c1" ||
		m[3].ToolCallID != "c1_2" || m[3].Text != big.Text {
		t.Fatalf("second request messages %+v", m)
	}
}

func TestConsentOutcomes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		decision enginetest.Decision
		code     string
		text     string
	}{
		{enginetest.Deny, "tool_denied", "[agentos:tool_denied] The user declined this tool call."},
		{enginetest.Block, "tool_blocked", "[agentos:tool_blocked] This tool call was blocked by a hook."},
	}
	for _, tc := range tests {
		t.Run(tc.code, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			h.tools.Consent = func(context.Context, engine.ToolCallRequest) enginetest.Decision { return tc.decision }
			id := h.session(desktop, nil)
			h.model.Push(enginetest.Calls(enginetest.Call("c", "echo", nil)), enginetest.Text("ok"))
			if _, err := h.run(desktop, id, "x"); err != nil {
				t.Fatal(err)
			}
			evs := h.events(id)
			if got := types(evs); strings.Contains(got, "tool.dispatched") ||
				!strings.Contains(got, "tool.call consent.requested consent.resolved tool.result tool.settled") {
				t.Fatalf("events %s", got)
			}
			r := body[engine.ToolResultBody](t, find(evs, engine.EvToolResult)[0])
			if !r.IsError || r.Code != tc.code || r.Text != tc.text {
				t.Fatalf("result %+v", r)
			}
			s := body[engine.ToolSettledBody](t, find(evs, engine.EvToolSettled)[0])
			if s.Outcome != "rejected" || s.Error == nil || string(s.Error.Code) != tc.code {
				t.Fatalf("settled %+v", s)
			}
		})
	}
}

func TestScopeAndModeLimitTools(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	scoped := h.session(desktop, enginetest.Scope("echo", "fail"))
	none := h.session(desktop, []engine.ToolScopeEntry{})
	h.run(desktop, scoped, "a")
	h.run(desktop, none, "b")
	if _, err := h.e.SetMode(ctx, desktop, scoped, "read_only"); err != nil {
		t.Fatal(err)
	}
	h.run(desktop, scoped, "c")
	if _, err := h.e.SetMode(ctx, desktop, scoped, "chat"); err != nil {
		t.Fatal(err)
	}
	h.run(desktop, scoped, "d")
	var counts []int
	for _, r := range h.model.Requests() {
		counts = append(counts, len(r.Tools))
	}
	if fmt.Sprint(counts) != "[2 0 1 0]" {
		t.Fatalf("tools offered per request %v, want [2 0 1 0]", counts)
	}
	if _, err := h.e.SetMode(ctx, desktop, scoped, "bogus"); codeOf(err) != errcode.InvalidParams {
		t.Fatalf("bad mode: %v", err)
	}
	if _, err := h.e.SetMode(ctx, desktop, scoped, "default"); codeOf(err) != errcode.InvalidParams {
		t.Fatalf("widening the mode: %v", err)
	}
	// A call outside the scope is refused by name, like an unknown tool.
	h.model.Push(enginetest.Calls(enginetest.Call("c", "slow", nil)), enginetest.Text("ok"))
	if _, err := h.e.SetMode(ctx, self, scoped, "default"); err != nil {
		t.Fatalf("the owner widening the mode: %v", err)
	}
	h.run(desktop, scoped, "e")
	evs := h.events(scoped)
	r := body[engine.ToolResultBody](t, find(evs, engine.EvToolResult)[0])
	if r.Text != "[agentos:tool_not_in_catalog] Tool slow is not available." {
		t.Fatalf("out of scope result %+v", r)
	}
}

func TestToolRoundLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.model.Default = enginetest.Calls(enginetest.Call("c", "echo", map[string]string{"text": "x"}))
	id := h.session(desktop, nil)
	stop, err := h.run(desktop, id, "loop")
	if stop != engine.StopMaxTurnRequests || err != nil {
		t.Fatalf("result %q %v", stop, err)
	}
	evs := h.events(id)
	if n := len(find(evs, engine.EvToolResult)); n != 12 {
		t.Fatalf("%d tool rounds ran, want 12", n)
	}
	if len(find(evs, engine.EvToolRoundLimit)) != 1 || len(h.model.Requests()) != 13 {
		t.Fatalf("limit event missing or %d model calls", len(h.model.Requests()))
	}
	// The 13th request's calls were never logged: the log stays consistent.
	if len(find(evs, engine.EvToolCall)) != 12 {
		t.Fatal("unexecuted calls were logged")
	}
}

func TestModelFailures(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		reply     enginetest.Reply
		noModel   bool
		code      errcode.Code
		retryable bool
	}{
		{"not configured", enginetest.Reply{}, true, errcode.ModelNotConfigured, false},
		{"rate limited", enginetest.Reply{Err: errcode.New(errcode.ModelRateLimited, "provider returned 429")}, false, errcode.ModelRateLimited, true},
		{"stream broke", enginetest.Reply{Events: enginetest.Text("par").Events, StreamErr: errcode.New(errcode.ModelStreamInterrupted, "reset")}, false, errcode.ModelStreamInterrupted, true},
		{"unmapped error", enginetest.Reply{Err: errors.New("boom")}, false, errcode.ModelProtocol, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(o *engine.Options) {
				if tc.noModel {
					o.Models = nil
				}
			})
			h.model.Push(tc.reply)
			id := h.session(desktop, nil)
			turn := h.submit(desktop, id, "x")
			_, err := wait(t, turn)
			var ce *errcode.Error
			if !errors.As(err, &ce) || ce.Code != tc.code || ce.Code.Retryable() != tc.retryable || ce.TaskID != turn.TaskID() {
				t.Fatalf("error %#v", err)
			}
			if w := ce.Wire(); w.Code != -32051 || w.Data.TaskID != turn.TaskID() {
				t.Fatalf("wire %+v", w)
			}
			if tc.noModel && len(h.model.Requests()) != 0 {
				t.Fatal("a request was sent without a model")
			}
			evs := h.events(id)
			end := body[engine.TaskEndBody](t, evs[len(evs)-1])
			if evs[len(evs)-1].Type != engine.EvTaskFailed || end.Error == nil || end.Error.Code != tc.code {
				t.Fatalf("terminal %s %+v", evs[len(evs)-1].Type, end)
			}
		})
	}
}

func TestSubmitRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	mine := h.session(app, nil)
	other := h.session(app2, nil)
	long := func(n int) engine.Prompt { p := prompt(strings.Repeat("a", n)); return p }
	tests := []struct {
		name    string
		c       engine.Caller
		id      string
		p       engine.Prompt
		code    errcode.Code
		details map[string]any
	}{
		{"app over 16000", app, mine, long(16001), errcode.InvalidParams, map[string]any{"reason": "too_large", "limit": 16000}},
		{"app length checked before the session", app, "ses_bogus", long(16001), errcode.InvalidParams, nil},
		{"desktop may send 16001", desktop, "ses_01J00000000000000000000000", long(16001), errcode.SessionNotFound, nil},
		{"over 200000", desktop, mine, long(200001), errcode.PayloadTooLarge, nil},
		{"foreign session", app, other, prompt("x"), errcode.SessionNotFound, nil},
		{"malformed id", app, "nope", prompt("x"), errcode.SessionNotFound, nil},
		{"unknown id", app, "ses_01J00000000000000000000000", prompt("x"), errcode.SessionNotFound, nil},
	}
	for _, tc := range tests {
		_, err := h.e.Submit(ctx, tc.c, tc.id, tc.p)
		var ce *errcode.Error
		if !errors.As(err, &ce) || ce.Code != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
			continue
		}
		if tc.code == errcode.SessionNotFound && ce.Message() != "session_not_found: no such session" {
			t.Errorf("%s: message %q", tc.name, ce.Message())
		}
		if tc.details != nil && fmt.Sprint(ce.Details) != fmt.Sprint(tc.details) {
			t.Errorf("%s: details %v", tc.name, ce.Details)
		}
	}
	// SELF sees every session.
	if _, err := h.run(self, other, "x"); err != nil {
		t.Fatalf("SELF prompt on an app session: %v", err)
	}
	h.e.SetSafeMode(true)
	if _, err := h.e.Submit(ctx, app, mine, prompt("x")); codeOf(err) != errcode.SafeMode {
		t.Fatalf("safe mode: %v", err)
	}
	h.e.SetSafeMode(false)
	if err := h.e.CloseSession(ctx, app, mine); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Submit(ctx, app, mine, prompt("x")); codeOf(err) != errcode.SessionTerminal {
		t.Fatalf("closed session: %v", err)
	}
	if _, err := h.e.OpenSession(ctx, app, mine); err != nil {
		t.Fatal(err)
	}
	if _, err := h.run(app, mine, "x"); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
}

func TestQueueLimitAndFIFO(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.model.Push(enginetest.Reply{Hold: true})
	id := h.session(desktop, nil)
	first := h.submit(desktop, id, "hold")
	require.Eventually(t, func() bool { return len(h.model.Requests()) == 1 }, 10*time.Second, time.Millisecond)
	var queued []*engine.Turn
	for i := range 16 {
		queued = append(queued, h.submit(desktop, id, fmt.Sprint("q", i)))
	}
	if _, err := h.e.Submit(context.Background(), desktop, id, prompt("one too many")); codeOf(err) != errcode.Busy {
		t.Fatalf("17th queued prompt: %v", err)
	}
	if u := h.e.Usage("desktop"); u.Running != 1 || u.Queued != 16 || u.Prompts != 17 {
		t.Fatalf("usage %+v", u)
	}
	h.e.CancelSession(context.Background(), id, "test")
	if stop, _ := wait(t, first); stop != "cancelled" {
		t.Fatalf("held task %q", stop)
	}
	for _, q := range queued {
		if stop, _ := wait(t, q); stop != "cancelled" {
			t.Fatalf("queued task %q", stop)
		}
	}
	if n := len(h.model.Requests()); n != 1 {
		t.Fatalf("cancelled queued tasks reached the model: %d requests", n)
	}
	// After the queue drained, prompts run in submission order.
	a, b := h.submit(desktop, id, "a"), h.submit(desktop, id, "b")
	wait(t, a)
	wait(t, b)
	reqs := h.model.Requests()
	if last := reqs[len(reqs)-1].Messages; last[len(last)-1].Text != "b" {
		t.Fatalf("order: last prompt %q", last[len(last)-1].Text)
	}
}

func TestSchedulerLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.model.Default = enginetest.Reply{Hold: true}
	owners := []engine.Caller{app, app, app, desktop, desktop, app2}
	var (
		turns    []*engine.Turn
		sessions []string
	)
	for _, c := range owners {
		sessions = append(sessions, h.session(c, nil))
		turns = append(turns, h.submit(c, sessions[len(sessions)-1], "hold"))
	}
	require.Eventually(t, func() bool { return h.e.Stats().Running == 4 }, 10*time.Second, time.Millisecond)
	if u := h.e.Usage(app.OwnerKey()); u.Running != 2 || u.Queued != 1 {
		t.Fatalf("app usage %+v (2 per owner)", u)
	}
	if st := h.e.Stats(); st.Running != 4 || st.Queued != 2 {
		t.Fatalf("stats %+v (4 sessions at once)", st)
	}
	// Revocation: every task of the app stops, queued or running.
	start := time.Now()
	ids, err := h.e.CancelOwner(context.Background(), app.OwnerKey(), "revoked")
	if err != nil || len(ids) != 3 {
		t.Fatalf("cancel owner: %v %v", ids, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("cancel owner took %v", d)
	}
	for i, c := range owners {
		if c == app {
			if stop, _ := wait(t, turns[i]); stop != "cancelled" {
				t.Fatalf("app task %d: %q", i, stop)
			}
		}
	}
	evs := h.events(sessions[0])
	if end := body[engine.TaskEndBody](t, evs[len(evs)-1]); end.By != "revoked" {
		t.Fatalf("cancel by %+v", end)
	}
	require.Eventually(t, func() bool { return h.e.Usage(app2.OwnerKey()).Running == 1 }, 10*time.Second, time.Millisecond)
}

func TestCancelDuringToolCalls(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		tool    string
		consent enginetest.Decision
		code    string
		outcome string
	}{
		{"cooperative tool", "slow", enginetest.Allow, "tool_result_unknown", "unknown"},
		{"tool ignoring cancel", "hang", enginetest.Allow, "tool_result_unknown", "unknown"},
		{"consent pending", "echo", enginetest.Wait, "tool_denied", "rejected"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, nil)
			started := h.tools.Started()
			consentAsked := make(chan struct{}, 1)
			h.tools.Consent = func(context.Context, engine.ToolCallRequest) enginetest.Decision {
				consentAsked <- struct{}{}
				return tc.consent
			}
			h.model.Push(enginetest.Calls(enginetest.Call("c1", tc.tool, map[string]int{"ms": 60000}),
				enginetest.Call("c2", "echo", nil)))
			id := h.session(desktop, nil)
			turn := h.submit(desktop, id, "x")
			if tc.consent == enginetest.Allow {
				<-started
			} else {
				<-consentAsked
			}
			h.e.CancelSession(context.Background(), id, "user")
			if stop, err := wait(t, turn); stop != "cancelled" || err != nil {
				t.Fatalf("result %q %v", stop, err)
			}
			h.tools.Release()
			evs := h.events(id)
			results := find(evs, engine.EvToolResult)
			if len(results) != 2 {
				t.Fatalf("want a result for both calls: %s", types(evs))
			}
			r := body[engine.ToolResultBody](t, results[0])
			s := body[engine.ToolSettledBody](t, find(evs, engine.EvToolSettled)[0])
			if r.Code != tc.code || s.Outcome != tc.outcome {
				t.Fatalf("first call: %+v %+v", r, s)
			}
			if r2 := body[engine.ToolResultBody](t, results[1]); r2.Code != "tool_denied" {
				t.Fatalf("second call never ran: %+v", r2)
			}
			if evs[len(evs)-1].Type != engine.EvTaskCancelled {
				t.Fatalf("last event %s", evs[len(evs)-1].Type)
			}
		})
	}
}

func TestDisconnectDoesNotCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	h.model.Push(enginetest.Reply{Events: enginetest.Text("late").Events, Delay: 20 * time.Millisecond})
	id := h.session(desktop, nil)
	ctx, cancel := context.WithCancel(context.Background())
	turn, err := h.e.Submit(ctx, desktop, id, prompt("x"))
	if err != nil {
		t.Fatal(err)
	}
	cancel() // the connection is gone
	if stop, err := wait(t, turn); stop != "end_turn" || err != nil {
		t.Fatalf("a closed request context changed the task: %q %v", stop, err)
	}
}

func TestExecutionTimeout(t *testing.T) {
	t.Parallel()
	clock := clocktest.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, func(o *engine.Options) { o.Clock = clock })
	h.model.Push(enginetest.Reply{Hold: true})
	id := h.session(desktop, nil)
	turn := h.submit(desktop, id, "x")
	require.Eventually(t, func() bool { return h.e.Stats().Running == 1 && clock.Pending() > 0 }, 10*time.Second, time.Millisecond)
	clock.Advance(15 * time.Minute)
	_, err := wait(t, turn)
	if codeOf(err) != errcode.ExecutionTimeout {
		t.Fatalf("error %v", err)
	}
}

func TestSessionsListForkDelete(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	src := h.session(app, enginetest.Scope("echo", "fail", "big"))
	h.tools.Consent = func(context.Context, engine.ToolCallRequest) enginetest.Decision { return enginetest.Allow }
	h.model.Push(enginetest.Calls(enginetest.Call("c", "echo", map[string]string{"text": "e"})), enginetest.Text("first answer"))
	h.run(app, src, "first")
	if _, err := h.e.SetMode(ctx, app, src, "read_only"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.SetModel(ctx, app, src, "m2"); err != nil {
		t.Fatal(err)
	}
	h.session(app2, nil)

	list, err := h.e.ListSessions(ctx, app, nil)
	if err != nil || len(list) != 1 || list[0].ID != src || list[0].Title != "first" {
		t.Fatalf("list %+v %v", list, err)
	}
	if all, _ := h.e.ListSessions(ctx, self, nil); len(all) != 2 {
		t.Fatalf("SELF list %d", len(all))
	}

	tests := []struct {
		name string
		want []engine.ToolScopeEntry
		req  []engine.ToolScopeEntry
	}{
		{"no request keeps the source scope", enginetest.Scope("big", "echo", "fail"), nil},
		{"narrower", enginetest.Scope("echo"), enginetest.Scope("echo", "slow")},
		{"disjoint is no tools", []engine.ToolScopeEntry{}, enginetest.Scope("slow")},
	}
	for _, tc := range tests {
		f, err := h.e.ForkSession(ctx, app, src, "/fork", tc.req)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(f.Scope) != fmt.Sprint(tc.want) || f.Scope == nil {
			t.Errorf("%s: scope %v, want %v", tc.name, f.Scope, tc.want)
		}
		if f.Mode != "read_only" || f.ModelID != "m2" || f.ForkedFrom != src || f.OwnerKey != app.OwnerKey() {
			t.Errorf("%s: fork info %+v", tc.name, f)
		}
		got := types(h.events(f.ID))
		if got != "session.created task.queued task.started tool.call tool.dispatched tool.result tool.settled message.delta task.completed" {
			t.Errorf("%s: fork events %s (no consent events)", tc.name, got)
		}
	}
	if _, err := h.e.ForkSession(ctx, app2, src, "/x", nil); codeOf(err) != errcode.SessionNotFound {
		t.Fatalf("fork of a foreign session: %v", err)
	}
	// The fork continues the conversation.
	forks, _ := h.e.ListSessions(ctx, app, ptr("/fork"))
	h.run(app, forks[0].ID, "next")
	reqs := h.model.Requests()
	if m := reqs[len(reqs)-1].Messages; len(m) != 5 || m[3].Text != "first answer" || m[4].Text != "next" {
		t.Fatalf("fork conversation %+v", m)
	}

	if err := h.e.DeleteSession(ctx, app2, src); codeOf(err) != errcode.SessionNotFound {
		t.Fatalf("foreign delete: %v", err)
	}
	if err := h.e.DeleteSession(ctx, app, src); err != nil {
		t.Fatal(err)
	}
	if _, err := h.e.Session(ctx, app, src); codeOf(err) != errcode.SessionNotFound {
		t.Fatalf("deleted session: %v", err)
	}
	if len(h.events(src)) != 0 {
		t.Fatal("event log survived delete")
	}
	if f := h.tools.Forgotten(); len(f) != 1 || f[0] != src {
		t.Fatalf("forgotten %v", f)
	}
}

func ptr[T any](v T) *T { return &v }

func TestDeleteBusyWhenTasksDoNotStop(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *engine.Options) {
		o.Limits.CancelWait = 100 * time.Millisecond
		o.Limits.CancelGrace = time.Hour
	})
	started := h.tools.Started()
	h.model.Push(enginetest.Calls(enginetest.Call("c", "hang", nil)))
	id := h.session(desktop, nil)
	turn := h.submit(desktop, id, "x")
	<-started
	if err := h.e.DeleteSession(context.Background(), desktop, id); codeOf(err) != errcode.Busy {
		t.Fatalf("delete with a stuck task: %v", err)
	}
	if _, err := h.e.Session(context.Background(), desktop, id); err != nil {
		t.Fatalf("session touched by a refused delete: %v", err)
	}
	h.tools.Release()
	wait(t, turn)
	if err := h.e.DeleteSession(context.Background(), desktop, id); err != nil {
		t.Fatal(err)
	}
}

func TestSetModel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	id := h.session(desktop, nil)
	if _, err := h.e.SetModel(ctx, desktop, id, "secret-model-name"); codeOf(err) != errcode.InvalidParams ||
		strings.Contains(err.Error(), "secret-model-name") {
		t.Fatalf("unknown model: %v", err)
	}
	if _, err := h.e.SetModel(ctx, desktop, id, "m2"); err != nil {
		t.Fatal(err)
	}
	h.run(desktop, id, "x")
	if r := h.model.Requests(); r[0].Model != "m2" {
		t.Fatalf("model %q", r[0].Model)
	}
	h2 := newHarness(t, func(o *engine.Options) {
		o.Models = engine.StaticModel(model.Config{Provider: "openai", BaseURL: "https://example.test/v1", Model: "custom"}, h.model)
	})
	id2 := h2.session(desktop, nil)
	if _, err := h2.e.SetModel(ctx, desktop, id2, "custom"); codeOf(err) != errcode.Unsupported {
		t.Fatalf("custom endpoint: %v", err)
	}
}

func TestFollowerReadsInOrder(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	chunks := make([]string, 300)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("<%d>", i)
	}
	h.model.Push(enginetest.Reply{Events: enginetest.Text(chunks...).Events, Delay: 50 * time.Microsecond})
	id := h.session(desktop, nil)
	f, err := h.e.Follow(context.Background(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	turn := h.submit(desktop, id, "x")
	var seqs []int64
	var text strings.Builder
	for {
		ev, err := f.Next(context.Background(), turn.Done())
		if err != nil {
			break
		}
		seqs = append(seqs, ev.Seq)
		if ev.Type == engine.EvMessageDelta {
			text.WriteString(body[engine.TextBody](t, ev).Text)
		}
	}
	if text.String() != strings.Join(chunks, "") {
		t.Fatalf("followed text differs: %q", text.String())
	}
	for i, s := range seqs {
		if s != int64(i+1) {
			t.Fatalf("seq %d at %d", s, i)
		}
	}
	if seqs[len(seqs)-1] != turn.LastSeq() {
		t.Fatalf("last followed %d, terminal %d", seqs[len(seqs)-1], turn.LastSeq())
	}
	// A late follower catches up through the store.
	late, _ := h.e.Follow(context.Background(), id, 0)
	defer late.Close()
	n := 0
	for {
		if _, err := late.Next(context.Background(), turn.Done()); err != nil {
			break
		}
		n++
	}
	if n != len(seqs) {
		t.Fatalf("late follower read %d of %d", n, len(seqs))
	}
}

// TestNoGoroutineLeaks runs turns that end every way and checks that a
// closed engine leaves no goroutine behind (not parallel: it counts the
// process's goroutines while the parallel tests wait).
func TestNoGoroutineLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newHarness(t, func(o *engine.Options) { o.Limits.CancelGrace = 50 * time.Millisecond })
	id := h.session(desktop, nil)
	h.model.Push(enginetest.Text("a", "b"),
		enginetest.Calls(enginetest.Call("c", "echo", map[string]string{"text": "x"})), enginetest.Text("done"),
		enginetest.Reply{Err: errcode.New(errcode.ModelUnavailable, "down")},
		enginetest.Calls(enginetest.Call("h", "hang", nil)))
	h.run(desktop, id, "1")
	h.run(desktop, id, "2")
	h.run(desktop, id, "3")
	started := h.tools.Started()
	turn := h.submit(desktop, id, "4")
	<-started
	h.e.CancelSession(context.Background(), id, "test")
	wait(t, turn)
	h.tools.Release()
	h.model.Push(enginetest.Reply{Hold: true})
	h.submit(desktop, id, "5") // still running when the engine closes
	require.Eventually(t, func() bool { return h.e.Stats().Running == 1 }, 10*time.Second, time.Millisecond)
	h.close()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestQueuedPromptSeesTheAnswerBeforeIt: a prompt queued while another
// runs reaches the model after that task's answer, not before it.
func TestQueuedPromptSeesTheAnswerBeforeIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	id := h.session(desktop, nil)
	h.model.Push(enginetest.Reply{Events: enginetest.Text("answer one").Events, Delay: 30 * time.Millisecond}, enginetest.Text("answer two"))
	first := h.submit(desktop, id, "first")
	require.Eventually(t, func() bool { return len(h.model.Requests()) == 1 }, 10*time.Second, time.Millisecond)
	second := h.submit(desktop, id, "second")
	wait(t, first)
	wait(t, second)
	var got []string
	for _, m := range h.model.Requests()[1].Messages {
		got = append(got, m.Text)
	}
	if fmt.Sprint(got) != "[first answer one second]" {
		t.Fatalf("second request saw %q", got)
	}
}

// TestToolCallCarriesDisplay: a call's tool.call event has the title and
// annotations of the tool as the turn offered it (what clients show);
// a call to a tool the turn did not offer has none; the model is offered
// only name, description and schema.
func TestToolCallCarriesDisplay(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	id := h.session(desktop, nil)
	h.model.Push(enginetest.Calls(enginetest.Call("c1", "big", map[string]int{"n": 1}), enginetest.Call("c2", "ghost", nil)),
		enginetest.Text("done"))
	if stop, err := h.run(desktop, id, "go"); stop != "end_turn" || err != nil {
		t.Fatal(stop, err)
	}
	calls := find(h.events(id), engine.EvToolCall)
	require.Len(t, calls, 2)
	big := body[engine.ToolCallBody](t, calls[0])
	require.NotNil(t, big.Display)
	assert.Equal(t, "Big", big.Display.Title)
	require.NotNil(t, big.Display.Hints.ReadOnlyHint)
	require.NotNil(t, big.Display.Hints.OpenWorldHint)
	assert.True(t, *big.Display.Hints.ReadOnlyHint && *big.Display.Hints.OpenWorldHint)
	assert.Nil(t, body[engine.ToolCallBody](t, calls[1]).Display, "ghost was not offered")
	for _, tool := range h.model.Requests()[0].Tools {
		b, _ := json.Marshal(tool)
		assert.NotContains(t, string(b), "Big", "the display never reaches the model")
	}
}

// TestFollowAfterDeleteFails: Follow answers from memory for a session the
// engine holds; a deleted session must not be followed from there.
func TestFollowAfterDeleteFails(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ctx := context.Background()
	id := h.session(desktop, nil)
	_, err := h.run(desktop, id, "x")
	require.NoError(t, err)
	held, err := h.e.Follow(ctx, id, 0) // the session is now in memory
	require.NoError(t, err)
	held.Close()
	require.NoError(t, h.e.DeleteSession(ctx, desktop, id))
	f, err := h.e.Follow(ctx, id, 0)
	if f != nil {
		f.Close()
	}
	require.Error(t, err, "a deleted session is not followed")
	// An unknown session is refused as before.
	_, err = h.e.Follow(ctx, "ses_unknown", 0)
	require.Error(t, err)
}
