package aci

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Environment the launcher gives a controlled app's service process (the
// same contract as a provider app's MCP service).
const (
	// EnvSocket names the socket to listen on ("@aci.<package>.<service>").
	EnvSocket = "AGENTOS_SOCKET"
	// EnvRuntimeUID is the runtime's uid, the controller a server admits.
	EnvRuntimeUID = "AGENTOS_RUNTIME_UID"
)

// Timeouts of a connection.
const (
	// readTimeout bounds the wait for a request after connecting
	// (upstream's 5 s socket timeout); a probe that sends nothing is
	// closed then.
	readTimeout = 5 * time.Second
	// writeTimeout bounds one response or progress frame.
	writeTimeout = 5 * time.Second
	// DefaultMaxAsync bounds an async call.
	DefaultMaxAsync = 10 * time.Minute
)

// Options configure a Server. The zero value works.
type Options struct {
	// Logger receives connection problems and one line per call
	// (capability, code, duration), never params or results; nil discards.
	Logger *slog.Logger
	// RuntimeUIDs are the controller's uids: admitted, and Caller.Runtime
	// for them. nil means the uid in $AGENTOS_RUNTIME_UID; when that is
	// unset too, every peer is admitted (a server started by hand) and
	// none is the runtime. The app's own uid is always admitted.
	RuntimeUIDs []int
	// Allow is the app's permission hook: it runs before every call and
	// capability with the kernel-verified caller, and a non-nil error
	// refuses the call (PermissionDenied, with the error's text). nil
	// allows every admitted peer.
	Allow func(ctx context.Context, caller Caller, capability wire.Capability) error
	// MaxAsync bounds an async call; 0 means DefaultMaxAsync.
	MaxAsync time.Duration
}

// Server is a controlled app's ACI service: capabilities registered with
// Add, served on the app's socket. Safe for concurrent use.
type Server struct {
	name   string
	o      Options
	logger *slog.Logger

	mu   sync.Mutex
	caps []*Capability // guarded by mu; in registration order

	calls sync.WaitGroup // handlers still running (Serve waits for them)
}

// NewServer returns a server for the app.json service name (what
// `serve --server` names) with no capabilities yet.
func NewServer(name string, opts *Options) *Server {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxAsync <= 0 {
		o.MaxAsync = DefaultMaxAsync
	}
	return &Server{name: name, o: o, logger: o.Logger}
}

// Name is the service's name.
func (s *Server) Name() string { return s.name }

// Add registers a capability; a declaration mistake (Capability.Err) or a
// duplicate id registers nothing and says why.
func (s *Server) Add(c *Capability) error {
	if err := c.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if slices.ContainsFunc(s.caps, func(x *Capability) bool { return x.decl.ID == c.decl.ID }) {
		return fmt.Errorf("capability %s: %w", c.decl.ID, ErrDuplicate)
	}
	if len(s.caps) >= wire.MaxCapabilities-1 {
		return fmt.Errorf("capability %s: more than %d capabilities", c.decl.ID, wire.MaxCapabilities-1)
	}
	s.caps = append(s.caps, c)
	return nil
}

// MustAdd is Add that panics: for capabilities fixed at build time.
func (s *Server) MustAdd(c *Capability) {
	if err := s.Add(c); err != nil {
		panic("aci: " + err.Error())
	}
}

// Capabilities returns the declarations getCapabilities answers, in
// registration order, aci_protocol last unless the app declared it.
func (s *Server) Capabilities() []wire.Capability {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]wire.Capability, 0, len(s.caps)+1)
	for _, c := range s.caps {
		out = append(out, c.decl)
	}
	if !slices.ContainsFunc(out, func(c wire.Capability) bool { return c.ID == wire.ProtocolCapability }) {
		out = append(out, wire.ProtocolCapabilityDecl())
	}
	return out
}

func (s *Server) lookup(id string) *Capability {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.caps {
		if c.decl.ID == id {
			return c
		}
	}
	if id == wire.ProtocolCapability {
		d := wire.ProtocolCapabilityDecl()
		return &Capability{decl: d, handler: func(context.Context, *Call) (Bundle, error) { return wire.ProtocolResult(), nil }}
	}
	return nil
}

