package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/engine/enginetest"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/store"
	"github.com/agentoslab/agentlab/runtime/transport"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMethodTableIsSorted(t *testing.T) {
	t.Parallel()
	if !methods.sorted() {
		t.Fatalf("method table not sorted: %v", methods.names)
	}
}

func TestDuplicateMethodPanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Fatal("duplicate registration did not panic")
		}
	}()
	table([]struct {
		name string
		fn   handler
	}{{"a", (*conn).cancel}, {"a", (*conn).cancel}})
}

func TestInitialize(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := h.connect(desktop)
	m, _ := c.call("initialize", map[string]any{"protocolVersion": 7, "clientCapabilities": map[string]any{},
		"_meta": map[string]any{"org.agentos": map[string]any{"extensions": []any{"sessionSetup", "bogus", 3}}}})
	want := `{"protocolVersion":1,"agentCapabilities":{"loadSession":true,"promptCapabilities":{"image":false,"audio":false,"embeddedContext":true},` +
		`"mcpCapabilities":{"http":true,"sse":false},"sessionCapabilities":{"fork":{},"list":{},"resume":{},"delete":{},"close":{}}},` +
		`"agentInfo":{"name":"agentos","title":"AgentOS","version":"test"},"authMethods":[],` +
		`"_meta":{"org.agentos":{"extensions":{"sessionAutoSelect":{"version":1},"sessionSetup":{"version":1},"toolScope":{"version":1}},` +
		`"profile":1,"runtime":"test","securityLevel":"best_effort"}}}`
	if string(m.Result) != want {
		t.Fatalf("initialize\n got %s\nwant %s", m.Result, want)
	}
}

func TestPromptStreamsUpdates(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := h.connect(desktop)
	id := c.newSession(nil)
	long := strings.Repeat("é", 9000)
	h.model.Push(
		enginetest.Reply{Events: append(enginetest.Text("Hello ", long).Events,
			model.Event{Kind: model.ThinkingDelta, Text: "hmm"},
			model.Event{Kind: model.ToolCallDone, Call: enginetest.Call("c1", "big", map[string]int{"n": 9000})},
			model.Event{Kind: model.Done, StopReason: model.StopToolUse})},
		enginetest.Text("done"))
	m, before := c.call("session/prompt", textPrompt(id, "go"))
	if m.Error != nil {
		t.Fatal(m.Error.Message)
	}
	var res struct {
		StopReason string `json:"stopReason"`
		Meta       struct {
			A struct {
				TaskID string `json:"taskId"`
			} `json:"org.agentos"`
		} `json:"_meta"`
	}
	json.Unmarshal(m.Result, &res)
	if res.StopReason != "end_turn" || !strings.HasPrefix(res.Meta.A.TaskID, "tsk_") {
		t.Fatalf("result %s", m.Result)
	}
	us := updates(t, before)
	var text strings.Builder
	for _, u := range us {
		if u.Update.Kind == "agent_message_chunk" {
			if n := len([]rune(u.text())); n > 8192 {
				t.Fatalf("chunk of %d chars", n)
			}
			text.WriteString(u.text())
		}
	}
	if text.String() != "Hello "+long+"done" {
		t.Fatalf("streamed text differs (%d chars)", len(text.String()))
	}
	if got := kinds(us); !strings.Contains(got, "agent_thought_chunk tool_call/pending tool_call_update/in_progress tool_call_update/completed agent_message_chunk") {
		t.Fatalf("updates: %s", got)
	}
	for _, u := range us {
		if u.Update.Kind == "tool_call" {
			// The tool's title and the kind of its annotations
			// (readOnlyHint and openWorldHint), the final name in _meta.
			assert.Equal(t, "Big", u.Update.Title)
			assert.Equal(t, "fetch", u.Update.ToolKind)
			assert.Equal(t, `{"n":9000}`, string(u.Update.RawInput))
			assert.Equal(t, map[string]any{"org.agentos": map[string]any{"toolName": "big"}}, u.Update.Meta)
		}
		if u.Update.Kind == "tool_call_update" && u.Update.Status == "completed" {
			var content []struct {
				Content struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			json.Unmarshal(u.Update.Content, &content)
			txt := content[0].Content.Text
			if len(txt) > 8192 || !strings.HasSuffix(txt, "the original has 9000 characters.]") {
				t.Fatalf("tool result display (%d): ...%s", len(txt), txt[max(0, len(txt)-80):])
			}
		}
	}
}

// TestDeniedToolNeverInProgress: a denied call goes from pending to
// failed; a desktop caller is shown the consent wait in between (still
// pending), an app caller is not (its SDK would take the status line for
// the result).
func TestDeniedToolNeverInProgress(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		caller engine.Caller
		want   string
	}{
		{desktop, "tool_call/pending tool_call_update/pending tool_call_update/failed agent_message_chunk"},
		{appA, "tool_call/pending tool_call_update/failed agent_message_chunk"},
	} {
		t.Run(string(tc.caller.Kind), func(t *testing.T) {
			h := newHarness(t, harnessOpts{})
			h.tools.Consent = func(context.Context, engine.ToolCallRequest) enginetest.Decision { return enginetest.Deny }
			c := h.connect(tc.caller)
			id := c.newSession(nil)
			h.model.Push(enginetest.Calls(enginetest.Call("c1", "echo", nil)), enginetest.Text("ok"))
			_, before := c.call("session/prompt", textPrompt(id, "go"))
			us := updates(t, before)
			require.Equal(t, tc.want, kinds(us))
			last := us[len(us)-2]
			assert.Contains(t, string(last.Update.Content), "[agentos:tool_denied] The user declined this tool call.")
			if tc.caller.Kind == engine.CallerDesktop {
				assert.Contains(t, string(us[1].Update.Content), consentWaitText)
				assert.Equal(t, map[string]any{"org.agentos": map[string]any{"consent": "pending"}}, us[1].Update.Meta)
			}
		})
	}
}

