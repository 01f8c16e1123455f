package notes

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"unicode/utf8"
)

// Report bounds: a report crosses a process boundary (printed for the lab).
const (
	maxReportItems  = 50
	maxTrackedCalls = 1000
	maxAgentText    = 16000
	maxItemArgs     = 4000
	maxItemResult   = 1000
	maxErrorDetail  = 500
)

// Panel states of a round (spec §9.3: Ready → Checking →
// WaitingAuthorization → Running → Done | Error).
const (
	StateChecking             = "checking"
	StateWaitingAuthorization = "waiting_authorization"
	StateRunning              = "running"
	StateDone                 = "done"
	StateError                = "error"
)

// Item statuses in a report.
const (
	ItemAwaitingApproval = "awaiting_approval"
	ItemCreating         = "creating"
	ItemCreated          = "created"
	ItemDenied           = "denied"
	ItemFailed           = "failed"
	ItemCancelled        = "cancelled"
)

// Created counts the outcome of a round: completed creations per kind, and
// denied and failed calls of any tool.
type Created struct {
	Events int `json:"events"`
	Alarms int `json:"alarms"`
	Todos  int `json:"todos"`
	Denied int `json:"denied"`
	Failed int `json:"failed"`
}

// Item is one tool call of a round.
type Item struct {
	ID     string `json:"id"`
	Kind   string `json:"kind"` // event, alarm, todo or other
	Tool   string `json:"tool"` // raw tool name
	Plugin string `json:"plugin,omitempty"`
	Status string `json:"status"`
	// Arguments is the call's JSON arguments when they are valid JSON and
	// short enough to report.
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    string          `json:"result,omitempty"`
}

// RunReport is what a "schedule with AgentOS" round did.
type RunReport struct {
	// State is "running" while the round goes on, then "done" or "error".
	State string `json:"state"`
	// CurrentState is the panel state machine's state.
	CurrentState string `json:"current_state"`
	// Pending is true while the round has not ended.
	Pending bool `json:"pending"`
	// TimedOut: the app's own time limit ended the round.
	TimedOut bool   `json:"timed_out"`
	Gateway  string `json:"gateway"`
	// Stopped: the user (or the debug caller) stopped the round.
	Stopped     bool    `json:"stopped"`
	StopReason  string  `json:"stop_reason"`
	Error       *string `json:"error"`
	ErrorDetail *string `json:"error_detail"`
	// Interrupted: the round started but did not reach a normal end.
	Interrupted bool    `json:"interrupted"`
	Created     Created `json:"created"`
	Items       []Item  `json:"items"`
	// ItemsTotal counts every tool call, also those beyond the listed items.
	ItemsTotal int    `json:"items_total"`
	AgentText  string `json:"agent_text"`
}

// Recorder builds a RunReport from a round's events. It is safe for
// concurrent use; Handle is the onEvent of Agent.Schedule.
type Recorder struct {
	gateway string

	mu       sync.Mutex // guards the fields below
	state    string
	started  bool
	calls    map[string]*Item
	order    []string
	text     strings.Builder
	textLen  int
	doneStop string
}

// NewRecorder starts a report for a round through gateway.
func NewRecorder(gateway string) *Recorder {
	return &Recorder{gateway: gateway, state: StateChecking, calls: map[string]*Item{}}
}

// Handle records one event.
func (r *Recorder) Handle(ev Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch ev.Kind {
	case EventWaiting:
		if !r.started {
			r.state = StateWaitingAuthorization
		}
	case EventRunning:
		r.start()
	case EventText:
		r.start()
		r.appendText(ev.Text)
	case EventToolCall:
		r.start()
		r.toolCall(ev)
	case EventDone:
		r.doneStop = ev.StopReason
	}
}

func (r *Recorder) start() {
	r.started = true
	r.state = StateRunning
}

