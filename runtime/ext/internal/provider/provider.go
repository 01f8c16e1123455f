// Package provider keeps the extension host's MCP connection to one
// server of a provider app: started through the launcher on first use
// (bind semantics), dialled on the app's socket with the listener's uid
// checked, initialized, its tools listed and kept fresh on
// notifications/tools/list_changed, at most 8 calls in flight (the rest
// queue), closed after an idle period, and reconnected (to a new
// process) after the provider dies.
package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/internal/wire"
	"github.com/agentoslab/agentlab/runtime/internal/chars"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Defaults (spec §4.6, §4.9).
const (
	DefaultCallTimeout    = 120 * time.Second
	DefaultIdleTimeout    = 30 * time.Second
	DefaultConnectTimeout = 15 * time.Second
	DefaultMaxInflight    = 8
	DefaultListDebounce   = 200 * time.Millisecond
	// MaxTools bounds one server's tool list.
	MaxTools = 1000
	// maxProviderText bounds a provider's error message quoted to the model.
	maxProviderText = 300
	stopTimeout     = 10 * time.Second
)

// Launcher starts and stops provider services (the supervisor's
// launcher in production).
type Launcher interface {
	// Start starts pkg's server unless it runs and returns once it
	// listens on its socket as the package's uid.
	Start(ctx context.Context, pkg, server string) error
	// Stop stops it (the idle "unbind").
	Stop(ctx context.Context, pkg, server string) error
}

// States of a server connection.
const (
	StateIdle       = "idle"
	StateConnecting = "connecting"
	StateConnected  = "connected"
	StateFailed     = "failed"
	StateClosed     = "closed"
)

// Errors a failed connection reports (Status.Error).
const (
	ErrBindFailed        = "bind_failed"
	ErrUIDMismatch       = "uid_mismatch"
	ErrConnectFailed     = "connect_failed"
	ErrInitializeFailed  = "initialize_failed"
	ErrInitializeTimeout = "initialize_timeout"
	ErrListFailed        = "list_failed"
	ErrTooManyTools      = "too_many_tools"
)

// Config describes one server.
type Config struct {
	Package string
	// UID is the package's uid: the only uid the socket's listener may have.
	UID    int
	Server string
	// Socket is transport.Names.App(Package, Server).
	Socket string
	// Ident names the installed version the manager serves (opaque to
	// it); its owner replaces the manager when the package changes.
	Ident    string
	Launcher Launcher
	// Timeouts and limits; zero values take the defaults above.
	IdleTimeout    time.Duration
	ConnectTimeout time.Duration
	MaxInflight    int
	ListDebounce   time.Duration
	// OnTools receives every successful tools/list (on connect and after
	// list_changed). It must not block for long.
	OnTools func(tools []plugin.ToolInfo)
	// OnState is called after the state changed. It must not block for long.
	OnState func()
	// Clock times the idle release and each call's timeout; nil means
	// the real clock. (Connecting is process start and socket I/O,
	// bounded on the wall clock.)
	Clock  clock.Clock
	Logger *slog.Logger
}

// Status is a snapshot for the owner's tools.
type Status struct {
	State     string `json:"state"`
	Error     string `json:"error,omitempty"`
	Connected bool   `json:"connected"`
	PID       int    `json:"pid,omitempty"`
	PeerUID   int    `json:"peerUid,omitempty"`
	InFlight  int    `json:"inFlight"`
	Queued    int    `json:"queued"`
	Connects  int    `json:"connects"`
	// Deaths counts connections that ended without the host closing them.
	Deaths       int `json:"deaths"`
	ListChanged  int `json:"listChanged"`
	Refreshes    int `json:"refreshes"`
	UIDRejects   int `json:"uidRejects"`
	IdleReleases int `json:"idleReleases"`
	// DroppedTools counts listed tools no model could be given (bad
	// name, duplicate, bad schema) at the last listing.
	DroppedTools int `json:"droppedTools"`
}

