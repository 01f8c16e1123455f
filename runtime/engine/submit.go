package engine

import (
	"context"
	"encoding/json"
	"os"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ids"
	"github.com/agentoslab/agentlab/runtime/internal/chars"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/store"
)

// Prompt is one prompt as the ACP layer hands it over.
type Prompt struct {
	// Content is the client's content array, stored verbatim on the task.
	Content json.RawMessage
	// Text is the prompt as the model sees it.
	Text string
	// Chars is the prompt's length per spec §2.6 (text blocks and embedded
	// text resources, in UTF-16 units).
	Chars int
	// Cancelled, when set, is asked once the task is written and before it
	// can start: true cancels it at once (spec §2.8: a cancel that arrives
	// while a prompt is being submitted cancels it right after submission).
	// It must not block or call the engine.
	Cancelled func() bool
}

// titleChars bounds a session title (spec §2.5).
const titleChars = 80

// title is the session title a first prompt gives: its first non-blank
// line, at most 80 chars.
func (p Prompt) title() string { return chars.FirstLine(p.Text, titleChars) }

// Turn is a submitted prompt's task.
type Turn struct{ t *task }

// TaskID is the task's id.
func (r *Turn) TaskID() string { return r.t.id }

// QueuedSeq is the seq of the task's task.queued event; every other event
// of the task comes after it.
func (r *Turn) QueuedSeq() int64 { return r.t.queuedSeq }

// Done is closed when the task has ended and its terminal event is in the log.
func (r *Turn) Done() <-chan struct{} { return r.t.done }

// LastSeq is the seq of the task's terminal event, valid after Done.
func (r *Turn) LastSeq() int64 { return r.t.lastSeq }

// Result is the task's outcome, valid after Done: a stop reason (end_turn,
// max_tokens, max_turn_requests, refusal, cancelled), or an error for
// task.failed and task.recovery_required carrying the task id.
func (r *Turn) Result() (stopReason string, err error) {
	if r.t.err != nil {
		return "", r.t.err
	}
	return r.t.stopReason, nil
}

// Submit queues a prompt on a session c may use and returns its task.
// Checks, in order: safe mode; Admission (APP prompt length and, later,
// quotas); the 200,000-char limit; the session (owned, open, no task
// awaiting a recovery decision); the queue limit (busy).
func (e *Engine) Submit(ctx context.Context, c Caller, sessionID string, p Prompt) (*Turn, error) {
	if e.safeMode.Load() {
		return nil, errcode.New(errcode.SafeMode, "The runtime is in safe mode and accepts no new tasks.")
	}
	if faultinject.Enabled && faultinject.Active(faultinject.SoakLeak) {
		leakOnPurpose()
	}
	admitted, err := e.admit.Admit(ctx, c, p.Chars)
	if err != nil {
		return nil, err
	}
	refuse := func(err error) (*Turn, error) {
		admitted("refused")
		return nil, err
	}
	if p.Chars > e.lim.MaxPromptChars {
		return refuse(errcode.Newf(errcode.PayloadTooLarge, "The prompt is longer than %d characters.", e.lim.MaxPromptChars).
			WithDetails(map[string]any{"limit": e.lim.MaxPromptChars}))
	}
	row, err := e.owned(ctx, c, sessionID)
	if err != nil {
		return refuse(err)
	}
	if row.State == store.SessionClosed {
		return refuse(errcode.New(errcode.SessionTerminal, "The session is closed; load or resume it first.").WithSession(row.ID))
	}
	now := e.clock.Now()
	e.mu.Lock()
	if e.recovering[row.ID] > 0 {
		e.mu.Unlock()
		return refuse(errcode.New(errcode.RecoveryRequired,
			"A task of this session ended with an unknown outcome; decide on it before sending new prompts.").
			WithSession(row.ID))
	}
	var busy string
	s := e.acquireLocked(row.ID, row.OwnerKey)
	switch {
	case e.closed:
		busy = "The runtime is stopping."
	case s.closing:
		busy = "The session is being stopped."
	case len(s.queue)+s.pending >= e.lim.MaxQueuedPerSession:
		busy = "The session already has the maximum number of queued prompts."
	}
	if busy != "" {
		e.releaseLocked(s)
		e.mu.Unlock()
		return refuse(errcode.New(errcode.Busy, busy).WithSession(row.ID).
			WithDetails(map[string]any{"limit": e.lim.MaxQueuedPerSession}))
	}
	e.order++
	t := &task{
		id: ids.NewAt(ids.Task, now), sess: s, owner: row.OwnerKey, caller: c, prompt: p,
		live: true, order: e.order, admitted: admitted, done: make(chan struct{}),
	}
	s.pending++
	e.tasks[t.id] = t
	e.liveChangedLocked()
	u := e.owner(t.owner)
	u.queued++
	u.prompts++
	e.mu.Unlock()

	if err := e.move(ctx, t, moveSpec{to: store.TaskQueued, event: EvTaskQueued, body: TaskQueuedBody{Text: p.Text}}); err != nil {
		e.mu.Lock()
		delete(e.tasks, t.id)
		e.liveChangedLocked()
		u.queued--
		u.prompts--
		e.releaseLocked(s)
		e.mu.Unlock()
		e.notify()
		return refuse(err)
	}
	e.log.Info("task queued", "session", row.ID, "task", t.id, "chars", p.Chars)

	e.mu.Lock()
	cancelNow, by := t.cancelRequested, t.cancelBy
	e.mu.Unlock()
	if cancelNow {
		e.move(ctx, t, cancelledMove(by))
	}
	return &Turn{t: t}, nil
}