func (r *Recorder) appendText(s string) {
	if r.textLen >= maxAgentText {
		return
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	if n := utf8.RuneCountInString(s); r.textLen+n > maxAgentText {
		s = cut(s, maxAgentText-r.textLen)
	}
	r.text.WriteString(s)
	r.textLen += utf8.RuneCountInString(s)
}

func (r *Recorder) toolCall(ev Event) {
	it, ok := r.calls[ev.ToolCallID]
	if !ok {
		if len(r.calls) >= maxTrackedCalls {
			return
		}
		plugin, tool := RawToolName(ev.Tool, ev.Ref)
		it = &Item{ID: ev.ToolCallID, Kind: ToolKind(plugin, tool), Tool: tool, Plugin: plugin, Status: ItemAwaitingApproval}
		r.calls[ev.ToolCallID] = it
		r.order = append(r.order, ev.ToolCallID)
	}
	if st, ok := itemStatus(ev.Status); ok && !terminal(it.Status) {
		it.Status = st
	}
	if ev.ArgumentsJSON != "" && len(ev.ArgumentsJSON) <= maxItemArgs && json.Valid([]byte(ev.ArgumentsJSON)) {
		it.Arguments = json.RawMessage(ev.ArgumentsJSON)
	}
	if ev.ResultJSON != "" {
		it.Result = cut(strings.ToValidUTF8(ev.ResultJSON, "\uFFFD"), maxItemResult)
	}
}

func itemStatus(s ToolStatus) (string, bool) {
	switch s {
	case StatusPendingApproval:
		return ItemAwaitingApproval, true
	case StatusRunning:
		return ItemCreating, true
	case StatusCompleted:
		return ItemCreated, true
	case StatusDenied:
		return ItemDenied, true
	case StatusFailed:
		return ItemFailed, true
	}
	return "", false
}

func terminal(status string) bool {
	return status == ItemCreated || status == ItemDenied || status == ItemFailed || status == ItemCancelled
}

// RawToolName returns the plugin and raw tool name of a tool call: from
// the SDK's ref when the call maps to the session's toolScope, else parsed
// from a final name mcp__<plugin>__<server>__<tool>; otherwise the name as
// given with no plugin.
func RawToolName(tool string, ref *ToolScopeEntry) (plugin, raw string) {
	if ref != nil {
		return ref.Plugin, ref.Tool
	}
	if rest, ok := strings.CutPrefix(tool, "mcp__"); ok {
		if parts := strings.Split(rest, "__"); len(parts) == 3 && parts[0] != "" && parts[2] != "" {
			return parts[0], parts[2]
		}
	}
	return "", tool
}

// ToolKind classifies a creation tool: event, alarm, todo, or other. A
// known plugin must match the tool's app.
func ToolKind(plugin, tool string) string {
	kinds := map[string][2]string{"event_create": {"calendar", "event"}, "alarm_create": {"alarm", "alarm"}, "todo_create": {"todo", "todo"}}
	if k, ok := kinds[tool]; ok && (plugin == "" || plugin == k[0]) {
		return k[1]
	}
	return "other"
}

// Snapshot returns the report of a round still in progress.
func (r *Recorder) Snapshot() RunReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := r.reportLocked()
	rep.State, rep.CurrentState, rep.Pending = StateRunning, r.state, true
	return rep
}

// Finish closes the round with Schedule's outcome and ctxErr, the round
// context's error (deadline: timed out; cancelled: stopped). Calls still
// waiting or running are marked cancelled.
func (r *Recorder) Finish(stopReason string, err, ctxErr error) RunReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range r.calls {
		if !terminal(it.Status) {
			it.Status = ItemCancelled
		}
	}
	if stopReason == "" {
		stopReason = r.doneStop
	}
	rep := r.reportLocked()
	rep.StopReason = stopReason
	// The context only explains a round that did not end normally.
	if err == nil && stopReason != "cancelled" && stopReason != "" {
		ctxErr = nil
	}
	switch {
	case errors.Is(ctxErr, context.DeadlineExceeded):
		rep.TimedOut = true
		rep.setError(TimedOut, "The round took too long and was stopped.")
	case ctxErr != nil:
		rep.Stopped = true
		rep.setError(Stopped, "The round was stopped.")
	case err != nil:
		kind, detail := Failed, err.Error()
		var ae *AgentError
		if errors.As(err, &ae) {
			kind = ae.Kind
		}
		rep.setError(kind, detail)
	}
	if rep.Error != nil {
		rep.State, rep.CurrentState = StateError, StateError
		rep.Interrupted = r.started
	} else {
		rep.State, rep.CurrentState = StateDone, StateDone
		rep.Interrupted = stopReason == "cancelled"
	}
	return rep
}

func (rep *RunReport) setError(kind ErrorKind, detail string) {
	k := string(kind)
	d := cut(strings.ToValidUTF8(detail, "\uFFFD"), maxErrorDetail)
	rep.Error, rep.ErrorDetail = &k, &d
}

func (r *Recorder) reportLocked() RunReport {
	rep := RunReport{State: r.state, CurrentState: r.state, Gateway: r.gateway, Items: []Item{}, ItemsTotal: len(r.order), AgentText: r.text.String()}
	for _, id := range r.order {
		it := r.calls[id]
		if len(rep.Items) < maxReportItems {
			rep.Items = append(rep.Items, *it)
		}
		switch it.Status {
		case ItemCreated:
			switch it.Kind {
			case "event":
				rep.Created.Events++
			case "alarm":
				rep.Created.Alarms++
			case "todo":
				rep.Created.Todos++
			}
		case ItemDenied:
			rep.Created.Denied++
		case ItemFailed:
			rep.Created.Failed++
		}
	}
	return rep
}

// GatewayOf names agent for reports.
func GatewayOf(agent Agent) string {
	if g, ok := agent.(GatewayNamer); ok {
		return g.GatewayName()
	}
	return "agentos"
}

// RunAgent runs one round through agent and reports it. Local checks
// (prompt size, empty input) belong before it: RunAgent always sends.
func RunAgent(ctx context.Context, agent Agent, prompt string, scope []ToolScopeEntry) RunReport {
	return RunRecorded(ctx, agent, prompt, scope, NewRecorder(GatewayOf(agent)), nil)
}

// RunRecorded is RunAgent with the caller's recorder and, when observe is
// not nil, a call after every event has been recorded, for a round
// watched from outside (observe may take rec.Snapshot()).
func RunRecorded(ctx context.Context, agent Agent, prompt string, scope []ToolScopeEntry, rec *Recorder, observe func(Event)) RunReport {
	handle := rec.Handle
	if observe != nil {
		handle = func(ev Event) {
			rec.Handle(ev)
			observe(ev)
		}
	}
	stop, err := agent.Schedule(ctx, prompt, scope, handle)
	return rec.Finish(stop, err, ctx.Err())
}

// LocalFailure is the report of a round refused before anything was sent.
func LocalFailure(gateway string, err error) RunReport {
	rec := NewRecorder(gateway)
	return rec.Finish("", err, nil)
}