// TestConsentWaitShownToDesktops: while the tool layer asks the owner, a
// desktop caller sees the call pending with the wait as its content, then
// the allow, then in_progress and the result replacing it; history replays
// the same. An app caller sees none of it, live or replayed.
func TestConsentWaitShownToDesktops(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		caller engine.Caller
		want   string
	}{
		{desktop, "tool_call/pending tool_call_update/pending tool_call_update/pending tool_call_update/in_progress tool_call_update/completed agent_message_chunk"},
		{appA, "tool_call/pending tool_call_update/in_progress tool_call_update/completed agent_message_chunk"},
	} {
		t.Run(string(tc.caller.Kind), func(t *testing.T) {
			h := newHarness(t, harnessOpts{})
			asked := make(chan struct{})
			answer := make(chan struct{})
			h.tools.Consent = func(context.Context, engine.ToolCallRequest) enginetest.Decision {
				close(asked)
				<-answer
				return enginetest.Allow
			}
			c := h.connect(tc.caller)
			id := c.newSession(nil)
			h.model.Push(enginetest.Calls(enginetest.Call("c1", "echo", map[string]string{"text": "hi"})), enginetest.Text("ok"))
			req := c.request("session/prompt", textPrompt(id, "go"))
			<-asked
			var seen []message
			if tc.caller.Kind == engine.CallerDesktop {
				// Shown while the owner is being asked, not after.
				m, before, ok := c.waitFor(func(m message) bool {
					return m.Method == "session/update" && strings.Contains(string(m.Params), `"consent":"pending"`)
				}, 10*time.Second)
				require.True(t, ok, "the consent wait reached the desktop while it lasted")
				seen = append(before, m)
			}
			close(answer)
			_, rest := c.response(req)
			us := updates(t, append(seen, rest...))
			require.Equal(t, tc.want, kinds(us))
			if tc.caller.Kind == engine.CallerDesktop {
				assert.Contains(t, string(us[1].Update.Content), "Waiting for approval on the phone (AgentOS asks its owner).")
				assert.Contains(t, string(us[2].Update.Content), "Allowed on the phone.")
				assert.Equal(t, map[string]any{"org.agentos": map[string]any{"consent": "allowed"}}, us[2].Update.Meta)
				assert.Contains(t, string(us[4].Update.Content), "hi", "the result replaces the status line")
			}
			m, replayed := c.call("session/load", map[string]any{"sessionId": id, "cwd": "/", "mcpServers": []any{}})
			require.Nil(t, m.Error)
			got := kinds(updates(t, replayed))
			assert.Contains(t, got, strings.TrimSuffix(tc.want, " agent_message_chunk"), "history looks as it did live")
		})
	}
}

