package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// TapDelay is how long a consent or authorization card is shown before a
// tap on it counts (spec §5.4, the anti-tap delay).
const TapDelay = 400 * time.Millisecond

// Limits of the console's HTTP server.
const (
	// MaxConns bounds the connections served at once.
	MaxConns = 32
	// maxFormBytes bounds a POST body (a model key, a pairing revoke).
	maxFormBytes = 64 << 10
)

// Admin is the admin API as the console calls it: admin.Server.Invoke.
type Admin interface {
	Invoke(ctx context.Context, peer transport.Cred, method string, params any) (json.RawMessage, error)
}

var _ Admin = (*admin.Server)(nil)

// Options configure a Server. Admin is required.
type Options struct {
	// Name is the socket; "" means transport.Names{}.Console().
	Name string
	// RuntimeUID is the runtime's own uid; 0 means os.Getuid().
	RuntimeUID int
	// Admin serves every action and every page's data.
	Admin Admin
	// Token is the session token; "" draws a random one (tests fix it).
	Token string
	// Clock times the tap delay and the countdowns; nil is the real clock.
	Clock clock.Clock
	// Logger receives paths, statuses and uids, never form values; nil
	// discards.
	Logger *slog.Logger
}

// Server is the console. Start it once; Close stops it.
type Server struct {
	name       string
	runtimeUID int
	admin      Admin
	token      string
	csrf       string
	clock      clock.Clock
	log        *slog.Logger
	pages      *template.Template
	handler    http.Handler

	svc    transport.Service
	slots  chan struct{}
	mu     sync.Mutex
	cancel context.CancelFunc
}

// New builds a console; Start listens.
func New(opts *Options) (*Server, error) {
	if opts == nil || opts.Admin == nil {
		return nil, errors.New("console: an admin API is required")
	}
	o := *opts
	if o.Name == "" {
		o.Name = transport.Names{}.Console()
	}
	if o.RuntimeUID <= 0 {
		o.RuntimeUID = os.Getuid()
	}
	if o.Token == "" {
		var b [32]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("console: token: %w", err)
		}
		o.Token = base64.RawURLEncoding.EncodeToString(b[:])
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Server{name: o.Name, runtimeUID: o.RuntimeUID, admin: o.Admin, token: o.Token, clock: clock.Or(o.Clock),
		log: o.Logger, slots: make(chan struct{}, MaxConns)}
	s.csrf = s.sign("csrf")
	t, err := parsePages()
	if err != nil {
		return nil, err
	}
	s.pages = t
	s.handler = s.routes()
	return s, nil
}

// Name is the socket the console listens on.
func (s *Server) Name() string { return s.name }

// Token is this start's session token.
func (s *Server) Token() string { return s.token }

// Path is the first URL path a browser opens (it carries the token).
func (s *Server) Path() string { return "/?token=" + s.token }

// sign is an HMAC of msg under the token, URL-safe.
func (s *Server) sign(msg string) string {
	m := hmac.New(sha256.New, []byte(s.token))
	m.Write([]byte(msg))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// Start listens on the console's socket and serves until ctx ends or
// Close.
func (s *Server) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	ln := &connListener{conns: make(chan net.Conn), done: make(chan struct{})}
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    32 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if pc, ok := c.(*peerConn); ok {
				return withPeer(ctx, pc.cred)
			}
			return ctx
		},
	}
	if err := s.svc.Start(ctx, s.name, func(c *transport.Conn) transport.Admission { return s.admit(ln, c) }); err != nil {
		cancel()
		return fmt.Errorf("console: %w", err)
	}
	s.mu.Lock()
	s.cancel = cancel
	s.mu.Unlock()
	s.svc.Go(func() { hs.Serve(ln) })
	s.svc.Go(func() {
		<-ctx.Done()
		ln.Close()
		hs.Close()
	})
	s.log.Info("listening", "socket", s.name)
	return nil
}

// Close stops listening, closes every connection and waits.
func (s *Server) Close() {
	s.mu.Lock()
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.svc.Close()
}

// admit serves owners only; anyone else is closed without a byte.
func (s *Server) admit(ln *connListener, c *transport.Conn) transport.Admission {
	uid := c.Cred().UID
	if !s.owner(uid) {
		s.log.Info("console: peer refused", "uid", uid)
		return transport.Refuse(nil)
	}
	select {
	case s.slots <- struct{}{}:
	default:
		s.log.Warn("console: too many connections", "uid", uid)
		return transport.Refuse(nil)
	}
	return transport.Admission{
		Serve: func(ctx context.Context, c *transport.Conn) {
			pc := &peerConn{Conn: c, cred: c.Cred(), closed: make(chan struct{})}
			select {
			case ln.conns <- pc:
			case <-ln.done:
				return
			case <-ctx.Done():
				return
			}
			// The HTTP server owns the connection now; the service's
			// goroutine holds its slot until the server closes it.
			select {
			case <-pc.closed:
			case <-ctx.Done():
			}
		},
		Done: func() { <-s.slots },
	}
}

func (s *Server) owner(uid int) bool {
	return uid == admin.RootUID || uid == admin.ShellUID || uid == s.runtimeUID
}

// connListener hands the service's admitted connections to http.Server.
type connListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return &net.UnixAddr{Name: "console", Net: "unix"} }

// peerConn is an admitted connection with its credentials; closing it
// tells the service's goroutine the HTTP server is done with it.
type peerConn struct {
	net.Conn
	cred   transport.Cred
	once   sync.Once
	closed chan struct{}
}

func (c *peerConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { close(c.closed) })
	return err
}

type peerKey struct{}

func withPeer(ctx context.Context, cred transport.Cred) context.Context {
	return context.WithValue(ctx, peerKey{}, cred)
}

func peerOf(ctx context.Context) (transport.Cred, bool) {
	c, ok := ctx.Value(peerKey{}).(transport.Cred)
	return c, ok
}
