package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ids"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/store"
)

// session is a session in use. Sessions are loaded on demand and dropped
// when nothing refers to them; the store holds the truth.
type session struct {
	id    string
	owner string

	// Guarded by Engine.mu:
	refs    int     // live tasks, followers and methods using the session
	queue   []*task // written queued tasks, FIFO
	pending int     // tasks being written as queued (count towards the queue limit)
	running *task
	closing bool // a delete or close is stopping the session's tasks
	gone    bool // dropped from Engine.sessions; a new object replaces it

	logMu sync.Mutex // guards the fields below; held around one event write
	// nextSeq is the seq of the next event; 0 until read from the store.
	nextSeq int64
	// tail keeps the latest events for followers (bounded, see appendEvent).
	tail      []store.Event
	tailBytes int
	// changed is closed and replaced after every append.
	changed chan struct{}

	convMu sync.Mutex // guards conv; held while a task rebuilds its conversation
	// conv is the session's conversation folded from the log up to some
	// seq, so a task reads only the events since the last one (nil: none).
	conv *convCache
}

const (
	tailMax      = 256
	tailMaxBytes = 1 << 20
	// maxIdleSessions bounds the sessions kept in memory with nothing using
	// them (their conversation caches make the next prompt cheaper).
	maxIdleSessions = 16
)

// SessionInfo describes a session.
type SessionInfo struct {
	ID         string
	OwnerKey   string
	CallerKind CallerKind
	Cwd        string
	Title      string
	// Scope is nil when the session has no toolScope and non-nil
	// (possibly empty: no tools) when it has one.
	Scope []ToolScopeEntry
	// Mode is the mode the next task runs in.
	Mode string
	// ModelID is the session's chosen model ("" = the configured default).
	ModelID    string
	ForkedFrom string
	Closed     bool
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

func sessionInfo(row store.Session) SessionInfo {
	return SessionInfo{
		ID: row.ID, OwnerKey: row.OwnerKey, CallerKind: CallerKind(row.CallerKind), Cwd: row.Cwd, Title: row.Title,
		Scope: scopeOf(row), Mode: modeOf(row), ModelID: row.ModelID, ForkedFrom: row.ForkedFrom,
		Closed: row.State == store.SessionClosed, CreatedAt: row.CreatedAt, UpdatedAt: row.UpdatedAt,
	}
}

// scopeOf reads a stored toolScope. Absent stays nil; a value that cannot
// be read means no tools at all (fail closed, spec §2.4).
func scopeOf(row store.Session) []ToolScopeEntry {
	return catalog.ScopeAs[ToolScopeEntry](catalog.DecodeStoredScope(row.ToolScope))
}

// modeOf reads a stored mode; one that cannot be read means chat (spec §2.5).
func modeOf(row store.Session) string { return string(catalog.StoredMode(row.Mode)) }

// owned returns the session row when c may use it. Foreign, deleted and
// never-existing sessions are all reported the same way.
func (e *Engine) owned(ctx context.Context, c Caller, id string) (store.Session, error) {
	if !ids.ValidSession(id) {
		return store.Session{}, errNoSession
	}
	row, err := e.store.Session(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Session{}, errNoSession
	}
	if err != nil {
		return store.Session{}, errcode.Wrap(errcode.StoreFailed, "the runtime could not read its store", err)
	}
	if !c.SeesAll() && row.OwnerKey != c.OwnerKey() && !(faultinject.Enabled && faultinject.Active(faultinject.CrossAppSessionLoad)) {
		return store.Session{}, errNoSession
	}
	return row, nil
}

// acquire returns the in-memory session for a row, adding a reference.
func (e *Engine) acquire(row store.Session) *session {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.acquireLocked(row.ID, row.OwnerKey)
}

func (e *Engine) acquireLocked(id, owner string) *session {
	s := e.sessions[id]
	if s == nil {
		s = &session{id: id, owner: owner, changed: make(chan struct{})}
		e.sessions[id] = s
	}
	if s.refs == 0 {
		if i := slices.Index(e.idleSessions, s); i >= 0 {
			e.idleSessions = slices.Delete(e.idleSessions, i, i+1)
		}
	}
	s.refs++
	return s
}

// release drops a reference taken by acquire.
func (e *Engine) release(s *session) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.releaseLocked(s)
}