func TestPromptErrors(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := h.connect(appA)
	other := h.connect(appB)
	id := c.newSession(nil)
	foreign := other.newSession(nil)
	long := strings.Repeat("x", 16001)
	tests := []struct {
		name    string
		params  any
		rpc     int
		code    string
		message string
	}{
		{"empty", map[string]any{"sessionId": id, "prompt": []any{}}, -32602, "invalid_params", "invalid_params: prompt is empty"},
		{"blank", textPrompt(id, " \n "), -32602, "invalid_params", "invalid_params: prompt is empty"},
		{"not an array", map[string]any{"sessionId": id, "prompt": "hi"}, -32602, "invalid_params", ""},
		{"missing prompt", map[string]any{"sessionId": id}, -32602, "invalid_params", "invalid_params: prompt is required"},
		{"missing session", map[string]any{"prompt": []any{}}, -32602, "invalid_params", "invalid_params: sessionId is required"},
		{"wrong type", map[string]any{"sessionId": 5, "prompt": []any{}}, -32602, "invalid_params", "invalid_params: sessionId must be a string"},
		{"params not object", []any{1}, -32602, "invalid_params", "invalid_params: params must be an object"},
		{"image", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "image", "data": "AA==", "mimeType": "image/png"}}}, -32602, "unsupported", "unsupported: prompt[0]: images are not supported"},
		{"audio", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "audio", "data": "AA==", "mimeType": "audio/wav"}}}, -32602, "unsupported", ""},
		{"blob", map[string]any{"sessionId": id, "prompt": []any{map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///x", "blob": "AA=="}}}}, -32602, "unsupported", "unsupported: prompt[0]: binary resources are not supported"},
		{"app too long", textPrompt(id, long), -32602, "invalid_params", "invalid_params: The prompt is longer than 16000 characters."},
		{"foreign", textPrompt(foreign, "x"), -32002, "session_not_found", "session_not_found: no such session"},
		{"unknown", textPrompt("ses_01J00000000000000000000000", "x"), -32002, "session_not_found", "session_not_found: no such session"},
		{"garbage id", textPrompt("../../etc", "x"), -32002, "session_not_found", "session_not_found: no such session"},
	}
	for _, tc := range tests {
		m, _ := c.call("session/prompt", tc.params)
		if m.Error == nil || m.Error.Code != tc.rpc || m.Error.Data.AgentosCode != tc.code || (tc.message != "" && m.Error.Message != tc.message) {
			t.Errorf("%s: got %+v", tc.name, m.Error)
		}
	}
	m, _ := c.call("session/prompt", textPrompt(id, long))
	if d := m.Error.Data.Details; d["reason"] != "too_large" || d["limit"] != float64(16000) {
		t.Fatalf("details %v", d)
	}
	// A desktop may send more than 16,000 chars, not more than 200,000
	// (which only a transport with longer lines than 65,536 can carry).
	d := h.connectWith(desktop, &transport.RPCOptions{MaxLineChars: 1 << 20})
	did := d.newSession(nil)
	if m, _ := d.call("session/prompt", textPrompt(did, strings.Repeat("y", 200001))); m.Error == nil || m.Error.Code != -32046 {
		t.Fatalf("200001 chars: %+v", m.Error)
	}
	if m, _ := d.call("session/prompt", textPrompt(did, long)); m.Error != nil {
		t.Fatalf("desktop 16001 chars: %+v", m.Error)
	}
}

func TestModelFailureIsRPCError(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := h.connect(desktop)
	id := c.newSession(nil)
	h.model.Push(enginetest.Reply{Err: errcode.New(errcode.ModelRateLimited, "provider returned 429")})
	m, _ := c.call("session/prompt", textPrompt(id, "x"))
	if m.Error == nil || m.Error.Code != -32051 || m.Error.Message != "model_rate_limited: provider returned 429" ||
		!m.Error.Data.Retryable || !strings.HasPrefix(m.Error.Data.TaskID, "tsk_") {
		t.Fatalf("error %+v", m.Error)
	}
	h2 := newHarness(t, harnessOpts{engine: func(o *engine.Options) { o.Models = nil }})
	c2 := h2.connect(desktop)
	id2 := c2.newSession(nil)
	m, _ = c2.call("session/prompt", textPrompt(id2, "x"))
	if m.Error == nil || m.Error.Data.AgentosCode != "model_not_configured" || m.Error.Data.Retryable {
		t.Fatalf("no model: %+v", m.Error)
	}
}

func TestUnknownMethodAndBadLines(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := h.connect(desktop)
	m, _ := c.call("authenticate", map[string]any{"methodId": "x"})
	if m.Error == nil || m.Error.Code != -32601 {
		t.Fatalf("authenticate: %+v", m.Error)
	}
	m, _ = c.call("session/bogus", nil)
	if m.Error == nil || m.Error.Code != -32601 {
		t.Fatalf("unknown: %+v", m.Error)
	}
	c.sendRaw(`{"jsonrpc":"2.0","id":99,"method":`)
	got, _, ok := c.waitFor(func(m message) bool { return m.Error != nil && m.Error.Code == -32700 }, 5*time.Second)
	if !ok || got.ID != nil {
		t.Fatalf("parse error reply: %+v", got)
	}
	c.sendRaw(`[1,2]`)
	if _, _, ok := c.waitFor(func(m message) bool { return m.Error != nil && m.Error.Code == -32600 }, 5*time.Second); !ok {
		t.Fatal("no -32600")
	}
	// The connection still works.
	c.mustCall("session/list", map[string]any{}, nil)

	// An oversize line closes that connection only.
	other := h.connect(desktop)
	c.sendRaw(`{"jsonrpc":"2.0","id":1,"method":"session/list","params":{"cwd":"` + strings.Repeat("a", 70000) + `"}}`)
	if !c.waitClosed(5 * time.Second) {
		t.Fatal("oversize line did not close the connection")
	}
	other.mustCall("session/list", map[string]any{}, nil)
}

func TestCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := h.connect(desktop)
	id := c.newSession(nil)
	// No prompt in progress: a no-op.
	c.notify("session/cancel", map[string]any{"sessionId": id})
	require.Eventually(t, func() bool { return h.a.cancels.Load() == 1 }, 10*time.Second, 2*time.Millisecond)
	h.model.Push(enginetest.Reply{Events: enginetest.Text("partial").Events, Hold: true})
	req := c.request("session/prompt", textPrompt(id, "long job"))
	if _, _, ok := c.waitFor(func(m message) bool { return m.Method == "session/update" }, 10*time.Second); !ok {
		t.Fatal("no streaming before cancel")
	}
	queued := h.connect(desktop)
	qreq := queued.request("session/prompt", textPrompt(id, "queued behind"))
	require.Eventually(t, func() bool { return h.e.Stats().Queued == 1 }, 10*time.Second, 2*time.Millisecond)
	start := time.Now()
	c.notify("session/cancel", map[string]any{"sessionId": id})
	m, _ := c.response(req)
	if string(m.Result) == "" || !strings.Contains(string(m.Result), `"stopReason":"cancelled"`) || !strings.Contains(string(m.Result), `"taskId":"tsk_`) {
		t.Fatalf("cancel result %s %+v", m.Result, m.Error)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("cancel took %v", d)
	}
	// The other connection's queued prompt of the session is cancelled too.
	qm, _ := queued.response(qreq)
	if !strings.Contains(string(qm.Result), `"stopReason":"cancelled"`) {
		t.Fatalf("queued prompt: %s %+v", qm.Result, qm.Error)
	}
}

