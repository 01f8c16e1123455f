package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/store"
)

// moves is the task state machine (spec §2.7, §3.4): every legal move,
// from the state on the left. "" is a task not yet written. Nothing else
// ever changes a task's state: see move.
var moves = map[store.TaskState][]store.TaskState{
	"":                         {store.TaskQueued},
	store.TaskQueued:           {store.TaskRunning, store.TaskCancelled},
	store.TaskRunning:          {store.TaskCompleted, store.TaskCancelled, store.TaskFailed, store.TaskRecoveryRequired},
	store.TaskRecoveryRequired: {store.TaskAbandoned, store.TaskExpired},
}

func legalMove(from, to store.TaskState) bool { return slices.Contains(moves[from], to) }

// endsLive reports whether reaching s takes a live task out of the queue
// and the scheduler.
func endsLive(s store.TaskState) bool {
	switch s {
	case store.TaskCompleted, store.TaskCancelled, store.TaskFailed, store.TaskRecoveryRequired:
		return true
	}
	return false
}

var errIllegalMove = errors.New("engine: illegal task state move")

// task is one prompt's execution.
type task struct {
	id     string
	sess   *session
	owner  string
	caller Caller
	prompt Prompt
	// live is true for tasks this engine queued (they hold a session
	// reference and scheduler slots); tasks loaded for recovery are not live.
	live bool
	// order is the submission order across sessions (FIFO scheduling).
	order uint64
	// admitted is the Admission's done callback (live tasks only).
	admitted func(outcome string)

	// Guarded by Engine.mu:
	state  store.TaskState
	moving bool // a move of this task is being written
	// cancel ends the task's context; set when the scheduler starts it.
	cancel context.CancelCauseFunc
	// cancelRequested marks a cancel that arrived while the task was being
	// written; the writer cancels it as soon as the write is done.
	cancelRequested bool
	cancelBy        string

	// Written once before done is closed, read after:
	done       chan struct{}
	stopReason string
	err        *errcode.Error
	lastSeq    int64
	queuedSeq  int64
	startedSeq int64
}

// moveSpec is one requested move with what it writes.
type moveSpec struct {
	to    store.TaskState
	event string
	body  any
	// stopReason and err are recorded on the task (and, for err, in the
	// tasks row); err is what a waiting prompt receives.
	stopReason string
	err        *errcode.Error
}

// move is the one transition function for task state. It checks the move
// against the table and claims it (so no two moves of a task interleave),
// writes the new state together with its event in one store transaction,
// then applies the move's effects on the queue, the scheduler and the
// counters. A live task reaching a terminal state releases its waiters.
func (e *Engine) move(ctx context.Context, t *task, m moveSpec) error {
	e.mu.Lock()
	from := t.state
	if t.moving || !legalMove(from, m.to) {
		e.mu.Unlock()
		return fmt.Errorf("%w: %s %q -> %q", errIllegalMove, t.id, from, m.to)
	}
	t.state, t.moving = m.to, true
	e.mu.Unlock()

	var errInfo json.RawMessage
	if m.err != nil {
		errInfo, _ = json.Marshal(m.err.Info())
	}
	ev, err := e.appendEvent(ctx, t.sess, t.id, m.event, m.body, func(ctx context.Context, ev store.Event) error {
		if from == "" {
			return e.store.CreateTask(ctx, store.NewTask{
				Task: store.Task{ID: t.id, SessionID: t.sess.id, OwnerKey: t.owner, CallerUID: t.caller.UID,
					State: store.TaskQueued, Content: t.prompt.Content, FirstSeq: ev.Seq, CreatedAt: ev.At},
				Queued: ev,
				Title:  t.prompt.title(),
			})
		}
		return e.store.TransitionTask(ctx, store.Transition{TaskID: t.id, From: from, To: m.to, At: ev.At,
			StopReason: m.stopReason, Error: errInfo, Started: m.to == store.TaskRunning}, &ev)
	})
	if err != nil {
		e.log.Error("task move not written", "task", t.id, "from", string(from), "to", string(m.to), "code", errcode.CodeOf(err))
	}

	e.mu.Lock()
	t.moving = false
	if err == nil {
		t.lastSeq = ev.Seq
		switch m.to {
		case store.TaskQueued:
			t.queuedSeq = ev.Seq
		case store.TaskRunning:
			t.startedSeq = ev.Seq
		}
	}
	done, changed := e.afterMoveLocked(t, from, m, err)
	e.mu.Unlock()
	if done != nil {
		done()
	}
	if changed {
		e.notify()
	}
	return err
}

// afterMoveLocked applies a move's effects; e.mu must be held. It returns
// the admission callback to call (outside the lock) and whether the live
// task counts changed.
func (e *Engine) afterMoveLocked(t *task, from store.TaskState, m moveSpec, writeErr error) (func(), bool) {
	if writeErr == nil {
		switch {
		case m.to == store.TaskRecoveryRequired:
			e.recovering[t.sess.id]++
		case from == store.TaskRecoveryRequired:
			if e.recovering[t.sess.id]--; e.recovering[t.sess.id] <= 0 {
				delete(e.recovering, t.sess.id)
			}
		}
	}
	if !t.live {
		return nil, false
	}
	s := t.sess
	switch {
	case m.to == store.TaskQueued:
		s.pending--
		if writeErr != nil {
			// Submit undoes the rest; the task never existed.
			return nil, false
		}
		if !t.cancelRequested && t.prompt.Cancelled != nil && t.prompt.Cancelled() {
			t.cancelRequested, t.cancelBy = true, "client"
		}
		if !t.cancelRequested {
			s.queue = append(s.queue, t)
			e.scheduleLocked()
		}
		return nil, true
	case m.to == store.TaskRunning:
		return nil, true
	case endsLive(m.to):
		if s.running == t {
			s.running = nil
			e.running--
			e.owner(t.owner).running--
		} else {
			e.owner(t.owner).queued--
			if i := slices.Index(s.queue, t); i >= 0 {
				s.queue = slices.Delete(s.queue, i, i+1)
			}
		}
		delete(e.tasks, t.id)
		e.liveChangedLocked()
		t.stopReason, t.err = m.stopReason, m.err
		if t.err != nil {
			t.err = withTask(t.err, t.id)
		}
		close(t.done)
		e.releaseLocked(s)
		e.scheduleLocked()
		outcome := admissionOutcome(m.to)
		admitted := t.admitted
		return func() { admitted(outcome) }, true
	}
	return nil, false
}

func admissionOutcome(s store.TaskState) string {
	switch s {
	case store.TaskCompleted:
		return "completed"
	case store.TaskCancelled:
		return "cancelled"
	case store.TaskFailed:
		return "failed"
	}
	return "unknown"
}

// withTask returns a copy of e carrying the task id (errors may be shared
// values such as errNoSession, so they are never modified in place).
func withTask(e *errcode.Error, taskID string) *errcode.Error {
	c := *e
	c.TaskID = taskID
	return &c
}
