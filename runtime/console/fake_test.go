package console

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// hostile is markup a third party controls (tool arguments, app labels,
// plugin names, SDUI text): it must reach the page as text.
const hostile = `<script>alert(1)</script><img src=x onerror=alert(2)>`

type call struct {
	UID    int
	Method string
	Params string
}

// fakeAdmin answers admin methods with canned results and records calls.
type fakeAdmin struct {
	mu      sync.Mutex
	results map[string]string
	calls   []call
}

func (f *fakeAdmin) Invoke(_ context.Context, peer transport.Cred, method string, params any) (json.RawMessage, error) {
	b, _ := json.Marshal(params)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, call{peer.UID, method, string(b)})
	r, ok := f.results[method]
	if !ok {
		return nil, errcode.Newf(errcode.Unsupported, "unknown admin method %q", method)
	}
	return json.RawMessage(r), nil
}

func (f *fakeAdmin) called(method string) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []call
	for _, c := range f.calls {
		if c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

func js(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// card is a pending consent card as consent.pending returns it.
func card(id string, n int) map[string]any {
	return map[string]any{
		"requestId": id, "sessionId": "ses_1", "taskId": "tsk_1", "title": "要允许「Create " + hostile + "」吗？",
		"initiatorLine": "由 Notes" + hostile + " 发起（org.agentos.sample.notes）", "caller": map[string]any{"kind": "APP", "uid": 10123, "packageName": "org.agentos.sample.notes"},
		"sourceLine": "来自插件「notes」 · 服务器「notes」", "toolDisplayName": "Create a note", "toolName": "mcp__notes__notes__note_create",
		"argumentsPreview": `{"title":"` + hostile + `"}`, "risk": "WRITE", "severity": "ELEVATED", "riskLabel": "会修改数据", "riskDescription": "changes data",
		"options":         []map[string]any{{"choice": "ALLOW_ONCE", "label": "允许一次"}, {"choice": "ALLOW_FOR_SESSION", "label": "本次对话内不再询问"}, {"choice": "DENY", "label": "拒绝"}},
		"createdAtMillis": 0, "deadlineMillis": time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC).UnixMilli(), "timeoutMillis": 60000,
		"queuePosition": n, "queueSize": 2,
	}
}

func fullAdmin(cards int) *fakeAdmin {
	var pending []map[string]any
	for i := range cards {
		id := "req-" + string(rune('a'+i))
		pending = append(pending, map[string]any{"requestId": id, "remainingMs": 60000, "card": card(id, i)})
	}
	if pending == nil {
		pending = []map[string]any{}
	}
	return &fakeAdmin{results: map[string]string{
		"consent.pending": js(pending),
		"consent.respond": `{"accepted":true}`,
		"callers.list": js(map[string]any{
			"callers": []map[string]any{{"packageName": "org.example.evil", "label": "Evil" + hostile, "state": "allowed", "usage": map[string]any{"promptsTotal": 3, "promptsLastHour": 1, "activeTasks": 1}}},
			"cards": []map[string]any{{"requestId": "auth-1", "title": "允许「Evil" + hostile + "」使用 AgentOS 吗？", "label": "Evil" + hostile,
				"packageName": "org.example.evil", "digestPrefix": "0123456789ab", "explanation": "wants to use AgentOS", "options": []string{"ALLOW", "DENY"},
				"deadlineMillis": time.Date(2026, 1, 1, 0, 1, 40, 0, time.UTC).UnixMilli()}},
			"health": "ok", "channels": map[string]any{"open": 0}, "revocations": []any{},
		}),
		"callers.answer": `{"accepted":true}`,
		"callers.revoke": `{"package":"org.example.evil","state":"denied"}`,
		"plugins.list": js([]map[string]any{{"id": "notes" + hostile, "package": "org.agentos.sample.notes", "displayName": "Notes " + hostile, "status": "ok",
			"enabled": true, "problems": []map[string]any{{"code": "bad", "message": hostile}}, "servers": []any{}}}),
		"plugins.tools":    js([]map[string]any{{"name": "note_create", "title": hostile}}),
		"plugins.policy":   `{"health":"ok"}`,
		"sessions.list":    js([]map[string]any{{"id": "ses_1", "title": hostile, "callerKind": "APP", "owner": "app:x", "state": "idle"}}),
		"sessions.history": js([]map[string]any{{"seq": 1, "type": "prompt", "at": 1, "body": map[string]any{"text": hostile}}}),
		"desktop.status":   `{"enabled":false}`,
		"desktop.list":     js([]map[string]any{{"id": "pc-1", "name": hostile}}),
		"desktop.code":     `{"code":"416053","expiresInMs":300000}`,
		"model.show":       js(map[string]any{"configured": true, "provider": "openai", "model": "gpt" + hostile, "keySet": true, "usable": true}),
		"model.set":        `{"configured":true}`,
		"quota.show":       `{"limits":{"maxPromptChars":16000,"maxConcurrent":1,"maxPerHour":30,"windowMs":3600000}}`,
		"safemode.enter":   `{"safeMode":true,"note":"refusing new prompts"}`,
		"safemode.leave":   `{"safeMode":true,"restart":true,"note":"it restarts the runtime normally"}`,
		"status":           js(map[string]any{"version": "test", "safeMode": false, "tasks": map[string]any{"running": 0}, "platform": map[string]any{"zone": hostile}}),
		methodACIList:      js([]map[string]any{{"package": "org.example.aci", "service": "console" + hostile, "capabilities": []string{"console_ui"}}}),
		methodACIConsole: js(map[string]any{"package": "org.example.aci", "service": "console", "snapshot": map[string]any{"title": "ACI " + hostile, "updatedAt": 1, "schema_version": "aci-sdui-v1", "components": []map[string]any{
			{"type": "heading", "text": hostile}, {"type": "text", "text": hostile}, {"type": "card", "title": hostile, "body": hostile},
			{"type": "button", "action": "go", "label": hostile}, {"type": "input", "key": "q", "label": hostile, "action": "set", "value": hostile},
			{"type": "listitem", "text": hostile}, {"type": "divider"}}}}),
	}}
}

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

const testToken = "test-token-0123456789"

func newTestServer(t testing.TB, a Admin) (*Server, *clocktest.Clock) {
	t.Helper()
	clk := clocktest.New(epoch)
	s, err := New(&Options{Name: "@unused", RuntimeUID: 10099, Admin: a, Token: testToken, Clock: clk})
	require.NoError(t, err)
	return s, clk
}

// req is one request through the guard, as a peer with uid.
type req struct {
	method, path string
	uid          int
	host, origin string
	noCookie     bool
	form         url.Values
}

func (s *Server) do(t testing.TB, r req) *httptest.ResponseRecorder {
	t.Helper()
	if r.method == "" {
		r.method = http.MethodGet
	}
	if r.host == "" {
		r.host = "127.0.0.1:8765"
	}
	var body *strings.Reader
	if r.form != nil {
		body = strings.NewReader(r.form.Encode())
	} else {
		body = strings.NewReader("")
	}
	hr := httptest.NewRequest(r.method, r.path, body)
	hr.Host = r.host
	if r.form != nil {
		hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if r.origin != "" {
		hr.Header.Set("Origin", r.origin)
	}
	if !r.noCookie {
		hr.AddCookie(&http.Cookie{Name: cookieName, Value: s.token})
	}
	if r.uid >= 0 {
		hr = hr.WithContext(withPeer(hr.Context(), transport.Cred{UID: r.uid, PID: 1}))
	}
	w := httptest.NewRecorder()
	s.handler.ServeHTTP(w, hr)
	return w
}

// post is a form as the console's own page sends it.
func (s *Server) post(t testing.TB, form url.Values) *httptest.ResponseRecorder {
	t.Helper()
	form.Set("csrf", s.csrf)
	return s.do(t, req{method: http.MethodPost, path: "/act", origin: "http://127.0.0.1:8765", form: form})
}
