package broker_test

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/broker"
	"github.com/agentoslab/agentlab/runtime/ext/exttest"
	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
	"github.com/agentoslab/agentlab/runtime/transport"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The test binary is also the provider app of the bundle: the launcher
// runs it as `<binary> serve --server demo` with $AGENTOS_SOCKET set.
func TestMain(m *testing.M) {
	exttest.MaybeRunExt()
	if len(os.Args) > 1 && os.Args[1] == "serve" && os.Getenv(plugin.EnvSocket) != "" {
		os.Exit(runProvider(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func runProvider(args []string) int {
	srv := plugin.NewServer(plugin.Info{Name: "demo"}, nil)
	schema := json.RawMessage(`{"type":"object"}`)
	yes := true
	srv.MustAddTool(plugin.Tool{Name: "echo", Title: "Echo", InputSchema: schema, Annotations: plugin.Annotations{ReadOnlyHint: &yes},
		Handler: func(_ context.Context, a json.RawMessage) (*plugin.Result, error) {
			var in struct{ Text string }
			json.Unmarshal(a, &in)
			return plugin.Text(in.Text), nil
		}})
	srv.MustAddTool(plugin.Tool{Name: "slow", InputSchema: schema, Annotations: plugin.Annotations{OpenWorldHint: &yes},
		Handler: func(ctx context.Context, _ json.RawMessage) (*plugin.Result, error) {
			select {
			case <-ctx.Done():
				return plugin.Error("cancelled"), nil
			case <-time.After(time.Minute):
				return plugin.Text("slept"), nil
			}
		}})
	srv.MustAddTool(plugin.Tool{Name: "wipe", InputSchema: schema, Annotations: plugin.Annotations{DestructiveHint: &yes},
		Handler: func(context.Context, json.RawMessage) (*plugin.Result, error) { return plugin.Text("wiped"), nil }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := plugin.RunServe(ctx, srv, args); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

const (
	demoPkg = "org.example.demo"
	demoID  = demoPkg + "/agent-plugin"
	echo    = "mcp__demo__demo__echo"
	slow    = "mcp__demo__demo__slow"
	wipe    = "mcp__demo__demo__wipe"
)

// demoBundle packs the test binary as the demo app.
func demoBundle(t testing.TB, key ed25519.PrivateKey) []byte {
	t.Helper()
	dir := t.TempDir()
	put := func(name string, data []byte, mode os.FileMode) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
	}
	put("app.json", []byte(`{"package":"`+demoPkg+`","label":"Demo","versionCode":1,"binary":"demo",
"services":[{"name":"org.example.demo.DemoService","kind":"mcp","server":"demo"}]}`), 0o644)
	self, _ := os.ReadFile(os.Args[0])
	put(apps.BinaryPath(apps.HostABI(), "demo"), self, 0o755)
	put("assets/agent-plugin/plugin.json", []byte(`{"$schema":"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json","name":"demo",
"extensions":{"org.agentos":{"mcpServers":{"demo":{"service":"org.example.demo.DemoService"}}}}}`), 0o644)
	put("assets/agent-plugin/skills/howto/SKILL.md", []byte("---\nname: howto\ndescription: How to echo.\n---\nCall echo.\n"), 0o644)
	w := &bufWriter{}
	if _, err := apps.Pack(context.Background(), os.DirFS(dir), key, w); err != nil {
		t.Fatal(err)
	}
	return w.b
}

type bufWriter struct{ b []byte }

func (w *bufWriter) Write(p []byte) (int, error) { w.b = append(w.b, p...); return len(p), nil }

// events records what the broker writes into a task's log.
type events struct {
	mu  sync.Mutex
	evs []string
}

func (e *events) Emit(_ context.Context, typ string, body any) error {
	b, _ := json.Marshal(body)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.evs = append(e.evs, typ+" "+string(b))
	return nil
}

func (e *events) types() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, s := range e.evs {
		out = append(out, strings.Fields(s)[0])
	}
	return out
}

func (e *events) has(sub string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, s := range e.evs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

var app = engine.Caller{Kind: engine.CallerApp, UID: 10777, Package: "org.example.caller", Label: "Caller"}

func session(id string) engine.SessionView {
	return engine.SessionView{SessionID: id, TaskID: "tsk_1", Caller: app, Mode: "default"}
}

func call(t *testing.T, b *broker.Broker, ctx context.Context, s engine.SessionView, name, args string) (engine.ToolResult, *events) {
	t.Helper()
	ev := &events{}
	r, err := b.Call(ctx, engine.ToolCallRequest{Session: s, ToolCallID: "call_" + name, Name: name, Arguments: json.RawMessage(args)}, ev)
	if err != nil {
		t.Fatalf("Call(%s): %v", name, err)
	}
	return r, ev
}

// answer answers the next consent card with choice, checking its options.
// It runs in its own goroutine, so it reports with Error, not Fatal.
func answer(t *testing.T, b *broker.Broker, choice consent.Choice, wantOptions ...consent.Choice) {
	t.Helper()
	var p []consent.View
	carded := func() bool { p = b.Consent().Pending(); return len(p) > 0 }
	if !assert.Eventually(t, carded, 20*time.Second, 5*time.Millisecond, "no consent card") {
		return
	}
	var got []consent.Choice
	for _, o := range p[0].Options {
		got = append(got, o.Choice)
	}
	if len(wantOptions) > 0 && !slices.Equal(got, wantOptions) {
		t.Errorf("options %v, want %v", got, wantOptions)
	}
	if !b.Consent().Respond(p[0].RequestID, choice) {
		t.Error("Respond refused")
	}
}

func setup(t *testing.T, o exttest.Options) (*exttest.Harness, *broker.Broker) {
	h := exttest.New(t, o)
	key, _ := apps.GenerateKey()
	h.Install(t, demoBundle(t, key))
	h.MustCall(t, "plugins.enable", map[string]string{"id": demoID}, nil)
	var v broker.CatalogView
	h.MustCall(t, "catalog", map[string]any{"wait": echo, "timeoutMs": 30000}, &v)
	if v.Met == nil || !*v.Met {
		t.Fatalf("echo never reached the catalog: %+v", v)
	}
	return h, h.Broker
}

func TestBrokerFlow(t *testing.T) {
	h, b := setup(t, exttest.Options{})
	ctx := context.Background()
	s := session("ses_flow")

	// Visibility by scope and mode.
	names := func(v engine.SessionView) []string {
		tools, _, err := b.ForSession(ctx, v)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range tools {
			out = append(out, tl.Name)
		}
		return out
	}
	if got := names(s); !slices.Equal(got, []string{echo, slow, wipe, "read_skill"}) {
		t.Fatalf("default: %v", got)
	}
	// Each tool carries how its calls are shown: the provider's title and
	// annotations, through the extension host's catalog.
	tools, _, _ := b.ForSession(ctx, s)
	display := map[string]engine.ToolDisplay{}
	for _, tl := range tools {
		display[tl.Name] = tl.Display
	}
	yes := true
	assert.Equal(t, engine.ToolDisplay{Title: "Echo", Hints: catalog.Annotations{ReadOnlyHint: &yes}}, display[echo])
	assert.Equal(t, engine.ToolDisplay{Hints: catalog.Annotations{ReadOnlyHint: new(bool), OpenWorldHint: &yes}}, display[slow])
	assert.Equal(t, engine.ToolDisplay{Hints: catalog.Annotations{ReadOnlyHint: new(bool), DestructiveHint: &yes}}, display[wipe])
	assert.Equal(t, engine.ToolDisplay{Title: "Read skill", Hints: catalog.Annotations{ReadOnlyHint: &yes}}, display["read_skill"])
	ro := s
	ro.Mode = "read_only"
	if got := names(ro); !slices.Equal(got, []string{"read_skill"}) {
		t.Fatalf("read_only: %v", got)
	}
	scoped := s
	scoped.Scope = []engine.ToolScopeEntry{{Plugin: "demo", Tool: "echo"}}
	if got := names(scoped); !slices.Equal(got, []string{echo}) {
		t.Fatalf("scoped: %v", got)
	}
	if _, section, _ := b.ForSession(ctx, scoped); section != "" {
		t.Fatal("scoped session got the skills section")
	}
	if _, section, _ := b.ForSession(ctx, s); !strings.Contains(section, `"name":"howto"`) {
		t.Fatalf("skills section: %q", section)
	}

	// Hidden tools are rejected by name without asking.
	for _, tc := range []struct {
		v    engine.SessionView
		name string
	}{{s, "mcp__nope__x__y"}, {scoped, slow}, {ro, echo}} {
		r, ev := call(t, b, ctx, tc.v, tc.name, `{}`)
		if r.Code != string(errcode.ToolNotInCatalog) || r.Text != "[agentos:tool_not_in_catalog] Tool "+tc.name+" is not available." || len(ev.types()) != 0 {
			t.Fatalf("%s: %+v %v", tc.name, r, ev.types())
		}
	}

	// Ask → deny: nothing dispatched.
	go answer(t, b, consent.Deny, consent.AllowOnce, consent.AllowForSession, consent.AlwaysAllow, consent.Deny)
	r, ev := call(t, b, ctx, s, echo, `{"text":"hi"}`)
	if r.Code != string(errcode.ToolDenied) || r.Text != "[agentos:tool_denied] The user declined this tool call." ||
		!slices.Equal(ev.types(), []string{"consent.requested", "consent.resolved"}) || !ev.has(`"callerPackage":"org.example.caller"`) {
		t.Fatalf("deny: %+v %v", r, ev.evs)
	}
	// Ask → don't ask again in this conversation.
	go answer(t, b, consent.AllowForSession)
	r, ev = call(t, b, ctx, s, echo, `{"text":"hi"}`)
	if r.IsError || r.Text != "hi" || !slices.Equal(ev.types(), []string{"consent.requested", "consent.resolved", "tool.dispatched"}) {
		t.Fatalf("allow for session: %+v %v", r, ev.evs)
	}
	r, ev = call(t, b, ctx, s, echo, `{"text":"again"}`)
	if r.Text != "again" || !slices.Equal(ev.types(), []string{"consent.resolved", "tool.dispatched"}) || !ev.has(`"reason":"remembered"`) {
		t.Fatalf("remembered: %+v %v", r, ev.evs)
	}
	b.ForgetSession("ses_flow")
	go answer(t, b, consent.AllowOnce)
	if r, ev := call(t, b, ctx, s, echo, `{"text":"x"}`); r.Text != "x" || ev.types()[0] != "consent.requested" {
		t.Fatalf("after forget: %+v %v", r, ev.evs)
	}

	// HIGH: only allow once / deny, even with a plugin-level always.
	h.MustCall(t, "plugins.approval", map[string]string{"plugin": "demo", "mode": "always"}, nil)
	waitApproval(t, b, wipe, catalog.ApprovalAlways)
	go answer(t, b, consent.AllowForSession, consent.AllowOnce, consent.Deny)
	if r, _ := call(t, b, ctx, s, wipe, `{}`); r.Code != string(errcode.ToolDenied) {
		t.Fatalf("HIGH with a not-offered choice: %+v", r)
	}
	// WRITE under the plugin-level always runs by policy.
	if r, ev := call(t, b, ctx, session("ses_other"), echo, `{"text":"p"}`); r.Text != "p" || !ev.has(`"reason":"policy"`) {
		t.Fatalf("policy: %+v %v", r, ev.evs)
	}
	h.MustCall(t, "plugins.approval", map[string]string{"plugin": "demo", "mode": ""}, nil)
	waitApproval(t, b, echo, catalog.ApprovalAsk)

	// ALWAYS_ALLOW writes a tool-level always through the host.
	go answer(t, b, consent.AlwaysAllow)
	if r, ev := call(t, b, ctx, session("ses_3"), echo, `{"text":"a"}`); r.Text != "a" || !ev.has(`"remember":"always"`) {
		t.Fatalf("always allow: %+v %v", r, ev.evs)
	}
	waitApproval(t, b, echo, catalog.ApprovalAlways)
	if _, ev := call(t, b, ctx, session("ses_4"), echo, `{"text":"b"}`); !ev.has(`"reason":"policy"`) {
		t.Fatalf("after always: %v", ev.evs)
	}

	// A task cancelled while its card waits: withdrawn, reason client.
	cctx, cancel := context.WithCancel(ctx)
	go func() {
		assert.Eventually(t, func() bool { return len(b.Consent().Pending()) > 0 }, 20*time.Second, 5*time.Millisecond, "no card to cancel")
		cancel()
	}()
	r, ev = call(t, b, cctx, session("ses_5"), slow, `{}`)
	if r.Text != "[agentos:tool_denied] The task was cancelled before the user answered." || !ev.has(`"reason":"client"`) {
		t.Fatalf("cancelled while asking: %+v %v", r, ev.evs)
	}

	// read_skill needs no consent.
	if r, ev := call(t, b, ctx, s, "read_skill", `{"name":"howto"}`); r.IsError || !strings.Contains(r.Text, "Call echo.") ||
		!slices.Equal(ev.types(), []string{"tool.dispatched"}) {
		t.Fatalf("read_skill: %+v %v", r, ev.evs)
	}
	if r, _ := call(t, b, ctx, s, "read_skill", `{"name":"howto","path":"../x"}`); r.Code != string(errcode.ToolFailed) {
		t.Fatalf("read_skill bad path: %+v", r)
	}
}

func waitApproval(t *testing.T, b *broker.Broker, name string, want catalog.Approval) {
	t.Helper()
	require.Eventually(t, func() bool { e, ok := catalogEntry(b, name); return ok && e.Approval == want },
		20*time.Second, 10*time.Millisecond, "%s approval never became %s", name, want)
}

func catalogEntry(b *broker.Broker, name string) (catalog.Entry, bool) {
	for _, e := range b.Catalog().All() {
		if e.Name == name {
			return e, true
		}
	}
	return catalog.Entry{}, false
}

// The extension host dying mid-call: the call ends unknown, serve keeps
// running, restarts the host, and the catalog comes back with the same
// names.
func TestExtDeath(t *testing.T) {
	h, b := setup(t, exttest.Options{})
	before := b.Catalog().All()
	st := b.Status()
	done := make(chan broker.ExtCallResult, 1)
	go func() { done <- b.CallDirect(context.Background(), broker.ExtCallParams{Name: slow}) }()
	time.Sleep(300 * time.Millisecond)
	var killed struct {
		Killed bool `json:"killed"`
	}
	h.MustCall(t, "ext.kill", nil, &killed)
	r := <-done
	if !killed.Killed || r.Code != string(errcode.ToolResultUnknown) {
		t.Fatalf("call through a killed host: %+v", r)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.Eventually(t, func() bool { return b.Status().LinkConnects >= st.LinkConnects+1 && b.WaitLink(ctx) },
		30*time.Second, 10*time.Millisecond, "the host did not come back")
	if after := b.Status(); after.Restarts < 1 || after.PID == st.PID {
		t.Fatalf("status after restart: %+v (before %+v)", after, st)
	}
	var names []string
	for _, e := range before {
		names = append(names, e.Name)
	}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var now []string
		for _, e := range b.Catalog().All() {
			now = append(now, e.Name)
		}
		assert.Equal(c, names, now, "catalog after restart")
	}, 30*time.Second, 10*time.Millisecond)
	if r := b.CallDirect(context.Background(), broker.ExtCallParams{Name: echo, Arguments: json.RawMessage(`{"text":"back"}`)}); r.Text != "back" {
		t.Fatalf("call after restart: %+v", r)
	}
}

// Only the process the broker started may be its extension host.
func TestLinkRefusesStrangers(t *testing.T) {
	h := exttest.New(t, exttest.Options{})
	before := h.Broker.Status().LinkConnects
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, h.Names.Ext())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1)
	if n, err := c.Read(buf); err == nil || n != 0 {
		t.Fatalf("a stranger was served: %d %v", n, err)
	}
	if st := h.Broker.Status(); st.LinkConnects != before || !st.Connected {
		t.Fatalf("status after a stranger: %+v", st)
	}
}

// "Always allow" that cannot be saved still allows this call, with a
// notice in the consent log and the event.
func TestAlwaysAllowNotSaved(t *testing.T) {
	_, b := setup(t, exttest.Options{})
	ctx := context.Background()
	res := make(chan *events, 1)
	go func() {
		ev := &events{}
		b.Call(ctx, engine.ToolCallRequest{Session: session("ses_n"), ToolCallID: "call_n", Name: echo, Arguments: json.RawMessage(`{"text":"n"}`)}, ev)
		res <- ev
	}()
	require.Eventually(t, func() bool { return len(b.Consent().Pending()) > 0 }, 20*time.Second, 5*time.Millisecond, "no card")
	card := b.Consent().Pending()[0]
	if !slices.ContainsFunc(card.Options, func(o consent.CardOption) bool { return o.Choice == consent.AlwaysAllow }) {
		t.Fatalf("options %+v", card.Options)
	}
	b.KillExt()
	require.Eventually(t, func() bool { return !b.Status().Connected }, 20*time.Second, time.Millisecond, "link still up")
	b.Consent().Respond(card.RequestID, consent.AlwaysAllow)
	ev := <-res
	if !ev.has(`"decision":"allow"`) || !ev.has(`"notice":"\"Always allow\" could not be saved`) {
		t.Fatalf("events %v", ev.evs)
	}
	rec := b.Consent().Recent()
	if n := rec[len(rec)-1]; n.RequestID != card.RequestID || !strings.Contains(n.Notice, "could not be saved") {
		t.Fatalf("recent %+v", n)
	}
}

// fakeSessions is a caller-supplied server with one tool per session.
type fakeSessions struct {
	mu     sync.Mutex
	calls  int
	forgot []string
}

func (f *fakeSessions) Tools(ctx context.Context, id string) []catalog.Entry { return f.Known(id) }

func (f *fakeSessions) Known(id string) []catalog.Entry {
	if id != "ses_mcp" {
		return nil
	}
	yes := true
	return []catalog.Entry{{Kind: catalog.KindSession, Session: catalog.SessionToolID{Server: "docs", Tool: "search"},
		InputSchema: json.RawMessage(`{"type":"object"}`), Risk: catalog.SessionRisk(catalog.Annotations{ReadOnlyHint: &yes}), Enabled: true}}
}

func (f *fakeSessions) Call(_ context.Context, id string, t catalog.SessionToolID, name string, _ json.RawMessage, _ time.Duration) engine.ToolResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	return engine.ToolResult{Text: "found by " + t.Server + "/" + t.Tool + " as " + name, Outcome: engine.OutcomeCompleted}
}

func (f *fakeSessions) Forget(id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgot = append(f.forgot, id)
}

// A session's own MCP tools: offered beside the plugin tools in default
// mode only, always asked (never "always allow"), routed to the session's
// server, forgotten with the session.
func TestSessionServerTools(t *testing.T) {
	fs := &fakeSessions{}
	_, b := setup(t, exttest.Options{Sessions: fs})
	ctx := context.Background()
	s := session("ses_mcp")
	tools, _, _ := b.ForSession(ctx, s)
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "ses__docs__search") || !slices.Contains(names, echo) {
		t.Fatalf("tools %v", names)
	}
	ro := s
	ro.Mode = "read_only"
	if r, ev := call(t, b, ctx, ro, "ses__docs__search", `{}`); r.Code != string(errcode.ToolNotInCatalog) || len(ev.evs) != 0 {
		t.Fatalf("read_only: %+v", r)
	}
	if r, _ := call(t, b, ctx, session("ses_other"), "ses__docs__search", `{}`); r.Code != string(errcode.ToolNotInCatalog) {
		t.Fatalf("another session: %+v", r)
	}
	go func() {
		var p []consent.View
		if !assert.Eventually(t, func() bool { p = b.Consent().Pending(); return len(p) > 0 }, 20*time.Second, 5*time.Millisecond, "no card") {
			return
		}
		var got []consent.Choice
		for _, o := range p[0].Options {
			got = append(got, o.Choice)
		}
		if !slices.Equal(got, []consent.Choice{consent.AllowOnce, consent.AllowForSession, consent.Deny}) ||
			p[0].SourceLine != "来自调用方提供的服务器「docs」" {
			t.Errorf("session tool card: %v %q", got, p[0].SourceLine)
		}
		b.Consent().Respond(p[0].RequestID, consent.AllowOnce)
	}()
	r, ev := call(t, b, ctx, s, "ses__docs__search", `{}`)
	if r.Text != "found by docs/search as ses__docs__search" || !slices.Equal(ev.types(), []string{"consent.requested", "consent.resolved", "tool.dispatched"}) {
		t.Fatalf("session call: %+v %v", r, ev.evs)
	}
	b.ForgetSession("ses_mcp")
	if !slices.Contains(fs.forgot, "ses_mcp") {
		t.Fatal("session servers not forgotten")
	}
}

// fakeACI is one app with a plain and a dangerous capability.
type fakeACI struct {
	mu        sync.Mutex
	confirmed []bool
}

func (f *fakeACI) Version() uint64 { return 1 }

func (f *fakeACI) Entries() []catalog.Entry {
	entry := func(capability string, risk catalog.Risk) catalog.Entry {
		return catalog.Entry{Kind: catalog.KindACI, ACI: catalog.ACIToolID{Package: "org.example.callee", Service: "svc", Capability: capability},
			InputSchema: json.RawMessage(`{"type":"object"}`), Risk: risk, Enabled: true, Approval: catalog.ApprovalAsk}
	}
	return []catalog.Entry{entry("look", catalog.RiskWrite), entry("wipe", catalog.RiskHigh)}
}

func (f *fakeACI) CallACI(_ context.Context, id catalog.ACIToolID, _ json.RawMessage, c engine.Caller, confirmed bool, progress func(int, string)) engine.ToolResult {
	f.mu.Lock()
	f.confirmed = append(f.confirmed, confirmed)
	f.mu.Unlock()
	progress(50, "half")
	return engine.ToolResult{Text: id.Capability + " for " + c.Package, Outcome: engine.OutcomeCompleted}
}

// ACI capabilities go through the same flow as plugin tools: scope and
// mode by name, consent (a HIGH one asked every time, and only an answer
// counts as the owner's confirmation), progress written as tool.progress.
func TestACICapabilities(t *testing.T) {
	fa := &fakeACI{}
	_, b := setup(t, exttest.Options{ACI: fa})
	ctx := context.Background()
	const look, wipe = "aci__org_example_callee__svc__look", "aci__org_example_callee__svc__wipe"
	tools, _, _ := b.ForSession(ctx, session("ses_a"))
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, look) || !slices.Contains(names, wipe) || !slices.Contains(names, echo) {
		t.Fatalf("tools %v", names)
	}
	scoped := session("ses_a")
	scoped.Scope = []engine.ToolScopeEntry{{Plugin: "org.example.callee", Tool: "look"}}
	if r, _ := call(t, b, ctx, scoped, wipe, `{}`); r.Code != string(errcode.ToolNotInCatalog) {
		t.Fatalf("out of scope: %+v", r)
	}
	ro := session("ses_a")
	ro.Mode = "read_only"
	if r, _ := call(t, b, ctx, ro, look, `{}`); r.Code != string(errcode.ToolNotInCatalog) {
		t.Fatalf("read_only: %+v", r)
	}

	go answer(t, b, consent.AllowForSession)
	r, ev := call(t, b, ctx, session("ses_a"), look, `{}`)
	if r.Text != "look for "+app.Package || !slices.Equal(ev.types(), []string{"consent.requested", "consent.resolved", "tool.dispatched", "tool.progress"}) {
		t.Fatalf("look: %+v %v", r, ev.evs)
	}
	if !ev.has(`"percent":50`) {
		t.Fatalf("progress: %v", ev.evs)
	}
	// Remembered for the session: runs without a card, and without the
	// owner's confirmation.
	if r, ev := call(t, b, ctx, session("ses_a"), look, `{}`); r.IsError || !ev.has(`"reason":"remembered"`) {
		t.Fatalf("remembered: %+v %v", r, ev.evs)
	}
	for i := 0; i < 2; i++ {
		go answer(t, b, consent.AllowOnce, consent.AllowOnce, consent.Deny)
		if r, _ := call(t, b, ctx, session("ses_a"), wipe, `{}`); r.IsError {
			t.Fatalf("wipe %d: %+v", i, r)
		}
	}
	go answer(t, b, consent.Deny)
	if r, _ := call(t, b, ctx, session("ses_a"), wipe, `{}`); r.Code != string(errcode.ToolDenied) {
		t.Fatalf("denied wipe: %+v", r)
	}
	fa.mu.Lock()
	defer fa.mu.Unlock()
	if !slices.Equal(fa.confirmed, []bool{true, false, true, true}) {
		t.Fatalf("confirmed %v", fa.confirmed)
	}
}

