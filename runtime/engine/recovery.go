package engine

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/store"
)

// recover runs once at start (spec §2.7, §3.4): a task found running was
// interrupted by a crash and ends task.recovery_required — with
// tool_result_unknown when a tool call was dispatched and never settled,
// else agent_core_failed; a task found queued never started and ends
// task.cancelled (by "restart"). Then recovery-required tasks older than
// RecoveryExpiry, and the oldest beyond MaxRecoveryPending, expire.
func (e *Engine) recover(ctx context.Context) error {
	rows, err := e.store.Tasks(ctx, store.TaskQuery{States: []store.TaskState{store.TaskRunning, store.TaskQueued}})
	if err != nil {
		return err
	}
	var interrupted, dropped int
	for _, row := range rows {
		t, release, err := e.detached(ctx, row)
		if err != nil {
			return err
		}
		var m moveSpec
		if row.State == store.TaskQueued {
			m = cancelledMove("restart")
			dropped++
		} else {
			ce, err := e.interruption(ctx, row.ID)
			if err != nil {
				release()
				return err
			}
			m = moveSpec{to: store.TaskRecoveryRequired, event: EvTaskRecoveryRequired, body: TaskEndBody{Error: infoOf(ce)}, err: ce}
			interrupted++
		}
		err = e.move(ctx, t, m)
		release()
		if err != nil {
			return err
		}
	}
	expired, err := e.expireRecovery(ctx)
	if err != nil {
		return err
	}
	if interrupted+dropped+expired > 0 {
		e.log.Warn("recovered unfinished tasks", "recoveryRequired", interrupted, "cancelled", dropped, "expired", expired)
	}
	return nil
}

// interruption is the error of a task a crash interrupted.
func (e *Engine) interruption(ctx context.Context, taskID string) (*errcode.Error, error) {
	calls, err := e.store.ToolCalls(ctx, taskID)
	if err != nil {
		return nil, err
	}
	for _, c := range calls {
		if !c.DispatchedAt.IsZero() && c.SettledAt.IsZero() {
			return errcode.New(errcode.ToolResultUnknown,
				"The runtime stopped after a tool call was sent; whether it took effect is unknown.").
				WithDetails(map[string]any{"toolCallId": c.ID}), nil
		}
	}
	return errcode.New(errcode.AgentCoreFailed, "The runtime stopped while this task was running; its outcome is unknown."), nil
}

// detached loads a stored task as a non-live task for a recovery move. The
// returned func releases its session.
func (e *Engine) detached(ctx context.Context, row store.Task) (*task, func(), error) {
	srow, err := e.store.Session(ctx, row.SessionID)
	if err != nil {
		return nil, nil, err
	}
	s := e.acquire(srow)
	t := &task{id: row.ID, sess: s, owner: row.OwnerKey, caller: Caller{UID: row.CallerUID}, state: row.State,
		done: make(chan struct{})}
	return t, func() { e.release(s) }, nil
}

// expireRecovery expires recovery-required tasks by age, then by count
// (oldest first), and returns how many expired.
func (e *Engine) expireRecovery(ctx context.Context) (int, error) {
	rows, err := e.store.Tasks(ctx, store.TaskQuery{States: []store.TaskState{store.TaskRecoveryRequired}})
	if err != nil {
		return 0, err
	}
	since := func(r store.Task) int64 {
		if !r.EndedAt.IsZero() {
			return r.EndedAt.UnixMilli()
		}
		return r.CreatedAt.UnixMilli()
	}
	sort.SliceStable(rows, func(i, j int) bool { return since(rows[i]) < since(rows[j]) })
	now := e.clock.Now()
	var keep []store.Task
	n := 0
	for _, r := range rows {
		if now.UnixMilli()-since(r) >= e.lim.RecoveryExpiry.Milliseconds() {
			if err := e.expire(ctx, r, "age"); err != nil {
				return n, err
			}
			n++
			continue
		}
		keep = append(keep, r)
	}
	for i := 0; len(keep)-i > e.lim.MaxRecoveryPending; i++ {
		if err := e.expire(ctx, keep[i], "limit"); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func (e *Engine) expire(ctx context.Context, row store.Task, rule string) error {
	t, release, err := e.detached(ctx, row)
	if err != nil {
		return err
	}
	defer release()
	ce := errcode.New(errcode.RecoveryExpired, "Nobody decided on this task in time; it was closed without a result.").
		WithDetails(map[string]any{"rule": rule})
	return e.move(ctx, t, moveSpec{to: store.TaskExpired, event: EvTaskRecoveryExpired, body: TaskEndBody{Error: infoOf(ce)}, err: ce})
}

// Recovery decisions for ResolveRecovery.
const (
	DecisionAbandon = "abandon"
	DecisionRetry   = "retry"
)

// ResolveRecovery records the owner's decision on a recovery-required
// task; both decisions end it task.abandoned (a retry is the owner sending
// the prompt again), after which the session accepts prompts again. The
// caller (the owner's admin API) is trusted to speak for the user.
func (e *Engine) ResolveRecovery(ctx context.Context, sessionID, taskID, decision string) error {
	if decision != DecisionAbandon && decision != DecisionRetry {
		return errcode.New(errcode.InvalidParams, "decision must be abandon or retry")
	}
	row, err := e.store.Task(ctx, taskID)
	if errors.Is(err, store.ErrNotFound) || err == nil && row.SessionID != sessionID {
		return errNoTask
	}
	if err != nil {
		return e.storeErr(err)
	}
	if row.State != store.TaskRecoveryRequired {
		return errcode.New(errcode.InvalidState, "The task is not waiting for a recovery decision.").WithTask(taskID)
	}
	t, release, err := e.detached(ctx, row)
	if err != nil {
		return e.storeErr(err)
	}
	defer release()
	ce := errcode.New(errcode.Abandoned, "The owner abandoned this task after its outcome became unknown.")
	err = e.move(ctx, t, moveSpec{to: store.TaskAbandoned, event: EvTaskAbandoned,
		body: TaskEndBody{Decision: decision, Error: infoOf(ce)}, err: ce})
	if errors.Is(err, store.ErrConflict) || errors.Is(err, errIllegalMove) {
		return errcode.New(errcode.InvalidState, "The task is not waiting for a recovery decision.").WithTask(taskID)
	}
	if err != nil {
		return fmt.Errorf("resolve recovery: %w", err)
	}
	e.log.Info("recovery resolved", "session", sessionID, "task", taskID, "decision", decision)
	return nil
}