// blockingAdmission holds Submit at admission until released.
type blockingAdmission struct {
	entered chan struct{}
	release chan struct{}
}

func (b *blockingAdmission) Admit(context.Context, engine.Caller, int) (func(string), error) {
	b.entered <- struct{}{}
	<-b.release
	return func(string) {}, nil
}

func TestCancelBeforeTheTaskIsWritten(t *testing.T) {
	t.Parallel()
	adm := &blockingAdmission{entered: make(chan struct{}, 1), release: make(chan struct{})}
	h := newHarness(t, harnessOpts{engine: func(o *engine.Options) { o.Admission = adm }})
	c := h.connect(desktop)
	id := c.newSession(nil)
	req := c.request("session/prompt", textPrompt(id, "x"))
	<-adm.entered
	c.notify("session/cancel", map[string]any{"sessionId": id})
	require.Eventually(t, func() bool { return h.a.cancels.Load() == 1 }, 10*time.Second, 2*time.Millisecond)
	close(adm.release)
	m, _ := c.response(req)
	if !strings.Contains(string(m.Result), `"stopReason":"cancelled"`) {
		t.Fatalf("result %s %+v", m.Result, m.Error)
	}
	if len(h.model.Requests()) != 0 {
		t.Fatal("a cancelled prompt reached the model")
	}
}

func TestCancelWaitsAtMostTheCancelWait(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{
		engine: func(o *engine.Options) { o.Limits.CancelGrace = time.Hour },
		agent:  func(o *Options) { o.CancelWait = 200 * time.Millisecond },
	})
	started := h.tools.Started()
	c := h.connect(desktop)
	id := c.newSession(nil)
	h.model.Push(enginetest.Calls(enginetest.Call("c", "hang", nil)))
	req := c.request("session/prompt", textPrompt(id, "x"))
	<-started
	c.notify("session/cancel", map[string]any{"sessionId": id})
	m, _ := c.response(req)
	if !strings.Contains(string(m.Result), `"stopReason":"cancelled"`) {
		t.Fatalf("result %s %+v", m.Result, m.Error)
	}
	h.tools.Release()
}

