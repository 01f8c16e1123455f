package acpclient

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/runtime/catalog"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFromRPC(t *testing.T) {
	t.Parallel()
	data := func(code string, details map[string]any) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"agentosCode": code, "retryable": false, "details": details})
		return b
	}
	tests := []struct {
		name    string
		code    int
		message string
		data    json.RawMessage
		want    *Error
	}{
		{"no model", -32051, "model_not_configured: no key", data("model_not_configured", nil), ErrNoModel},
		{"session", -32002, "session_not_found: no such session", data("session_not_found", nil), ErrSessionNotFound},
		{"invalid params", -32602, "invalid_params: bad", data("invalid_params", nil), ErrInvalidRequest},
		{"too large", -32602, "invalid_params: The prompt is longer than 16000 characters.", data("invalid_params", map[string]any{"reason": "too_large", "limit": 16000}), ErrTooLarge},
		{"payload", -32046, "payload_too_large: x", data("payload_too_large", nil), ErrTooLarge},
		{"unsupported", -32602, "unsupported: sse", data("unsupported", nil), ErrUnsupported},
		{"method not found", -32601, "Method not found", nil, ErrUnsupported},
		{"quota busy", -32048, "quota_exceeded: busy", data("quota_exceeded", map[string]any{"reason": "busy", "limit": 1}), ErrBusy},
		{"quota hourly", -32048, "quota_exceeded: hourly", data("quota_exceeded", map[string]any{"reason": "hourly", "retryAfterSeconds": 42}), ErrRateLimited},
		{"mcp servers", -32048, "quota_exceeded: servers", data("quota_exceeded", map[string]any{"reason": "mcp_servers"}), ErrInvalidRequest},
		{"runtime busy", -32047, "busy: queue full", data("busy", nil), ErrBusy},
		// A client library that drops data: the code comes from the prefix.
		{"prefix only", -32602, "session_not_found: no such session", nil, ErrSessionNotFound},
		{"prefix invalid", -32602, "invalid_params: toolScope", nil, ErrInvalidRequest},
		{"model error", -32051, "model_rate_limited: 429", data("model_rate_limited", nil), ErrFailed},
		{"garbage", -32603, "boom", nil, ErrFailed},
	}
	for _, tt := range tests {
		got := FromRPC(tt.code, tt.message, tt.data)
		if !errors.Is(got, tt.want) {
			t.Errorf("%s: %v is not %v", tt.name, got, tt.want)
		}
	}
	if e := FromRPC(-32048, "quota_exceeded: x", data("quota_exceeded", map[string]any{"reason": "hourly", "retryAfterSeconds": 42})); e.RetryAfterSeconds != 42 || e.Reason != "hourly" {
		t.Errorf("details: %+v", e)
	}
	if errors.Is(FromRPC(-32047, "busy: x", nil), ErrDenied) {
		t.Error("busy matched denied")
	}
}

func TestParseOpenLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		line   string
		code   Code
		reason string
		ok     bool
	}{
		{`{"jsonrpc":"2.0","method":"_org.agentos/channel","params":{"version":1,"state":"open"}}`, "", "", true},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32040,"message":"agentos.acp.denied: no","data":{"agentosCode":"not_open","reason":"denied"}}}`, Denied, "denied", false},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32040,"message":"agentos.acp.not_open: shared","data":{"agentosCode":"not_open","reason":"not_open"}}}`, Failed, "not_open", false},
		{`{"jsonrpc":"2.0","id":null,"error":{"code":-32040,"message":"x","data":{"reason":"authorization_pending","requestId":"r1"}}}`, AuthorizationPendingTimeout, "authorization_pending", false},
		{`{"jsonrpc":"2.0","id":1,"result":{}}`, Failed, "", false},
		{`not json`, Failed, "", false},
	}
	for _, tt := range tests {
		err := ParseOpenLine([]byte(tt.line))
		if tt.ok {
			if err != nil {
				t.Errorf("%s: %v", tt.line, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Code != tt.code || e.Reason != tt.reason {
			t.Errorf("%s: %+v", tt.line, err)
		}
	}
}

func TestRefFor(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("t", 70)
	longName := catalog.NameOf(catalog.ToolID{Plugin: "notes", Server: "main", Tool: long})
	collided, err := catalog.Assign([]catalog.ToolID{{Plugin: "a.b", Server: "s", Tool: "x"}, {Plugin: "a_b", Server: "s", Tool: "x"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		final string
		scope []ToolRef
		want  string
	}{
		{"plain", "mcp__mcptest__test__echo", []ToolRef{{"mcptest", "echo"}, {"mcptest", "stats"}}, "mcptest:echo"},
		{"out of scope", "mcp__mcptest__test__echo", []ToolRef{{"mcptest", "stats"}}, ""},
		{"no scope", "mcp__mcptest__test__echo", nil, ""},
		{"session tool", "ses__docs__search", []ToolRef{{"docs", "search"}}, ""},
		{"sanitized plugin", "mcp__my_notes__main__note_create", []ToolRef{{"my.notes", "note_create"}}, "my.notes:note_create"},
		{"server with underscores", "mcp__notes__main__srv__note_create", []ToolRef{{"notes", "note_create"}}, "notes:note_create"},
		{"hashed long name", longName, []ToolRef{{"notes", long}, {"calendar", "event_create"}}, "notes:" + long},
		{"collision suffix", collided[catalog.ToolID{Plugin: "a.b", Server: "s", Tool: "x"}], []ToolRef{{"a.b", "x"}}, "a.b:x"},
		{"collision other", collided[catalog.ToolID{Plugin: "a_b", Server: "s", Tool: "x"}], []ToolRef{{"a_b", "x"}}, "a_b:x"},
		{"ambiguous long", longName, []ToolRef{{"notes", long}, {"notes", long + "x"}}, ""},
	}
	for _, tt := range tests {
		got := refFor(tt.final, tt.scope)
		s := ""
		if got != nil {
			s = got.String()
		}
		if s != tt.want {
			t.Errorf("%s: refFor(%q) = %q, want %q", tt.name, tt.final, s, tt.want)
		}
	}
}

func TestToolEvents(t *testing.T) {
	t.Parallel()
	calls := map[string]*toolState{}
	title := "mcp__mcptest__test__echo"
	pending, inProgress, failed := "pending", "in_progress", "failed"
	scope := []ToolRef{{"mcptest", "echo"}}
	ev := toolEvent(calls, update{toolID: "c1", title: &title, status: &pending, rawInput: json.RawMessage(`{"text":"hi"}`)}, scope)
	if ev.Status != ToolPendingApproval || ev.Tool != "echo" || ev.Ref == nil || ev.ArgumentsJSON != `{"text":"hi"}` {
		t.Fatalf("pending = %+v", ev)
	}
	if ev = toolEvent(calls, update{toolID: "c1", status: &inProgress}, scope); ev.Status != ToolRunning || ev.Tool != "echo" {
		t.Fatalf("running = %+v", ev)
	}
	ev = toolEvent(calls, update{toolID: "c1", status: &failed, content: "[agentos:tool_denied] The user declined this tool call."}, scope)
	if ev.Status != ToolDenied || !strings.HasPrefix(ev.ResultJSON, "[agentos:tool_denied]") {
		t.Fatalf("denied = %+v", ev)
	}
	ev = toolEvent(calls, update{toolID: "c2", title: &title, status: &failed, content: "[agentos:tool_failed] no"}, nil)
	if ev.Status != ToolFailed || ev.Ref != nil || ev.Tool != title {
		t.Fatalf("failed = %+v", ev)
	}
}

// The runtime's truncation marker (runtime/acp RawInputTruncated) becomes
// ArgumentsTruncated with the real length; plain arguments do not.
func TestToolEventTruncatedArguments(t *testing.T) {
	t.Parallel()
	title := "mcp__mcptest__test__echo"
	tests := []struct {
		name      string
		raw       string
		args      string
		truncated bool
		chars     int
	}{
		{"plain", `{"text":"hi"}`, `{"text":"hi"}`, false, 0},
		{"marker", `{"agentosTruncated":{"originalChars":100013,"limit":16384},"preview":"{\"text\":\"aaa"}`, `{"text":"aaa`, true, 100013},
		{"a tool's own key named preview", `{"preview":"x"}`, `{"preview":"x"}`, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ev := toolEvent(map[string]*toolState{}, update{toolID: "c1", title: &title, rawInput: json.RawMessage(tc.raw)}, nil)
			if ev.ArgumentsJSON != tc.args || ev.ArgumentsTruncated != tc.truncated || ev.ArgumentsChars != tc.chars {
				t.Fatalf("got %+v", ev)
			}
		})
	}
}

// TestToolEventsNameFromMeta: a call is named by
// _meta."org.agentos".toolName (the title is the tool's own, for people),
// a title-only tool_call (older runtimes) still names it, and a consent
// status line (_meta consent, desktop callers only) never becomes the
// result — an app gets what it always got.
func TestToolEventsNameFromMeta(t *testing.T) {
	t.Parallel()
	parse := func(line string) update {
		u, err := parseUpdate(json.RawMessage(line))
		require.NoError(t, err)
		return u
	}
	scope := []ToolRef{{"mcptest", "echo"}}
	calls := map[string]*toolState{}
	ev := toolEvent(calls, parse(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Echo","kind":"read","status":"pending",
		"rawInput":{"text":"hi"},"_meta":{"org.agentos":{"toolName":"mcp__mcptest__test__echo"}}}}`), scope)
	assert.Equal(t, "echo", ev.Tool)
	require.NotNil(t, ev.Ref)
	assert.Equal(t, "mcptest:echo", ev.Ref.String())
	assert.Equal(t, ToolPendingApproval, ev.Status)

	ev = toolEvent(calls, parse(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"pending",
		"content":[{"type":"content","content":{"type":"text","text":"Waiting for approval on the phone (AgentOS asks its owner)."}}],
		"_meta":{"org.agentos":{"consent":"pending"}}}}`), scope)
	assert.Equal(t, ToolPendingApproval, ev.Status)
	assert.Empty(t, ev.ResultJSON, "a status line is not the result")
	assert.Equal(t, "echo", ev.Tool)

	ev = toolEvent(calls, parse(`{"sessionId":"s","update":{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed",
		"content":[{"type":"content","content":{"type":"text","text":"{\"echo\":\"hi\"}"}}]}}`), scope)
	assert.Equal(t, ToolCompleted, ev.Status)
	assert.Equal(t, `{"echo":"hi"}`, ev.ResultJSON)

	// Without a scope the final name is the tool.
	ev = toolEvent(map[string]*toolState{}, parse(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c2","title":"Create a note",
		"_meta":{"org.agentos":{"toolName":"mcp__notes__notes__note_create"}}}}`), nil)
	assert.Equal(t, "mcp__notes__notes__note_create", ev.Tool)
	assert.Nil(t, ev.Ref)

	// An older runtime: the name is the title.
	ev = toolEvent(map[string]*toolState{}, parse(`{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"c3","title":"mcp__mcptest__test__echo"}}`), scope)
	assert.Equal(t, "echo", ev.Tool)
}