// Server is the connection manager of one server. Safe for concurrent use.
type Server struct {
	cfg    Config
	sem    chan struct{}
	change chan struct{} // list_changed signals, coalesced
	quit   chan struct{}
	wg     sync.WaitGroup

	mu         sync.Mutex
	conn       *conn              // guarded by mu
	connecting chan struct{}      // closed when a connect attempt ends; guarded by mu
	releasing  chan struct{}      // closed when an idle release ends; guarded by mu
	calls      map[*call]struct{} // in flight; guarded by mu
	idle       clock.Timer        // guarded by mu
	st         Status             // guarded by mu
	closed     bool               // guarded by mu
	queued     int                // guarded by mu
}

type conn struct {
	c       *plugin.Client
	pid     int
	uid     int
	closing bool // the host closed it (idle, abort); guarded by Server.mu
}

type call struct {
	cancel context.CancelCauseFunc
}

// errAborted is the cause of calls ended by Abort.
type errAborted struct{ reason string }

func (e *errAborted) Error() string { return "aborted: " + e.reason }

// New returns a manager; nothing connects until a call or Refresh.
func New(cfg Config) *Server {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = DefaultConnectTimeout
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	if cfg.ListDebounce <= 0 {
		cfg.ListDebounce = DefaultListDebounce
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Clock = clock.Or(cfg.Clock)
	s := &Server{
		cfg:    cfg,
		sem:    make(chan struct{}, cfg.MaxInflight),
		change: make(chan struct{}, 1),
		quit:   make(chan struct{}),
		calls:  map[*call]struct{}{},
		st:     Status{State: StateIdle},
	}
	s.wg.Add(1)
	go s.refresher()
	return s
}

// Target is the package and server the manager connects to.
func (s *Server) Target() (pkg, server string) { return s.cfg.Package, s.cfg.Server }

// Ident is Config.Ident.
func (s *Server) Ident() string { return s.cfg.Ident }

// Status returns a snapshot.
func (s *Server) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.InFlight = len(s.calls)
	st.Queued = s.queued
	if s.conn != nil && !s.conn.c.Closed() {
		st.Connected, st.PID, st.PeerUID = true, s.conn.pid, s.conn.uid
	}
	return st
}

func (s *Server) stateChanged() {
	if s.cfg.OnState != nil {
		s.cfg.OnState()
	}
}

// Refresh connects if needed and lists the tools (OnTools receives them).
func (s *Server) Refresh(ctx context.Context) error {
	s.mu.Lock()
	fresh := s.conn == nil || s.conn.c.Closed()
	s.mu.Unlock()
	c, err := s.connect(ctx)
	if err != nil {
		return err
	}
	defer s.armIdle()
	if fresh {
		return nil // connect listed them
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	tools, err := c.c.ListTools(ctx)
	if err != nil {
		return fmt.Errorf("provider: tools/list: %w", err)
	}
	if len(tools) > MaxTools {
		return fmt.Errorf("provider: %s", ErrTooManyTools)
	}
	s.mu.Lock()
	s.st.DroppedTools = c.c.Dropped()
	s.mu.Unlock()
	if s.cfg.OnTools != nil {
		s.cfg.OnTools(tools)
	}
	return nil
}

// connect returns the live connection, making one if needed. Concurrent
// callers share one attempt.
func (s *Server) connect(ctx context.Context) (*conn, error) {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return nil, errors.New("provider: closed")
		}
		if s.conn != nil && !s.conn.c.Closed() && !s.conn.closing {
			c := s.conn
			s.mu.Unlock()
			return c, nil
		}
		wait := s.connecting
		if wait == nil {
			wait = s.releasing
		}
		if wait != nil {
			s.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		done := make(chan struct{})
		s.connecting = done
		s.st.State = StateConnecting
		s.mu.Unlock()
		s.stateChanged()

		c, tools, code, err := s.dial(ctx)

		s.mu.Lock()
		s.connecting = nil
		close(done)
		if err != nil {
			s.st.State, s.st.Error = StateFailed, code
			if code == ErrUIDMismatch {
				s.st.UIDRejects++
			}
			s.mu.Unlock()
			s.stateChanged()
			s.cfg.Logger.Warn("provider: connect failed", "package", s.cfg.Package, "server", s.cfg.Server, "error", code)
			return nil, &connectError{code: code, err: err}
		}
		if s.closed {
			s.mu.Unlock()
			c.c.Close()
			return nil, errors.New("provider: closed")
		}
		s.conn = c
		s.st.State, s.st.Error = StateConnected, ""
		s.st.Connects++
		s.st.DroppedTools = c.c.Dropped()
		s.mu.Unlock()
		s.wg.Add(1)
		go s.watch(c)
		if s.cfg.OnTools != nil {
			s.cfg.OnTools(tools)
		}
		s.stateChanged()
		return c, nil
	}
}