func TestDisconnectKeepsTaskRunning(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := h.connect(desktop)
	id := c.newSession(nil)
	h.model.Push(enginetest.Reply{Events: enginetest.Text("first half ", "second half").Events, Delay: 30 * time.Millisecond})
	c.request("session/prompt", textPrompt(id, "x"))
	require.Eventually(t, func() bool { return h.e.Stats().Running == 1 }, 10*time.Second, 2*time.Millisecond)
	c.conn.Close()
	require.Eventually(t, func() bool {
		evs, _ := h.st.Events(context.Background(), id, 0, 100)
		return len(evs) > 0 && evs[len(evs)-1].Type == engine.EvTaskCompleted
	}, 10*time.Second, 2*time.Millisecond)
	// A new connection loads the session and sees the whole turn.
	d := h.connect(desktop)
	before := d.mustCall("session/load", map[string]any{"sessionId": id, "cwd": "/work", "mcpServers": []any{}}, nil)
	var text string
	for _, u := range updates(t, before) {
		if u.Update.Kind == "agent_message_chunk" {
			text += u.text()
		}
	}
	if text != "first half second half" {
		t.Fatalf("replayed %q", text)
	}
}

func TestLoadReplaysHistory(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := h.connect(desktop)
	c.mustCall("initialize", map[string]any{"protocolVersion": 1,
		"_meta": map[string]any{"org.agentos": map[string]any{"extensions": []string{"sessionSetup"}}}}, nil)
	id := c.newSession(nil)
	h.model.Push(enginetest.Calls(enginetest.Call("c1", "echo", map[string]string{"text": "pong"})), enginetest.Text("answer one"))
	c.mustCall("session/prompt", textPrompt(id, "question one"), nil)
	h.model.Push(enginetest.Text("answer two"))
	live := updates(t, c.mustCall("session/prompt", textPrompt(id, "question two"), nil))

	d := h.connect(desktop)
	d.mustCall("initialize", map[string]any{"protocolVersion": 1,
		"_meta": map[string]any{"org.agentos": map[string]any{"extensions": []string{"sessionSetup"}}}}, nil)
	var res map[string]json.RawMessage
	before := d.mustCall("session/load", map[string]any{"sessionId": id, "cwd": "/work", "mcpServers": []any{}}, &res)
	us := updates(t, before)
	want := "user_message_chunk tool_call/pending tool_call_update/in_progress tool_call_update/completed agent_message_chunk " +
		"user_message_chunk agent_message_chunk session_info_update"
	if got := kinds(us); got != want {
		t.Fatalf("replay\n got %s\nwant %s", got, want)
	}
	if us[0].text() != "question one" {
		t.Fatalf("first prompt %q", us[0].text())
	}
	// Same mapping as live for the second turn.
	if kinds(us[6:7]) != kinds(live) {
		t.Fatalf("live %s vs replay %s", kinds(live), kinds(us[6:7]))
	}
	marker := us[len(us)-1].Update.Meta["org.agentos"].(map[string]any)
	if marker["setup"].(map[string]any)["replayed"] != float64(len(us)-1) {
		t.Fatalf("marker %v", marker)
	}
	for _, k := range []string{"modes", "models", "configOptions"} {
		if _, ok := res[k]; !ok {
			t.Fatalf("load response lacks %s: %v", k, res)
		}
	}
	// resume: no replay, only the marker.
	before = d.mustCall("session/resume", map[string]any{"sessionId": id, "cwd": "/work"}, nil)
	if got := kinds(updates(t, before)); got != "session_info_update" {
		t.Fatalf("resume sent %s", got)
	}
	// Another owner cannot load it.
	e := h.connect(appA)
	if m, _ := e.call("session/load", map[string]any{"sessionId": id, "cwd": "/w", "mcpServers": []any{}}); m.Error == nil ||
		m.Error.Message != "session_not_found: no such session" {
		t.Fatalf("foreign load: %+v", m.Error)
	}
}

func TestReplayFailsCallsOfAnInterruptedTurn(t *testing.T) {
	t.Parallel()
	m := newMapper(true, engine.CallerDesktop)
	ev := func(seq int64, task, typ, body string) []string {
		var out []string
		for _, u := range m.updates(storeEvent(seq, task, typ, body)) {
			b, _ := json.Marshal(u)
			out = append(out, string(b))
		}
		return out
	}
	ev(1, "t1", engine.EvTaskQueued, `{"text":"q"}`)
	ev(2, "t1", engine.EvToolCall, `{"toolCallId":"a","name":"echo","arguments":{}}`)
	ev(3, "t1", engine.EvToolDispatched, `{"toolCallId":"a"}`)
	got := ev(4, "t1", engine.EvTaskRecoveryRequired, `{"error":{"code":"tool_result_unknown"}}`)
	if len(got) != 1 || !strings.Contains(got[0], `"status":"failed"`) || !strings.Contains(got[0], `"toolCallId":"a"`) {
		t.Fatalf("synthetic failure: %v", got)
	}
	ev(5, "t2", engine.EvToolCall, `{"toolCallId":"b","name":"echo","arguments":{}}`)
	ev(6, "t3", engine.EvToolCall, `{"toolCallId":"c","name":"echo","arguments":{}}`)
	fin := m.finish("t3") // t3 is running now: its call stays open
	if len(fin) != 1 {
		t.Fatalf("finish: %d updates", len(fin))
	}
	b, _ := json.Marshal(fin[0])
	if !strings.Contains(string(b), `"toolCallId":"b"`) {
		t.Fatalf("finish: %s", b)
	}
}

