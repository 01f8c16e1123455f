package provider

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/internal/wire"
	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// app is an in-process provider: an SDK server that fakeLauncher starts
// on its socket and can "kill".
type app struct {
	socket string
	srv    *plugin.Server

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan struct{}
	running int
	max     int
	gate    chan struct{} // slow calls wait on it
	cancels atomic.Int32
	calls   atomic.Int32
}

func newApp(t *testing.T) *app {
	a := &app{socket: t.TempDir() + "/app.sock", gate: make(chan struct{})}
	a.srv = plugin.NewServer(plugin.Info{Name: "test"}, nil)
	schema := json.RawMessage(`{"type":"object"}`)
	a.srv.MustAddTool(plugin.Tool{Name: "echo", InputSchema: schema, Handler: func(_ context.Context, args json.RawMessage) (*plugin.Result, error) {
		a.calls.Add(1)
		return plugin.Text(string(args)), nil
	}})
	a.srv.MustAddTool(plugin.Tool{Name: "fail", InputSchema: schema, Handler: func(context.Context, json.RawMessage) (*plugin.Result, error) {
		return plugin.Error("No item with id 7."), nil
	}})
	a.srv.MustAddTool(plugin.Tool{Name: "slow", InputSchema: schema, Handler: func(ctx context.Context, _ json.RawMessage) (*plugin.Result, error) {
		a.calls.Add(1)
		a.mu.Lock()
		a.running++
		a.max = max(a.max, a.running)
		gate := a.gate
		a.mu.Unlock()
		defer func() { a.mu.Lock(); a.running--; a.mu.Unlock() }()
		select {
		case <-gate:
			return plugin.Text("done"), nil
		case <-ctx.Done():
			a.cancels.Add(1)
			return plugin.Error("cancelled"), nil
		}
	}})
	t.Cleanup(a.kill)
	return a
}

func (a *app) start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancel != nil {
		return nil
	}
	ln, err := transport.Listen(a.socket)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	a.cancel, a.done = cancel, done
	go func() { defer close(done); a.srv.ServeListener(ctx, ln) }()
	return nil
}

