package callerchan

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Wire constants of the channel-open protocol (see the package doc).
const (
	// OpenMethod is the method of the success notification.
	OpenMethod = "_org.agentos/channel"
	// Version is the channel-open protocol version.
	Version = 1
)

// Default bounds.
const (
	DefaultMaxConns       = 64
	DefaultMaxConnsPerUID = 8
	writeTimeout          = 2 * time.Second
)

// Lookup returns the installed packages whose uid is uid (several for a
// shared uid), with UID set. The runtime's package table provides it.
type Lookup func(uid int) []callers.App

// ServeFunc runs ACP on an admitted connection for caller c until the
// connection ends (acp.Agent.Serve).
type ServeFunc func(ctx context.Context, c engine.Caller, s *transport.RPCStream)

// Options configure a Server. Registry, Packages and Serve are required.
type Options struct {
	// Name is the socket name; "" means transport.Names{}.Caller().
	Name     string
	Registry *callers.Registry
	Packages Lookup
	Serve    ServeFunc
	// RuntimeUID is the runtime's own uid (caller kind SELF); a negative
	// value disables SELF on this socket.
	RuntimeUID int
	// MaxConns and MaxConnsPerUID bound connections; zero means the
	// defaults.
	MaxConns       int
	MaxConnsPerUID int
	// Logger receives uids, packages and reasons; nil discards.
	Logger *slog.Logger
}

// Stats counts open channels.
type Stats struct {
	// Open counts every admitted channel (SELF and APP).
	Open int `json:"open"`
	// ThirdParty counts the channels of APP callers.
	ThirdParty int `json:"thirdParty"`
}

// Server serves the caller channel. Start it once; Close stops it.
type Server struct {
	o   Options
	log *slog.Logger

	svc transport.Service // the socket, its connections and goroutines

	mu     sync.Mutex  // guards the fields below
	perUID map[int]int // live connections (admitted or not) by uid
	stats  Stats
}

// New returns a server; call Start to listen.
func New(opts *Options) (*Server, error) {
	if opts == nil || opts.Registry == nil || opts.Packages == nil || opts.Serve == nil {
		return nil, errors.New("callerchan: Registry, Packages and Serve are required")
	}
	o := *opts
	if o.Name == "" {
		o.Name = transport.Names{}.Caller()
	}
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	if o.MaxConnsPerUID <= 0 {
		o.MaxConnsPerUID = DefaultMaxConnsPerUID
	}
	s := &Server{o: o, log: o.Logger, perUID: map[int]int{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// Name is the socket name.
func (s *Server) Name() string { return s.o.Name }

// Stats returns the open-channel counts.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Start listens and serves until ctx ends or Close is called.
func (s *Server) Start(ctx context.Context) error {
	if err := s.svc.Start(ctx, s.o.Name, s.accept); err != nil {
		return fmt.Errorf("callerchan: %w", err)
	}
	return nil
}

// Close stops listening, closes every channel and waits for the server's
// goroutines. Tasks the channels started keep running.
func (s *Server) Close() error {
	s.svc.Close()
	return nil
}

// accept bounds connections per uid and in all; over either, the
// refusal not_open is written and the connection closed.
func (s *Server) accept(c *transport.Conn) transport.Admission {
	uid := c.Cred().UID
	// Only the accept loop adds connections, so the counts cannot grow
	// between this check and the service tracking c.
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.svc.Open() >= s.o.MaxConns || s.perUID[uid] >= s.o.MaxConnsPerUID {
		s.log.Warn("callerchan: too many connections", "uid", uid)
		return transport.Refuse(RefusalLine(&callers.Refusal{Reason: callers.ReasonNotOpen, Text: "too many connections to AgentOS; close some and retry"}))
	}
	s.perUID[uid]++
	return transport.Admission{Serve: s.serveConn, Done: func() { s.release(uid) }}
}

func (s *Server) release(uid int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if faultinject.Enabled && faultinject.Active(faultinject.ChannelSlotLeak) { // the closed connection keeps its slot
		return
	}
	if s.perUID[uid]--; s.perUID[uid] <= 0 {
		delete(s.perUID, uid)
	}
}

// caller decides who is on c; a nil caller comes with the refusal.
func (s *Server) admit(c *transport.Conn) (engine.Caller, *callers.Channel, *callers.Refusal) {
	uid := c.Cred().UID
	if s.o.RuntimeUID >= 0 && uid == s.o.RuntimeUID {
		return engine.Caller{Kind: engine.CallerSelf, UID: uid, Label: "AgentOS"}, nil, nil
	}
	apps := s.o.Packages(uid)
	if len(apps) != 1 {
		// No package, or a shared uid: nothing is recorded.
		return engine.Caller{}, nil, &callers.Refusal{Reason: callers.ReasonNotOpen,
			Text: "this uid does not belong to exactly one installed app"}
	}
	app := apps[0]
	app.UID = uid
	ch, err := s.o.Registry.OpenChannel(app, func() { c.Close() })
	if err != nil {
		var ref *callers.Refusal
		if !errors.As(err, &ref) {
			ref = &callers.Refusal{Reason: callers.ReasonNotOpen, Text: "the authorization registry is unavailable"}
		}
		return engine.Caller{}, nil, ref
	}
	return engine.Caller{Kind: engine.CallerApp, UID: uid, Package: app.Package,
		Label: callers.CleanLabel(app.Label, app.Package)}, ch, nil
}

func (s *Server) serveConn(ctx context.Context, c *transport.Conn) {
	caller, ch, ref := s.admit(c)
	if ref != nil {
		s.log.Info("callerchan: open refused", "uid", c.Cred().UID, "reason", string(ref.Reason))
		writeRefusal(c, ref)
		return
	}
	if ch != nil {
		defer ch.Detach()
	}
	if err := writeLine(c, openLine(caller)); err != nil {
		return
	}
	s.count(caller, 1)
	defer s.count(caller, -1)
	s.log.Info("callerchan: channel open", "uid", caller.UID, "kind", string(caller.Kind), "package", caller.Package)
	stream := transport.NewRPCStream(c, &transport.RPCOptions{Logger: s.log})
	s.o.Serve(ctx, caller, stream)
	stream.Close()
}

func (s *Server) count(c engine.Caller, d int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Open += d
	if c.Kind == engine.CallerApp {
		s.stats.ThirdParty += d
	}
}

// RefusalLine is the line written for a refused open (see the package
// doc): not_open's wire error with the message upstream's Binder
// exception carried and the outcome in data.reason.
func RefusalLine(ref *callers.Refusal) []byte {
	w := errcode.New(errcode.NotOpen, ref.Text).Wire()
	w.Message = ref.Error()
	w.Data.Reason = string(ref.Reason)
	if ref.Reason == callers.ReasonPending {
		w.Data.RequestID = ref.RequestID
	}
	return errcode.ErrorLine(nil, w)
}

func openLine(c engine.Caller) []byte {
	caller := map[string]any{"kind": string(c.Kind)}
	if c.Package != "" {
		caller["package"] = c.Package
	}
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "method": OpenMethod,
		"params": map[string]any{"version": Version, "state": "open", "caller": caller},
	})
	return append(b, '\n')
}

func writeRefusal(c net.Conn, ref *callers.Refusal) { writeLine(c, RefusalLine(ref)) }

func writeLine(c net.Conn, b []byte) error {
	c.SetWriteDeadline(time.Now().Add(writeTimeout))
	defer c.SetWriteDeadline(time.Time{})
	_, err := c.Write(b)
	return err
}
