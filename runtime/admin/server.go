package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/internal/rpc"
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

// Options configure a Server. The zero value works: a server with the
// built-in methods only.
type Options struct {
	// Name is the socket to listen on; "" means transport.Names{}.Admin().
	Name string
	// RuntimeUID is the runtime's own uid (the Runtime class); 0 means
	// os.Getuid() (root is admitted as Root anyway).
	RuntimeUID int
	// Version is the runtime's version, reported by status.
	Version string
	// Methods are the features' methods, each with the backend it needs
	// bound in (the composition root passes every feature's
	// AdminMethods). "methods" and "status" are built in.
	Methods []Method
	// Status are the sections of the status method's result, besides
	// the runtime's own fields (see StatusSection).
	Status []StatusSection
	// Tasks reports the engine's tasks and safe mode for status; nil
	// leaves them out.
	Tasks Tasks
	// SafeMode serves safemode.enter and safemode.leave; nil answers
	// them invalid_state.
	SafeMode SafeModeSwitch
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
	sections    []StatusSection
	tasks       Tasks
	safeMode    SafeModeSwitch
	maxConns    int
	idleTimeout time.Duration
	logger      *slog.Logger

	svc   transport.Service // the socket, its connections and goroutines
	slots chan struct{}     // one per served connection
}

// NewServer returns a server; call Start to listen. A malformed or
// duplicate method panics (a programming error of the wiring).
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
		sections:    o.Status,
		tasks:       o.Tasks,
		safeMode:    o.SafeMode,
		maxConns:    o.MaxConns,
		idleTimeout: o.IdleTimeout,
		logger:      o.Logger,
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
	s.methods.add(s.builtins()...)
	s.methods.add(o.Methods...)
	s.slots = make(chan struct{}, s.maxConns)
	return s
}

// Name is the socket name the server listens (or will listen) on.
func (s *Server) Name() string { return s.name }

// Methods returns the server's method table, sorted by name.
func (s *Server) Methods() []Method { return append([]Method(nil), s.methods.methods...) }

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

// serveConn runs the connection on the runtime's RPC peer as a server of
// requests only: answered one at a time, in order; a request the peer
// gives up on (it closes the connection) sees its context end.
func (s *Server) serveConn(ctx context.Context, c *transport.Conn, class Perm) {
	s.serveStream(ctx, c, c.Cred(), class)
}

func (s *Server) serveStream(ctx context.Context, c io.ReadWriteCloser, cred transport.Cred, class Perm) {
	peer := rpc.New(c, &rpc.Options{
		Handler: func(ctx context.Context, method string, params json.RawMessage) (any, error) {
			return s.call(ctx, cred, class, method, params)
		},
		MaxLineChars:  MaxRequestChars,
		MaxWriteChars: MaxResultBytes + 1024,
		MaxInflight:   1,
		WriteTimeout:  writeTimeout,
		IdleTimeout:   s.idleTimeout,
		RequestsOnly:  true,
		Logger:        s.logger,
	})
	peer.Run(ctx)
}

var nullParams = json.RawMessage("null")

// call checks and runs one method call. The result is returned encoded,
// so that its size is checked here.
func (s *Server) call(ctx context.Context, peer transport.Cred, class Perm, method string, raw json.RawMessage) (any, error) {
	params := bytes.TrimSpace(raw)
	if len(params) == 0 || bytes.Equal(params, nullParams) {
		params = json.RawMessage("{}")
	} else if params[0] != '{' {
		return nil, errcode.New(errcode.InvalidParams, `"params" must be an object`)
	}
	start := time.Now()
	m, ok := s.methods.lookup(method)
	if !ok {
		s.logger.Info("admin: unknown method", "uid", peer.UID)
		return nil, errcode.Newf(errcode.Unsupported, "unknown admin method %q", clip(method, 64))
	}
	if class&m.Perm == 0 {
		s.logger.Info("admin: refused", "method", m.Name, "uid", peer.UID)
		return nil, errcode.Newf(errcode.Forbidden, "%s is for %s only", m.Name, m.Perm)
	}
	timeout := m.Timeout
	if timeout == 0 {
		timeout = DefaultTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	res, err := s.run(cctx, m, &Call{Method: m.Name, Peer: peer, Class: class, Params: params})
	var out json.RawMessage
	if err == nil {
		b, merr := json.Marshal(res)
		switch {
		case merr != nil:
			err = errcode.Wrap(errcode.Internal, "the result could not be encoded", merr)
		case len(b) > MaxResultBytes:
			err = errcode.Newf(errcode.Internal, "the result is over %d bytes", MaxResultBytes)
		default:
			out = b
		}
	}
	if err != nil {
		e := errcode.From(err)
		s.logger.Info("admin: call failed", "method", m.Name, "uid", peer.UID, "code", string(e.Code), "ms", time.Since(start).Milliseconds())
		if e.Err != nil && e.Code == errcode.Internal {
			s.logger.Warn("admin: internal error", "method", m.Name, "err", e.Err)
		}
		return nil, e
	}
	s.logger.Debug("admin: call", "method", m.Name, "uid", peer.UID, "ms", time.Since(start).Milliseconds())
	return out, nil
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

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Invoke calls method for peer in process, exactly as a call on the
// socket from that peer would be served: the same method table, peer
// classes, permission check, timeout and result limit. The owner's other
// surfaces (the web console) call the admin API this way, so that every
// owner action has one implementation. params is marshalled as JSON (nil
// is no params); a peer that is not an owner is forbidden.
func (s *Server) Invoke(ctx context.Context, peer transport.Cred, method string, params any) (json.RawMessage, error) {
	class := s.classOf(peer.UID)
	if class == 0 {
		return nil, errcode.New(errcode.Forbidden, "the admin API is for the owner only")
	}
	var raw json.RawMessage
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, errcode.Wrap(errcode.InvalidParams, "params could not be encoded", err)
		}
		raw = b
	}
	res, err := s.call(ctx, peer, class, method, raw)
	if err != nil {
		return nil, err
	}
	return res.(json.RawMessage), nil
}
