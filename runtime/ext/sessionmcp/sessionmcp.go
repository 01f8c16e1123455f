// Package sessionmcp connects the MCP servers a caller supplies with a
// session (ACP mcpServers, spec §2.9): Streamable HTTP only, POST
// response streams only (no standalone GET stream, no SSE resume, no
// server→client requests), no redirects, public addresses only (checked
// on the address actually dialled). URLs and headers live in this
// process's memory only: never in the store, events, logs or consent
// cards. An unreachable server does not fail the session: it is reported
// connected:false with a short reason and retried before each task, but
// not within 30 s of a failure. Its tools are named ses__<server>__<tool>,
// are at least WRITE, and are never always-allowed.
//
// Manager implements the ACP layer's acp.SessionServers seam and the
// broker's broker.SessionTools seam.
package sessionmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/agentoslab/agentlab/runtime/acp"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/platform"
	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
)

// Limits and defaults.
const (
	// RetryAfter: a failed server is not retried sooner (spec §4.8).
	RetryAfter = 30 * time.Second
	// ConnectTimeout bounds initialize + tools/list of one server.
	ConnectTimeout = 10 * time.Second
	// MaxTools bounds one server's tools.
	MaxTools = 128
	// MaxEventBytes bounds one server-sent event of a POST response.
	MaxEventBytes = 4 << 20
)

// Reasons a server is not connected.
const (
	ReasonConnectFailed = "connect_failed"
	ReasonTimeout       = "timeout"
	ReasonListFailed    = "list_failed"
	ReasonTooManyTools  = "too_many_tools"
	ReasonNotPublic     = "not_public"
)

// Options configure a Manager. The zero value works.
type Options struct {
	// Dial dials a TCP address; nil means a net.Dialer whose Control
	// refuses non-public addresses (catalog.DialControl), host names
	// resolved by the platform (netd on Android). Tests replace it.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TLS configures TLS; nil means the system's roots.
	TLS *http.Transport
	// Clock times the retry after a failed connect and each call's
	// timeout; nil means the real clock. (Connecting is network I/O,
	// bounded on the wall clock.)
	Clock clock.Clock
	// Logger receives server names, reasons and counts, never URLs or
	// headers; nil discards.
	Logger *slog.Logger
}

// Manager keeps the caller-supplied servers of every session. Safe for
// concurrent use.
type Manager struct {
	o Options

	mu       sync.Mutex
	sessions map[string]*sessionServers // guarded by mu
	closing  sync.WaitGroup             // clients being closed in the background
}

type sessionServers struct {
	owner   string
	isApp   bool
	servers []*server
}

type server struct {
	cfg catalog.SessionServer // URL and headers: memory only

	mu       sync.Mutex
	client   *plugin.Client
	tools    []plugin.ToolInfo
	reason   string
	failedAt time.Time
	closed   bool
}

var (
	_ acp.SessionServers = (*Manager)(nil)
)

// New returns an empty manager.
func New(o *Options) *Manager {
	m := &Manager{sessions: map[string]*sessionServers{}}
	if o != nil {
		m.o = *o
	}
	m.o.Clock = clock.Or(m.o.Clock)
	if m.o.Logger == nil {
		m.o.Logger = slog.New(slog.DiscardHandler)
	}
	if m.o.Dial == nil {
		m.o.Dial = platform.Current().DialContext(&net.Dialer{Timeout: ConnectTimeout, Control: catalog.DialControl})
	}
	return m
}

// Attach implements acp.SessionServers: it replaces the session's
// servers (checking the per-app and total limits first) and connects each
// new one, reporting their states.
func (m *Manager) Attach(ctx context.Context, sessionID string, c engine.Caller, servers []catalog.SessionServer) ([]acp.ServerStatus, error) {
	m.mu.Lock()
	owner := c.OwnerKey()
	total, mine := len(servers), len(servers)
	for id, s := range m.sessions {
		if id == sessionID {
			continue
		}
		total += len(s.servers)
		if s.owner == owner {
			mine += len(s.servers)
		}
	}
	if c.Kind == engine.CallerApp && mine > catalog.MaxSessionServersPerApp {
		m.mu.Unlock()
		return nil, catalog.ServerQuotaError(catalog.MaxSessionServersPerApp)
	}
	if total > catalog.MaxSessionServersTotal {
		m.mu.Unlock()
		return nil, catalog.ServerQuotaError(catalog.MaxSessionServersTotal)
	}
	old := m.sessions[sessionID]
	delete(m.sessions, sessionID)
	var ss *sessionServers
	if len(servers) > 0 {
		ss = &sessionServers{owner: owner, isApp: c.Kind == engine.CallerApp}
		for _, cfg := range servers {
			ss.servers = append(ss.servers, &server{cfg: cfg})
		}
		m.sessions[sessionID] = ss
	}
	m.mu.Unlock()
	if old != nil {
		old.close()
	}
	if ss == nil {
		return nil, nil
	}
	var wg sync.WaitGroup
	for _, s := range ss.servers {
		wg.Add(1)
		go func() { defer wg.Done(); m.connect(ctx, s) }()
	}
	wg.Wait()
	return ss.statuses(), nil
}