func TestSessionMethods(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := h.connect(appA)
	scope := map[string]any{"org.agentos": map[string]any{"toolScope": []any{
		map[string]any{"plugin": "test", "tool": "echo"}, map[string]any{"plugin": "test", "tool": "fail"}}}}
	id := c.newSession(scope)
	h.model.Push(enginetest.Text("hi"))
	c.mustCall("session/prompt", textPrompt(id, "\n  My first line  \nsecond"), nil)

	var list struct {
		Sessions []struct {
			SessionID string `json:"sessionId"`
			Cwd       string `json:"cwd"`
			Title     string `json:"title"`
			UpdatedAt string `json:"updatedAt"`
		} `json:"sessions"`
	}
	c.mustCall("session/list", map[string]any{}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].Title != "My first line" || list.Sessions[0].Cwd != "/work" {
		t.Fatalf("list %+v", list)
	}
	if _, err := time.Parse(time.RFC3339Nano, list.Sessions[0].UpdatedAt); err != nil {
		t.Fatalf("updatedAt %q", list.Sessions[0].UpdatedAt)
	}
	c.mustCall("session/list", map[string]any{"cwd": "/elsewhere"}, &list)
	if len(list.Sessions) != 0 {
		t.Fatalf("cwd filter %+v", list)
	}
	b := h.connect(appB)
	b.newSession(nil)
	b.mustCall("session/list", map[string]any{}, &list)
	if len(list.Sessions) != 1 || list.Sessions[0].SessionID == id {
		t.Fatalf("other owner's list %+v", list)
	}

	// Fork narrows the scope.
	var fork struct {
		SessionID string `json:"sessionId"`
	}
	c.mustCall("session/fork", map[string]any{"sessionId": id, "cwd": "/fork", "_meta": map[string]any{"org.agentos": map[string]any{
		"toolScope": []any{map[string]any{"plugin": "test", "tool": "echo"}, map[string]any{"plugin": "test", "tool": "slow"}}}}}, &fork)
	info, err := h.e.Session(context.Background(), appA, fork.SessionID)
	if err != nil || fmt.Sprint(info.Scope) != "[{test echo}]" || info.ForkedFrom != id {
		t.Fatalf("fork %+v %v", info, err)
	}

	// Modes and models.
	before := c.mustCall("session/set_mode", map[string]any{"sessionId": id, "modeId": "read_only"}, nil)
	if got := kinds(updates(t, before)); got != "current_mode_update config_option_update" {
		t.Fatalf("set_mode notified %s", got)
	}
	for _, tc := range []struct {
		method string
		params map[string]any
		code   int
		ac     string
	}{
		{"session/set_mode", map[string]any{"sessionId": id, "modeId": "godmode"}, -32602, "invalid_params"},
		{"session/set_mode", map[string]any{"sessionId": id, "modeId": "default"}, -32602, "invalid_params"},
		{"session/set_model", map[string]any{"sessionId": id, "modelId": "nope"}, -32602, "invalid_params"},
		{"session/set_config_option", map[string]any{"sessionId": id, "configId": "mode", "value": true}, -32602, "invalid_params"},
		{"session/set_config_option", map[string]any{"sessionId": id, "configId": "temperature", "value": "hot"}, -32602, "invalid_params"},
		{"session/set_mode", map[string]any{"sessionId": fork.SessionID + "X", "modeId": "chat"}, -32002, "session_not_found"},
	} {
		m, _ := c.call(tc.method, tc.params)
		if m.Error == nil || m.Error.Code != tc.code || m.Error.Data.AgentosCode != tc.ac || strings.Contains(m.Error.Message, "nope") {
			t.Errorf("%s %v: %+v", tc.method, tc.params, m.Error)
		}
	}
	var cfg struct {
		ConfigOptions []struct {
			ID           string `json:"id"`
			CurrentValue string `json:"currentValue"`
		} `json:"configOptions"`
	}
	c.mustCall("session/set_config_option", map[string]any{"sessionId": id, "configId": "model", "value": "m2"}, &cfg)
	if len(cfg.ConfigOptions) != 2 || cfg.ConfigOptions[1].CurrentValue != "m2" || cfg.ConfigOptions[0].CurrentValue != "read_only" {
		t.Fatalf("config options %+v", cfg)
	}
	c.mustCall("session/set_model", map[string]any{"sessionId": id, "modelId": "m1"}, nil)

	// Close keeps history; prompts need a load or resume after it.
	c.mustCall("session/close", map[string]any{"sessionId": id}, nil)
	if m, _ := c.call("session/prompt", textPrompt(id, "x")); m.Error == nil || m.Error.Data.AgentosCode != "session_terminal" {
		t.Fatalf("prompt after close: %+v", m.Error)
	}
	c.mustCall("session/resume", map[string]any{"sessionId": id, "cwd": "/work"}, nil)
	h.model.Push(enginetest.Text("back"))
	c.mustCall("session/prompt", textPrompt(id, "x"), nil)

	// Delete: gone for everyone, same answer as never-existing.
	if m, _ := b.call("session/delete", map[string]any{"sessionId": id}); m.Error == nil || m.Error.Code != -32002 {
		t.Fatalf("foreign delete: %+v", m.Error)
	}
	c.mustCall("session/delete", map[string]any{"sessionId": id}, nil)
	for _, method := range []string{"session/load", "session/resume", "session/fork", "session/delete", "session/close", "session/set_mode"} {
		m, _ := c.call(method, map[string]any{"sessionId": id, "cwd": "/w", "mcpServers": []any{}, "modeId": "chat"})
		if m.Error == nil || m.Error.Message != "session_not_found: no such session" {
			t.Errorf("%s after delete: %+v", method, m.Error)
		}
	}
}

