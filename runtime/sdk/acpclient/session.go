package acpclient

import (
	"context"
	"encoding/json"
	"iter"
	"slices"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
)

// Session modes (spec §2.5).
const (
	ModeDefault  = "default"
	ModeReadOnly = "read_only"
	ModeChat     = "chat"
)

// MCPServer is a caller-supplied Streamable-HTTP MCP server (spec §2.9).
// URL and headers stay in the runtime's memory only.
type MCPServer struct {
	Name    string
	URL     string
	Headers []Header
}

// Header is one HTTP header of an MCPServer.
type Header struct{ Name, Value string }

// ServerStatus is a caller-supplied MCP server's state after setup.
type ServerStatus struct {
	Name      string `json:"name"`
	Connected bool   `json:"connected"`
	ToolCount int    `json:"toolCount"`
	Reason    string `json:"reason,omitempty"`
}

// SessionOptions configure NewSession and ForkSession.
type SessionOptions struct {
	// ToolScope restricts the session's tools: nil means no scope (every
	// tool the user enabled), an empty non-nil slice means no tools.
	ToolScope []ToolRef
	// MCPServers are attached to this session only.
	MCPServers []MCPServer
	// Cwd is a label for the session (any string); "" means "/".
	Cwd string
}

// LoadOptions configure LoadSession and ResumeSession.
type LoadOptions struct {
	// MCPServers replace the servers attached to the session.
	MCPServers []MCPServer
	Cwd        string
}

// PromptOptions configure one prompt.
type PromptOptions struct {
	// IncludeThoughts adds Thought events to the stream.
	IncludeThoughts bool
}

// SessionInfo is one entry of ListSessions.
type SessionInfo struct {
	ID        string
	Cwd       string
	Title     string
	UpdatedAt time.Time
}

// Session is one session on a connection. A connection keeps one Session
// per session id. Safe for concurrent use; one prompt runs at a time.
type Session struct {
	c  *Conn
	id string

	mu         sync.Mutex // guards the fields below
	scope      []ToolRef
	mode       string
	modes      []string
	model      string
	models     []string
	servers    []ServerStatus
	activeTask [2]string
	history    []Event
	loading    bool // collecting history
	calls      map[string]*toolState
	setup      chan struct{} // closed when the sessionSetup marker arrived
	setupSeen  bool
	turn       *turn
	closedSess bool
}

func newSession(c *Conn, id string) *Session {
	return &Session{c: c, id: id, calls: map[string]*toolState{}, setup: make(chan struct{})}
}

// ID is the session id.
func (s *Session) ID() string { return s.id }

// Mode is the current mode (default, read_only or chat).
func (s *Session) Mode() string { s.mu.Lock(); defer s.mu.Unlock(); return s.mode }

// AvailableModes lists the modes.
func (s *Session) AvailableModes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.modes...)
}

// Model is the current model id ("" when the runtime offers no choice).
func (s *Session) Model() string { s.mu.Lock(); defer s.mu.Unlock(); return s.model }

// AvailableModels lists the models the session may switch to (none for a
// custom endpoint).
func (s *Session) AvailableModels() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.models...)
}

// MCPServers reports the caller-supplied servers' state after setup.
func (s *Session) MCPServers() []ServerStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ServerStatus(nil), s.servers...)
}

// ActiveTask is the task running or queued when the session was set up.
func (s *Session) ActiveTask() (taskID, state string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.activeTask[0], s.activeTask[1], s.activeTask[0] != ""
}

// History is what LoadSession replayed (empty for other sessions).
func (s *Session) History() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.history...)
}

// sessionResponse is the result of new/load/resume/fork.
type sessionResponse struct {
	SessionID string `json:"sessionId"`
	Modes     *struct {
		CurrentModeID  string `json:"currentModeId"`
		AvailableModes []struct {
			ID string `json:"id"`
		} `json:"availableModes"`
	} `json:"modes"`
	Models *struct {
		CurrentModelID  string `json:"currentModelId"`
		AvailableModels []struct {
			ModelID string `json:"modelId"`
		} `json:"availableModels"`
	} `json:"models"`
}

func (s *Session) setState(r sessionResponse) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Modes != nil {
		s.mode = r.Modes.CurrentModeID
		s.modes = s.modes[:0]
		for _, m := range r.Modes.AvailableModes {
			s.modes = append(s.modes, m.ID)
		}
	}
	s.model, s.models = "", nil
	if r.Models != nil {
		s.model = r.Models.CurrentModelID
		for _, m := range r.Models.AvailableModels {
			s.models = append(s.models, m.ModelID)
		}
	}
}