type connectError struct {
	code string
	err  error
}

func (e *connectError) Error() string { return "provider: " + e.code + ": " + e.err.Error() }
func (e *connectError) Unwrap() error { return e.err }

// dial starts the service, connects with the uid check, initializes and
// lists the tools, all within ConnectTimeout.
func (s *Server) dial(ctx context.Context) (*conn, []plugin.ToolInfo, string, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.ConnectTimeout)
	defer cancel()
	if s.cfg.Launcher != nil {
		if err := s.cfg.Launcher.Start(ctx, s.cfg.Package, s.cfg.Server); err != nil {
			return nil, nil, ErrBindFailed, err
		}
	}
	nc, err := transport.Dial(ctx, s.cfg.Socket)
	if err != nil {
		return nil, nil, ErrConnectFailed, err
	}
	cred, err := transport.PeerCred(nc)
	if err != nil {
		nc.Close()
		return nil, nil, ErrConnectFailed, err
	}
	if cred.UID != s.cfg.UID && !(faultinject.Enabled && faultinject.Active(faultinject.ProviderPeerUIDUnchecked)) {
		// Someone else holds the name: refuse before sending a byte.
		nc.Close()
		return nil, nil, ErrUIDMismatch, fmt.Errorf("socket served by uid %d, not %d: %w", cred.UID, s.cfg.UID, plugin.ErrWrongPeer)
	}
	client, err := plugin.NewClient(ctx, nc, &plugin.ClientOptions{
		OnToolsChanged: s.listChanged,
		Logger:         s.cfg.Logger,
	})
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, nil, ErrInitializeTimeout, err
		}
		return nil, nil, ErrInitializeFailed, err
	}
	tools, err := client.ListTools(ctx)
	if err != nil {
		client.Close()
		return nil, nil, ErrListFailed, err
	}
	if len(tools) > MaxTools {
		client.Close()
		return nil, nil, ErrTooManyTools, fmt.Errorf("%d tools", len(tools))
	}
	return &conn{c: client, pid: cred.PID, uid: cred.UID}, tools, "", nil
}

// watch notices a connection's end.
func (s *Server) watch(c *conn) {
	defer s.wg.Done()
	select {
	case <-c.c.Done():
	case <-s.quit:
		c.c.Close()
		return
	}
	s.mu.Lock()
	if s.conn == c {
		s.conn = nil
		if !c.closing {
			s.st.Deaths++
		}
		if s.st.State == StateConnected {
			s.st.State = StateIdle
		}
		if s.idle != nil {
			s.idle.Stop()
			s.idle = nil
		}
	}
	s.mu.Unlock()
	s.stateChanged()
}

// listChanged runs on the client's reading goroutine: it only signals,
// so a provider flooding notifications costs one channel send each.
func (s *Server) listChanged() {
	s.mu.Lock()
	s.st.ListChanged++
	s.mu.Unlock()
	select {
	case s.change <- struct{}{}:
	default:
	}
}

