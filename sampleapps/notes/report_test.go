package notes

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// scriptedAgent replays events and returns a fixed outcome. With block
// set it waits for ctx after the events, like a round that never ends.
type scriptedAgent struct {
	events []Event
	stop   string
	err    error
	block  bool

	mu     sync.Mutex
	prompt string
	scope  []ToolScopeEntry
	calls  int
}

func (s *scriptedAgent) Schedule(ctx context.Context, prompt string, scope []ToolScopeEntry, onEvent func(Event)) (string, error) {
	s.mu.Lock()
	s.prompt, s.scope = prompt, scope
	s.calls++
	s.mu.Unlock()
	for _, ev := range s.events {
		onEvent(ev)
	}
	if s.block {
		<-ctx.Done()
		return "cancelled", nil
	}
	return s.stop, s.err
}

func (s *scriptedAgent) GatewayName() string { return "fake" }

func tc(id, tool string, st ToolStatus) Event {
	return Event{Kind: EventToolCall, ToolCallID: id, Tool: tool, Status: st}
}

func tcRef(id, plugin, tool string, st ToolStatus) Event {
	return Event{Kind: EventToolCall, ToolCallID: id, Tool: tool, Ref: &ToolScopeEntry{Plugin: plugin, Tool: tool}, Status: st}
}

func TestRunReport(t *testing.T) {
	t.Parallel()
	text := func(s string) Event { return Event{Kind: EventText, Text: s} }
	done := Event{Kind: EventDone, StopReason: "end_turn"}
	tests := []struct {
		name      string
		agent     *scriptedAgent
		ctx       func() (context.Context, context.CancelFunc)
		state     string
		errKind   string
		created   Created
		statuses  []string
		text      string
		interrupt bool
		timedOut  bool
		stopped   bool
	}{
		{
			name: "completed creations by ref and by final name",
			agent: &scriptedAgent{stop: "end_turn", events: []Event{
				{Kind: EventWaiting}, {Kind: EventRunning}, text("好的，"),
				tcRef("1", "calendar", "event_create", StatusPendingApproval), tcRef("1", "calendar", "event_create", StatusRunning),
				tcRef("1", "calendar", "event_create", StatusCompleted),
				tc("2", "mcp__alarm__alarm__alarm_create", StatusPendingApproval), tc("2", "mcp__alarm__alarm__alarm_create", StatusCompleted),
				tcRef("3", "todo", "todo_create", StatusCompleted),
				text("已创建。"), done,
			}},
			state: StateDone, created: Created{Events: 1, Alarms: 1, Todos: 1},
			statuses: []string{ItemCreated, ItemCreated, ItemCreated}, text: "好的，已创建。",
		},
		{
			name: "denied and failed counted separately",
			agent: &scriptedAgent{stop: "end_turn", events: []Event{
				tcRef("a", "calendar", "event_create", StatusPendingApproval), tcRef("a", "calendar", "event_create", StatusDenied),
				tcRef("b", "alarm", "alarm_create", StatusRunning), tcRef("b", "alarm", "alarm_create", StatusFailed),
				tc("c", "mcp__notes__notes__note_delete", StatusFailed),
				done,
			}},
			state: StateDone, created: Created{Denied: 1, Failed: 2},
			statuses: []string{ItemDenied, ItemFailed, ItemFailed},
		},
		{
			name: "terminal status does not regress",
			agent: &scriptedAgent{stop: "end_turn", events: []Event{
				tcRef("a", "calendar", "event_create", StatusCompleted), tcRef("a", "calendar", "event_create", StatusRunning), done,
			}},
			state: StateDone, created: Created{Events: 1}, statuses: []string{ItemCreated},
		},
		{
			name: "other tools are not creations",
			agent: &scriptedAgent{stop: "end_turn", events: []Event{
				tc("x", "mcp__calendar__calendar__event_delete", StatusCompleted),
				tc("y", "mcp__notes__notes__event_create", StatusCompleted), // wrong app for the name
				done,
			}},
			state: StateDone, statuses: []string{ItemCreated, ItemCreated},
		},
		{
			name: "cancelled round leaves open calls cancelled",
			agent: &scriptedAgent{stop: "cancelled", events: []Event{
				tcRef("a", "calendar", "event_create", StatusPendingApproval),
				tcRef("b", "alarm", "alarm_create", StatusRunning),
				{Kind: EventDone, StopReason: "cancelled"},
			}},
			state: StateDone, statuses: []string{ItemCancelled, ItemCancelled}, interrupt: true,
		},
		{
			name: "disconnect mid-run",
			agent: &scriptedAgent{err: &AgentError{Kind: Disconnected, Detail: "AgentOS went away."}, events: []Event{
				{Kind: EventRunning}, tcRef("a", "calendar", "event_create", StatusCompleted), tcRef("b", "todo", "todo_create", StatusPendingApproval),
			}},
			state: StateError, errKind: "DISCONNECTED", created: Created{Events: 1},
			statuses: []string{ItemCreated, ItemCancelled}, interrupt: true,
		},
		{
			name:  "authorization denied before running",
			agent: &scriptedAgent{err: &AgentError{Kind: Denied, Detail: "The user did not allow this app."}, events: []Event{{Kind: EventWaiting}}},
			state: StateError, errKind: "DENIED", statuses: []string{},
		},
		{
			name:  "plain error is FAILED",
			agent: &scriptedAgent{err: errors.New("boom")},
			state: StateError, errKind: "FAILED", statuses: []string{},
		},
		{
			name:  "timeout",
			agent: &scriptedAgent{block: true, events: []Event{{Kind: EventRunning}, tcRef("a", "calendar", "event_create", StatusPendingApproval)}},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 10*time.Millisecond)
			},
			state: StateError, errKind: "TIMEOUT", statuses: []string{ItemCancelled}, interrupt: true, timedOut: true,
		},
		{
			name:  "stopped",
			agent: &scriptedAgent{block: true, events: []Event{{Kind: EventRunning}}},
			ctx: func() (context.Context, context.CancelFunc) {
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				return ctx, func() {}
			},
			state: StateError, errKind: "STOPPED", statuses: []string{}, interrupt: true, stopped: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			rep := RunAgent(ctx, tt.agent, "p", ScheduleScope)
			if rep.State != tt.state || rep.CurrentState != tt.state || rep.Pending {
				t.Errorf("state %q/%q pending %v, want %q", rep.State, rep.CurrentState, rep.Pending, tt.state)
			}
			gotKind := ""
			if rep.Error != nil {
				gotKind = *rep.Error
			}
			if gotKind != tt.errKind {
				t.Errorf("error %q, want %q", gotKind, tt.errKind)
			}
			if rep.Created != tt.created {
				t.Errorf("created %+v, want %+v", rep.Created, tt.created)
			}
			var st []string
			for _, it := range rep.Items {
				st = append(st, it.Status)
			}
			if len(st) != len(tt.statuses) {
				t.Fatalf("items %v, want %v", st, tt.statuses)
			}
			for i := range st {
				if st[i] != tt.statuses[i] {
					t.Errorf("item %d status %q, want %q", i, st[i], tt.statuses[i])
				}
			}
			if rep.AgentText != tt.text || rep.Interrupted != tt.interrupt || rep.TimedOut != tt.timedOut || rep.Stopped != tt.stopped {
				t.Errorf("text %q interrupted %v timed_out %v stopped %v", rep.AgentText, rep.Interrupted, rep.TimedOut, rep.Stopped)
			}
			if rep.Gateway != "fake" {
				t.Errorf("gateway %q", rep.Gateway)
			}
		})
	}
}