func wireServers(in []MCPServer) []any {
	out := make([]any, 0, len(in))
	for _, m := range in {
		hs := make([]map[string]string, 0, len(m.Headers))
		for _, h := range m.Headers {
			hs = append(hs, map[string]string{"name": h.Name, "value": h.Value})
		}
		out = append(out, map[string]any{"type": "http", "name": m.Name, "url": m.URL, "headers": hs})
	}
	return out
}

func cwdOr(c string) string {
	if c == "" {
		return "/"
	}
	return c
}

func scopeMeta(scope []ToolRef) map[string]any {
	if scope == nil {
		return nil
	}
	entries := make([]ToolRef, len(scope))
	copy(entries, scope)
	return map[string]any{metaKey: map[string]any{"toolScope": entries}}
}

// NewSession creates a session.
func (c *Conn) NewSession(ctx context.Context, o SessionOptions) (*Session, error) {
	req := map[string]any{"cwd": cwdOr(o.Cwd), "mcpServers": wireServers(o.MCPServers)}
	if m := scopeMeta(o.ToolScope); m != nil {
		req["_meta"] = m
	}
	return c.establish(ctx, sdk.AgentMethodSessionNew, req, "", o.ToolScope, false)
}

// ForkSession creates a session that carries the finished turns of id;
// its toolScope can only narrow the source's.
func (c *Conn) ForkSession(ctx context.Context, id string, o SessionOptions) (*Session, error) {
	req := map[string]any{"sessionId": id, "cwd": cwdOr(o.Cwd), "mcpServers": wireServers(o.MCPServers)}
	if m := scopeMeta(o.ToolScope); m != nil {
		req["_meta"] = m
	}
	return c.establish(ctx, sdk.AgentMethodSessionFork, req, "", o.ToolScope, false)
}

// LoadSession opens an existing session and replays its history
// (Session.History).
func (c *Conn) LoadSession(ctx context.Context, id string, o LoadOptions) (*Session, error) {
	req := map[string]any{"sessionId": id, "cwd": cwdOr(o.Cwd), "mcpServers": wireServers(o.MCPServers)}
	return c.establish(ctx, sdk.AgentMethodSessionLoad, req, id, nil, true)
}

// ResumeSession opens an existing session without replaying its history.
func (c *Conn) ResumeSession(ctx context.Context, id string, o LoadOptions) (*Session, error) {
	req := map[string]any{"sessionId": id, "cwd": cwdOr(o.Cwd), "mcpServers": wireServers(o.MCPServers)}
	return c.establish(ctx, sdk.AgentMethodSessionResume, req, id, nil, false)
}

