package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/engine/enginetest"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ids"
	"github.com/agentoslab/agentlab/runtime/store"
)

// crashed writes what a runtime killed mid-turn leaves behind: a session
// whose task is "running", with the given tool calls.
type crashedCall struct {
	dispatched, settled bool
}

func writeCrashed(t *testing.T, st *store.Store, at time.Time, state store.TaskState, calls ...crashedCall) (sessionID, taskID string) {
	t.Helper()
	ctx := context.Background()
	sessionID, taskID = ids.NewAt(ids.Session, at), ids.NewAt(ids.Task, at)
	err := st.CreateSession(ctx, store.Session{ID: sessionID, OwnerKey: "desktop", CallerKind: "DESKTOP", CallerUID: 2000,
		Mode: "default", State: store.SessionOpen, CreatedAt: at, UpdatedAt: at},
		store.Event{SessionID: sessionID, Seq: 1, Type: engine.EvSessionCreated, Body: json.RawMessage(`{}`), At: at})
	if err != nil {
		t.Fatal(err)
	}
	err = st.CreateTask(ctx, store.NewTask{
		Task:   store.Task{ID: taskID, SessionID: sessionID, OwnerKey: "desktop", State: store.TaskQueued, Content: json.RawMessage(`[]`), FirstSeq: 2, CreatedAt: at},
		Queued: store.Event{SessionID: sessionID, Seq: 2, TaskID: taskID, Type: engine.EvTaskQueued, Body: json.RawMessage(`{"text":"do it"}`), At: at},
	})
	if err != nil {
		t.Fatal(err)
	}
	seq := int64(3)
	if state == store.TaskRunning || state == store.TaskRecoveryRequired {
		if err := st.TransitionTask(ctx, store.Transition{TaskID: taskID, From: store.TaskQueued, To: store.TaskRunning, At: at, Started: true},
			&store.Event{SessionID: sessionID, Seq: 3, TaskID: taskID, Type: engine.EvTaskStarted, Body: json.RawMessage(`{}`), At: at}); err != nil {
			t.Fatal(err)
		}
		seq++
	}
	for i, c := range calls {
		id := fmt.Sprint("c", i)
		add := func(typ string, mark *store.ToolCallMark) {
			body, _ := json.Marshal(map[string]any{"toolCallId": id, "name": "echo", "arguments": map[string]any{}})
			if err := st.AppendEvent(ctx, store.Event{SessionID: sessionID, Seq: seq, TaskID: taskID, Type: typ, Body: body, At: at}, mark); err != nil {
				t.Fatal(err)
			}
			seq++
		}
		add(engine.EvToolCall, &store.ToolCallMark{TaskID: taskID, ID: id, Name: "echo"})
		if c.dispatched {
			add(engine.EvToolDispatched, &store.ToolCallMark{TaskID: taskID, ID: id, Dispatched: true})
		}
		if c.settled {
			add(engine.EvToolResult, nil)
			add(engine.EvToolSettled, &store.ToolCallMark{TaskID: taskID, ID: id, Outcome: "completed"})
		}
	}
	if state == store.TaskRecoveryRequired {
		if err := st.TransitionTask(ctx, store.Transition{TaskID: taskID, From: store.TaskRunning, To: store.TaskRecoveryRequired, At: at},
			&store.Event{SessionID: sessionID, Seq: seq, TaskID: taskID, Type: engine.EvTaskRecoveryRequired, Body: json.RawMessage(`{}`), At: at}); err != nil {
			t.Fatal(err)
		}
	}
	return sessionID, taskID
}