var errNoSocket = errors.New("no socket to listen on: " + EnvSocket + " is not set")

// Serve listens on $AGENTOS_SOCKET and serves until ctx ends.
func (s *Server) Serve(ctx context.Context) error {
	name := os.Getenv(EnvSocket)
	if name == "" {
		return fmt.Errorf("aci: serve: %w", errNoSocket)
	}
	return s.ServeName(ctx, name)
}

// ServeName listens on the socket name and serves every admitted
// connection until ctx ends; then it closes the listener and every
// connection, waits for the handlers, and returns nil.
func (s *Server) ServeName(ctx context.Context, name string) error {
	sv, err := s.Start(ctx, name)
	if err != nil {
		return err
	}
	return sv.Wait()
}

// Serving is a started server (Start).
type Serving struct {
	s   *Server
	svc *transport.Service
}

// Start listens on the socket name — when it returns without an error
// the socket accepts connections — and serves in the background until
// ctx ends. Wait waits for that end.
func (s *Server) Start(ctx context.Context, name string) (*Serving, error) {
	runtime, open, err := s.admission()
	if err != nil {
		return nil, err
	}
	sv := &Serving{s: s, svc: &transport.Service{}}
	err = sv.svc.Start(ctx, name, func(c *transport.Conn) transport.Admission {
		uid := c.Cred().UID
		if !open && uid != os.Getuid() && !slices.Contains(runtime, uid) {
			// Like an unbindable service: the peer gets nothing at all.
			s.logger.Warn("aci: connection refused: peer is not the runtime", "uid", uid)
			return transport.Refuse(nil)
		}
		return transport.Admission{Serve: func(ctx context.Context, c *transport.Conn) {
			s.serveConn(ctx, c, c.Cred(), slices.Contains(runtime, uid))
		}}
	})
	if err != nil {
		return nil, fmt.Errorf("aci: serve: %w", err)
	}
	return sv, nil
}

// Wait blocks until the server's context ends (nil) or its listener
// fails, then stops it: the listener and every connection closed, every
// handler waited for.
func (sv *Serving) Wait() error {
	err := sv.svc.Wait()
	sv.s.calls.Wait()
	if err != nil {
		return fmt.Errorf("aci: accept: %w", err)
	}
	return nil
}

// admission is who may connect: the runtime's uids, or everyone (open).
func (s *Server) admission() (runtime []int, open bool, err error) {
	if s.o.RuntimeUIDs != nil {
		return s.o.RuntimeUIDs, false, nil
	}
	v := os.Getenv(EnvRuntimeUID)
	if v == "" {
		return nil, true, nil
	}
	uid, err := strconv.Atoi(v)
	if err != nil || uid < 0 {
		return nil, false, fmt.Errorf("aci: %s=%q is not a uid", EnvRuntimeUID, v)
	}
	return []int{uid}, false, nil
}

// ServeConn serves the one request of one connection whose peer is cred
// (fromRuntime: the peer is the controller). Serve calls it for each
// admitted connection; it is exported for apps that accept connections
// themselves.
func (s *Server) ServeConn(ctx context.Context, c net.Conn, cred transport.Cred, fromRuntime bool) {
	s.serveConn(ctx, c, cred, fromRuntime)
	c.Close()
}

func (s *Server) serveConn(ctx context.Context, c net.Conn, cred transport.Cred, fromRuntime bool) {
	c.SetReadDeadline(time.Now().Add(readTimeout))
	p, err := wire.ReadFrame(c, wire.MagicRequest)
	if err != nil {
		// A probe (connect, no data) or a broken frame: nothing to answer.
		if !errors.Is(err, os.ErrDeadlineExceeded) && !isEOF(err) {
			s.logger.Debug("aci: bad frame", "err", err)
		}
		return
	}
	c.SetReadDeadline(time.Time{})
	req, err := wire.DecodeRequest(p)
	if err != nil {
		s.write(c, wire.Failure(wire.BadRequest, err.Error()))
		return
	}
	switch req.Method {
	case wire.MethodPing:
		s.write(c, &wire.Response{Success: true, Pong: true, CallID: req.CallID})
	case wire.MethodGetCapabilities:
		s.write(c, s.capabilitiesResponse(req))
	default:
		caller := Caller{UID: cred.UID, GID: cred.GID, PID: cred.PID, Runtime: fromRuntime, ClaimedPkg: req.CallerPkg}
		if fromRuntime {
			caller.OnBehalfOf = req.CallerPkg
		}
		start := time.Now()
		resp := s.call(ctx, c, caller, req)
		if resp != nil {
			resp.CallID = req.CallID
			s.write(c, resp)
		}
		code := 0
		if resp != nil {
			code = resp.ErrorCode
		}
		s.logger.Debug("aci: call", "capability", req.Capability, "async", req.Method == wire.MethodCallAsync,
			"code", code, "answered", resp != nil, "ms", time.Since(start).Milliseconds())
	}
}