// refresher lists the tools again after list_changed, at most once per
// debounce period however many notifications arrive.
func (s *Server) refresher() {
	defer s.wg.Done()
	for {
		select {
		case <-s.quit:
			return
		case <-s.change:
		}
		t := time.NewTimer(s.cfg.ListDebounce)
		select {
		case <-s.quit:
			t.Stop()
			return
		case <-t.C:
		}
		select { // signals that came during the wait are covered by this refresh
		case <-s.change:
		default:
		}
		s.mu.Lock()
		c := s.conn
		s.mu.Unlock()
		if c == nil || c.c.Closed() {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ConnectTimeout)
		tools, err := c.c.ListTools(ctx)
		cancel()
		if err != nil {
			s.cfg.Logger.Warn("provider: tools/list after list_changed failed", "package", s.cfg.Package, "server", s.cfg.Server)
			continue
		}
		if len(tools) > MaxTools {
			continue
		}
		s.mu.Lock()
		s.st.Refreshes++
		s.st.DroppedTools = c.c.Dropped()
		s.mu.Unlock()
		if s.cfg.OnTools != nil {
			s.cfg.OnTools(tools)
		}
	}
}

// armIdle (re)starts the idle timer when nothing is in flight.
func (s *Server) armIdle() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.armIdleLocked()
}

func (s *Server) armIdleLocked() {
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	if len(s.calls) > 0 || s.queued > 0 || s.conn == nil || s.closed {
		return
	}
	c := s.conn
	s.idle = s.cfg.Clock.AfterFunc(s.cfg.IdleTimeout, func() { s.release(c) })
}

// release closes an idle connection and stops the service.
func (s *Server) release(c *conn) {
	s.mu.Lock()
	if s.conn != c || len(s.calls) > 0 || s.queued > 0 || s.closed || s.releasing != nil {
		s.mu.Unlock()
		return
	}
	c.closing = true
	s.conn = nil
	s.idle = nil
	s.st.State = StateIdle
	s.st.IdleReleases++
	done := make(chan struct{})
	s.releasing = done
	s.mu.Unlock()
	c.c.Close()
	if s.cfg.Launcher != nil {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		if err := s.cfg.Launcher.Stop(ctx, s.cfg.Package, s.cfg.Server); err != nil {
			s.cfg.Logger.Info("provider: stop after idle failed", "package", s.cfg.Package, "server", s.cfg.Server)
		}
		cancel()
	}
	s.mu.Lock()
	s.releasing = nil
	s.mu.Unlock()
	close(done)
	s.stateChanged()
}