func TestRecoveryAfterCrash(t *testing.T) {
	t.Parallel()
	now := time.Now()
	tests := []struct {
		name  string
		state store.TaskState
		calls []crashedCall
		want  store.TaskState
		code  errcode.Code
	}{
		{"no tool call", store.TaskRunning, nil, store.TaskRecoveryRequired, errcode.AgentCoreFailed},
		{"settled calls only", store.TaskRunning, []crashedCall{{true, true}}, store.TaskRecoveryRequired, errcode.AgentCoreFailed},
		{"call not yet dispatched", store.TaskRunning, []crashedCall{{false, false}}, store.TaskRecoveryRequired, errcode.AgentCoreFailed},
		{"dispatched, never settled", store.TaskRunning, []crashedCall{{true, true}, {true, false}}, store.TaskRecoveryRequired, errcode.ToolResultUnknown},
		{"queued never started", store.TaskQueued, nil, store.TaskCancelled, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "agentos.db")
			st, err := store.Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			sid, tid := writeCrashed(t, st, now, tc.state, tc.calls...)
			st.Close()

			h := &harness{t: t, path: path, tools: &enginetest.Tools{}, model: &enginetest.Model{}}
			h.open(nil)
			row, _ := h.st.Task(context.Background(), tid)
			if row.State != tc.want {
				t.Fatalf("state %s, want %s", row.State, tc.want)
			}
			evs := h.events(sid)
			last := evs[len(evs)-1]
			end := body[engine.TaskEndBody](t, last)
			if tc.code != "" && (last.Type != engine.EvTaskRecoveryRequired || end.Error == nil || end.Error.Code != tc.code) {
				t.Fatalf("terminal %s %+v", last.Type, end)
			}
			if tc.want == store.TaskCancelled {
				if end.By != "restart" {
					t.Fatalf("queued task end %+v", end)
				}
				if _, err := h.run(desktop, sid, "next"); err != nil {
					t.Fatalf("prompt after a dropped queued task: %v", err)
				}
				return
			}
			// The session refuses prompts until the owner decides.
			_, err = h.e.Submit(context.Background(), desktop, sid, prompt("again"))
			if codeOf(err) != errcode.RecoveryRequired {
				t.Fatalf("prompt during recovery: %v", err)
			}
			if id, state, ok := h.e.ActiveTask(context.Background(), sid); !ok || id != tid || state != "recovery_required" {
				t.Fatalf("active task %q %q %v", id, state, ok)
			}
			if err := h.e.ResolveRecovery(context.Background(), sid, "tsk_01J00000000000000000000000", "abandon"); codeOf(err) != errcode.TaskNotFound {
				t.Fatalf("unknown task: %v", err)
			}
			if err := h.e.ResolveRecovery(context.Background(), sid, tid, "maybe"); codeOf(err) != errcode.InvalidParams {
				t.Fatalf("bad decision: %v", err)
			}
			if err := h.e.ResolveRecovery(context.Background(), sid, tid, "retry"); err != nil {
				t.Fatal(err)
			}
			if err := h.e.ResolveRecovery(context.Background(), sid, tid, "abandon"); codeOf(err) != errcode.InvalidState {
				t.Fatalf("second decision: %v", err)
			}
			if row, _ := h.st.Task(context.Background(), tid); row.State != store.TaskAbandoned {
				t.Fatalf("after decision: %s", row.State)
			}
			if _, err := h.run(desktop, sid, "again"); err != nil {
				t.Fatalf("prompt after the decision: %v", err)
			}
			// The model sees the interrupted turn, each call answered.
			reqs := h.model.Requests()
			msgs := reqs[0].Messages
			if msgs[0].Text != "do it" || msgs[len(msgs)-1].Text != "again" {
				t.Fatalf("conversation %+v", msgs)
			}
			for i, m := range msgs {
				for _, c := range m.ToolCalls {
					found := false
					for _, r := range msgs[i+1:] {
						found = found || r.ToolCallID == c.ID
					}
					if !found {
						t.Fatalf("call %s has no result in %+v", c.ID, msgs)
					}
				}
			}
		})
	}
}

func TestRecoveryExpiry(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	path := filepath.Join(t.TempDir(), "agentos.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	// Recovery age counts from when a task became recovery-required.
	old, _ := writeCrashed(t, st, now.Add(-25*time.Hour), store.TaskRecoveryRequired)
	justCrashed, _ := writeCrashed(t, st, now.Add(-30*time.Hour), store.TaskRunning)
	var recent []string
	for i := range 51 {
		sid, _ := writeCrashed(t, st, now.Add(-time.Duration(60-i)*time.Minute), store.TaskRecoveryRequired)
		recent = append(recent, sid)
	}
	st.Close()
	clock := clocktest.New(now)
	h := &harness{t: t, path: path, tools: &enginetest.Tools{}, model: &enginetest.Model{}}
	h.open(func(o *engine.Options) { o.Clock = clock })
	rule := func(sid string) string {
		evs := h.events(sid)
		last := evs[len(evs)-1]
		if last.Type != engine.EvTaskRecoveryExpired {
			return last.Type
		}
		return fmt.Sprint(body[engine.TaskEndBody](t, last).Error.Details["rule"])
	}
	if got := rule(old); got != "age" {
		t.Fatalf("24 h old task: %s", got)
	}
	if got := rule(recent[0]) + " " + rule(recent[1]); got != "limit limit" {
		t.Fatalf("oldest two beyond 50: %s", got)
	}
	if got := rule(recent[2]) + " " + rule(justCrashed); got != engine.EvTaskRecoveryRequired+" "+engine.EvTaskRecoveryRequired {
		t.Fatalf("kept: %s", got)
	}
	pending, _ := h.st.Tasks(context.Background(), store.TaskQuery{States: []store.TaskState{store.TaskRecoveryRequired}})
	if len(pending) != 50 {
		t.Fatalf("%d pending after expiry", len(pending))
	}
}