func TestNewSessionValidation(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := h.connect(desktop)
	entry := map[string]any{"plugin": "p", "tool": "t"}
	many := make([]any, 33)
	for i := range many {
		many[i] = entry
	}
	tests := []struct {
		name   string
		params map[string]any
		code   string
		msg    string
	}{
		{"no cwd", map[string]any{"mcpServers": []any{}}, "invalid_params", "invalid_params: cwd is required"},
		{"scope not array", map[string]any{"cwd": "/", "_meta": map[string]any{"org.agentos": map[string]any{"toolScope": "all"}}}, "invalid_params", ""},
		{"scope 33", map[string]any{"cwd": "/", "_meta": map[string]any{"org.agentos": map[string]any{"toolScope": many}}}, "invalid_params", ""},
		{"scope element", map[string]any{"cwd": "/", "_meta": map[string]any{"org.agentos": map[string]any{"toolScope": []any{"x"}}}}, "invalid_params", ""},
		{"scope empty field", map[string]any{"cwd": "/", "_meta": map[string]any{"org.agentos": map[string]any{"toolScope": []any{map[string]any{"plugin": "", "tool": "t"}}}}}, "invalid_params", ""},
		{"scope long field", map[string]any{"cwd": "/", "_meta": map[string]any{"org.agentos": map[string]any{"toolScope": []any{map[string]any{"plugin": strings.Repeat("p", 129), "tool": "t"}}}}}, "invalid_params", ""},
		{"autoSelect not negotiated", map[string]any{"cwd": "/", "_meta": map[string]any{"org.agentos": map[string]any{"autoSelect": map[string]any{"query": "x"}}}}, "invalid_params", "invalid_params: the sessionAutoSelect extension was not negotiated in initialize"},
		{"stdio server", map[string]any{"cwd": "/", "mcpServers": []any{map[string]any{"name": "s", "command": "/bin/sh", "args": []any{}, "env": []any{}}}}, "unsupported",
			"unsupported: mcpServers[0]: stdio servers are not supported; use an http (Streamable HTTP) server"},
		{"sse server", map[string]any{"cwd": "/", "mcpServers": []any{map[string]any{"type": "sse", "name": "s", "url": "https://example.com", "headers": []any{}}}}, "unsupported",
			"unsupported: mcpServers[0]: sse servers are not supported; use an http (Streamable HTTP) server"},
		{"private url", map[string]any{"cwd": "/", "mcpServers": []any{map[string]any{"type": "http", "name": "s", "url": "https://10.0.0.1/mcp", "headers": []any{}}}}, "invalid_params", ""},
	}
	for _, tc := range tests {
		m, _ := c.call("session/new", tc.params)
		if m.Error == nil || m.Error.Data.AgentosCode != tc.code || (tc.msg != "" && m.Error.Message != tc.msg) {
			t.Errorf("%s: %+v", tc.name, m.Error)
		}
		if m.Error != nil && strings.Contains(m.Error.Message, "10.0.0.1") {
			t.Errorf("%s: message echoes the URL", tc.name)
		}
	}
	if list, _ := h.e.ListSessions(context.Background(), desktop, nil); len(list) != 0 {
		t.Fatalf("refused requests created %d sessions", len(list))
	}
	// An http server is accepted into memory and reported not connected.
	before := c.mustCall("session/new", map[string]any{"cwd": "/", "mcpServers": []any{
		map[string]any{"type": "http", "name": "docs", "url": "https://mcp.example.com/mcp", "headers": []any{map[string]any{"name": "Authorization", "value": "Bearer s3cret"}}}}}, nil)
	us := updates(t, before)
	if len(us) != 1 || fmt.Sprint(us[0].Update.Meta["org.agentos"].(map[string]any)["mcpServers"]) != "[map[connected:false name:docs reason:connect_failed toolCount:0]]" {
		t.Fatalf("marker %+v", us)
	}
	if strings.Contains(fmt.Sprint(before), "s3cret") {
		t.Fatal("a header value reached the wire")
	}
}

