package sessionmcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/broker"
)

var _ broker.SessionTools = (*Manager)(nil)

// mcpServer is a Streamable HTTP MCP server over TLS.
type mcpServer struct {
	*httptest.Server
	cancelled atomic.Int32
	hits      atomic.Int32
	headers   sync.Map // header name → last value
}

func newMCPServer(t *testing.T, wrap func(http.Handler) http.Handler) *mcpServer {
	t.Helper()
	ms := &mcpServer{}
	release := make(chan struct{})
	s := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	yes := true
	s.AddTool(&mcp.Tool{Name: "search", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "found"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "drop", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "nothing to drop"}}}, nil
		})
	s.AddTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			select {
			case <-ctx.Done():
				ms.cancelled.Add(1)
			case <-release:
			}
			return nil, ctx.Err()
		})
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	if wrap != nil {
		h = wrap(h)
	}
	ms.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ms.hits.Add(1)
		for k, v := range r.Header {
			ms.headers.Store(k, strings.Join(v, ","))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ms.Close)
	t.Cleanup(func() { close(release) }) // runs first: no handler outlives the test
	return ms
}

// loopback lets tests reach the local test server (production dialing
// refuses every non-public address).
func loopback(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	return d.DialContext(ctx, network, addr)
}

func newManager(ms *mcpServer, clk *clocktest.Clock, dial bool) *Manager {
	o := &Options{TLS: ms.Client().Transport.(*http.Transport)}
	if dial {
		o.Dial = loopback
	}
	if clk != nil {
		o.Clock = clk
	}
	return New(o)
}

var app = engine.Caller{Kind: engine.CallerApp, UID: 10123, Package: "org.example.app"}

func TestConnectListCall(t *testing.T) {
	t.Parallel()
	ms := newMCPServer(t, nil)
	m := newManager(ms, nil, true)
	ctx := context.Background()
	st, err := m.Attach(ctx, "ses_1", app, []catalog.SessionServer{{Transport: "http", Name: "docs", URL: ms.URL + "/mcp",
		Headers: []catalog.Header{{Name: "Authorization", Value: "Bearer SECRET-TOKEN"}}}})
	if err != nil || len(st) != 1 || !st[0].Connected || st[0].ToolCount != 3 || st[0].Reason != "" {
		t.Fatalf("attach: %+v %v", st, err)
	}
	if v, _ := ms.headers.Load("Authorization"); v != "Bearer SECRET-TOKEN" {
		t.Fatalf("header not sent: %v", v)
	}
	entries := m.Tools(ctx, "ses_1")
	cat, err := catalog.New(entries)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]catalog.Risk{"ses__docs__search": catalog.RiskWrite, "ses__docs__drop": catalog.RiskHigh, "ses__docs__slow": catalog.RiskWrite}
	for name, risk := range want {
		e, ok := cat.ByName(name)
		if !ok || e.Risk != risk || e.MayAlwaysAllow || e.Provider() != "session:docs" {
			t.Errorf("%s: %+v", name, e)
		}
	}
	// Hidden in read_only even though search says readOnly.
	if v := cat.Visible(catalog.View{Mode: catalog.ModeReadOnly}); len(v) != 0 {
		t.Errorf("read_only shows %v", v)
	}
	r := m.Call(ctx, "ses_1", catalog.SessionToolID{Server: "docs", Tool: "search"}, "ses__docs__search", nil, time.Minute)
	if r.IsError || r.Text != "found" {
		t.Fatalf("search: %+v", r)
	}
	r = m.Call(ctx, "ses_1", catalog.SessionToolID{Server: "docs", Tool: "drop"}, "ses__docs__drop", nil, time.Minute)
	if r.Code != string(errcode.ToolFailed) || r.Text != "[agentos:tool_failed] nothing to drop" {
		t.Fatalf("drop: %+v", r)
	}
	r = m.Call(ctx, "ses_1", catalog.SessionToolID{Server: "docs", Tool: "slow"}, "ses__docs__slow", nil, 200*time.Millisecond)
	if r.Code != string(errcode.ToolTimeout) || r.Outcome != engine.OutcomeUnknown {
		t.Fatalf("slow: %+v", r)
	}
	assert.Eventually(t, func() bool { return ms.cancelled.Load() == 1 }, 10*time.Second, 10*time.Millisecond,
		"the server never saw the timed-out call cancelled")
	if r := m.Call(ctx, "ses_2", catalog.SessionToolID{Server: "docs", Tool: "search"}, "ses__docs__search", nil, time.Minute); r.Code != string(errcode.ToolUnavailable) {
		t.Fatalf("other session: %+v", r)
	}
	m.Forget("ses_1")
	if m.Count() != 0 || m.Known("ses_1") != nil {
		t.Fatal("forget kept the servers")
	}
	// No URL or header value ever reaches a status or a name.
	b, _ := json.Marshal(st)
	if strings.Contains(string(b), "SECRET") || strings.Contains(string(b), "127.0.0.1") {
		t.Fatalf("status leaks: %s", b)
	}
}