func (ss *sessionServers) close() {
	for _, s := range ss.servers {
		s.mu.Lock()
		c := s.client
		s.client, s.closed = nil, true
		s.mu.Unlock()
		if c != nil {
			c.Close()
		}
	}
}

func (ss *sessionServers) statuses() []acp.ServerStatus {
	out := make([]acp.ServerStatus, 0, len(ss.servers))
	for _, s := range ss.servers {
		s.mu.Lock()
		st := acp.ServerStatus{Name: s.cfg.Name, Connected: s.client != nil, ToolCount: len(s.tools), Reason: s.reason}
		if s.client != nil {
			st.Reason = ""
		} else {
			st.ToolCount = 0
		}
		s.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// Status reports a session's servers (for session_info_update).
func (m *Manager) Status(sessionID string) []acp.ServerStatus {
	m.mu.Lock()
	ss := m.sessions[sessionID]
	m.mu.Unlock()
	if ss == nil {
		return nil
	}
	return ss.statuses()
}

// Forget implements acp.SessionServers and broker.SessionTools.
func (m *Manager) Forget(sessionID string) {
	m.mu.Lock()
	ss := m.sessions[sessionID]
	delete(m.sessions, sessionID)
	m.mu.Unlock()
	if ss != nil {
		ss.close()
	}
}

// closeLater closes a client without holding up the caller (a session
// close may wait for a DELETE to a slow server); Close waits for it.
func (m *Manager) closeLater(c *plugin.Client) {
	m.closing.Add(1)
	go func() {
		defer m.closing.Done()
		c.Close()
	}()
}

// Close drops every session's servers and waits for their connections
// to close.
func (m *Manager) Close() {
	m.mu.Lock()
	all := m.sessions
	m.sessions = map[string]*sessionServers{}
	m.mu.Unlock()
	for _, ss := range all {
		ss.close()
	}
	m.closing.Wait()
}

// Count is the number of servers kept, for diagnostics.
func (m *Manager) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, ss := range m.sessions {
		n += len(ss.servers)
	}
	return n
}

// headerTransport adds the caller's headers to every request and refuses
// redirects.
type headerTransport struct {
	base    http.RoundTripper
	headers []catalog.Header
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for _, h := range t.headers {
		r.Header.Set(h.Name, h.Value)
	}
	return t.base.RoundTrip(r)
}

var errRedirect = errors.New("sessionmcp: redirects are not followed")

func (m *Manager) httpClient(s *server) *http.Client {
	var tr *http.Transport
	if m.o.TLS != nil {
		tr = m.o.TLS.Clone()
	} else {
		tr = http.DefaultTransport.(*http.Transport).Clone()
	}
	tr.Proxy = nil // a proxy would hide the address actually reached
	tr.DialContext = m.o.Dial
	tr.ResponseHeaderTimeout = ConnectTimeout
	return &http.Client{
		Transport:     &headerTransport{base: tr, headers: s.cfg.Headers},
		CheckRedirect: func(*http.Request, []*http.Request) error { return errRedirect },
	}
}

// connect (re)connects one server unless it is connected or failed
// recently.
func (m *Manager) connect(ctx context.Context, s *server) {
	s.mu.Lock()
	if s.closed || (s.client != nil && !s.client.Closed()) || (!s.failedAt.IsZero() && m.o.Clock.Now().Sub(s.failedAt) < RetryAfter) {
		s.mu.Unlock()
		return
	}
	cfg := s.cfg
	s.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	t := &mcp.StreamableClientTransport{
		Endpoint:             cfg.URL,
		HTTPClient:           m.httpClient(s),
		MaxRetries:           -1,
		DisableStandaloneSSE: true,
		MaxEventSize:         MaxEventBytes,
	}
	c, err := plugin.NewClientTransport(ctx, t, nil, &plugin.ClientOptions{Logger: m.o.Logger})
	var tools []plugin.ToolInfo
	reason := ""
	switch {
	case err != nil && errors.Is(err, catalog.ErrNonPublicAddress):
		reason = ReasonNotPublic
	case err != nil && ctx.Err() != nil:
		reason = ReasonTimeout
	case err != nil:
		reason = ReasonConnectFailed
	default:
		tools, err = c.ListTools(ctx)
		switch {
		case err != nil:
			reason = ReasonListFailed
		case len(tools) > MaxTools:
			reason = ReasonTooManyTools
		}
		if reason != "" {
			c.Close()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		if reason == "" {
			m.closeLater(c)
		}
		return
	}
	if reason != "" {
		s.client, s.tools, s.reason, s.failedAt = nil, nil, reason, m.o.Clock.Now()
		m.o.Logger.Info("sessionmcp: server not connected", "server", cfg.Name, "reason", reason)
		return
	}
	s.client, s.tools, s.reason, s.failedAt = c, tools, "", time.Time{}
	m.o.Logger.Info("sessionmcp: server connected", "server", cfg.Name, "tools", len(tools))
}

func (m *Manager) session(id string) *sessionServers {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sessions[id]
}

// Tools implements broker.SessionTools: unreachable servers are retried
// first (when the throttle allows), then the connected servers' tools are
// returned.
func (m *Manager) Tools(ctx context.Context, sessionID string) []catalog.Entry {
	ss := m.session(sessionID)
	if ss == nil {
		return nil
	}
	var wg sync.WaitGroup
	for _, s := range ss.servers {
		wg.Add(1)
		go func() { defer wg.Done(); m.connect(ctx, s) }()
	}
	wg.Wait()
	return m.Known(sessionID)
}

// Known implements broker.SessionTools without any network I/O.
func (m *Manager) Known(sessionID string) []catalog.Entry {
	ss := m.session(sessionID)
	if ss == nil {
		return nil
	}
	var out []catalog.Entry
	for _, s := range ss.servers {
		s.mu.Lock()
		if s.client != nil {
			for _, t := range s.tools {
				out = append(out, catalog.Entry{
					Kind:    catalog.KindSession,
					Session: catalog.SessionToolID{Server: s.cfg.Name, Tool: t.Name},
					Title:   t.Title, Description: t.Description, InputSchema: t.InputSchema,
					Risk:    catalog.SessionRisk(catalog.Annotations{DestructiveHint: t.DestructiveHint}),
					Hints:   catalog.Annotations{DestructiveHint: t.DestructiveHint},
					Enabled: true,
				})
			}
		}
		s.mu.Unlock()
	}
	return out
}

// Call implements broker.SessionTools.
func (m *Manager) Call(ctx context.Context, sessionID string, id catalog.SessionToolID, name string, args json.RawMessage, timeout time.Duration) engine.ToolResult {
	ss := m.session(sessionID)
	var s *server
	if ss != nil {
		for _, x := range ss.servers {
			if x.cfg.Name == id.Server {
				s = x
			}
		}
	}
	if s == nil {
		return toolErr(errcode.ToolUnavailable, "The server is not connected.", engine.OutcomeNotDispatched)
	}
	s.mu.Lock()
	c := s.client
	known := slices.ContainsFunc(s.tools, func(t plugin.ToolInfo) bool { return t.Name == id.Tool })
	s.mu.Unlock()
	if c == nil || c.Closed() {
		return toolErr(errcode.ToolUnavailable, "The server is not connected.", engine.OutcomeNotDispatched)
	}
	if !known {
		return toolErr(errcode.ToolNotInCatalog, catalog.NotAvailable(name).Text, engine.OutcomeRejected)
	}
	parent := ctx
	ctx, cancel := clock.WithTimeout(ctx, m.o.Clock, timeout)
	defer cancel()
	res, err := c.CallTool(ctx, id.Tool, args)
	switch {
	case err == nil && res.IsError:
		return toolErr(errcode.ToolFailed, res.Text, engine.OutcomeCompleted)
	case err == nil:
		return engine.ToolResult{Text: res.Text, Outcome: engine.OutcomeCompleted}
	case parent.Err() != nil:
		r := toolErr(errcode.ToolResultUnknown, "Tool call was cancelled after dispatch.", engine.OutcomeUnknown)
		r.Details = map[string]any{"cancelled": true}
		return r
	case ctx.Err() != nil:
		return toolErr(errcode.ToolTimeout, fmt.Sprintf("Tool %s did not respond in %d ms.", name, timeout.Milliseconds()), engine.OutcomeUnknown)
	}
	var rpc *plugin.RPCError
	if errors.As(err, &rpc) {
		return toolErr(errcode.ToolFailed, "The server refused the call.", engine.OutcomeCompleted)
	}
	// The request may have reached the server: its effect is unknown. The
	// server is reconnected before the next task.
	s.mu.Lock()
	if s.client == c {
		s.client, s.reason, s.failedAt = nil, ReasonConnectFailed, time.Time{}
	}
	s.mu.Unlock()
	m.closeLater(c)
	return toolErr(errcode.ToolResultUnknown, "Tool call failed: the server connection was lost.", engine.OutcomeUnknown)
}

func toolErr(c errcode.Code, sentence, outcome string) engine.ToolResult {
	return engine.ToolResult{Code: string(c), IsError: true, Outcome: outcome, Text: errcode.ToolText(c, sentence)}
}