// establish runs new/load/resume/fork and waits (≤ 5 s) for the
// sessionSetup marker, so history, server states and the active task are
// complete when it returns.
func (c *Conn) establish(ctx context.Context, method string, req map[string]any, knownID string, scope []ToolRef, load bool) (*Session, error) {
	var pre *Session
	if knownID != "" {
		pre, _ = c.claim(knownID)
		pre.mu.Lock()
		pre.setup = make(chan struct{})
		pre.setupSeen = false
		pre.loading = load
		pre.history = nil
		pre.calls = map[string]*toolState{}
		pre.mu.Unlock()
	}
	var resp sessionResponse
	if err := c.call(ctx, method, req, &resp); err != nil {
		if pre != nil {
			pre.mu.Lock()
			pre.loading = false
			pre.mu.Unlock()
		}
		return nil, err
	}
	if knownID == "" {
		knownID = resp.SessionID
	}
	s, early := c.claim(knownID)
	for _, u := range early {
		s.apply(u)
	}
	s.setState(resp)
	s.mu.Lock()
	if pre == nil || method == sdk.AgentMethodSessionFork || method == sdk.AgentMethodSessionNew {
		s.scope = scope
	}
	setup := s.setup
	s.mu.Unlock()
	// A runtime that does not offer sessionSetup sends no marker: then
	// what arrived before the response is all there is.
	if slices.Contains(c.caps.Extensions, extSessionSetup) {
		t := time.NewTimer(setupWait)
		select {
		case <-setup:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	s.mu.Lock()
	s.loading = false
	s.closedSess = false
	s.mu.Unlock()
	return s, nil
}

// apply routes one update.
func (s *Session) apply(u update) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch u.kind {
	case "session_info_update":
		var m struct {
			Setup      *struct{ Replayed int } `json:"setup"`
			MCPServers []ServerStatus          `json:"mcpServers"`
			ActiveTask *struct {
				TaskID string `json:"taskId"`
				State  string `json:"state"`
			} `json:"activeTask"`
		}
		if len(u.meta) == 0 || json.Unmarshal(u.meta, &m) != nil {
			return
		}
		if m.MCPServers != nil {
			s.servers = m.MCPServers
		}
		if m.ActiveTask != nil {
			s.activeTask = [2]string{m.ActiveTask.TaskID, m.ActiveTask.State}
		}
		if m.Setup != nil && !s.setupSeen {
			s.setupSeen = true
			close(s.setup)
		}
		return
	case "current_mode_update":
		s.mode = u.modeID
		return
	case "config_option_update":
		if u.modeID != "" {
			s.mode = u.modeID
		}
		if u.models != "" {
			s.model = u.models
		}
		return
	}
	var ev Event
	switch u.kind {
	case "user_message_chunk":
		ev = UserMessage{Text: u.text}
	case "agent_message_chunk":
		ev = Text{Text: u.text}
	case "agent_thought_chunk":
		ev = Thought{Text: u.text}
	case "tool_call", "tool_call_update":
		var scope []ToolRef
		if !s.loading {
			scope = s.scope
		}
		ev = toolEvent(s.calls, u, scope)
	default:
		return
	}
	switch {
	case s.loading:
		s.history = append(s.history, ev)
	case s.turn != nil:
		s.turn.push(ev)
	}
}

// Prompt sends text and streams the turn's events, ending with Done or an
// error. Nothing is sent until the iteration starts. Stopping early (break)
// or cancelling ctx sends session/cancel; the task then ends cancelled in
// AgentOS. Only one prompt runs per session on a connection: a second one
// waits for the first to end.
func (s *Session) Prompt(ctx context.Context, text string, o PromptOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		t, err := s.startTurn(ctx, text, o)
		if err != nil {
			yield(nil, err)
			return
		}
		for {
			ev, final, err := t.next(ctx)
			if err != nil {
				s.sendCancel()
				yield(nil, &Error{Code: Failed, Message: "prompt cancelled", Err: err})
				return
			}
			if final {
				if t.err != nil {
					yield(nil, t.err)
				} else {
					yield(Done{StopReason: t.stopReason, TaskID: t.taskID}, nil)
				}
				return
			}
			if _, ok := ev.(Thought); ok && !o.IncludeThoughts {
				continue
			}
			if !yield(ev, nil) {
				s.sendCancel()
				return
			}
		}
	}
}

func (s *Session) startTurn(ctx context.Context, text string, o PromptOptions) (*turn, error) {
	for {
		s.mu.Lock()
		prev := s.turn
		if prev == nil {
			t := newTurn()
			s.turn = t
			s.calls = map[string]*toolState{}
			s.mu.Unlock()
			s.run(t, text)
			return t, nil
		}
		s.mu.Unlock()
		select {
		case <-prev.done:
		case <-ctx.Done():
			return nil, &Error{Code: Busy, Message: "a prompt is already in progress on this session", Err: ctx.Err()}
		}
	}
}

// run sends session/prompt in the connection's lifetime (not the
// caller's ctx: a cancel goes as session/cancel and the response still
// comes, "cancelled").
func (s *Session) run(t *turn, text string) {
	c := s.c
	c.mu.Lock()
	closed := c.closed
	if !closed {
		c.wg.Add(1)
	}
	c.mu.Unlock()
	if closed {
		s.finish(t, "", "", &Error{Code: Disconnected, Message: "the connection is closed"})
		return
	}
	go func() {
		defer c.wg.Done()
		req := map[string]any{"sessionId": s.id, "prompt": []map[string]string{{"type": "text", "text": text}}}
		var resp struct {
			StopReason string `json:"stopReason"`
			Meta       map[string]struct {
				TaskID string `json:"taskId"`
			} `json:"_meta"`
		}
		err := c.call(c.ctx, sdk.AgentMethodSessionPrompt, req, &resp)
		s.finish(t, resp.StopReason, resp.Meta[metaKey].TaskID, err)
	}()
}

func (s *Session) finish(t *turn, stop, taskID string, err error) {
	if err != nil {
		var e *Error
		if ae, ok := err.(*Error); ok {
			e = ae
		} else {
			e = &Error{Code: Failed, Message: err.Error(), Err: err}
		}
		if e.Code == Failed && e.Err != nil {
			select {
			case <-s.c.ctx.Done():
				e = &Error{Code: Disconnected, Message: "the connection to AgentOS ended", Err: err}
			default:
			}
		}
		err = e
	}
	s.mu.Lock()
	if s.turn == t {
		s.turn = nil
	}
	s.mu.Unlock()
	t.end(stop, taskID, err)
}

