package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/aci/sdui"
	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	sdk "github.com/agentoslab/agentlab/runtime/sdk/aci"
	"github.com/agentoslab/agentlab/runtime/transport"
)

const (
	calleePkg = "org.agentos.test.callee"
	callerPkg = "org.agentos.test.caller"
	server    = "svc"
)

// table is a package table in memory.
type table struct {
	mu   sync.Mutex
	pkgs map[string]apps.Package
}

func (t *table) All() []apps.Package {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []apps.Package
	for _, p := range t.pkgs {
		out = append(out, p)
	}
	return out
}

func (t *table) ByName(n string) (apps.Package, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.pkgs[n]
	return p, ok
}

var seq atomic.Int64

func names(t testing.TB) transport.Names {
	if !transport.AbstractSupported() {
		t.Skip("needs abstract unix sockets (Linux)")
	}
	return transport.Names{Prefix: fmt.Sprintf("aci-ctl-test-%d-%d.", os.Getpid(), seq.Add(1))}
}

// rig is a callee package served in this process (its uid is ours) and
// a caller app.
type rig struct {
	t        testing.TB
	names    transport.Names
	tab      *table
	srv      *sdk.Server
	stop     func()
	ctl      *Controller
	callerOK engine.Caller
}

func newRig(t testing.TB, srv *sdk.Server, o Options, callerPerms ...string) *rig {
	r := &rig{t: t, names: names(t), srv: srv}
	r.tab = &table{pkgs: map[string]apps.Package{
		calleePkg:              {Name: calleePkg, UID: os.Getuid(), Label: "Callee", Services: []apps.Service{{Name: "Svc", Kind: apps.ServiceKindACI, Server: server}}},
		callerPkg:              {Name: callerPkg, UID: 10555, Permissions: callerPerms},
		"org.agentos.test.mcp": {Name: "org.agentos.test.mcp", UID: 10556, Services: []apps.Service{{Name: "M", Kind: apps.ServiceKindMCP, Server: "m"}}},
	}}
	r.callerOK = engine.Caller{Kind: engine.CallerApp, UID: 10555, Package: callerPkg}
	o.Packages, o.Names = r.tab, r.names
	r.ctl = New(o)
	return r
}

// start serves the callee on its socket.
func (r *rig) start() {
	ctx, cancel := context.WithCancel(context.Background())
	sv, err := r.srv.Start(ctx, r.names.ACI(calleePkg, server))
	require.NoError(r.t, err)
	r.stop = func() { cancel(); sv.Wait() }
	r.t.Cleanup(r.stop)
}

func (r *rig) id(capability string) catalog.ACIToolID {
	return catalog.ACIToolID{Package: calleePkg, Service: server, Capability: capability}
}

func (r *rig) call(capability, args string, confirmed bool) engine.ToolResult {
	return r.ctl.Call(context.Background(), CallRequest{ID: r.id(capability), Arguments: json.RawMessage(args), Caller: r.callerOK, Confirmed: confirmed})
}

func echo() *sdk.Capability {
	return sdk.NewCapability("echo", "Echo the text.").
		Param("text", sdk.TypeString, sdk.Required, "What to echo.").
		Param("times", sdk.TypeInt, !sdk.Required, "How often.").
		Result("reply", sdk.TypeString, "The text.").
		Result("on_behalf_of", sdk.TypeString, "For whom the runtime calls.").
		Handle(func(ctx context.Context, c *sdk.Call) (sdk.Bundle, error) {
			return sdk.Bundle{"reply": sdk.String(strings.Repeat(c.String("text"), int(c.IntOr("times", 1)))),
				"on_behalf_of": sdk.String(c.Caller.OnBehalfOf)}, nil
		})
}

func runtimeOpts() *sdk.Options { return &sdk.Options{RuntimeUIDs: []int{os.Getuid()}} }