// releaseLocked drops a reference; a session nothing uses joins the idle
// list, whose oldest members are dropped beyond maxIdleSessions.
func (e *Engine) releaseLocked(s *session) {
	s.refs--
	if s.refs > 0 || s.running != nil || len(s.queue) > 0 || s.pending > 0 || s.gone {
		return
	}
	e.idleSessions = append(e.idleSessions, s)
	for len(e.idleSessions) > maxIdleSessions {
		old := e.idleSessions[0]
		e.idleSessions = e.idleSessions[1:]
		old.gone = true
		delete(e.sessions, old.id)
	}
}

// forgetLocked drops a session from memory at once (deleted sessions).
func (e *Engine) forgetLocked(id string) {
	s := e.sessions[id]
	if s == nil {
		return
	}
	if i := slices.Index(e.idleSessions, s); i >= 0 {
		e.idleSessions = slices.Delete(e.idleSessions, i, i+1)
	}
	s.gone = true
	delete(e.sessions, id)
}

// NewSession creates a session owned by c. A nil scope means no toolScope.
func (e *Engine) NewSession(ctx context.Context, c Caller, cwd string, scope []ToolScopeEntry) (SessionInfo, error) {
	now := e.clock.Now()
	row := store.Session{
		ID: ids.NewAt(ids.Session, now), OwnerKey: c.OwnerKey(), CallerKind: string(c.Kind), CallerUID: c.UID,
		Cwd: cwd, Mode: string(catalog.ModeDefault), State: store.SessionOpen, CreatedAt: now, UpdatedAt: now,
	}
	row.ToolScope = catalog.EncodeStoredScope(catalog.ScopeOf(scope))
	body, _ := json.Marshal(SessionCreatedBody{CallerKind: c.Kind})
	created := store.Event{SessionID: row.ID, Seq: 1, Type: EvSessionCreated, Body: body, At: now}
	if err := e.store.CreateSession(ctx, row, created); err != nil {
		return SessionInfo{}, errcode.Wrap(errcode.StoreFailed, "the runtime could not write its store", err)
	}
	e.log.Info("session created", "session", row.ID, "callerKind", string(c.Kind))
	return sessionInfo(row), nil
}

// Session returns a session c may use.
func (e *Engine) Session(ctx context.Context, c Caller, id string) (SessionInfo, error) {
	row, err := e.owned(ctx, c, id)
	if err != nil {
		return SessionInfo{}, err
	}
	return sessionInfo(row), nil
}

// OpenSession returns a session c may use and reopens it if it was closed
// (session/load and session/resume).
func (e *Engine) OpenSession(ctx context.Context, c Caller, id string) (SessionInfo, error) {
	row, err := e.owned(ctx, c, id)
	if err != nil {
		return SessionInfo{}, err
	}
	if row.State == store.SessionClosed {
		open := store.SessionOpen
		if err := e.store.UpdateSession(ctx, id, store.SessionChange{State: &open}); err != nil {
			return SessionInfo{}, e.storeErr(err)
		}
		row.State = open
	}
	return sessionInfo(row), nil
}

// ListSessions returns c's sessions (every session for SELF), most recent
// activity first, at most 200, optionally only those with cwd.
func (e *Engine) ListSessions(ctx context.Context, c Caller, cwd *string) ([]SessionInfo, error) {
	q := store.ListQuery{Cwd: cwd, Limit: 200}
	if !c.SeesAll() {
		q.OwnerKey = c.OwnerKey()
	}
	rows, err := e.store.ListSessions(ctx, q)
	if err != nil {
		return nil, e.storeErr(err)
	}
	out := make([]SessionInfo, len(rows))
	for i, r := range rows {
		out[i] = sessionInfo(r)
	}
	return out, nil
}

