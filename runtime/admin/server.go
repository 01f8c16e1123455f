package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Limits of the admin protocol.
const (
	// MaxRequestChars bounds one request line (UTF-16 code units, as
	// every line limit of the runtime).
	MaxRequestChars = 262144
	// MaxResultBytes bounds one encoded response; a larger result is
	// answered with internal.
	MaxResultBytes = 8 << 20
	// DefaultMaxConns is the number of connections served at once.
	DefaultMaxConns = 16
	// DefaultIdleTimeout closes a connection that sends nothing.
	DefaultIdleTimeout = 2 * time.Minute
	writeTimeout       = 10 * time.Second
)

// Options configure a Server. The zero value works.
type Options struct {
	// Name is the socket to listen on; "" means transport.Names{}.Admin().
	Name string
	// RuntimeUID is the runtime's own uid (the Runtime class); 0 means
	// os.Getuid() (root is admitted as Root anyway).
	RuntimeUID int
	// Version is the runtime's version, reported by status.
	Version string
	// Methods replaces the registered method table (tests); nil uses
	// Register's table as it is when the server is created.
	Methods []Method
	// MaxConns bounds concurrent connections; 0 means DefaultMaxConns.
	MaxConns int
	// IdleTimeout closes quiet connections; 0 means DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Logger receives methods, uids, codes and durations, never params
	// or results; nil discards.
	Logger *slog.Logger
}

// Server serves the admin API. Start it once; Close stops it and waits
// for its goroutines.
type Server struct {
	name        string
	runtimeUID  int
	version     string
	started     time.Time
	methods     table
	maxConns    int
	idleTimeout time.Duration
	logger      *slog.Logger

	depsMu   sync.RWMutex
	deps     map[reflect.Type]any // guarded by depsMu
	sections []StatusSection      // guarded by depsMu

	svc   transport.Service // the socket, its connections and goroutines
	slots chan struct{}     // one per served connection
}

// NewServer returns a server; call Start to listen.
func NewServer(opts *Options) *Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	s := &Server{
		name:        o.Name,
		runtimeUID:  os.Getuid(),
		version:     o.Version,
		started:     time.Now(),
		maxConns:    o.MaxConns,
		idleTimeout: o.IdleTimeout,
		logger:      o.Logger,
		deps:        make(map[reflect.Type]any),
	}
	if o.RuntimeUID > 0 {
		s.runtimeUID = o.RuntimeUID
	}
	if s.name == "" {
		s.name = transport.Names{}.Admin()
	}
	if s.maxConns <= 0 {
		s.maxConns = DefaultMaxConns
	}
	if s.idleTimeout <= 0 {
		s.idleTimeout = DefaultIdleTimeout
	}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if o.Methods != nil {
		s.methods.add(o.Methods...)
	} else {
		s.methods.add(Methods()...)
	}
	s.slots = make(chan struct{}, s.maxConns)
	return s
}

// Name is the socket name the server listens (or will listen) on.
func (s *Server) Name() string { return s.name }

// RuntimeUID is the uid of the Runtime peer class.
func (s *Server) RuntimeUID() int { return s.runtimeUID }

// Provide makes v available to handlers as Use[T]. Providing the same T
// again replaces the value. Safe to call while serving (a backend that
// becomes ready late is provided late; until then Use reports busy).
func Provide[T any](s *Server, v T) {
	s.depsMu.Lock()
	defer s.depsMu.Unlock()
	s.deps[reflect.TypeFor[T]()] = v
}

// AddStatusSection adds a section to the status method's result (see
// StatusSection). Safe to call while serving.
func (s *Server) AddStatusSection(sec StatusSection) {
	s.depsMu.Lock()
	defer s.depsMu.Unlock()
	s.sections = append(s.sections, sec)
}

// Use returns the value of type T provided to the call's server, or a
// busy error when none was provided (yet).
func Use[T any](c *Call) (T, error) {
	var zero T
	t := reflect.TypeFor[T]()
	c.srv.depsMu.RLock()
	v, ok := c.srv.deps[t]
	c.srv.depsMu.RUnlock()
	if !ok {
		return zero, errcode.Newf(errcode.Busy, "this runtime has no %s (it is starting, or the feature is not configured)", t)
	}
	return v.(T), nil
}