func TestDiscoveryPutsEachCapabilityInTheCatalog(t *testing.T) {
	srv := sdk.NewServer(server, runtimeOpts())
	srv.MustAdd(echo())
	srv.MustAdd(sdk.NewCapability("wipe", "Delete everything.").Flags(sdk.FlagDangerous).
		Param("all", sdk.TypeBoolean, sdk.Required, "").Param("ratio", sdk.TypeDouble, false, "").
		Param("tags", sdk.TypeStringArray, false, "").Param("blob", sdk.TypeBytes, false, "").
		Handle(func(context.Context, *sdk.Call) (sdk.Bundle, error) { return nil, nil }))
	srv.MustAdd(sdk.NewCapability("ask", "Ask first.").UserConfirm().Handle(func(context.Context, *sdk.Call) (sdk.Bundle, error) { return nil, nil }))
	r := newRig(t, srv, Options{})
	r.start()

	views := r.ctl.Discover(context.Background(), "")
	require.Len(t, views, 1, "only ACI services are discovered")
	assert.Equal(t, wire.ProtocolV1, views[0].Protocol)
	assert.Empty(t, views[0].Error)
	assert.ElementsMatch(t, []string{"echo", "wipe", "ask", wire.ProtocolCapability}, views[0].Capabilities)

	cat, err := catalog.New(r.ctl.Entries())
	require.NoError(t, err)
	byCap := map[string]catalog.Entry{}
	for _, e := range cat.All() {
		byCap[e.ACI.Capability] = e
	}
	require.Len(t, byCap, 3, "aci_protocol is plumbing, not a tool")
	assert.Equal(t, "aci__org_agentos_test_callee__svc__echo", byCap["echo"].Name)
	assert.Equal(t, catalog.RiskWrite, byCap["echo"].Risk)
	assert.Equal(t, catalog.RiskHigh, byCap["wipe"].Risk, "dangerous is HIGH")
	assert.Equal(t, catalog.RiskHigh, byCap["ask"].Risk, "confirm is HIGH")
	assert.False(t, byCap["wipe"].MayAlwaysAllow)
	assert.Equal(t, "Echo the text.", byCap["echo"].Description)

	var schema struct {
		Properties map[string]struct {
			Type, ContentEncoding string
			Items                 map[string]string
		}
		Required             []string
		AdditionalProperties bool
	}
	require.NoError(t, json.Unmarshal(byCap["wipe"].InputSchema, &schema))
	assert.Equal(t, "boolean", schema.Properties["all"].Type)
	assert.Equal(t, "number", schema.Properties["ratio"].Type)
	assert.Equal(t, "array", schema.Properties["tags"].Type)
	assert.Equal(t, "string", schema.Properties["tags"].Items["type"])
	assert.Equal(t, "base64", schema.Properties["blob"].ContentEncoding)
	assert.Equal(t, []string{"all"}, schema.Required)
	assert.False(t, schema.AdditionalProperties)
	require.NoError(t, json.Unmarshal(byCap["echo"].InputSchema, &schema))
	assert.Equal(t, "integer", schema.Properties["times"].Type)

	// toolScope narrows ACI capabilities by (package, capability).
	v := catalog.View{Mode: catalog.ModeDefault, Scope: []catalog.ScopeEntry{{Plugin: calleePkg, Tool: "echo"}}}
	vis := cat.Visible(v)
	require.Len(t, vis, 1)
	assert.Equal(t, "echo", vis[0].ACI.Capability)
	assert.Empty(t, cat.Visible(catalog.View{Mode: catalog.ModeReadOnly}), "read_only hides WRITE and HIGH")
}

// fakeLauncher starts the callee on its n-th Start (wake).
type fakeLauncher struct {
	mu     sync.Mutex
	starts int
	failN  int
	start  func()
	woken  chan int
}

func (f *fakeLauncher) Start(ctx context.Context, pkg, srv string) (*launcher.Proc, error) {
	f.mu.Lock()
	f.starts++
	n := f.starts
	f.mu.Unlock()
	if f.woken != nil {
		f.woken <- n
	}
	if n <= f.failN {
		return nil, errors.New("not listening yet")
	}
	f.start()
	return &launcher.Proc{Package: pkg, Server: srv}, nil
}