// finishedStates are the task states a fork copies.
var finishedStates = []store.TaskState{store.TaskCompleted, store.TaskCancelled, store.TaskFailed,
	store.TaskAbandoned, store.TaskExpired}

// ForkSession creates a session owned by c that starts with the finished
// turns of source (without consent.* and hook.* events). Its toolScope
// can only narrow the source's: the intersection when both have one.
// Mode and model are copied; the running turn and MCP servers are not.
func (e *Engine) ForkSession(ctx context.Context, c Caller, source, cwd string, scope []ToolScopeEntry) (SessionInfo, error) {
	src, err := e.owned(ctx, c, source)
	if err != nil {
		return SessionInfo{}, err
	}
	now := e.clock.Now()
	row := store.Session{
		ID: ids.NewAt(ids.Session, now), OwnerKey: c.OwnerKey(), CallerKind: string(c.Kind), CallerUID: c.UID,
		Cwd: cwd, Title: src.Title, Mode: modeOf(src), ModelID: src.ModelID, ForkedFrom: src.ID,
		State: store.SessionOpen, CreatedAt: now, UpdatedAt: now,
	}
	row.ToolScope = catalog.EncodeStoredScope(catalog.Narrow(catalog.ScopeOf(scopeOf(src)), catalog.ScopeOf(scope)))
	body, _ := json.Marshal(SessionCreatedBody{CallerKind: c.Kind, ForkedFrom: src.ID})
	n, err := e.store.Fork(ctx, store.ForkSpec{
		Source: src.ID, Session: row,
		Created:          store.Event{SessionID: row.ID, Seq: 1, Type: EvSessionCreated, Body: body, At: now},
		Finished:         finishedStates,
		SkipTypePrefixes: []string{eventPrefixConsent, eventPrefixHook},
		NewTaskID:        func() string { return ids.NewAt(ids.Task, now) },
	})
	if err != nil {
		return SessionInfo{}, e.storeErr(err)
	}
	e.log.Info("session forked", "session", row.ID, "from", src.ID, "tasks", n)
	return sessionInfo(row), nil
}

// stopSession marks the session closing, cancels its unfinished tasks and
// waits up to the cancel wait for them to end. On success the session
// stays marked closing (the caller finishes and calls reopen); when tasks
// did not stop it answers busy and leaves the session as it was.
func (e *Engine) stopSession(ctx context.Context, row store.Session, by string) (*session, error) {
	s := e.acquire(row)
	e.mu.Lock()
	if s.closing {
		e.mu.Unlock()
		e.release(s)
		return nil, errcode.New(errcode.Busy, "The session is already being stopped.")
	}
	s.closing = true
	e.mu.Unlock()
	stopping := e.cancelSession(ctx, row.ID, by)
	wctx, cancel := clock.WithTimeout(ctx, e.clock, e.lim.CancelWait)
	defer cancel()
	if !e.waitTasks(wctx, stopping) {
		e.reopen(s)
		return nil, errcode.New(errcode.Busy, "The session's tasks did not stop in time; nothing was changed.").
			WithSession(row.ID)
	}
	return s, nil
}

// reopen clears closing and drops the reference stopSession took.
func (e *Engine) reopen(s *session) {
	e.mu.Lock()
	s.closing = false
	e.mu.Unlock()
	e.release(s)
}

// DeleteSession cancels the session's tasks, waits for them (else busy,
// session untouched) and deletes the session with its whole event log.
func (e *Engine) DeleteSession(ctx context.Context, c Caller, id string) error {
	row, err := e.owned(ctx, c, id)
	if err != nil {
		return err
	}
	s, err := e.stopSession(ctx, row, "delete")
	if err != nil {
		return err
	}
	defer e.reopen(s)
	if err := e.store.DeleteSession(context.WithoutCancel(ctx), id); err != nil && !errors.Is(err, store.ErrNotFound) {
		return e.storeErr(err)
	}
	e.tools.ForgetSession(id)
	e.mu.Lock()
	e.forgetLocked(id)
	delete(e.recovering, id)
	e.mu.Unlock()
	e.log.Info("session deleted", "session", id)
	return nil
}