func TestUnreachableAndThrottle(t *testing.T) {
	t.Parallel()
	ms := newMCPServer(t, nil)
	clk := clocktest.New(time.Unix(1e9, 0))
	m := newManager(ms, clk, true)
	// A closed port: connect_failed, the session is still made.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	st, err := m.Attach(context.Background(), "ses_u", app, []catalog.SessionServer{{Transport: "http", Name: "gone", URL: "https://" + addr + "/mcp"}})
	if err != nil || st[0].Connected || st[0].Reason != ReasonConnectFailed {
		t.Fatalf("unreachable: %+v %v", st, err)
	}
	// Redirects are not followed, and loopback is refused by default.
	redir := newMCPServer(t, func(http.Handler) http.Handler {
		return http.RedirectHandler("https://example.com/", http.StatusTemporaryRedirect)
	})
	m2 := newManager(redir, clk, true)
	if st, _ := m2.Attach(context.Background(), "ses_r", app, []catalog.SessionServer{{Transport: "http", Name: "r", URL: redir.URL}}); st[0].Connected {
		t.Fatalf("redirect followed: %+v", st)
	}
	m3 := newManager(ms, clk, false)
	if st, _ := m3.Attach(context.Background(), "ses_p", app, []catalog.SessionServer{{Transport: "http", Name: "p", URL: ms.URL}}); st[0].Connected || st[0].Reason != ReasonNotPublic {
		t.Fatalf("loopback reached: %+v", st)
	}
	if ms.hits.Load() != 0 {
		t.Fatal("the refused server saw a request")
	}

	// A server that comes back is retried before a task, but not within 30 s.
	hits := atomic.Int32{}
	var down atomic.Bool
	down.Store(true)
	flaky := newMCPServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hits.Add(1)
			if down.Load() {
				http.Error(w, "down", http.StatusServiceUnavailable)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	m4 := newManager(flaky, clk, true)
	st, _ = m4.Attach(context.Background(), "ses_f", app, []catalog.SessionServer{{Transport: "http", Name: "f", URL: flaky.URL}})
	if st[0].Connected {
		t.Fatal("connected to a down server")
	}
	down.Store(false)
	before := hits.Load()
	if tools := m4.Tools(context.Background(), "ses_f"); len(tools) != 0 || hits.Load() != before {
		t.Fatalf("retried within 30 s: %d tools, %d hits", len(tools), hits.Load()-before)
	}
	clk.Advance(RetryAfter + time.Second)
	if tools := m4.Tools(context.Background(), "ses_f"); len(tools) != 3 {
		t.Fatalf("after 30 s: %d tools", len(tools))
	}
	if st := m4.Status("ses_f"); !st[0].Connected || st[0].ToolCount != 3 {
		t.Fatalf("status after retry: %+v", st)
	}
}

func TestLimits(t *testing.T) {
	t.Parallel()
	ms := newMCPServer(t, nil)
	m := newManager(ms, nil, true)
	ctx := context.Background()
	servers := func(n int) []catalog.SessionServer {
		var out []catalog.SessionServer
		for i := range n {
			out = append(out, catalog.SessionServer{Transport: "http", Name: fmt.Sprintf("s%d", i), URL: ms.URL})
		}
		return out
	}
	if _, err := m.Attach(ctx, "ses_a", app, servers(4)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Attach(ctx, "ses_b", app, servers(4)); err != nil {
		t.Fatal(err)
	}
	var e *errcode.Error
	if _, err := m.Attach(ctx, "ses_c", app, servers(1)); !errors.As(err, &e) || e.Code != errcode.QuotaExceeded || e.Details["reason"] != "mcp_servers" {
		t.Fatalf("9th server of one app: %v", err)
	}
	// Replacing a session's servers does not count them twice.
	if _, err := m.Attach(ctx, "ses_b", app, servers(4)); err != nil {
		t.Fatalf("replace: %v", err)
	}
	desk := engine.Caller{Kind: engine.CallerDesktop, UID: 2000}
	for i := range 14 {
		if _, err := m.Attach(ctx, fmt.Sprintf("ses_d%d", i), desk, servers(4)); err != nil {
			t.Fatalf("desktop session %d: %v", i, err)
		}
	}
	if _, err := m.Attach(ctx, "ses_z", desk, servers(1)); !errors.As(err, &e) || e.Code != errcode.QuotaExceeded {
		t.Fatalf("65th server: %v", err)
	}
}