func isEOF(err error) bool {
	return err != nil && (errors.Is(err, net.ErrClosed) || strings.Contains(err.Error(), "EOF"))
}

func (s *Server) capabilitiesResponse(req *wire.Request) *wire.Response {
	caps := s.Capabilities()
	out := make([]string, 0, len(caps))
	for _, c := range caps {
		enc, err := c.Encode()
		if err != nil {
			// Declarations were checked by Add; an encoding failure is a
			// bug, and the element is left out rather than sent broken.
			s.logger.Error("aci: capability cannot be encoded", "capability", c.ID, "err", err)
			continue
		}
		out = append(out, enc)
	}
	return &wire.Response{Success: true, Capabilities: out, CallID: req.CallID}
}

// write sends one response frame; a result too large for a frame is
// replaced by ResultTooLarge.
func (s *Server) write(c net.Conn, r *wire.Response) {
	p, err := wire.EncodeResponse(r)
	if err == nil && len(p) > wire.MaxPayload {
		p, err = wire.EncodeResponse(&wire.Response{CallID: r.CallID, ErrorCode: int(wire.ResultTooLarge),
			ErrorMessage: fmt.Sprintf("the result is %d bytes; a frame holds at most %d", len(p), wire.MaxPayload)})
	}
	if err != nil {
		p, _ = wire.EncodeResponse(&wire.Response{CallID: r.CallID, ErrorCode: int(wire.Internal), ErrorMessage: "the result could not be encoded"})
	}
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := wire.WriteFrame(c, wire.MagicResponse, p); err != nil {
		s.logger.Debug("aci: write", "err", err)
	}
}

var (
	errPeerGone = errors.New("the controller closed the connection")
	errStopping = errors.New("the app is stopping")
)