func TestWakeUsesTheRebindBackoffOnTheClock(t *testing.T) {
	srv := sdk.NewServer(server, runtimeOpts())
	srv.MustAdd(echo())
	clk := clocktest.New(time.Unix(1_800_000_000, 0))
	fl := &fakeLauncher{failN: 2, woken: make(chan int, 8)}
	r := newRig(t, srv, Options{Clock: clk, Launcher: fl}, apps.PermissionACI)
	fl.start = r.start

	done := make(chan []ServiceView, 1)
	go func() { done <- r.ctl.Discover(context.Background(), calleePkg) }()
	assert.Equal(t, 1, <-fl.woken, "the first wake is at once")
	// The second wake waits RebindDelay(0) = 800 ms, the third 1.6 s.
	for _, d := range []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond} {
		require.Eventually(t, func() bool { return clk.Pending() > 0 }, 5*time.Second, time.Millisecond)
		clk.Advance(d - time.Millisecond)
		select {
		case n := <-fl.woken:
			t.Fatalf("wake %d came before its backoff", n)
		default:
		}
		clk.Advance(time.Millisecond)
		<-fl.woken
	}
	views := <-done
	require.Len(t, views, 1)
	assert.Empty(t, views[0].Error)
	assert.Contains(t, views[0].Capabilities, "echo")

	// The app stops: capabilities stay, and a call wakes it again.
	r.stop()
	require.NotEmpty(t, r.ctl.Entries())
	fl.failN = 0
	res := r.call("echo", `{"text":"hi"}`, false)
	require.False(t, res.IsError, res.Text)
	assert.JSONEq(t, `{"reply":"hi","on_behalf_of":"`+callerPkg+`"}`, res.Text)
}

// Waking is lazy: an app that answers is never started again, one that
// stopped is woken by the next operation, once.
func TestWakesOnlyWhenNeeded(t *testing.T) {
	srv := sdk.NewServer(server, runtimeOpts())
	srv.MustAdd(echo())
	fl := &fakeLauncher{}
	r := newRig(t, srv, Options{Launcher: fl}, apps.PermissionACI)
	fl.start = r.start
	starts := func() int {
		fl.mu.Lock()
		defer fl.mu.Unlock()
		return fl.starts
	}
	r.start()
	views := r.ctl.Discover(context.Background(), calleePkg)
	require.Len(t, views, 1)
	require.Empty(t, views[0].Error)
	for range 3 {
		res := r.call("echo", `{"text":"hi"}`, false)
		require.False(t, res.IsError, res.Text)
	}
	assert.Zero(t, starts(), "a running app is not woken")

	r.stop()
	for range 2 {
		res := r.call("echo", `{"text":"hi"}`, false)
		require.False(t, res.IsError, res.Text)
	}
	assert.Equal(t, 1, starts(), "a stopped app is woken once, by the call that needs it")
}