// TestOwnerOperationsReadTheirWrites: once an owner operation answers, the
// catalog serve offers already shows it — no waiting. A device faster than
// the lab's old per-call cost (a real phone's ctl over a kept session)
// otherwise reads the catalog before the extension host's push, and
// `approval` then `catalog` shows the old mode.
func TestOwnerOperationsReadTheirWrites(t *testing.T) {
	h, b := setup(t, exttest.Options{})
	for i := range 20 {
		mode, want := "always", catalog.ApprovalAlways
		if i%2 == 1 {
			mode, want = "ask", catalog.ApprovalAsk
		}
		h.MustCall(t, "plugins.tool_approval", map[string]string{"name": echo, "mode": mode}, nil)
		e, ok := catalogEntry(b, echo)
		require.True(t, ok)
		require.Equal(t, want, e.Approval, "round %d: the answer came before the catalog", i)

		op, enabled := "plugins.tool_disable", false
		if i%2 == 1 {
			op, enabled = "plugins.tool_enable", true
		}
		h.MustCall(t, op, map[string]string{"name": slow}, nil)
		e, ok = catalogEntry(b, slow)
		require.True(t, ok, "a disabled tool stays listed")
		require.Equal(t, enabled, e.Enabled, "round %d: %s answered before the catalog changed", i, op)
	}
}