// kill stops the provider: its connections close mid-call.
func (a *app) kill() {
	a.mu.Lock()
	cancel, done := a.cancel, a.done
	a.cancel = nil
	a.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// release lets every slow call, now and later, finish.
func (a *app) release() {
	a.mu.Lock()
	close(a.gate)
	a.mu.Unlock()
}

type wireResult = wire.CallResult

type fakeLauncher struct {
	start   func() error
	starts  atomic.Int32
	stops   atomic.Int32
	onStop  func()
	failing atomic.Bool
}

func (l *fakeLauncher) Start(context.Context, string, string) error {
	l.starts.Add(1)
	if l.failing.Load() {
		return errors.New("spawn failed")
	}
	if l.start != nil {
		return l.start()
	}
	return nil
}

func (l *fakeLauncher) Stop(context.Context, string, string) error {
	l.stops.Add(1)
	if l.onStop != nil {
		l.onStop()
	}
	return nil
}

func newServer(t *testing.T, a *app, l *fakeLauncher, mod func(*Config)) *Server {
	cfg := Config{Package: "org.example.app", UID: os.Getuid(), Server: "test", Socket: a.socket, Launcher: l,
		ListDebounce: 20 * time.Millisecond}
	if l.start == nil {
		l.start = a.start
	}
	if mod != nil {
		mod(&cfg)
	}
	s := New(cfg)
	t.Cleanup(s.Close)
	return s
}

func TestCallResults(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	l := &fakeLauncher{}
	var lists atomic.Int32
	s := newServer(t, a, l, func(c *Config) { c.OnTools = func(tools []plugin.ToolInfo) { lists.Add(1) } })
	ctx := context.Background()
	r := s.Call(ctx, "mcp__p__test__echo", "echo", json.RawMessage(`{"x":1}`), time.Minute)
	if r.Text != `{"x":1}` || r.IsError || r.Outcome != engine.OutcomeCompleted || r.ProviderPID != os.Getpid() {
		t.Fatalf("echo = %+v", r)
	}
	if lists.Load() != 1 || l.starts.Load() != 1 {
		t.Fatalf("lists %d starts %d", lists.Load(), l.starts.Load())
	}
	r = s.Call(ctx, "mcp__p__test__fail", "fail", nil, time.Minute)
	if r.Code != string(errcode.ToolFailed) || r.Text != "[agentos:tool_failed] No item with id 7." || r.Outcome != engine.OutcomeCompleted {
		t.Fatalf("fail = %+v", r)
	}
	r = s.Call(ctx, "mcp__p__test__nope", "nope", nil, time.Minute)
	if r.Code != string(errcode.ToolFailed) || !strings.Contains(r.Text, "refused") {
		t.Fatalf("unknown tool = %+v", r)
	}
	if st := s.Status(); !st.Connected || st.State != StateConnected || st.Connects != 1 {
		t.Fatalf("status %+v", st)
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	s := newServer(t, a, &fakeLauncher{}, nil)
	start := time.Now()
	r := s.Call(context.Background(), "mcp__p__test__slow", "slow", nil, 300*time.Millisecond)
	if r.Code != string(errcode.ToolTimeout) || r.Outcome != engine.OutcomeUnknown ||
		r.Text != "[agentos:tool_timeout] Tool mcp__p__test__slow did not respond in 300 ms." {
		t.Fatalf("timeout = %+v", r)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
		t.Fatalf("timeout after %v", d)
	}
	require.Eventually(t, func() bool {
		return a.cancels.Load() == 1
	}, 10*time.Second, 5*time.Millisecond, "provider saw the timeout's cancel")

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	r = s.Call(ctx, "mcp__p__test__slow", "slow", nil, time.Minute)
	if r.Code != string(errcode.ToolResultUnknown) || r.Details["cancelled"] != true || r.Outcome != engine.OutcomeUnknown {
		t.Fatalf("cancel = %+v", r)
	}
	require.Eventually(t, func() bool { return a.cancels.Load() == 2 }, 10*time.Second, 5*time.Millisecond, "provider saw the cancel")
	if a.calls.Load() != 2 {
		t.Fatalf("calls %d: each call reached the provider exactly once", a.calls.Load())
	}
}

// At most 8 calls are in flight per server; the rest queue.
func TestInflightLimit(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	s := newServer(t, a, &fakeLauncher{}, nil)
	var wg sync.WaitGroup
	results := make(chan string, 12)
	for range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- s.Call(context.Background(), "slow", "slow", nil, time.Minute).Text
		}()
	}
	require.Eventually(t, func() bool {
		a.mu.Lock()
		running := a.running
		a.mu.Unlock()
		st := s.Status()
		return running == DefaultMaxInflight && st.Queued == 4
	}, 10*time.Second, 5*time.Millisecond, "8 running, 4 queued")
	a.release() // for good: the queued four run through at once
	wg.Wait()
	close(results)
	for r := range results {
		if r != "done" {
			t.Fatalf("result %q", r)
		}
	}
	if a.max != DefaultMaxInflight {
		t.Fatalf("max in flight %d", a.max)
	}
}

// A provider that dies mid-call: result unknown, and the next call
// starts it again.
func TestProviderDeath(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	l := &fakeLauncher{}
	s := newServer(t, a, l, nil)
	done := make(chan struct{})
	go func() { s.Call(context.Background(), "slow", "slow", nil, time.Minute); close(done) }()
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.running == 1
	}, 10*time.Second, 5*time.Millisecond, "call running")
	a.kill()
	<-done
	if st := s.Status(); st.Deaths != 1 || st.Connected {
		t.Fatalf("after death: %+v", st)
	}
	r2 := s.Call(context.Background(), "echo", "echo", json.RawMessage(`{}`), time.Minute)
	if r2.IsError || l.starts.Load() != 2 || s.Status().Connects != 2 {
		t.Fatalf("after death: %+v starts %d", r2, l.starts.Load())
	}
}