func TestTheFiveLayers(t *testing.T) {
	var confirmedSeen atomic.Bool
	var reached atomic.Int64
	hook := func(ctx context.Context, c sdk.Caller, cp wire.Capability) error {
		if cp.ID == "private" {
			return errors.New("not for you")
		}
		return nil
	}
	opts := runtimeOpts()
	opts.Allow = hook
	srv := sdk.NewServer(server, opts)
	srv.MustAdd(echo())
	handler := func(ctx context.Context, c *sdk.Call) (sdk.Bundle, error) {
		reached.Add(1)
		confirmedSeen.Store(c.UserConfirmed)
		return nil, nil
	}
	srv.MustAdd(sdk.NewCapability("private", "Only some callers.").Handle(handler))
	srv.MustAdd(sdk.NewCapability("sms", "Send an SMS.").Permission(calleePkg + ".permission.SMS").Handle(handler))
	srv.MustAdd(sdk.NewCapability("wipe", "Delete everything.").Flags(sdk.FlagDangerous).Handle(handler))

	tests := []struct {
		name      string
		perms     []string
		capName   string
		confirmed bool
		layer     int
		code      errcode.Code
		reaches   bool
	}{
		{"caller without the aci permission", nil, "echo", false, LayerAppPermission, errcode.ToolDenied, false},
		{"callee hook refuses", []string{apps.PermissionACI}, "private", false, LayerCalleeHook, errcode.ToolDenied, false},
		{"capability permission not held", []string{apps.PermissionACI}, "sms", false, LayerCapPermission, errcode.ToolDenied, false},
		{"capability permission held", []string{apps.PermissionACI, calleePkg + ".permission.SMS"}, "sms", false, 0, "", true},
		{"dangerous without an answer", []string{apps.PermissionACI}, "wipe", false, LayerUserConfirm, errcode.ToolDenied, false},
		{"dangerous after the owner's answer", []string{apps.PermissionACI}, "wipe", true, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, srv, Options{}, tt.perms...)
			r.start()
			r.ctl.Discover(context.Background(), "")
			reached.Store(0)
			confirmedSeen.Store(false)
			res := r.call(tt.capName, `{}`, tt.confirmed)
			assert.Equal(t, string(tt.code), res.Code, res.Text)
			assert.Equal(t, tt.reaches, reached.Load() == 1, "whether the handler ran")
			audit := r.ctl.Audit(0)
			require.Len(t, audit, 1)
			assert.Equal(t, tt.layer, audit[0].Layer)
			assert.Equal(t, callerPkg, audit[0].Caller)
			if tt.reaches {
				assert.Equal(t, tt.confirmed, confirmedSeen.Load(), "user_confirmed only after a real answer")
			}
		})
	}

	t.Run("socket held by another uid", func(t *testing.T) {
		r := newRig(t, srv, Options{}, apps.PermissionACI)
		r.start()
		r.ctl.Discover(context.Background(), "")
		p := r.tab.pkgs[calleePkg]
		p.UID = os.Getuid() + 1 // the package's uid is not the listener's
		r.tab.pkgs[calleePkg] = p
		r.ctl.services[serviceKey{calleePkg, server}].pkg = p
		reached.Store(0)
		res := r.call("echo", `{"text":"x"}`, false)
		assert.Equal(t, string(errcode.ToolUnavailable), res.Code)
		assert.Contains(t, res.Text, "held by another app")
		assert.Equal(t, LayerKernelUID, r.ctl.Audit(1)[0].Layer)

		views := r.ctl.Discover(context.Background(), "")
		assert.Contains(t, views[0].Error, "held by uid")
		assert.Empty(t, views[0].Capabilities, "a squatter's capabilities are never offered")
	})

	t.Run("the owner's own session holds the permissions", func(t *testing.T) {
		r := newRig(t, srv, Options{})
		r.start()
		r.ctl.Discover(context.Background(), "")
		res := r.ctl.Call(context.Background(), CallRequest{ID: r.id("sms"), Caller: engine.Caller{Kind: engine.CallerDesktop, UID: 2000}})
		assert.False(t, res.IsError, res.Text)
	})
}

func TestArgumentsAreTyped(t *testing.T) {
	srv := sdk.NewServer(server, runtimeOpts())
	srv.MustAdd(echo())
	r := newRig(t, srv, Options{}, apps.PermissionACI)
	r.start()
	r.ctl.Discover(context.Background(), "")
	tests := []struct {
		args, want string
		bad        bool
	}{
		{`{"text":"ab","times":2}`, "abab", false},
		{`{"text":"ab","times":"3"}`, "ababab", false},
		{`{"text":5}`, "5", false},
		{`{"text":"a","times":1.5}`, "", true},
		{`{"times":2}`, "", true},
		{`{"text":"a","extra":1}`, "", true},
		{`{"text":"a","user_confirmed":true}`, "", true},
		{`[1]`, "", true},
	}
	for _, tt := range tests {
		res := r.call("echo", tt.args, false)
		if tt.bad {
			assert.True(t, res.IsError, tt.args)
			assert.Contains(t, res.Text, "Invalid arguments", tt.args)
			continue
		}
		require.False(t, res.IsError, res.Text)
		var out map[string]any
		require.NoError(t, json.Unmarshal([]byte(res.Text), &out))
		assert.Equal(t, tt.want, out["reply"], tt.args)
	}
}