// Start listens on the server's socket and serves until ctx ends or
// Close is called.
func (s *Server) Start(ctx context.Context) error {
	if err := s.svc.Start(ctx, s.name, s.admit); err != nil {
		return fmt.Errorf("admin: %w", err)
	}
	return nil
}

// Close stops listening, closes every connection and waits for the
// server's goroutines. In-flight handlers see their context cancelled.
func (s *Server) Close() error {
	s.svc.Close()
	return nil
}

// admit refuses a peer that is not an owner without a byte, and answers
// busy over MaxConns.
func (s *Server) admit(c *transport.Conn) transport.Admission {
	class := s.classOf(c.Cred().UID)
	if class == 0 {
		s.logger.Info("admin: peer refused", "uid", c.Cred().UID)
		return transport.Refuse(nil)
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.logger.Warn("admin: too many connections", "uid", c.Cred().UID)
		return transport.Refuse(errcode.ErrorLine(nil, errcode.New(errcode.Busy, "too many admin connections; try again").Wire()))
	}
	return transport.Admission{
		Serve: func(ctx context.Context, c *transport.Conn) { s.serveConn(ctx, c, class) },
		Done:  func() { <-s.slots },
	}
}

// classOf returns the peer classes of uid (0 = not admitted).
func (s *Server) classOf(uid int) Perm {
	var p Perm
	switch uid {
	case RootUID:
		p |= Root
	case ShellUID:
		p |= Shell
	}
	if uid == s.runtimeUID {
		p |= Runtime
	}
	if p == 0 && faultinject.Enabled && faultinject.Active(faultinject.AppAnswersConsent) {
		p = Shell // injected fault: any uid is the owner
	}
	return p
}

// Call is one method call as a handler sees it.
type Call struct {
	// Method is the method's name.
	Method string
	// Peer is the caller's identity from SO_PEERCRED.
	Peer transport.Cred
	// Class is the set of peer classes the caller belongs to.
	Class Perm
	// Params is the raw "params" object ("{}" when absent).
	Params json.RawMessage

	srv *Server
}

// Decode unmarshals the params into v strictly: unknown fields and
// trailing data are invalid_params.
func (c *Call) Decode(v any) error {
	dec := json.NewDecoder(bytes.NewReader(c.Params))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errcode.Wrap(errcode.InvalidParams, "bad params for "+c.Method+": "+paramProblem(err), err)
	}
	if dec.More() {
		return errcode.New(errcode.InvalidParams, "bad params for "+c.Method+": trailing data")
	}
	return nil
}

// paramProblem names what is wrong without echoing values (params may
// carry secrets).
func paramProblem(err error) string {
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		return fmt.Sprintf("field %q must be %s", ute.Field, ute.Type)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return "not valid JSON"
	}
	msg := err.Error()
	// encoding/json's unknown-field message names only the field.
	if bytes.HasPrefix([]byte(msg), []byte("json: unknown field ")) {
		return "unknown field " + msg[len("json: unknown field "):]
	}
	return "malformed"
}

// Server returns the server handling the call (for its RuntimeUID).
func (c *Call) Server() *Server { return c.srv }

// StartedAt is when the server was created (the runtime's start).
func (s *Server) StartedAt() time.Time { return s.started }

// Version is the runtime version given in Options.
func (s *Server) Version() string { return s.version }