// TestExtRestartAnswersWhenBack: `ext restart` answers once the new host
// is serve's — another pid, connected, its catalog in place — so the next
// command reaches it. Answering at the kill let a call made right after
// land on the dying host (outcome unknown) and a catalog read see the old
// host's tools.
func TestExtRestartAnswersWhenBack(t *testing.T) {
	h, b := setup(t, exttest.Options{})
	names := func() []string {
		var out []string
		for _, e := range b.Catalog().All() {
			out = append(out, e.Name)
		}
		return out
	}
	want := names()
	for i := range 3 {
		before := b.Status()
		var res struct {
			Killed bool `json:"killed"`
			PID    int  `json:"pid"`
			NewPID int  `json:"newPid"`
		}
		h.MustCall(t, "ext.restart", nil, &res)
		now := b.Status()
		require.True(t, res.Killed, "round %d", i)
		require.True(t, now.Connected, "round %d: answered before the host was back", i)
		require.Greater(t, now.LinkConnects, before.LinkConnects, "round %d", i)
		require.NotEqual(t, before.PID, now.PID, "round %d: the old host", i)
		require.Equal(t, now.PID, res.NewPID)
		require.Equal(t, want, names(), "round %d: catalog", i)
		r := b.CallDirect(context.Background(), broker.ExtCallParams{Name: echo, Arguments: json.RawMessage(`{"text":"back"}`)})
		require.Equal(t, "back", r.Text, "round %d: a call right after the restart", i)
	}
}