func TestProviderDeathResult(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	s := newServer(t, a, &fakeLauncher{}, nil)
	done := make(chan struct{})
	var got struct {
		code, outcome string
	}
	go func() {
		r := s.Call(context.Background(), "slow", "slow", nil, time.Minute)
		got.code, got.outcome = r.Code, r.Outcome
		close(done)
	}()
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.running == 1
	}, 10*time.Second, 5*time.Millisecond, "call running")
	start := time.Now()
	a.kill()
	<-done
	if got.code != string(errcode.ToolResultUnknown) || got.outcome != engine.OutcomeUnknown || time.Since(start) > 3*time.Second {
		t.Fatalf("death: %+v after %v", got, time.Since(start))
	}
}

func TestIdleRelease(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	l := &fakeLauncher{onStop: a.kill}
	s := newServer(t, a, l, func(c *Config) { c.IdleTimeout = 150 * time.Millisecond })
	if r := s.Call(context.Background(), "echo", "echo", json.RawMessage(`{}`), time.Minute); r.IsError {
		t.Fatal(r.Text)
	}
	require.Eventually(t, func() bool {
		return s.Status().IdleReleases == 1 && l.stops.Load() == 1
	}, 10*time.Second, 5*time.Millisecond, "idle release")
	if st := s.Status(); st.Connected || st.State != StateIdle || st.Deaths != 0 {
		t.Fatalf("after idle: %+v", st)
	}
	if r := s.Call(context.Background(), "echo", "echo", json.RawMessage(`{}`), time.Minute); r.IsError || l.starts.Load() != 2 {
		t.Fatalf("reconnect: %+v starts %d", r, l.starts.Load())
	}
}

// Busy connections are not released, however long the call runs on the
// clock.
func TestNoIdleWhileBusy(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	l := &fakeLauncher{onStop: a.kill}
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	s := newServer(t, a, l, func(c *Config) { c.IdleTimeout = 50 * time.Millisecond; c.Clock = clk })
	done := make(chan struct{})
	go func() { s.Call(context.Background(), "slow", "slow", nil, 2*time.Hour); close(done) }()
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.running == 1
	}, 10*time.Second, 5*time.Millisecond, "call running")
	clk.Advance(time.Hour) // many idle periods, within the call's timeout
	if st := s.Status(); !st.Connected || st.IdleReleases != 0 {
		t.Fatalf("released while busy: %+v", st)
	}
	a.release()
	<-done
}

// The 30 s idle release (spec §4.9) and the 120 s call timeout run on the
// runtime's clock: neither ends a moment early, both happen as soon as
// the clock passes them (the lab advances it instead of waiting).
func TestIdleAndCallTimeoutOnTheClock(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	l := &fakeLauncher{onStop: a.kill}
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	s := newServer(t, a, l, func(c *Config) { c.Clock = clk })
	if r := s.Call(context.Background(), "echo", "echo", json.RawMessage(`{}`), 0); r.IsError {
		t.Fatal(r.Text)
	}
	require.Equal(t, 1, clk.Pending(), "idle timer not armed")
	clk.Advance(DefaultIdleTimeout - time.Millisecond)
	require.Equal(t, 0, s.Status().IdleReleases, "released early")
	require.True(t, s.Status().Connected)
	clk.Advance(time.Millisecond)
	require.Eventually(t, func() bool {
		return s.Status().IdleReleases == 1 && l.stops.Load() == 1
	}, 10*time.Second, 5*time.Millisecond, "idle release")

	res := make(chan wireResult, 1)
	go func() { res <- s.Call(context.Background(), "mcp__p__test__slow", "slow", nil, 0) }()
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.running == 1
	}, 10*time.Second, 5*time.Millisecond, "call running")
	clk.Advance(DefaultCallTimeout - time.Millisecond)
	select {
	case r := <-res:
		t.Fatalf("ended before its timeout: %+v", r)
	default:
	}
	clk.Advance(time.Millisecond)
	r := <-res
	assert.Equal(t, string(errcode.ToolTimeout), r.Code)
	assert.Equal(t, engine.OutcomeUnknown, r.Outcome)
	assert.Equal(t, "[agentos:tool_timeout] Tool mcp__p__test__slow did not respond in 120000 ms.", r.Text)
	a.release()
}