// CloseSession cancels the session's tasks, waits for them, forgets the
// session's per-session memory and marks it closed; history is kept and
// load or resume reopens it.
func (e *Engine) CloseSession(ctx context.Context, c Caller, id string) error {
	row, err := e.owned(ctx, c, id)
	if err != nil {
		return err
	}
	s, err := e.stopSession(ctx, row, "close")
	if err != nil {
		return err
	}
	defer e.reopen(s)
	closed := store.SessionClosed
	if err := e.store.UpdateSession(context.WithoutCancel(ctx), id, store.SessionChange{State: &closed}); err != nil {
		return e.storeErr(err)
	}
	e.tools.ForgetSession(id)
	return nil
}

// SetMode sets the mode of the session's next tasks. A mode can only
// narrow (spec §2.2); the owner's own UI (SELF) may also widen it.
func (e *Engine) SetMode(ctx context.Context, c Caller, id, mode string) (SessionInfo, error) {
	parsed, err := catalog.ParseMode(mode)
	if err != nil {
		return SessionInfo{}, err
	}
	m := string(parsed)
	row, err := e.owned(ctx, c, id)
	if err != nil {
		return SessionInfo{}, err
	}
	if !c.SeesAll() && !catalog.Narrows(catalog.StoredMode(row.Mode), parsed) {
		return SessionInfo{}, errcode.New(errcode.InvalidParams,
			"a session's mode can only be narrowed (default, then read_only, then chat)")
	}
	if err := e.store.UpdateSession(ctx, id, store.SessionChange{Mode: &m}); err != nil {
		return SessionInfo{}, e.storeErr(err)
	}
	row.Mode = m
	return sessionInfo(row), nil
}

// ModelChoices returns the model ids sessions may choose and the
// configured default ("" and nil when no model is configured).
func (e *Engine) ModelChoices() (choices []string, def string) {
	cfg, _, ok := e.models.Current()
	if !ok {
		return nil, ""
	}
	return slices.Clone(cfg.Choices), cfg.Model
}

// SetModel chooses the session's model among ModelChoices.
func (e *Engine) SetModel(ctx context.Context, c Caller, id, modelID string) (SessionInfo, error) {
	row, err := e.owned(ctx, c, id)
	if err != nil {
		return SessionInfo{}, err
	}
	choices, _ := e.ModelChoices()
	if len(choices) == 0 {
		return SessionInfo{}, errcode.New(errcode.Unsupported, "The configured model endpoint offers no model choices.")
	}
	if !slices.Contains(choices, modelID) {
		return SessionInfo{}, errcode.New(errcode.InvalidParams, "unknown model id")
	}
	if err := e.store.UpdateSession(ctx, id, store.SessionChange{ModelID: &modelID}); err != nil {
		return SessionInfo{}, e.storeErr(err)
	}
	row.ModelID = modelID
	return sessionInfo(row), nil
}

// ActiveTask reports the session's task in progress: the running one, the
// first queued one, or one awaiting a recovery decision.
func (e *Engine) ActiveTask(ctx context.Context, sessionID string) (taskID string, state string, ok bool) {
	e.mu.Lock()
	if s := e.sessions[sessionID]; s != nil {
		switch {
		case s.running != nil:
			e.mu.Unlock()
			return s.running.id, string(store.TaskRunning), true
		case len(s.queue) > 0:
			e.mu.Unlock()
			return s.queue[0].id, string(store.TaskQueued), true
		}
	}
	e.mu.Unlock()
	rec, err := e.store.Tasks(ctx, store.TaskQuery{SessionID: sessionID, States: []store.TaskState{store.TaskRecoveryRequired}})
	if err != nil || len(rec) == 0 {
		return "", "", false
	}
	return rec[0].ID, string(store.TaskRecoveryRequired), true
}

func (e *Engine) storeErr(err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return errNoSession
	}
	return errcode.Wrap(errcode.StoreFailed, "the runtime could not use its store", err)
}
