package launcher

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Defaults of Options.
const (
	DefaultStartTimeout  = 10 * time.Second
	DefaultStopGrace     = 5 * time.Second
	DefaultRunTimeout    = 60 * time.Second
	MaxRunTimeout        = 10 * time.Minute
	DefaultMaxOutput     = 1 << 20
	DefaultMaxRuns       = 4
	DefaultLogMaxBytes   = 1 << 20
	maxRequestChars      = 64 << 10
	maxResponseBytes     = 8 << 20
	maxArgs              = 64
	maxArgBytes          = 4096
	maxConns             = 32
	watcherQueue         = 64
	defaultPath          = "/system/bin:/system/xbin:/vendor/bin:/usr/local/bin:/usr/bin:/bin"
	socketNameLimit      = 107 // sun_path minus the abstract NUL
	logNamePrefix        = "agentos-"
	logNameSuffix        = ".log"
	requestWriteDeadline = 10 * time.Second
)

// SocketName is the launcher's socket for runtimes using names: the
// abstract "@<prefix>agentos-launcher", or a file next to the other
// sockets when names.Dir is set.
func SocketName(names transport.Names) string {
	admin := names.Admin()
	if strings.HasPrefix(admin, "@") {
		return "@" + names.Prefix + "agentos-launcher"
	}
	return filepath.Join(filepath.Dir(admin), names.Prefix+"agentos-launcher.sock")
}

// LogName is the file in an app's data directory that keeps the output
// of its server's process.
func LogName(server string) string { return logNamePrefix + server + logNameSuffix }

// Options configure a Server. Installer is required.
type Options struct {
	// Installer changes the package table and knows what is installed.
	Installer *apps.Installer
	// Names are the runtime's socket names; app sockets use its prefix.
	Names transport.Names
	// Socket is where the server listens; "" means SocketName(Names).
	Socket string
	// RuntimeUID is the only peer uid admitted (0 is root).
	RuntimeUID int
	// StartTimeout bounds a start until the app listens (DefaultStartTimeout).
	StartTimeout time.Duration
	// StopGrace is the wait between SIGTERM and SIGKILL (DefaultStopGrace).
	StopGrace time.Duration
	// RunTimeout is the default timeout of a one-shot run (DefaultRunTimeout).
	RunTimeout time.Duration
	// MaxOutputBytes bounds each of a run's stdout and stderr (DefaultMaxOutput).
	MaxOutputBytes int
	// MaxRuns bounds concurrent runs (DefaultMaxRuns).
	MaxRuns int
	// LogMaxBytes rotates a service's log file (DefaultLogMaxBytes).
	LogMaxBytes int64
	// Environ is the environment whose TZ and ANDROID_* variables are
	// passed to apps; nil means os.Environ().
	Environ []string
	// Logger receives starts, stops, exits and refusals (never app
	// output or arguments); nil discards.
	Logger *slog.Logger
}

// Server runs app processes and installs. Start it once; Close stops
// listening, stops every app process and waits.
type Server struct {
	o      Options
	logger *slog.Logger
	pass   []string // passed-through environment
	runs   chan struct{}

	svc transport.Service // the socket, its connections and their goroutines

	mu       sync.Mutex
	procs    map[procKey]*proc     // guarded by mu
	watchers map[*watcher]struct{} // guarded by mu
	closed   bool                  // guarded by mu

	startMu   sync.Mutex // one start at a time (see StartService)
	installMu sync.Mutex // one install or uninstall at a time
	wg        sync.WaitGroup
}

// NewServer returns a server for opts.
func NewServer(opts *Options) (*Server, error) {
	if opts == nil || opts.Installer == nil {
		return nil, errors.New("launcher: Options.Installer is required")
	}
	o := *opts
	if o.Socket == "" {
		o.Socket = SocketName(o.Names)
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.StopGrace <= 0 {
		o.StopGrace = DefaultStopGrace
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = DefaultRunTimeout
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = DefaultMaxOutput
	}
	if o.MaxRuns <= 0 {
		o.MaxRuns = DefaultMaxRuns
	}
	if o.LogMaxBytes <= 0 {
		o.LogMaxBytes = DefaultLogMaxBytes
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{o: o, logger: logger, runs: make(chan struct{}, o.MaxRuns),
		procs: map[procKey]*proc{}, watchers: map[*watcher]struct{}{}}
	for _, kv := range o.Environ {
		if strings.HasPrefix(kv, "TZ=") || strings.HasPrefix(kv, "ANDROID_") {
			s.pass = append(s.pass, kv)
		}
	}
	return s, nil
}

// Socket is the name the server listens on.
func (s *Server) Socket() string { return s.o.Socket }

// Start listens and serves until ctx ends or Close.
func (s *Server) Start(ctx context.Context) error {
	if err := s.svc.Start(ctx, s.o.Socket, s.accept); err != nil {
		return fmt.Errorf("launcher: %w", err)
	}
	return nil
}

// Close stops listening, closes connections, stops every app process
// (SIGTERM, SIGKILL after the grace period) and waits for all of it.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	procs := make([]*proc, 0, len(s.procs))
	for _, p := range s.procs {
		procs = append(procs, p)
	}
	for w := range s.watchers {
		w.close()
	}
	s.mu.Unlock()
	s.svc.Stop()
	var wg sync.WaitGroup
	for _, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.stopProc(p)
		}()
	}
	wg.Wait()
	// The connections' handlers first: once they are done no process
	// starts, and then the processes' goroutines end.
	s.svc.Close()
	s.wg.Wait()
	return nil
}

