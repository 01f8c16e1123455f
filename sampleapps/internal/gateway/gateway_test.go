package gateway

import (
	"context"
	"errors"
	"testing"

	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
	"github.com/agentoslab/agentlab/sampleapps/notes"
)

// Every SDK error reaches the report under the SDK's own name, with a
// sentence and the SDK error kept for errors.Is.
func TestAgentError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		kind notes.ErrorKind
	}{
		{&acpclient.Error{Code: acpclient.NotInstalled}, notes.NotInstalled},
		{&acpclient.Error{Code: acpclient.AuthorizationPendingTimeout, RequestID: "r1"}, notes.AuthorizationPendingTimeout},
		{&acpclient.Error{Code: acpclient.Denied}, notes.Denied},
		{&acpclient.Error{Code: acpclient.NoModel, AgentosCode: "model_not_configured"}, notes.NoModel},
		{&acpclient.Error{Code: acpclient.Busy}, notes.Busy},
		{&acpclient.Error{Code: acpclient.RateLimited, RetryAfterSeconds: 42}, notes.RateLimited},
		{&acpclient.Error{Code: acpclient.TooLarge}, notes.TooLarge},
		{&acpclient.Error{Code: acpclient.Disconnected}, notes.Disconnected},
		{&acpclient.Error{Code: acpclient.SessionNotFound}, notes.SessionNotFound},
		{&acpclient.Error{Code: acpclient.InvalidRequest}, notes.InvalidRequest},
		{&acpclient.Error{Code: acpclient.Unsupported}, notes.Unsupported},
		{&acpclient.Error{Code: acpclient.Failed, Message: "prompt cancelled"}, notes.Failed},
		{&acpclient.Error{Code: "SOMETHING_NEW"}, notes.Failed},
		{errors.New("not from the SDK"), notes.Failed},
	}
	for _, tt := range tests {
		got := AgentError(tt.err)
		var ae *notes.AgentError
		if !errors.As(got, &ae) || ae.Kind != tt.kind || ae.Detail == "" || !errors.Is(got, tt.err) {
			t.Errorf("AgentError(%v) = %#v, want kind %s", tt.err, got, tt.kind)
		}
		if !errors.Is(got, &notes.AgentError{Kind: tt.kind}) {
			t.Errorf("AgentError(%v) does not match kind %s with errors.Is", tt.err, tt.kind)
		}
	}
	if d := AgentError(&acpclient.Error{Code: acpclient.RateLimited, RetryAfterSeconds: 42}).(*notes.AgentError).Detail; d != "This app has sent AgentOS too many requests; try again in 42 s." {
		t.Errorf("rate limit detail %q", d)
	}
	// Every SDK code has its own row.
	for _, c := range []acpclient.Code{acpclient.NotInstalled, acpclient.AuthorizationPendingTimeout, acpclient.Denied, acpclient.NoModel,
		acpclient.Busy, acpclient.RateLimited, acpclient.TooLarge, acpclient.Disconnected, acpclient.SessionNotFound,
		acpclient.InvalidRequest, acpclient.Unsupported, acpclient.Failed} {
		if k, ok := kinds[c]; !ok || string(k.kind) != string(c) {
			t.Errorf("code %s maps to %+v", c, k)
		}
	}
}

// SDK events become report events: text, tool calls with their Ref (raw
// name) or final name, and Done's stop reason; thoughts are dropped.
func TestEvent(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   acpclient.Event
		want notes.Event
		ok   bool
	}{
		{"text", acpclient.Text{Text: "好的"}, notes.Event{Kind: notes.EventText, Text: "好的"}, true},
		{"in scope", acpclient.ToolCall{ID: "c1", Tool: "event_create", Status: acpclient.ToolCompleted, ArgumentsJSON: `{"title":"x"}`,
			ResultJSON: `{"id":"local:1"}`, Ref: &acpclient.ToolRef{Plugin: "calendar", Tool: "event_create"}},
			notes.Event{Kind: notes.EventToolCall, ToolCallID: "c1", Tool: "event_create", Status: notes.StatusCompleted,
				ArgumentsJSON: `{"title":"x"}`, ResultJSON: `{"id":"local:1"}`, Ref: &notes.ToolScopeEntry{Plugin: "calendar", Tool: "event_create"}}, true},
		{"out of scope", acpclient.ToolCall{ID: "c2", Tool: "mcp__notes__notes__note_delete", Status: acpclient.ToolDenied},
			notes.Event{Kind: notes.EventToolCall, ToolCallID: "c2", Tool: "mcp__notes__notes__note_delete", Status: notes.StatusDenied}, true},
		{"pending", acpclient.ToolCall{ID: "c3", Tool: "alarm_create", Status: acpclient.ToolPendingApproval},
			notes.Event{Kind: notes.EventToolCall, ToolCallID: "c3", Tool: "alarm_create", Status: notes.StatusPendingApproval}, true},
		{"done", acpclient.Done{StopReason: "end_turn", TaskID: "t1"}, notes.Event{Kind: notes.EventDone, StopReason: "end_turn"}, true},
		{"thought", acpclient.Thought{Text: "hmm"}, notes.Event{}, false},
		{"history", acpclient.UserMessage{Text: "hi"}, notes.Event{}, false},
	}
	for _, tt := range tests {
		got, ok := Event(tt.in)
		if ok != tt.ok || got.Kind != tt.want.Kind || got.Text != tt.want.Text || got.ToolCallID != tt.want.ToolCallID ||
			got.Tool != tt.want.Tool || got.Status != tt.want.Status || got.ArgumentsJSON != tt.want.ArgumentsJSON ||
			got.ResultJSON != tt.want.ResultJSON || got.StopReason != tt.want.StopReason ||
			(got.Ref == nil) != (tt.want.Ref == nil) || (got.Ref != nil && *got.Ref != *tt.want.Ref) {
			t.Errorf("%s: Event(%+v) = %+v %v, want %+v %v", tt.name, tt.in, got, ok, tt.want, tt.ok)
		}
	}
	// The SDK's statuses are the report's, name for name.
	for _, s := range []acpclient.ToolStatus{acpclient.ToolPendingApproval, acpclient.ToolRunning, acpclient.ToolCompleted, acpclient.ToolDenied, acpclient.ToolFailed} {
		if ev, _ := Event(acpclient.ToolCall{Status: s}); string(ev.Status) != string(s) {
			t.Errorf("status %s became %s", s, ev.Status)
		}
	}
}

// Without a runtime on the socket the round fails at once as
// NOT_INSTALLED, before any event.
func TestScheduleNotInstalled(t *testing.T) {
	t.Parallel()
	g := New(&Options{SocketName: "@gateway-test-nobody-listens"})
	events := 0
	stop, err := g.Schedule(context.Background(), "hi", nil, func(notes.Event) { events++ })
	if !errors.Is(err, &notes.AgentError{Kind: notes.NotInstalled}) || stop != "" || events != 0 {
		t.Fatalf("stop %q err %v events %d", stop, err, events)
	}
	if g.GatewayName() != "agentos" {
		t.Error(g.GatewayName())
	}
	if FromEnv(func(k string) string { return map[string]string{EnvCallerSocket: "@x", EnvPackage: "org.p"}[k] }, nil).o.SocketName != "@x" {
		t.Error("FromEnv ignores the socket")
	}
}