func TestTimeoutAndCancellationReachTheCallee(t *testing.T) {
	ended := make(chan struct{}, 4)
	started := make(chan struct{}, 4)
	srv := sdk.NewServer(server, runtimeOpts())
	block := func(ctx context.Context, c *sdk.Call) (sdk.Bundle, error) {
		started <- struct{}{}
		<-ctx.Done()
		ended <- struct{}{}
		return nil, ctx.Err()
	}
	srv.MustAdd(sdk.NewCapability("slow", "Never answers.").Timeout(5 * time.Minute).Handle(block))
	srv.MustAdd(sdk.NewCapability("default", "Never answers either.").Handle(block))
	clk := clocktest.New(time.Unix(1_800_000_000, 0))
	r := newRig(t, srv, Options{Clock: clk}, apps.PermissionACI)
	r.start()
	r.ctl.Discover(context.Background(), "")

	// The default budget is 15 s of the runtime's clock.
	got := make(chan engine.ToolResult, 1)
	go func() { got <- r.call("default", `{}`, false) }()
	<-started
	require.Eventually(t, func() bool { return clk.Pending() > 0 }, 5*time.Second, time.Millisecond)
	clk.Advance(wire.DefaultCallTimeout - time.Second)
	select {
	case res := <-got:
		t.Fatalf("gave up before 15 s: %s", res.Text)
	default:
	}
	clk.Advance(time.Second)
	res := <-got
	assert.Equal(t, string(errcode.ToolTimeout), res.Code, res.Text)
	<-ended // the handler's context ended: no leaked work
	assert.Equal(t, outcomeTimeout, r.ctl.Audit(1)[0].Outcome)

	// A capability's own budget replaces the default.
	go func() { got <- r.call("slow", `{}`, false) }()
	<-started
	clk.Advance(time.Minute)
	select {
	case res := <-got:
		t.Fatalf("the capability's budget was not used: %s", res.Text)
	default:
	}
	// Cancelling the task reaches the callee too.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		got <- r.ctl.Call(ctx, CallRequest{ID: r.id("default"), Arguments: json.RawMessage(`{}`), Caller: r.callerOK})
	}()
	<-started
	cancel()
	res = <-got
	assert.Equal(t, string(errcode.ToolResultUnknown), res.Code)
	<-ended
	clk.Advance(time.Hour)
	<-got
	<-ended
}

func TestAsyncProgressInOrder(t *testing.T) {
	srv := sdk.NewServer(server, runtimeOpts())
	srv.MustAdd(sdk.NewCapability("work", "Work in steps.").Result("done", sdk.TypeBoolean, "").
		Handle(func(ctx context.Context, c *sdk.Call) (sdk.Bundle, error) {
			for _, p := range []int{10, 40, 90} {
				c.Progress(p, fmt.Sprint("step ", p))
			}
			return sdk.Bundle{"done": sdk.Bool(true)}, nil
		}))
	r := newRig(t, srv, Options{}, apps.PermissionACI)
	r.start()
	r.ctl.Discover(context.Background(), "")
	var seen []int
	res := r.ctl.Call(context.Background(), CallRequest{ID: r.id("work"), Caller: r.callerOK, Progress: func(p wire.Progress) { seen = append(seen, p.Percent) }})
	require.False(t, res.IsError, res.Text)
	assert.Equal(t, []int{10, 40, 90}, seen)
	assert.JSONEq(t, `{"done":true}`, res.Text)
}