// accept admits the runtime's uid only, up to maxConns connections.
func (s *Server) accept(c *transport.Conn) transport.Admission {
	if c.Cred().UID != s.o.RuntimeUID {
		s.logger.Warn("launcher: peer refused", "uid", c.Cred().UID)
		return transport.Refuse(nil)
	}
	// Only the accept loop adds connections.
	if s.svc.Open() >= maxConns {
		return transport.Refuse(nil)
	}
	return transport.Admission{Serve: func(ctx context.Context, c *transport.Conn) { s.serveConn(ctx, c) }}
}

type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type response struct {
	ID     json.RawMessage    `json:"id"`
	Result json.RawMessage    `json:"result,omitempty"`
	Error  *errcode.WireError `json:"error,omitempty"`
	Event  *Event             `json:"event,omitempty"`
}

func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	lr := transport.NewLineReader(c, maxRequestChars)
	for {
		line, err := lr.ReadLine()
		if err != nil {
			return
		}
		var req request
		if json.Unmarshal(line, &req) != nil || req.Method == "" {
			writeResp(c, response{ID: json.RawMessage("null"), Error: wire(errcode.New(errcode.InvalidParams, "not a launcher request"))})
			continue
		}
		if len(req.ID) == 0 {
			req.ID = json.RawMessage("null")
		}
		if req.Method == "watch" {
			s.watch(ctx, c, req.ID)
			return
		}
		res, err := s.dispatch(ctx, req)
		resp := response{ID: req.ID}
		if err == nil {
			b, merr := json.Marshal(res)
			if merr != nil || len(b) > maxResponseBytes {
				err = errcode.New(errcode.Internal, "the result is too large")
			} else {
				resp.Result = b
			}
		}
		if err != nil {
			resp.Error = wire(errcode.From(err))
		}
		if writeResp(c, resp) != nil {
			return
		}
	}
}

func writeResp(c net.Conn, r response) error {
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	c.SetWriteDeadline(time.Now().Add(requestWriteDeadline))
	_, err = c.Write(append(b, '\n'))
	return err
}

func wire(e *errcode.Error) *errcode.WireError {
	w := e.Wire()
	return &w
}