func cancelledMove(by string) moveSpec {
	return moveSpec{to: store.TaskCancelled, event: EvTaskCancelled, body: TaskEndBody{By: by}, stopReason: StopCancelled}
}

// scheduleLocked starts queued tasks while the limits allow: at most
// MaxRunningSessions sessions running, MaxRunningPerOwner per owner, one
// task per session, oldest submission first. e.mu must be held.
func (e *Engine) scheduleLocked() {
	for !e.closed && e.running < e.lim.MaxRunningSessions {
		var next *task
		for _, s := range e.sessions {
			if s.running != nil || len(s.queue) == 0 {
				continue
			}
			t := s.queue[0]
			if e.owner(t.owner).running >= e.lim.MaxRunningPerOwner {
				continue
			}
			if next == nil || t.order < next.order {
				next = t
			}
		}
		if next == nil {
			return
		}
		s := next.sess
		s.queue = s.queue[1:]
		s.running = next
		e.running++
		u := e.owner(next.owner)
		u.queued--
		u.running++
		ctx, cancel := context.WithCancelCause(e.ctx)
		next.cancel = cancel
		e.wg.Add(1)
		go e.run(ctx, next)
	}
}

// CancelSession cancels every unfinished task of the session: queued
// tasks end task.cancelled at once, the running task is aborted (its
// model call and tool calls see their context end; pending consents are
// withdrawn by the Tools). It returns the ids of the tasks it cancelled
// without waiting for the running one to stop.
func (e *Engine) CancelSession(ctx context.Context, sessionID, by string) []string {
	var out []string
	for _, t := range e.cancelSession(ctx, sessionID, by) {
		out = append(out, t.id)
	}
	return out
}

func (e *Engine) cancelSession(ctx context.Context, sessionID, by string) []*task {
	e.mu.Lock()
	var queued, all []*task
	if s := e.sessions[sessionID]; s != nil {
		queued = s.queue
		s.queue = nil
		all = append(all, queued...)
		if t := s.running; t != nil {
			if t.cancelBy == "" {
				t.cancelBy = by
			}
			t.cancel(errCancelled)
			all = append(all, t)
		}
	}
	for _, t := range e.tasks {
		if t.sess.id == sessionID && (t.state == "" || t.moving && t.state == store.TaskQueued) && !t.cancelRequested {
			t.cancelRequested, t.cancelBy = true, by
			all = append(all, t)
		}
	}
	e.mu.Unlock()
	for _, t := range queued {
		e.move(ctx, t, cancelledMove(by))
	}
	if len(all) > 0 {
		e.log.Info("tasks cancelled", "session", sessionID, "by", by, "count", len(all))
	}
	return all
}

// CancelOwner cancels every queued and running task of an owner key,
// including tasks whose connection has already closed (revocation), and
// waits up to the cancel wait for them to stop. It returns the ids of the
// tasks it cancelled; the error is busy when some did not stop in time.
func (e *Engine) CancelOwner(ctx context.Context, ownerKey, by string) ([]string, error) {
	e.mu.Lock()
	seen := map[string]bool{}
	var sessions []string
	for _, t := range e.tasks {
		if t.owner == ownerKey && !seen[t.sess.id] {
			seen[t.sess.id] = true
			sessions = append(sessions, t.sess.id)
		}
	}
	e.mu.Unlock()
	var stopping []*task
	var out []string
	for _, id := range sessions {
		for _, t := range e.cancelSession(ctx, id, by) {
			if t.owner == ownerKey {
				stopping = append(stopping, t)
				out = append(out, t.id)
			}
		}
	}
	wctx, cancel := clock.WithTimeout(ctx, e.clock, e.lim.CancelWait)
	defer cancel()
	if !e.waitTasks(wctx, stopping) {
		return out, errcode.New(errcode.Busy, "Some tasks did not stop in time.")
	}
	return out, nil
}

// WaitTask waits until the task with this id has ended or ctx ends, and
// reports whether it ended. Unknown ids have ended.
func (e *Engine) WaitTask(ctx context.Context, taskID string) bool {
	e.mu.Lock()
	t := e.tasks[taskID]
	e.mu.Unlock()
	if t == nil {
		return true
	}
	return e.waitTasks(ctx, []*task{t})
}

// waitTasks reports whether every task ended before ctx did.
func (e *Engine) waitTasks(ctx context.Context, ts []*task) bool {
	for _, t := range ts {
		select {
		case <-t.done:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// leakOnPurpose is the soak_leak fault: a descriptor and the goroutine
// holding it, never released, so that a soak sees both climb.
func leakOnPurpose() {
	f, err := os.Open(os.DevNull)
	if err != nil {
		return
	}
	var never chan struct{} // nil: receiving blocks for ever
	go func() {
		<-never
		f.Close() // keeps f referenced, so no finalizer closes it
	}()
}