func TestRecorderSnapshotAndBounds(t *testing.T) {
	t.Parallel()
	r := NewRecorder("fake")
	if s := r.Snapshot(); s.CurrentState != StateChecking || !s.Pending || s.State != StateRunning {
		t.Errorf("initial %+v", s)
	}
	r.Handle(Event{Kind: EventWaiting})
	if s := r.Snapshot(); s.CurrentState != StateWaitingAuthorization {
		t.Errorf("waiting %+v", s)
	}
	for i := range maxTrackedCalls + 10 {
		r.Handle(tcRef(string(rune('a'+i%26))+string(rune(i)), "todo", "todo_create", StatusCompleted))
	}
	big := make([]byte, maxAgentText+100)
	for i := range big {
		big[i] = 'x'
	}
	r.Handle(Event{Kind: EventText, Text: string(big)})
	r.Handle(Event{Kind: EventToolCall, ToolCallID: "z", Tool: "todo_create", ArgumentsJSON: "{not json", ResultJSON: string(big)})
	rep := r.Finish("end_turn", nil, nil)
	if len(rep.Items) != maxReportItems || rep.ItemsTotal != maxTrackedCalls || rep.Created.Todos != maxTrackedCalls {
		t.Errorf("items %d total %d todos %d", len(rep.Items), rep.ItemsTotal, rep.Created.Todos)
	}
	if len(rep.AgentText) != maxAgentText {
		t.Errorf("agent text %d", len(rep.AgentText))
	}
}

func TestRawToolName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		tool        string
		ref         *ToolScopeEntry
		plugin, raw string
		kind        string
	}{
		{"event_create", &ToolScopeEntry{"calendar", "event_create"}, "calendar", "event_create", "event"},
		{"mcp__calendar__calendar__event_create", nil, "calendar", "event_create", "event"},
		{"mcp__alarm__alarm__alarm_create", nil, "alarm", "alarm_create", "alarm"},
		{"mcp__todo__todo__todo_create", nil, "todo", "todo_create", "todo"},
		{"todo_create", nil, "", "todo_create", "todo"},
		{"mcp__evil__evil__todo_create", nil, "evil", "todo_create", "other"},
		{"mcp__broken", nil, "", "mcp__broken", "other"},
		{"ses__orders__event_create", nil, "", "ses__orders__event_create", "other"},
		{"read_skill", nil, "", "read_skill", "other"},
	}
	for _, tt := range tests {
		p, r := RawToolName(tt.tool, tt.ref)
		if p != tt.plugin || r != tt.raw || ToolKind(p, r) != tt.kind {
			t.Errorf("%s: %q %q %q", tt.tool, p, r, ToolKind(p, r))
		}
	}
}