func TestAbort(t *testing.T) {
	t.Parallel()
	a := newApp(t)
	s := newServer(t, a, &fakeLauncher{}, nil)
	results := make(chan wireResult, 1)
	go func() { results <- s.Call(context.Background(), "slow", "slow", nil, time.Minute) }()
	require.Eventually(t, func() bool {
		a.mu.Lock()
		defer a.mu.Unlock()
		return a.running == 1
	}, 10*time.Second, 5*time.Millisecond, "call running")
	s.Abort("the plugin was turned off")
	if r := <-results; r.Code != string(errcode.ToolResultUnknown) || r.Details["reason"] != "the plugin was turned off" {
		t.Fatalf("abort: %+v", r)
	}
	require.Eventually(t, func() bool { return a.cancels.Load() == 1 }, 10*time.Second, 5*time.Millisecond, "provider saw the cancel")
}

func TestConnectFailures(t *testing.T) {
	t.Parallel()
	t.Run("bind failed", func(t *testing.T) {
		t.Parallel()
		a := newApp(t)
		l := &fakeLauncher{}
		l.failing.Store(true)
		s := newServer(t, a, l, nil)
		r := s.Call(context.Background(), "echo", "echo", nil, time.Minute)
		if r.Code != string(errcode.ToolUnavailable) || r.Outcome != engine.OutcomeNotDispatched || s.Status().Error != ErrBindFailed {
			t.Fatalf("%+v %+v", r, s.Status())
		}
	})
	t.Run("squatter", func(t *testing.T) {
		t.Parallel()
		a := newApp(t)
		s := newServer(t, a, &fakeLauncher{}, func(c *Config) { c.UID = os.Getuid() + 4242 })
		r := s.Call(context.Background(), "echo", "echo", nil, time.Minute)
		st := s.Status()
		if r.Code != string(errcode.ToolUnavailable) || st.Error != ErrUIDMismatch || st.UIDRejects != 1 || a.calls.Load() != 0 {
			t.Fatalf("%+v %+v", r, st)
		}
	})
	t.Run("initialize hangs", func(t *testing.T) {
		t.Parallel()
		sock := rawServer(t, func(c net.Conn) { select {} })
		s := New(Config{UID: os.Getuid(), Socket: sock, ConnectTimeout: 300 * time.Millisecond})
		defer s.Close()
		start := time.Now()
		r := s.Call(context.Background(), "echo", "echo", nil, time.Minute)
		if r.Code != string(errcode.ToolUnavailable) || s.Status().Error != ErrInitializeTimeout || time.Since(start) > 5*time.Second {
			t.Fatalf("%+v %+v", r, s.Status())
		}
	})
}

// rawServer serves a hand-written provider on a socket.
func rawServer(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	sock := t.TempDir() + "/raw.sock"
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go serve(c)
		}
	}()
	return sock
}

// scripted is a minimal MCP server: initialize, tools/list with one
// tool, and call answered by onCall (which writes raw lines).
func scripted(onCall func(w *bufio.Writer, id json.RawMessage), afterInit func(w *bufio.Writer)) func(net.Conn) {
	return scriptedTools(`[{"name":"big","inputSchema":{"type":"object"}}]`, onCall, afterInit)
}

// scriptedTools is scripted with a tools/list answer of its own.
func scriptedTools(tools string, onCall func(w *bufio.Writer, id json.RawMessage), afterInit func(w *bufio.Writer)) func(net.Conn) {
	return func(c net.Conn) {
		r := bufio.NewReaderSize(c, 1<<20)
		w := bufio.NewWriter(c)
		var wmu sync.Mutex
		send := func(s string) { wmu.Lock(); w.WriteString(s + "\n"); w.Flush(); wmu.Unlock() }
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			json.Unmarshal(line, &m)
			switch m.Method {
			case "initialize":
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"raw","version":"1"}}}`, m.ID))
			case "notifications/initialized":
				if afterInit != nil {
					go func() { wmu.Lock(); afterInit(w); w.Flush(); wmu.Unlock() }()
				}
			case "tools/list":
				send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"result":{"tools":%s}}`, m.ID, tools))
			case "tools/call":
				wmu.Lock()
				onCall(w, m.ID)
				w.Flush()
				wmu.Unlock()
			}
		}
	}
}