func (s *Server) serveConn(ctx context.Context, c *transport.Conn, class Perm) {
	type line struct {
		b   []byte
		err error
	}
	// The reader runs ahead by one line so that a peer that goes away
	// cancels its call in progress.
	lines := make(chan line, 1)
	gone := make(chan struct{})
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		defer close(gone)
		lr := transport.NewLineReader(c, MaxRequestChars)
		for {
			b, err := lr.ReadLine()
			if err == nil {
				b = bytes.Clone(b)
			}
			select {
			case lines <- line{b, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	defer func() {
		c.Close()
		<-readerDone
	}()
	idle := time.NewTimer(s.idleTimeout)
	defer idle.Stop()
	for {
		var l line
		idle.Reset(s.idleTimeout)
		select {
		case l = <-lines:
		case <-idle.C:
			return
		case <-ctx.Done():
			return
		}
		if l.err != nil {
			if errors.Is(l.err, transport.ErrLineTooLong) {
				writeLine(c, response{ID: nullID, Error: wirePtr(errcode.Newf(errcode.PayloadTooLarge, "request over %d characters", MaxRequestChars))})
			}
			return
		}
		if len(bytes.TrimSpace(l.b)) == 0 {
			continue
		}
		resp := s.handle(ctx, gone, c.Cred(), class, l.b)
		if err := writeLine(c, resp); err != nil {
			return
		}
	}
}

// request is one line from a client.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// response is one line to a client.
type response struct {
	ID     json.RawMessage    `json:"id"`
	Result json.RawMessage    `json:"result,omitempty"`
	Error  *errcode.WireError `json:"error,omitempty"`
}

var nullID = json.RawMessage("null")

func wirePtr(e *errcode.Error) *errcode.WireError {
	w := e.Wire()
	return &w
}

func (s *Server) handle(ctx context.Context, gone <-chan struct{}, peer transport.Cred, class Perm, raw []byte) response {
	var req request
	if err := json.Unmarshal(raw, &req); err != nil {
		return response{ID: nullID, Error: wirePtr(errcode.New(errcode.InvalidParams, "the request is not a JSON object"))}
	}
	id := nullID
	if len(req.ID) > 0 {
		switch b := bytes.TrimSpace(req.ID); {
		case len(b) > 0 && (b[0] == '"' || b[0] == '-' || (b[0] >= '0' && b[0] <= '9')):
			id = b
		case bytes.Equal(b, nullID):
		default:
			return response{ID: nullID, Error: wirePtr(errcode.New(errcode.InvalidParams, `"id" must be a number or a string`))}
		}
	}
	if req.Method == "" {
		return response{ID: id, Error: wirePtr(errcode.New(errcode.InvalidParams, `the request has no "method"`))}
	}
	params := bytes.TrimSpace(req.Params)
	if len(params) == 0 || bytes.Equal(params, nullID) {
		params = json.RawMessage("{}")
	} else if params[0] != '{' {
		return response{ID: id, Error: wirePtr(errcode.New(errcode.InvalidParams, `"params" must be an object`))}
	}

	start := time.Now()
	m, ok := s.methods.lookup(req.Method)
	if !ok {
		s.logger.Info("admin: unknown method", "uid", peer.UID)
		return response{ID: id, Error: wirePtr(errcode.Newf(errcode.Unsupported, "unknown admin method %q", clip(req.Method, 64)))}
	}
	if class&m.Perm == 0 {
		s.logger.Info("admin: refused", "method", m.Name, "uid", peer.UID)
		return response{ID: id, Error: wirePtr(errcode.Newf(errcode.Forbidden, "%s is for %s only", m.Name, m.Perm))}
	}
	timeout := m.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	go func() {
		select {
		case <-gone:
			cancel()
		case <-cctx.Done():
		}
	}()

	call := &Call{Method: m.Name, Peer: peer, Class: class, Params: params, srv: s}
	res, err := s.run(cctx, m, call)
	var resp response
	if err == nil {
		b, merr := json.Marshal(res)
		switch {
		case merr != nil:
			err = errcode.Wrap(errcode.Internal, "the result could not be encoded", merr)
		case len(b) > MaxResultBytes:
			err = errcode.Newf(errcode.Internal, "the result is over %d bytes", MaxResultBytes)
		default:
			resp = response{ID: id, Result: b}
		}
	}
	if err != nil {
		e := errcode.From(err)
		resp = response{ID: id, Error: wirePtr(e)}
		s.logger.Info("admin: call failed", "method", m.Name, "uid", peer.UID, "code", string(e.Code), "ms", time.Since(start).Milliseconds())
		if e.Err != nil && e.Code == errcode.Internal {
			s.logger.Warn("admin: internal error", "method", m.Name, "err", e.Err)
		}
	} else {
		s.logger.Debug("admin: call", "method", m.Name, "uid", peer.UID, "ms", time.Since(start).Milliseconds())
	}
	return resp
}

// run calls the handler, turning a panic into internal.
func (s *Server) run(ctx context.Context, m Method, c *Call) (res any, err error) {
	defer func() {
		if r := recover(); r != nil {
			s.logger.Error("admin: handler panicked", "method", m.Name, "panic", fmt.Sprint(r))
			res, err = nil, errcode.New(errcode.Internal, "internal error")
		}
	}()
	return m.Handle(ctx, c)
}

func writeLine(c net.Conn, r response) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	_, err = c.Write(b)
	return err
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