func decode(raw json.RawMessage, v any) error {
	if len(bytes.TrimSpace(raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		raw = json.RawMessage("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errcode.Wrap(errcode.InvalidParams, "bad launcher params", err)
	}
	return nil
}

// StartParams, StopParams, … are the methods' params.
type (
	StartParams struct {
		Package string `json:"package"`
		Server  string `json:"server"`
	}
	StopParams struct {
		Package string `json:"package"`
		// Server "" stops every process of the package.
		Server string `json:"server,omitempty"`
	}
	RunParams struct {
		Package   string   `json:"package"`
		Args      []string `json:"args"`
		TimeoutMs int64    `json:"timeoutMs,omitempty"`
	}
	InstallParams struct {
		// Path is an absolute path the supervisor (root) can read.
		Path string `json:"path"`
	}
	UninstallParams struct {
		Package string `json:"package"`
	}
)

// StopResult says how many processes a stop ended.
type StopResult struct {
	Stopped int `json:"stopped"`
}

func (s *Server) dispatch(ctx context.Context, req request) (any, error) {
	switch req.Method {
	case "start":
		var p StartParams
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return s.StartService(ctx, p.Package, p.Server)
	case "stop":
		var p StopParams
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		n := s.StopService(p.Package, p.Server)
		return StopResult{Stopped: n}, nil
	case "list":
		if err := decode(req.Params, &struct{}{}); err != nil {
			return nil, err
		}
		return s.List(), nil
	case "run":
		var p RunParams
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return s.Run(ctx, p.Package, p.Args, time.Duration(p.TimeoutMs)*time.Millisecond)
	case "install":
		var p InstallParams
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return s.Install(ctx, p.Path)
	case "uninstall":
		var p UninstallParams
		if err := decode(req.Params, &p); err != nil {
			return nil, err
		}
		return s.Uninstall(ctx, p.Package)
	}
	return nil, errcode.Newf(errcode.Unsupported, "unknown launcher method %q", clip(req.Method))
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// refusal is a launcher error with a machine-readable reason in
// details.reason.
func refusal(code errcode.Code, reason, format string, args ...any) *errcode.Error {
	return errcode.Newf(code, format, args...).WithDetails(map[string]any{"reason": reason})
}

// Install installs the bundle at path (absolute) and stops the processes
// of the version it replaced. Installs are never cancelled half-way.
func (s *Server) Install(ctx context.Context, path string) (*apps.InstallResult, error) {
	if !filepath.IsAbs(path) {
		return nil, refusal(errcode.InvalidParams, "bad_path", "the bundle path must be absolute")
	}
	s.installMu.Lock()
	defer s.installMu.Unlock()
	res, err := s.o.Installer.Install(context.WithoutCancel(ctx), path)
	if err != nil {
		return nil, installRefusal(err)
	}
	if res.Event != nil && res.Event.Kind != apps.Installed {
		s.StopService(res.Package.Name, "")
	}
	if res.Event != nil {
		s.publish(Event{Kind: EventPackage, Package: res.Package.Name, Change: res.Event, At: time.Now().UnixMilli()})
	}
	return res, nil
}

// Uninstall stops a package's processes and removes it.
func (s *Server) Uninstall(ctx context.Context, pkg string) (*apps.Package, error) {
	s.installMu.Lock()
	defer s.installMu.Unlock()
	if _, ok := s.lookup(pkg); !ok {
		return nil, refusal(errcode.InvalidParams, "not_installed", "%s is not installed", clip(pkg))
	}
	s.StopService(pkg, "")
	p, err := s.o.Installer.Uninstall(context.WithoutCancel(ctx), pkg)
	if err != nil {
		return nil, installRefusal(err)
	}
	s.publish(Event{Kind: EventPackage, Package: pkg, Change: &apps.Event{Kind: apps.Removed, Package: pkg, UID: p.UID}, At: time.Now().UnixMilli()})
	return p, nil
}

// installRefusal maps installer errors to wire errors whose text is the
// installer's own (it names the entry or package and the reason, never
// file contents) and whose details.reason is machine-readable.
func installRefusal(err error) error {
	var be *apps.BundleError
	var ie *apps.InstallError
	switch {
	case errors.As(err, &be):
		return errcode.Wrap(errcode.InvalidParams, err.Error(), err).WithDetails(map[string]any{"reason": "bad_bundle", "entry": be.Entry})
	case errors.Is(err, apps.ErrDowngrade):
		return errcode.Wrap(errcode.InvalidParams, err.Error(), err).WithDetails(map[string]any{"reason": "downgrade"})
	case errors.Is(err, apps.ErrNotInstalled):
		return errcode.Wrap(errcode.InvalidParams, err.Error(), err).WithDetails(map[string]any{"reason": "not_installed"})
	case errors.Is(err, apps.ErrTableCorrupt):
		return errcode.Wrap(errcode.StoreFailed, err.Error(), err).WithDetails(map[string]any{"reason": "table_corrupt"})
	case errors.As(err, &ie):
		reason := "refused"
		switch {
		case errors.Is(err, apps.ErrABI):
			reason = "abi"
		case errors.Is(err, apps.ErrSharedUserSigner), errors.Is(err, apps.ErrSharedUserChange):
			reason = "shared_user"
		case errors.Is(err, apps.ErrNoUID):
			reason = "no_uid"
		}
		return errcode.Wrap(errcode.InvalidParams, err.Error(), err).WithDetails(map[string]any{"reason": reason})
	case errors.Is(err, os.ErrNotExist), errors.Is(err, os.ErrPermission):
		return errcode.Wrap(errcode.InvalidParams, err.Error(), err).WithDetails(map[string]any{"reason": "bad_path"})
	}
	return errcode.Wrap(errcode.Internal, "install failed: "+err.Error(), err)
}

// lookup returns the installed package called name.
func (s *Server) lookup(name string) (apps.Package, bool) {
	ps, err := s.o.Installer.Packages()
	if err != nil {
		return apps.Package{}, false
	}
	for _, p := range ps {
		if p.Name == name {
			return p, true
		}
	}
	return apps.Package{}, false
}