// A 10 MB result never reaches memory whole: the call fails
// tool_result_too_large and the connection stays usable.
func TestHugeResult(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	sock := rawServer(t, scripted(func(w *bufio.Writer, id json.RawMessage) {
		if n.Add(1) == 1 {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"`, id)
			chunk := strings.Repeat("x", 1<<20)
			for range 10 {
				w.WriteString(chunk)
			}
			w.WriteString("\"}]}}\n")
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"small"}]}}`+"\n", id)
	}, nil))
	s := New(Config{UID: os.Getuid(), Socket: sock})
	defer s.Close()
	r := s.Call(context.Background(), "mcp__raw__big", "big", nil, time.Minute)
	if r.Code != string(errcode.ToolResultTooLarge) || !strings.Contains(r.Text, "larger than 65536") {
		t.Fatalf("huge = %+v", r)
	}
	if r := s.Call(context.Background(), "mcp__raw__big", "big", nil, time.Minute); r.Text != "small" {
		t.Fatalf("after huge = %+v", r)
	}
}

// A provider flooding list_changed costs at most a few tools/list calls
// and never stalls calls.
func TestListChangedFlood(t *testing.T) {
	t.Parallel()
	var lists atomic.Int32
	sock := rawServer(t, scripted(func(w *bufio.Writer, id json.RawMessage) {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"ok"}]}}`+"\n", id)
	}, func(w *bufio.Writer) {
		for range 20000 {
			w.WriteString(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")
		}
	}))
	s := New(Config{UID: os.Getuid(), Socket: sock, ListDebounce: 100 * time.Millisecond,
		OnTools: func([]plugin.ToolInfo) { lists.Add(1) }})
	defer s.Close()
	start := time.Now()
	if r := s.Call(context.Background(), "x", "big", nil, time.Minute); r.Text != "ok" {
		t.Fatalf("call during flood = %+v", r)
	}
	require.Eventually(t, func() bool { return s.Status().ListChanged == 20000 }, 10*time.Second, 5*time.Millisecond, "flood received")
	time.Sleep(250 * time.Millisecond)
	if r := s.Call(context.Background(), "x", "big", nil, time.Minute); r.Text != "ok" {
		t.Fatalf("call after flood = %+v", r)
	}
	// One list on connect plus one per debounce window of the flood.
	if got, limit := lists.Load(), int32(2+time.Since(start)/(100*time.Millisecond)); got > limit {
		t.Fatalf("%d tools/list for a flood (limit %d)", got, limit)
	}
}

// A provider listing tools no model could be given: they are dropped,
// the rest are kept.
func TestHostileToolList(t *testing.T) {
	t.Parallel()
	// One line (a newline inside would split the message), within the
	// frame limit.
	tools := `[{"name":"","inputSchema":{"type":"object"}},` +
		`{"name":"ok","inputSchema":{"type":"object"}},` +
		`{"name":"ok","inputSchema":{"type":"object","x":1}},` +
		`{"name":"arr","inputSchema":[]},` +
		`{"name":"str","inputSchema":"object"},` +
		`{"name":"工具","inputSchema":{"type":"object"}},` +
		`{"name":"` + strings.Repeat("n", 300) + `","inputSchema":{"type":"object"}}]`
	var got []string
	sock := rawServer(t, scriptedTools(tools, func(w *bufio.Writer, id json.RawMessage) {}, nil))
	s := New(Config{UID: os.Getuid(), Socket: sock, OnTools: func(ts []plugin.ToolInfo) {
		for _, x := range ts {
			got = append(got, x.Name)
		}
	}})
	defer s.Close()
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "ok,工具" || s.Status().DroppedTools != 5 {
		t.Fatalf("kept %q, dropped %d", got, s.Status().DroppedTools)
	}
}