// call runs one call; nil means nobody is left to answer.
func (s *Server) call(ctx context.Context, conn net.Conn, caller Caller, req *wire.Request) *wire.Response {
	c := s.lookup(req.Capability)
	if c == nil {
		return wire.Failure(wire.CapabilityNotFound, "Capability not found: "+clip(req.Capability))
	}
	if s.o.Allow != nil {
		if err := s.o.Allow(ctx, caller, c.decl); err != nil {
			return wire.Failure(wire.PermissionDenied, err.Error())
		}
	}
	params, confirmed, err := validate(&c.decl, req.Params)
	if err != nil {
		return wire.Failure(wire.BadRequest, err.Error())
	}
	if c.decl.NeedsConfirm() && !confirmed {
		return wire.Failure(wire.PermissionDenied, c.decl.ID+" needs the owner's confirmation for every call; none was given")
	}
	async := req.Method == wire.MethodCallAsync
	budget := c.timeout()
	if async {
		budget = s.o.MaxAsync
	}
	timedOut := wire.Errorf(wire.Timeout, "%s did not finish within %s", c.decl.ID, budget)
	hctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hctx, stopTimer := context.WithTimeoutCause(hctx, budget, timedOut)
	defer stopTimer()

	// The controller never writes again: a read that returns means it
	// closed the connection (gave up), and the handler's context ends.
	watch := make(chan struct{})
	go func() {
		defer close(watch)
		var b [1]byte
		conn.Read(b[:])
		cancel(errPeerGone)
	}()
	defer func() {
		conn.SetReadDeadline(time.Now()) // ends the watch without closing
		<-watch
		conn.SetReadDeadline(time.Time{})
	}()

	call := &Call{Capability: c.decl.ID, CallID: req.CallID, Caller: caller, Params: params, UserConfirmed: confirmed, Async: async}
	if async {
		call.progress = func(p wire.Progress) {
			s.write(conn, &wire.Response{CallID: req.CallID, Progress: &p})
		}
	}
	type outcome struct {
		b   Bundle
		err error
	}
	done := make(chan outcome, 1)
	s.calls.Add(1)
	go func() {
		defer s.calls.Done()
		b, err := run(hctx, c, call)
		done <- outcome{b, err}
	}()
	var out outcome
	select {
	case out = <-done:
	case <-hctx.Done():
		call.stopProgress()
		switch cause := context.Cause(hctx); {
		case errors.Is(cause, errPeerGone):
			return nil
		case ctx.Err() != nil:
			return wire.Failure(wire.ServiceUnavailable, errStopping.Error())
		default:
			return wire.Failure(wire.Timeout, timedOut.Message)
		}
	}
	call.stopProgress()
	if out.err != nil {
		var e *wire.Error
		if errors.As(out.err, &e) {
			return &wire.Response{ErrorCode: int(e.Code), ErrorMessage: e.Message}
		}
		if errors.Is(context.Cause(hctx), errPeerGone) {
			return nil
		}
		return wire.Failure(wire.Internal, c.decl.ID+" failed: "+out.err.Error())
	}
	if err := checkResult(&c.decl, out.b); err != nil {
		s.logger.Error("aci: handler returned an undeclared result", "capability", c.decl.ID, "err", err)
		return wire.Failure(wire.Internal, c.decl.ID+" failed: "+err.Error())
	}
	return &wire.Response{Success: true, Result: out.b}
}

// run calls the handler, turning a panic into an error.
func run(ctx context.Context, c *Capability, call *Call) (b Bundle, err error) {
	defer func() {
		if p := recover(); p != nil {
			b, err = nil, fmt.Errorf("panic: %v", p)
		}
	}()
	return c.handler(ctx, call)
}

// validate converts the params to their declared types: undeclared,
// ill-typed and missing required params are errors. user_confirmed is
// taken out as the confirmation; _aci_… params are dropped unread.
func validate(decl *wire.Capability, in Bundle) (Bundle, bool, error) {
	out := make(Bundle, len(in))
	confirmed := false
	for k, v := range in {
		switch {
		case k == paramUserConfirmed:
			cv, err := wire.Coerce(v, wire.TypeBoolean)
			confirmed = err == nil && cv.BoolVal()
			continue
		case strings.HasPrefix(k, "_aci_"):
			continue
		}
		p, ok := decl.Param(k)
		if !ok {
			return nil, false, fmt.Errorf("unknown parameter %q: %s takes %s", clip(k), decl.ID, paramNames(decl))
		}
		cv, err := wire.Coerce(v, p.Type)
		if err != nil {
			return nil, false, fmt.Errorf("parameter %s: %s", k, strings.TrimPrefix(err.Error(), wire.ErrValue.Error()+": "))
		}
		out[k] = cv
	}
	for _, p := range decl.Params {
		if _, ok := out[p.Name]; p.Required && !ok {
			return nil, false, fmt.Errorf("missing required parameter %s", p.Name)
		}
	}
	return out, confirmed, nil
}

func paramNames(decl *wire.Capability) string {
	if len(decl.Params) == 0 {
		return "no parameters"
	}
	names := make([]string, 0, len(decl.Params))
	for _, p := range decl.Params {
		names = append(names, p.Name)
	}
	return strings.Join(names, ", ")
}

// checkResult holds a handler to its declaration: every key declared,
// each value of its declared type.
func checkResult(decl *wire.Capability, b Bundle) error {
	for k, v := range b {
		p, ok := decl.Result(k)
		if !ok {
			return fmt.Errorf("result key %q is not declared", clip(k))
		}
		if v.IsZero() {
			return fmt.Errorf("result key %s has no value", k)
		}
		if v.Type() != p.Type {
			return fmt.Errorf("result key %s is a %s, declared %s", k, v.Type(), p.Type)
		}
	}
	return nil
}