func TestLargeResultsAreReadByTheirFields(t *testing.T) {
	big := strings.Repeat("x", wire.MaxResultChars+10)
	srv := sdk.NewServer(server, runtimeOpts())
	// Not named like a browser capability: the fields decide.
	srv.MustAdd(sdk.NewCapability("dump", "A long text.").Large("body", "The text.").
		Handle(func(ctx context.Context, c *sdk.Call) (sdk.Bundle, error) {
			b := sdk.Bundle{}
			c.PutLarge(b, "body", big, wire.MarkerBody)
			return b, nil
		}))
	r := newRig(t, srv, Options{}, apps.PermissionACI)
	r.start()
	r.ctl.Discover(context.Background(), "")
	res := r.call("dump", `{}`, false)
	require.False(t, res.IsError, res.Text)
	var out map[string]any
	require.NoError(t, json.Unmarshal([]byte(res.Text), &out))
	assert.Equal(t, big, out["body"], "the full value from body_gz")
	assert.NotContains(t, out, "body_gz")
	assert.NotContains(t, out, "truncated")
}

func TestProtocolWithoutCommonVersionIsNotOffered(t *testing.T) {
	srv := sdk.NewServer(server, runtimeOpts())
	srv.MustAdd(echo())
	srv.MustAdd(sdk.NewCapability(wire.ProtocolCapability, "Which protocol versions this app speaks.").
		Result(wire.ResultProtocolVersion, sdk.TypeString, "").Result(wire.ResultSemver, sdk.TypeString, "").Result(wire.ResultSupported, sdk.TypeString, "").
		Handle(func(context.Context, *sdk.Call) (sdk.Bundle, error) {
			return sdk.Bundle{wire.ResultSupported: sdk.String("aci-protocol-v9")}, nil
		}))
	r := newRig(t, srv, Options{})
	r.start()
	views := r.ctl.Discover(context.Background(), "")
	require.Len(t, views, 1)
	assert.Contains(t, views[0].Error, "no protocol version in common")
	assert.Empty(t, r.ctl.Entries())
}

func TestConsole(t *testing.T) {
	var mu sync.Mutex
	note := ""
	srv := sdk.NewServer(server, runtimeOpts())
	srv.MustAdd(sdk.NewCapability(ConsoleUI, "The console.").Result("snapshot", sdk.TypeString, "").Result("title", sdk.TypeString, "").
		Handle(func(context.Context, *sdk.Call) (sdk.Bundle, error) {
			mu.Lock()
			defer mu.Unlock()
			s := `{"title":"Notes","components":[{"type":"text","text":"note: ` + note + `"},` +
				`{"type":"input","key":"note","label":"Note","action":"save"},{"type":"gauge"}]}`
			return sdk.Bundle{"snapshot": sdk.String(s), "title": sdk.String("Notes")}, nil
		}))
	srv.MustAdd(sdk.NewCapability(ConsoleAction, "Apply an action.").Param("action", sdk.TypeString, sdk.Required, "").Param("payload", sdk.TypeString, false, "").
		Result("ok", sdk.TypeBoolean, "").Result("action", sdk.TypeString, "").
		Handle(func(_ context.Context, c *sdk.Call) (sdk.Bundle, error) {
			// A backend reading the input's own key (the browser's way).
			v, ok := sdui.Value(c.String("payload"), "note")
			mu.Lock()
			note = v
			mu.Unlock()
			return sdk.Bundle{"ok": sdk.Bool(ok), "action": sdk.String(c.String("action"))}, nil
		}))
	r := newRig(t, srv, Options{})
	r.start()
	r.ctl.Discover(context.Background(), "")

	p, err := consoleParams([]string{calleePkg, "save", "note=hello"}, nil)
	require.NoError(t, err)
	v, err := r.ctl.Console(context.Background(), p.(ConsoleParams))
	require.NoError(t, err)
	assert.Equal(t, true, v.Action["ok"])
	raw, _ := json.Marshal(v)
	var b strings.Builder
	require.NoError(t, printConsole(&b, raw))
	assert.Contains(t, b.String(), "note: hello", "the input's text reached the backend")
	assert.Contains(t, b.String(), "[未知组件: gauge]", "unknown components are shown as such")
	assert.Len(t, r.ctl.Audit(0), 2, "both console calls are audited")
}