func TestActiveTaskInMarker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := h.connect(desktop)
	id := c.newSession(nil)
	h.model.Push(enginetest.Reply{Hold: true})
	req := c.request("session/prompt", textPrompt(id, "x"))
	require.Eventually(t, func() bool { return h.e.Stats().Running == 1 }, 10*time.Second, 2*time.Millisecond)
	d := h.connect(desktop)
	before := d.mustCall("session/resume", map[string]any{"sessionId": id, "cwd": "/"}, nil)
	us := updates(t, before)
	at := us[0].Update.Meta["org.agentos"].(map[string]any)["activeTask"].(map[string]any)
	if at["state"] != "running" || !strings.HasPrefix(at["taskId"].(string), "tsk_") {
		t.Fatalf("activeTask %v", at)
	}
	c.notify("session/cancel", map[string]any{"sessionId": id})
	c.response(req)
}

func storeEvent(seq int64, task, typ, body string) store.Event {
	return store.Event{Seq: seq, TaskID: task, Type: typ, Body: json.RawMessage(body)}
}

// TestNoGoroutineLeaks: connections that prompt, cancel and disconnect
// leave nothing running once the agent's connections and the engine are
// closed (not parallel: it counts the process's goroutines).
func TestNoGoroutineLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	h := newHarness(t, harnessOpts{})
	c := h.connect(desktop)
	id := c.newSession(nil)
	h.model.Push(enginetest.Text("hi"))
	c.mustCall("session/prompt", textPrompt(id, "x"), nil)
	h.model.Push(enginetest.Reply{Hold: true})
	req := c.request("session/prompt", textPrompt(id, "y"))
	require.Eventually(t, func() bool { return h.e.Stats().Running == 1 }, 10*time.Second, 2*time.Millisecond)
	c.notify("session/cancel", map[string]any{"sessionId": id})
	c.response(req)
	d := h.connect(desktop)
	h.model.Push(enginetest.Reply{Hold: true})
	d.request("session/prompt", textPrompt(id, "z"))
	require.Eventually(t, func() bool { return h.e.Stats().Running == 1 }, 10*time.Second, 2*time.Millisecond)
	d.conn.Close() // gone mid-turn: the task keeps running until shutdown
	c.conn.Close()
	h.shutdown()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines before, %d after:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestReplayOrdersQueuedPrompts: replay shows a prompt when its task
// starts, so one queued behind a running task follows that task's answer;
// a prompt cancelled while queued is still shown, unanswered.
func TestReplayOrdersQueuedPrompts(t *testing.T) {
	t.Parallel()
	m := newMapper(true, engine.CallerDesktop)
	var got []string
	for i, e := range []struct{ task, typ, body string }{
		{"t1", engine.EvTaskQueued, `{"text":"first"}`},
		{"t1", engine.EvTaskStarted, `{}`},
		{"t2", engine.EvTaskQueued, `{"text":"second"}`},
		{"t3", engine.EvTaskQueued, `{"text":"third"}`},
		{"t1", engine.EvMessageDelta, `{"text":"answer one"}`},
		{"t1", engine.EvTaskCompleted, `{}`},
		{"t3", engine.EvTaskCancelled, `{}`},
		{"t2", engine.EvTaskStarted, `{}`},
		{"t2", engine.EvMessageDelta, `{"text":"answer two"}`},
	} {
		for _, u := range m.updates(storeEvent(int64(i+1), e.task, e.typ, e.body)) {
			b, _ := json.Marshal(u)
			var x update
			json.Unmarshal(b, &x.Update)
			got = append(got, x.Update.Kind+":"+x.text())
		}
	}
	want := "[user_message_chunk:first agent_message_chunk:answer one user_message_chunk:third user_message_chunk:second agent_message_chunk:answer two]"
	if fmt.Sprint(got) != want {
		t.Fatalf("replay\n got %v\nwant %s", got, want)
	}
}
