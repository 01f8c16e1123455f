package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/store"
)

// Engine runs sessions and tasks. Create it with New; it is safe for
// concurrent use. Close stops it.
//
// Lock order: Engine.mu is never held while writing to the store or while
// holding a session's logMu; session.logMu is held only around one event
// write and the publication that follows it.
type Engine struct {
	store  *store.Store
	tools  Tools
	models ModelSource
	admit  Admission
	clock  clock.Clock
	log    *slog.Logger
	lim    Limits
	base   string
	notify func()

	// ctx is the parent of every task's context: a disconnect never
	// cancels a task, only Close, a cancel or the execution deadline do.
	ctx  context.Context
	stop context.CancelCauseFunc
	wg   sync.WaitGroup // task goroutines and their helpers

	safeMode atomic.Bool

	mu sync.Mutex // guards the fields below and the fields marked "guarded by Engine.mu"
	// sessions holds the sessions in use: with a live task, a follower or a
	// method running on them. Idle sessions are dropped (see release).
	sessions map[string]*session
	// idle are sessions in memory that nothing uses, oldest first.
	idleSessions []*session
	// recovering counts, per session, tasks awaiting a recovery decision
	// (they appear only at start and leave by decision or expiry).
	recovering map[string]int
	// tasks holds the live tasks (being queued, queued, running) by id.
	tasks   map[string]*task
	running int // sessions with a running task
	owners  map[string]*ownerUsage
	order   uint64        // FIFO order of submissions across sessions
	idle    chan struct{} // closed while no task is live
	closed  bool
}

type ownerUsage struct {
	running int
	queued  int
	prompts int64
}

// Usage is an owner's task counters (spec §4.3 "in progress" lasts from
// admission to task end, never to disconnect).
type Usage struct {
	Running int
	Queued  int
	// Prompts counts admitted prompts since the engine started.
	Prompts int64
}

// Stats are the engine-wide task counters.
type Stats struct {
	Running int
	Queued  int
}

// Errors of the engine's own making.
var (
	errNoSession = errcode.New(errcode.SessionNotFound, "no such session")
	errNoTask    = errcode.New(errcode.TaskNotFound, "no such task")

	// Causes of a task context's end.
	errCancelled        = errors.New("task cancelled")
	errExecutionTimeout = errors.New("task execution deadline")
	errShutdown         = errors.New("runtime shutting down")
	errKeyRevoked       = errors.New("model key removed")
)

// KeyRevokedText is the message of a turn stopped because the owner
// removed the model key while it ran (spec §3.2).
const KeyRevokedText = "The owner removed the model key (agentosd ctl model clear); this turn was stopped. Set a model again with agentosd ctl model set."

// NoModelText is the model_not_configured text of a turn that finds no
// usable model: it names the owner's command.
const NoModelText = "No usable model is configured: the owner sets one with agentosd ctl model set --provider openai|anthropic|scripted (the key with --key-stdin); agentosd ctl model show says what is missing."

// keyRevoked is the error such a turn ends with: model_not_configured,
// details.reason "key_revoked". A new value each time (errors get a task
// id attached by copy, but details are a map).
func keyRevoked() *errcode.Error {
	return errcode.New(errcode.ModelNotConfigured, KeyRevokedText).WithDetails(map[string]any{"reason": "key_revoked"})
}

// New starts an engine on an open store and recovers what a previous run
// left unfinished: tasks found running end task.recovery_required, tasks
// found queued end task.cancelled, and recovery-required tasks past the
// age or count limit expire (spec §2.7, §3.4).
func New(ctx context.Context, opts *Options) (*Engine, error) {
	if opts == nil || opts.Store == nil || opts.Tools == nil {
		return nil, errors.New("engine: Store and Tools are required")
	}
	e := &Engine{
		store:      opts.Store,
		tools:      opts.Tools,
		models:     opts.Models,
		admit:      opts.Admission,
		clock:      opts.Clock,
		log:        opts.Logger,
		lim:        opts.Limits.withDefaults(),
		base:       opts.BasePrompt,
		notify:     opts.Notify,
		sessions:   make(map[string]*session),
		tasks:      make(map[string]*task),
		recovering: make(map[string]int),
		owners:     make(map[string]*ownerUsage),
		idle:       make(chan struct{}),
	}
	close(e.idle)
	if e.models == nil {
		e.models = StaticModel(model.Config{}, nil)
	}
	if e.admit == nil {
		e.admit = AppPromptLimit{Max: 16000}
	}
	e.clock = clock.Or(e.clock)
	if e.log == nil {
		e.log = slog.New(slog.DiscardHandler)
	}
	if e.base == "" {
		e.base = DefaultBasePrompt
	}
	if e.notify == nil {
		e.notify = func() {}
	}
	e.ctx, e.stop = context.WithCancelCause(context.Background())
	if err := e.recover(ctx); err != nil {
		e.stop(errShutdown)
		return nil, fmt.Errorf("engine: recover: %w", err)
	}
	return e, nil
}

// Close stops accepting prompts, cancels every queued and running task
// (task.cancelled, by "shutdown") and waits for them until ctx ends. A
// task that has not stopped by then stays "running" in the store and is
// reported as recovery_required by the next start. Close does not close
// the store.
func (e *Engine) Close(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	var sessions []string
	for id := range e.sessions {
		sessions = append(sessions, id)
	}
	e.mu.Unlock()
	var stopping []*task
	for _, id := range sessions {
		stopping = append(stopping, e.cancelSession(ctx, id, "shutdown")...)
	}
	e.stop(errShutdown)
	stopped := e.waitTasks(ctx, stopping)
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	if !stopped {
		return fmt.Errorf("engine: close: %w", errcode.New(errcode.Busy, "some tasks did not stop in time"))
	}
	return nil
}

// SetSafeMode switches the refusal of new prompts (safe_mode) on or off.
func (e *Engine) SetSafeMode(on bool) { e.safeMode.Store(on) }

// SafeMode reports whether new prompts are refused.
func (e *Engine) SafeMode() bool { return e.safeMode.Load() }

// Usage returns the counters of an owner key.
func (e *Engine) Usage(ownerKey string) Usage {
	e.mu.Lock()
	defer e.mu.Unlock()
	u := e.owners[ownerKey]
	if u == nil {
		return Usage{}
	}
	return Usage{Running: u.running, Queued: u.queued, Prompts: u.prompts}
}

// Stats returns the engine-wide counters.
func (e *Engine) Stats() Stats {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.statsLocked()
}

func (e *Engine) statsLocked() Stats {
	var st Stats
	for _, t := range e.tasks {
		if t.state == store.TaskRunning {
			st.Running++
		} else {
			st.Queued++
		}
	}
	return st
}

// Idle returns a channel that is closed while no task is queued or
// running (a fresh channel is handed out once work arrives).
func (e *Engine) Idle() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.idle
}

// liveChangedLocked keeps the idle channel in step with e.tasks.
func (e *Engine) liveChangedLocked() {
	select {
	case <-e.idle:
		if len(e.tasks) > 0 {
			e.idle = make(chan struct{})
		}
	default:
		if len(e.tasks) == 0 {
			close(e.idle)
		}
	}
}

func (e *Engine) owner(key string) *ownerUsage {
	u := e.owners[key]
	if u == nil {
		u = &ownerUsage{}
		e.owners[key] = u
	}
	return u
}