func (s *Session) sendCancel() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.c.rpc.SendNotification(ctx, sdk.AgentMethodSessionCancel, map[string]string{"sessionId": s.id})
}

// Cancel cancels the prompt in progress on this session (session/cancel).
func (s *Session) Cancel(ctx context.Context) error {
	if err := s.c.rpc.SendNotification(ctx, sdk.AgentMethodSessionCancel, map[string]string{"sessionId": s.id}); err != nil {
		return s.c.mapErr(err)
	}
	return nil
}

// SetMode switches the session's mode (effective from the next prompt).
func (s *Session) SetMode(ctx context.Context, mode string) error {
	if err := s.c.call(ctx, sdk.AgentMethodSessionSetMode, map[string]string{"sessionId": s.id, "modeId": mode}, nil); err != nil {
		return err
	}
	s.mu.Lock()
	s.mode = mode
	s.mu.Unlock()
	return nil
}

// SetModel switches the session's model; UNSUPPORTED when the runtime
// offers no choice (custom endpoint).
func (s *Session) SetModel(ctx context.Context, modelID string) error {
	if err := s.c.call(ctx, sdk.AgentMethodSessionSetModel, map[string]string{"sessionId": s.id, "modelId": modelID}, nil); err != nil {
		return err
	}
	s.mu.Lock()
	s.model = modelID
	s.mu.Unlock()
	return nil
}

// Close cancels the session's work and frees it in AgentOS; the session
// and its history are kept (LoadSession opens it again).
func (s *Session) Close(ctx context.Context) error {
	if err := s.c.call(ctx, sdk.AgentMethodSessionClose, map[string]string{"sessionId": s.id}, nil); err != nil {
		return err
	}
	s.mu.Lock()
	s.closedSess = true
	s.mu.Unlock()
	return nil
}

// ListSessions lists this app's sessions, most recent first; cwd filters
// when not empty.
func (c *Conn) ListSessions(ctx context.Context, cwd string) ([]SessionInfo, error) {
	req := map[string]any{}
	if cwd != "" {
		req["cwd"] = cwd
	}
	var resp struct {
		Sessions []struct {
			SessionID string  `json:"sessionId"`
			Cwd       string  `json:"cwd"`
			Title     *string `json:"title"`
			UpdatedAt *string `json:"updatedAt"`
		} `json:"sessions"`
	}
	if err := c.call(ctx, sdk.AgentMethodSessionList, req, &resp); err != nil {
		return nil, err
	}
	out := make([]SessionInfo, 0, len(resp.Sessions))
	for _, it := range resp.Sessions {
		si := SessionInfo{ID: it.SessionID, Cwd: it.Cwd}
		if it.Title != nil {
			si.Title = *it.Title
		}
		if it.UpdatedAt != nil {
			si.UpdatedAt, _ = time.Parse(time.RFC3339Nano, *it.UpdatedAt)
		}
		out = append(out, si)
	}
	return out, nil
}

// DeleteSession deletes a session and its history; afterwards it is
// SESSION_NOT_FOUND like one that never existed.
func (c *Conn) DeleteSession(ctx context.Context, id string) error {
	if err := c.call(ctx, methodDelete, map[string]string{"sessionId": id}, nil); err != nil {
		return err
	}
	c.forget(id)
	return nil
}

// turn is one prompt's event queue.
type turn struct {
	mu     sync.Mutex
	queue  []Event
	signal chan struct{} // capacity 1: something was pushed or the turn ended
	done   chan struct{} // closed by end

	// Set by end, before done is closed.
	stopReason, taskID string
	err                error
}

func newTurn() *turn {
	return &turn{signal: make(chan struct{}, 1), done: make(chan struct{})}
}

func (t *turn) push(ev Event) {
	t.mu.Lock()
	if len(t.queue) < maxQueuedEvents {
		t.queue = append(t.queue, ev)
	}
	t.mu.Unlock()
	select {
	case t.signal <- struct{}{}:
	default:
	}
}

func (t *turn) end(stop, taskID string, err error) {
	t.stopReason, t.taskID, t.err = stop, taskID, err
	close(t.done)
}

// next returns the next event, or final once the queue is drained after
// the turn ended; err when ctx ended first.
func (t *turn) next(ctx context.Context) (Event, bool, error) {
	for {
		t.mu.Lock()
		if len(t.queue) > 0 {
			ev := t.queue[0]
			t.queue = t.queue[1:]
			t.mu.Unlock()
			return ev, false, nil
		}
		t.mu.Unlock()
		select {
		case <-t.done:
			t.mu.Lock()
			empty := len(t.queue) == 0
			t.mu.Unlock()
			if empty {
				return nil, true, nil
			}
		case <-t.signal:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}
