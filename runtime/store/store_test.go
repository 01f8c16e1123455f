package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

func open(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "agentos.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func newSession(id, owner string, at time.Time) (Session, Event) {
	sess := Session{ID: id, OwnerKey: owner, CallerKind: "DESKTOP", CallerUID: 2000, Cwd: "/w",
		Mode: "default", State: SessionOpen, CreatedAt: at, UpdatedAt: at}
	return sess, Event{SessionID: id, Seq: 1, Type: "session.created", Body: json.RawMessage(`{}`), At: at}
}

func mustCreate(t *testing.T, s *Store, id, owner string, at time.Time) {
	t.Helper()
	sess, ev := newSession(id, owner, at)
	if err := s.CreateSession(context.Background(), sess, ev); err != nil {
		t.Fatal(err)
	}
}

func mustTask(t *testing.T, s *Store, sessionID, taskID string, seq int64, at time.Time) {
	t.Helper()
	err := s.CreateTask(context.Background(), NewTask{
		Task: Task{ID: taskID, SessionID: sessionID, OwnerKey: "desktop", CallerUID: 2000, State: TaskQueued,
			Content: json.RawMessage(`[{"type":"text","text":"hi"}]`), FirstSeq: seq, CreatedAt: at},
		Queued: Event{SessionID: sessionID, Seq: seq, TaskID: taskID, Type: "task.queued", Body: json.RawMessage(`{"text":"hi"}`), At: at},
		Title:  "hi " + taskID,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestSessionRoundTrip(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	sess, ev := newSession("ses_A", "desktop", t0)
	sess.ToolScope = []byte(`[{"plugin":"p","tool":"t"}]`)
	sess.ForkedFrom = "ses_B"
	if err := s.CreateSession(ctx, sess, ev); err != nil {
		t.Fatal(err)
	}
	got, err := s.Session(ctx, "ses_A")
	if err != nil {
		t.Fatal(err)
	}
	if string(got.ToolScope) != string(sess.ToolScope) || got.ForkedFrom != "ses_B" || !got.CreatedAt.Equal(t0) ||
		got.Mode != "default" || got.State != SessionOpen {
		t.Fatalf("round trip: %+v", got)
	}
	// No toolScope stays nil, which the engine reads as "absent".
	mustCreate(t, s, "ses_C", "desktop", t0)
	if got, _ := s.Session(ctx, "ses_C"); got.ToolScope != nil {
		t.Fatalf("absent scope read back as %q", got.ToolScope)
	}
	if _, err := s.Session(ctx, "ses_missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing session: %v", err)
	}
	if err := s.CreateSession(ctx, sess, ev); err == nil {
		t.Fatal("duplicate session id accepted")
	}

	mode, model, state := "chat", "m2", SessionClosed
	if err := s.UpdateSession(ctx, "ses_A", SessionChange{Mode: &mode, ModelID: &model, State: &state, Touch: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Session(ctx, "ses_A")
	if got.Mode != "chat" || got.ModelID != "m2" || got.State != SessionClosed || !got.UpdatedAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("after update: %+v", got)
	}
	if err := s.UpdateSession(ctx, "ses_missing", SessionChange{Mode: &mode}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("update missing: %v", err)
	}
}

func TestListSessions(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	mustCreate(t, s, "ses_1", "desktop", t0)
	mustCreate(t, s, "ses_2", "uid:10001", t0.Add(time.Minute))
	mustCreate(t, s, "ses_3", "desktop", t0.Add(2*time.Minute))
	// Activity on ses_1 moves it to the front.
	mustTask(t, s, "ses_1", "tsk_1", 2, t0.Add(3*time.Minute))

	ids := func(ss []Session) (out []string) {
		for _, x := range ss {
			out = append(out, x.ID)
		}
		return out
	}
	tests := []struct {
		name string
		q    ListQuery
		want []string
	}{
		{"own only, recent first", ListQuery{OwnerKey: "desktop"}, []string{"ses_1", "ses_3"}},
		{"everyone", ListQuery{}, []string{"ses_1", "ses_3", "ses_2"}},
		{"limit", ListQuery{Limit: 1}, []string{"ses_1"}},
		{"cwd match", ListQuery{OwnerKey: "desktop", Cwd: ptr("/w")}, []string{"ses_1", "ses_3"}},
		{"cwd miss", ListQuery{OwnerKey: "desktop", Cwd: ptr("/other")}, nil},
	}
	for _, tc := range tests {
		got, err := s.ListSessions(ctx, tc.q)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(ids(got)) != fmt.Sprint(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, ids(got), tc.want)
		}
	}
	got, _ := s.Session(ctx, "ses_1")
	if got.Title != "hi tsk_1" {
		t.Errorf("title after first task = %q", got.Title)
	}
	mustTask(t, s, "ses_1", "tsk_2", 3, t0.Add(4*time.Minute))
	got, _ = s.Session(ctx, "ses_1")
	if got.Title != "hi tsk_1" {
		t.Errorf("a later task replaced the title: %q", got.Title)
	}
}

func ptr[T any](v T) *T { return &v }

func TestTaskTransitions(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	mustCreate(t, s, "ses_1", "desktop", t0)
	mustTask(t, s, "ses_1", "tsk_1", 2, t0)

	start := Transition{TaskID: "tsk_1", From: TaskQueued, To: TaskRunning, At: t0.Add(time.Second), Started: true}
	if err := s.TransitionTask(ctx, start, &Event{SessionID: "ses_1", Seq: 3, TaskID: "tsk_1", Type: "task.started", At: t0}); err != nil {
		t.Fatal(err)
	}
	// A second move from queued conflicts and writes nothing, not even its event.
	if err := s.TransitionTask(ctx, start, &Event{SessionID: "ses_1", Seq: 4, TaskID: "tsk_1", Type: "task.started", At: t0}); !errors.Is(err, ErrConflict) {
		t.Fatalf("stale transition: %v", err)
	}
	if last, _ := s.LastSeq(ctx, "ses_1"); last != 3 {
		t.Fatalf("last seq after conflict = %d, want 3", last)
	}
	fail := Transition{TaskID: "tsk_1", From: TaskRunning, To: TaskFailed, At: t0.Add(2 * time.Second),
		Error: json.RawMessage(`{"code":"model_timeout"}`)}
	if err := s.TransitionTask(ctx, fail, &Event{SessionID: "ses_1", Seq: 4, TaskID: "tsk_1", Type: "task.failed", At: t0}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Task(ctx, "tsk_1")
	if err != nil {
		t.Fatal(err)
	}
	if got.State != TaskFailed || string(got.Error) != `{"code":"model_timeout"}` || !got.StartedAt.Equal(t0.Add(time.Second)) ||
		!got.EndedAt.Equal(t0.Add(2*time.Second)) || string(got.Content) != `[{"type":"text","text":"hi"}]` {
		t.Fatalf("task: %+v", got)
	}
	tasks, err := s.Tasks(ctx, TaskQuery{States: []TaskState{TaskRunning, TaskFailed}})
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks by state: %v %v", tasks, err)
	}
}

func TestEventsAndToolCalls(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	mustCreate(t, s, "ses_1", "desktop", t0)
	mustTask(t, s, "ses_1", "tsk_1", 2, t0)
	ev := func(seq int64, typ string) Event {
		return Event{SessionID: "ses_1", Seq: seq, TaskID: "tsk_1", Type: typ, Body: json.RawMessage(`{"n":` + strconv.FormatInt(seq, 10) + `}`), At: t0}
	}
	steps := []struct {
		ev   Event
		mark *ToolCallMark
	}{
		{ev(3, "tool.call"), &ToolCallMark{TaskID: "tsk_1", ID: "c1", Name: "echo"}},
		{ev(4, "tool.dispatched"), &ToolCallMark{TaskID: "tsk_1", ID: "c1", Dispatched: true}},
		{ev(5, "tool.call"), &ToolCallMark{TaskID: "tsk_1", ID: "c2", Name: "slow"}},
		{ev(6, "tool.dispatched"), &ToolCallMark{TaskID: "tsk_1", ID: "c2", Dispatched: true}},
		{ev(7, "tool.settled"), &ToolCallMark{TaskID: "tsk_1", ID: "c1", Outcome: "completed"}},
		{ev(8, "message.delta"), nil},
	}
	for _, st := range steps {
		if err := s.AppendEvent(ctx, st.ev, st.mark); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.AppendEvent(ctx, ev(8, "dup"), nil); err == nil {
		t.Fatal("duplicate seq accepted")
	}
	calls, err := s.ToolCalls(ctx, "tsk_1")
	if err != nil || len(calls) != 2 {
		t.Fatalf("calls: %v %v", calls, err)
	}
	if calls[0].Outcome != "completed" || calls[0].SettledAt.IsZero() || calls[1].DispatchedAt.IsZero() || !calls[1].SettledAt.IsZero() {
		t.Fatalf("calls: %+v", calls)
	}
	got, err := s.Events(ctx, "ses_1", 3, 3)
	if err != nil || len(got) != 3 || got[0].Seq != 4 || got[2].Seq != 6 || string(got[0].Body) != `{"n":4}` {
		t.Fatalf("events page: %+v %v", got, err)
	}
	if last, _ := s.LastSeq(ctx, "ses_1"); last != 8 {
		t.Fatalf("last seq %d", last)
	}
	if last, _ := s.LastSeq(ctx, "ses_none"); last != 0 {
		t.Fatalf("last seq of empty log %d", last)
	}
}

func TestReplayStart(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	mustCreate(t, s, "ses_1", "desktop", t0)
	if got, _ := s.ReplayStart(ctx, "ses_1", 2); got != 1 {
		t.Fatalf("no tasks: %d", got)
	}
	for i, seq := range []int64{2, 5, 9} {
		mustTask(t, s, "ses_1", fmt.Sprintf("tsk_%d", i), seq, t0)
	}
	tests := []struct {
		turns int
		want  int64
	}{{1, 9}, {2, 5}, {3, 2}, {200, 2}}
	for _, tc := range tests {
		if got, err := s.ReplayStart(ctx, "ses_1", tc.turns); err != nil || got != tc.want {
			t.Errorf("ReplayStart(%d) = %d, %v; want %d", tc.turns, got, err, tc.want)
		}
	}
}

func TestForkAndDelete(t *testing.T) {
	t.Parallel()
	s := open(t)
	ctx := context.Background()
	mustCreate(t, s, "ses_src", "desktop", t0)
	mustTask(t, s, "ses_src", "tsk_done", 2, t0)
	for _, e := range []Event{
		{Seq: 3, Type: "consent.requested"}, {Seq: 4, Type: "message.delta"}, {Seq: 5, Type: "hook.decided"},
		{Seq: 6, Type: "task.completed"},
	} {
		e.SessionID, e.TaskID, e.At, e.Body = "ses_src", "tsk_done", t0, json.RawMessage(`{}`)
		if err := s.AppendEvent(ctx, e, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.TransitionTask(ctx, Transition{TaskID: "tsk_done", From: TaskQueued, To: TaskCompleted, At: t0}, nil); err != nil {
		t.Fatal(err)
	}
	mustTask(t, s, "ses_src", "tsk_open", 7, t0) // still queued: not copied

	dst, created := newSession("ses_dst", "desktop", t0)
	dst.ForkedFrom = "ses_src"
	n := 0
	copied, err := s.Fork(ctx, ForkSpec{
		Source: "ses_src", Session: dst, Created: created,
		Finished:         []TaskState{TaskCompleted, TaskCancelled, TaskFailed},
		SkipTypePrefixes: []string{"consent.", "hook."},
		NewTaskID:        func() string { n++; return fmt.Sprintf("tsk_copy%d", n) },
	})
	if err != nil || copied != 1 {
		t.Fatalf("fork: %d %v", copied, err)
	}
	evs, _ := s.Events(ctx, "ses_dst", 0, 100)
	var types []string
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("fork seq gap: %+v", evs)
		}
		types = append(types, e.Type+"/"+e.TaskID)
	}
	want := "[session.created/ task.queued/tsk_copy1 message.delta/tsk_copy1 task.completed/tsk_copy1]"
	if fmt.Sprint(types) != want {
		t.Fatalf("fork events %v, want %v", types, want)
	}
	ct, err := s.Task(ctx, "tsk_copy1")
	if err != nil || ct.SessionID != "ses_dst" || ct.FirstSeq != 2 || ct.State != TaskCompleted {
		t.Fatalf("copied task %+v %v", ct, err)
	}

	if err := s.DeleteSession(ctx, "ses_src"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Session(ctx, "ses_src"); !errors.Is(err, ErrNotFound) {
		t.Fatal("session survived delete")
	}
	if evs, _ := s.Events(ctx, "ses_src", 0, 10); len(evs) != 0 {
		t.Fatal("events survived delete")
	}
	if _, err := s.Task(ctx, "tsk_done"); !errors.Is(err, ErrNotFound) {
		t.Fatal("task survived delete")
	}
	if calls, _ := s.ToolCalls(ctx, "tsk_done"); len(calls) != 0 {
		t.Fatal("tool calls survived delete")
	}
	if err := s.DeleteSession(ctx, "ses_src"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	// The fork is independent of its deleted source.
	if evs, _ := s.Events(ctx, "ses_dst", 0, 10); len(evs) != 4 {
		t.Fatal("fork lost events with its source")
	}
}

// TestCommittedWritesSurviveKill runs a child that appends events and
// kills itself with SIGKILL after a known number of commits; every event
// whose append returned must be there when the database is reopened.
func TestCommittedWritesSurviveKill(t *testing.T) {
	if os.Getenv("STORE_KILL_CHILD") != "" {
		killChild()
		return
	}
	t.Parallel()
	path := filepath.Join(t.TempDir(), "agentos.db")
	cmd := exec.Command(os.Args[0], "-test.run=^TestCommittedWritesSurviveKill$")
	cmd.Env = append(os.Environ(), "STORE_KILL_CHILD="+path)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	last, err := s.LastSeq(context.Background(), "ses_k")
	if err != nil {
		t.Fatal(err)
	}
	if last != killAfter {
		t.Fatalf("after kill: last seq %d, want %d", last, killAfter)
	}
}

const killAfter = 200

func killChild() {
	ctx := context.Background()
	s, err := Open(ctx, os.Getenv("STORE_KILL_CHILD"))
	if err != nil {
		os.Exit(3)
	}
	sess, ev := newSession("ses_k", "desktop", t0)
	if err := s.CreateSession(ctx, sess, ev); err != nil {
		os.Exit(4)
	}
	for seq := int64(2); seq <= killAfter; seq++ {
		if err := s.AppendEvent(ctx, Event{SessionID: "ses_k", Seq: seq, Type: "message.delta", Body: json.RawMessage(`{}`), At: t0}, nil); err != nil {
			os.Exit(5)
		}
	}
	syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}