// Call runs one tool call: name is the final model name (for texts),
// tool the raw MCP name. The timeout covers queueing, connecting and the
// provider's answer. The result follows spec §3.3.
func (s *Server) Call(ctx context.Context, name, tool string, args json.RawMessage, timeout time.Duration) wire.CallResult {
	if timeout <= 0 {
		timeout = DefaultCallTimeout
	}
	parent := ctx
	ctx, cancelCause := context.WithCancelCause(ctx)
	defer cancelCause(nil)
	// The timeout is the cause DeadlineExceeded, an abort errAborted, the
	// caller's cancel the parent's end.
	timer := s.cfg.Clock.AfterFunc(timeout, func() { cancelCause(context.DeadlineExceeded) })
	defer timer.Stop()
	k := &call{cancel: cancelCause}

	// Queue: at most MaxInflight calls in flight per server.
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return unavailable("The tool's provider is not available.")
	}
	s.queued++
	s.calls[k] = struct{}{}
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.calls, k)
		s.armIdleLocked()
		s.mu.Unlock()
	}()
	select {
	case s.sem <- struct{}{}:
		s.mu.Lock()
		s.queued--
		s.mu.Unlock()
	case <-ctx.Done():
		s.mu.Lock()
		s.queued--
		s.mu.Unlock()
		return notSent(ctx, parent)
	}
	defer func() { <-s.sem }()

	c, err := s.connect(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return notSent(ctx, parent)
		}
		return unavailable("The tool's provider could not be started or reached.")
	}
	res, err := c.c.CallTool(ctx, tool, args)
	switch {
	case err == nil:
		out := wire.CallResult{Text: res.Text, Structured: res.Structured, IsError: res.IsError,
			Outcome: engine.OutcomeCompleted, ProviderPID: c.pid}
		if res.IsError {
			out.Code = string(errcode.ToolFailed)
			out.Text = errcode.ToolText(errcode.ToolFailed, res.Text)
		}
		return out
	case ctx.Err() != nil:
		var ab *errAborted
		switch cause := context.Cause(ctx); {
		case errors.As(cause, &ab):
			return unknown("Tool call was stopped after dispatch because "+ab.reason+".", map[string]any{"reason": ab.reason}, c.pid)
		case parent.Err() != nil:
			return unknown("Tool call was cancelled after dispatch.", map[string]any{"cancelled": true}, c.pid)
		default:
			return wire.CallResult{Code: string(errcode.ToolTimeout), IsError: true, Outcome: engine.OutcomeUnknown, ProviderPID: c.pid,
				Text: errcode.ToolText(errcode.ToolTimeout, fmt.Sprintf("Tool %s did not respond in %d ms.", name, timeout.Milliseconds()))}
		}
	}
	var rpc *plugin.RPCError
	switch {
	case errors.As(err, &rpc) && rpc.Code == -32603 && strings.Contains(rpc.Message, "exceeds the limit"):
		return wire.CallResult{Code: string(errcode.ToolResultTooLarge), IsError: true, Outcome: engine.OutcomeCompleted, ProviderPID: c.pid,
			Text: errcode.ToolText(errcode.ToolResultTooLarge, fmt.Sprintf("The result of %s was larger than %d characters and was dropped.", name, plugin.MaxMessageChars))}
	case errors.As(err, &rpc):
		return wire.CallResult{Code: string(errcode.ToolFailed), IsError: true, Outcome: engine.OutcomeCompleted, ProviderPID: c.pid,
			Text: errcode.ToolText(errcode.ToolFailed, "The provider refused the call: "+chars.FirstLine(rpc.Message, maxProviderText))}
	case errors.Is(err, plugin.ErrMessageTooLarge):
		return wire.CallResult{Code: string(errcode.ToolFailed), IsError: true, Outcome: engine.OutcomeNotDispatched,
			Text: errcode.ToolText(errcode.ToolFailed, "The arguments are too large to send to the provider.")}
	}
	// The connection ended with the call in flight: the provider died or
	// was stopped. The next call gets a new process.
	s.mu.Lock()
	if s.conn == c {
		s.conn = nil
		s.st.Deaths++
		s.st.State = StateIdle
	}
	s.mu.Unlock()
	c.c.Close()
	s.stateChanged()
	return unknown("Tool call failed: the provider stopped before answering.", nil, c.pid)
}

// notSent is the result of a call that ended before it reached the
// provider: it had no effect.
func notSent(ctx, parent context.Context) wire.CallResult {
	var ab *errAborted
	if errors.As(context.Cause(ctx), &ab) {
		return unavailable("The tool was turned off before the call reached its provider.")
	}
	if parent.Err() != nil {
		return unavailable("The call was cancelled before it reached the provider.")
	}
	return unavailable("The tool's provider did not accept the call in time.")
}

func unavailable(sentence string) wire.CallResult {
	return wire.CallResult{Code: string(errcode.ToolUnavailable), IsError: true, Outcome: engine.OutcomeNotDispatched,
		Text: errcode.ToolText(errcode.ToolUnavailable, sentence)}
}

func unknown(sentence string, details map[string]any, pid int) wire.CallResult {
	return wire.CallResult{Code: string(errcode.ToolResultUnknown), IsError: true, Outcome: engine.OutcomeUnknown,
		Text: errcode.ToolText(errcode.ToolResultUnknown, sentence), Details: details, ProviderPID: pid}
}

// Abort ends every call in flight (their results are unknown, with the
// reason) and closes the connection: the plugin or server was turned off.
func (s *Server) Abort(reason string) {
	s.mu.Lock()
	for k := range s.calls {
		k.cancel(&errAborted{reason: reason})
	}
	c := s.conn
	if c != nil {
		c.closing = true
		s.conn = nil
		s.st.State = StateIdle
	}
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	s.mu.Unlock()
	if c != nil {
		c.c.Close()
	}
	s.stateChanged()
}

// Close aborts everything and stops the manager's goroutines. The
// service is left to the launcher.
func (s *Server) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	s.st.State = StateClosed
	s.mu.Unlock()
	s.Abort("the extension host is stopping")
	close(s.quit)
	s.wg.Wait()
}
