package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/internal/wire"
	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/stretchr/testify/require"
)

const (
	pkgName = "org.agentos.test.mcp.plugin"
	service = "org.agentos.test.mcp.plugin.TestMcpService"
	pid     = pkgName + "/agent-plugin"
	digestA = "aaaa000000000000000000000000000000000000000000000000000000000000"
	digestB = "bbbb000000000000000000000000000000000000000000000000000000000000"
)

func pluginJSON(name string) []byte {
	return []byte(fmt.Sprintf(`{"$schema":"https://agent-plugins.org/schemas/1.0.0/plugin.schema.json","name":%q,"version":"1.0.0",
"extensions":{"org.agentos":{"mcpServers":{"test":{"service":%q}}}}}`, name, service))
}

var testFiles = map[string][]byte{
	"plugin.json":                          pluginJSON("mcptest"),
	"skills/greet/SKILL.md":                []byte("---\nname: greet\ndescription: Say hello.\n---\nUse echo.\n"),
	"skills/greet/reference/details.md":    []byte("marker 7f3a\n"),
	"skills/greet/reference/blob.bin":      []byte("a\x00b"),
	"skills/greet/reference/big.md":        []byte(strings.Repeat("z", 70000)),
	"skills/broken/SKILL.md":               []byte("---\nname: broken\ndescription: \"never closed\n---\n"),
	"skills/greet/reference/../escape.txt": []byte("no"),
}

// memFiles are plugin directories in memory, per package.
type memFiles struct {
	mu    sync.Mutex
	files map[string]map[string][]byte
}

func (m *memFiles) set(pkg string, files map[string][]byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.files == nil {
		m.files = map[string]map[string][]byte{}
	}
	m.files[pkg] = files
}

func (m *memFiles) List(p apps.Package) ([]string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	fs, ok := m.files[p.Name]
	if !ok {
		return nil, false, nil
	}
	var out []string
	for f := range fs {
		if !strings.Contains(f, "..") {
			out = append(out, f)
		}
	}
	slices.Sort(out)
	return out, true, nil
}

func (m *memFiles) Read(p apps.Package, rel string, limit int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.files[p.Name][rel]
	if !ok {
		return nil, os.ErrNotExist
	}
	return b[:min(int64(len(b)), limit)], nil
}

// table is a package table in memory.
type table struct {
	mu      sync.Mutex
	pkgs    map[string]apps.Package
	changed chan struct{}
}

func newTable() *table { return &table{pkgs: map[string]apps.Package{}, changed: make(chan struct{})} }

func (t *table) All() []apps.Package {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []apps.Package
	for _, p := range t.pkgs {
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b apps.Package) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (t *table) Changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}

func (t *table) put(p apps.Package) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pkgs[p.Name] = p
	close(t.changed)
	t.changed = make(chan struct{})
}

func (t *table) remove(name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.pkgs, name)
	close(t.changed)
	t.changed = make(chan struct{})
}

func testPackage(name, digest string, version int64) apps.Package {
	return apps.Package{Name: name, UID: os.Getuid(), SigningDigest: digest, VersionCode: version, Label: "test",
		Services: []apps.Service{{Name: service, Kind: apps.ServiceKindMCP, Server: "test"}}}
}

// fakeProvider is the plugin's MCP server, started by the fake launcher.
type fakeProvider struct {
	srv    *plugin.Server
	names  transport.Names
	mu     sync.Mutex
	cancel map[string]context.CancelFunc
	starts atomic.Int32
}

func newProvider(t *testing.T, names transport.Names) *fakeProvider {
	p := &fakeProvider{names: names, cancel: map[string]context.CancelFunc{}}
	p.srv = plugin.NewServer(plugin.Info{Name: "test"}, nil)
	schema := json.RawMessage(`{"type":"object"}`)
	yes := true
	text := func(s string) plugin.Handler {
		return func(context.Context, json.RawMessage) (*plugin.Result, error) { return plugin.Text(s), nil }
	}
	p.srv.MustAddTool(plugin.Tool{Name: "echo", Title: "Echo", Description: "Echo.", InputSchema: schema, Annotations: plugin.Annotations{ReadOnlyHint: &yes}, Handler: text("echoed")})
	p.srv.MustAddTool(plugin.Tool{Name: "stats", InputSchema: schema, Handler: text("{}")})
	p.srv.MustAddTool(plugin.Tool{Name: "wipe", InputSchema: schema, Annotations: plugin.Annotations{DestructiveHint: &yes}, Handler: text("wiped")})
	t.Cleanup(p.stopAll)
	return p
}

func (p *fakeProvider) Start(_ context.Context, pkg, server string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	key := pkg + "/" + server
	if p.cancel[key] != nil {
		return nil
	}
	ln, err := transport.Listen(p.names.App(pkg, server))
	if err != nil {
		return err
	}
	p.starts.Add(1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.srv.ServeListener(ctx, ln) }()
	p.cancel[key] = func() { cancel(); <-done }
	return nil
}

func (p *fakeProvider) Stop(_ context.Context, pkg, server string) error {
	p.mu.Lock()
	c := p.cancel[pkg+"/"+server]
	delete(p.cancel, pkg+"/"+server)
	p.mu.Unlock()
	if c != nil {
		c()
	}
	return nil
}

func (p *fakeProvider) stopAll() {
	p.mu.Lock()
	cs := p.cancel
	p.cancel = map[string]context.CancelFunc{}
	p.mu.Unlock()
	for _, c := range cs {
		c()
	}
}

type env struct {
	t     *testing.T
	data  string
	names transport.Names
	table *table
	files *memFiles
	prov  *fakeProvider
	h     *Host
}

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{t: t, data: t.TempDir(), names: transport.Names{Dir: t.TempDir()}, table: newTable(), files: &memFiles{}}
	e.prov = newProvider(t, e.names)
	return e
}

func (e *env) install(name, digest string, version int64, files map[string][]byte) {
	e.files.set(name, files)
	e.table.put(testPackage(name, digest, version))
}

func (e *env) open() *Host {
	e.t.Helper()
	if e.h != nil {
		e.h.Close()
	}
	h, err := New(Options{DataDir: e.data, Table: e.table, Files: e.files, Names: e.names, Launcher: e.prov, IdleTimeout: time.Minute})
	if err != nil {
		e.t.Fatal(err)
	}
	e.h = h
	e.t.Cleanup(h.Close)
	return h
}

func (e *env) op(op string, params any) (json.RawMessage, error) {
	raw, _ := json.Marshal(params)
	res, err := e.h.Admin(context.Background(), op, raw)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(res)
	return b, nil
}

func (e *env) mustOp(op string, params any) json.RawMessage {
	e.t.Helper()
	b, err := e.op(op, params)
	if err != nil {
		e.t.Fatalf("%s: %v", op, err)
	}
	return b
}

func (e *env) plugin(id string) PluginView {
	e.t.Helper()
	for _, v := range e.h.list() {
		if v.ID == id {
			return v
		}
	}
	e.t.Fatalf("plugin %s not listed", id)
	return PluginView{}
}

func (e *env) names2() []string {
	var out []string
	for _, t := range e.h.Catalog().Tools {
		out = append(out, t.Name)
	}
	return out
}

func (e *env) waitTools(n int) {
	e.t.Helper()
	require.Eventually(e.t, func() bool { return len(e.h.Catalog().Tools) == n }, 10*time.Second, 5*time.Millisecond,
		"catalog never had %d tools", n)
}

func reasonOf(err error) string {
	var e *errcode.Error
	if errors.As(err, &e) {
		if r, ok := e.Details["reason"].(string); ok {
			return r
		}
	}
	return ""
}

func TestDiscoverOffByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(pkgName, digestA, 1, testFiles)
	h := e.open()
	v := e.plugin(pid)
	checks := map[string]bool{
		"found":                  v.Name == "mcptest",
		"ready":                  v.Status == StatusReady,
		"offByDefault":           !v.Enabled,
		"serverDisabledByPolicy": len(v.Servers) == 1 && v.Servers[0].State == "disabled" && v.Servers[0].Error == "user_policy",
		"noRejectedServers":      v.Servers[0].Rejected == "",
		"noToolsInCatalog":       len(h.Catalog().Tools) == 0,
		"policyHealthy":          h.Health().Policy == PolicyHealthy,
		"memoryIntact":           h.Health().Memory == MemoryIntact,
		"nothingStarted":         e.prov.starts.Load() == 0,
	}
	for name, ok := range checks {
		if !ok {
			t.Errorf("check %s failed: %+v", name, v)
		}
	}
	var pol PolicyView
	json.Unmarshal(e.mustOp(OpPolicy, nil), &pol)
	if !strings.Contains(string(pol.Policy), `"mcptest":{"enabled":false}`) {
		t.Errorf("policy %s", pol.Policy)
	}
}

func TestEnableToolsSkillsAndApprovals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(pkgName, digestA, 1, testFiles)
	h := e.open()
	e.mustOp(OpEnable, map[string]string{"id": pid})
	e.waitTools(3)
	want := []string{"mcp__mcptest__test__echo", "mcp__mcptest__test__stats", "mcp__mcptest__test__wipe"}
	if got := e.names2(); !slices.Equal(got, want) {
		t.Fatalf("catalog %v", got)
	}
	byName := map[string]catalog.Entry{}
	for _, en := range h.Catalog().Tools {
		byName[en.Name] = en
	}
	echo, wipe := byName[want[0]], byName[want[2]]
	if echo.Risk != catalog.RiskWrite || echo.Approval != catalog.ApprovalAsk || !echo.MayAlwaysAllow || !echo.Enabled || echo.Title != "Echo" {
		t.Errorf("echo entry %+v", echo)
	}
	if wipe.Risk != catalog.RiskHigh || wipe.MayAlwaysAllow {
		t.Errorf("wipe entry %+v", wipe)
	}
	v := e.plugin(pid)
	if !v.Enabled || v.Servers[0].ToolCount != 3 || v.SkillCount != 2 || !slices.Equal(v.Skills, []string{"broken", "greet"}) || len(v.SkillProblems) == 0 {
		t.Errorf("view %+v", v)
	}
	// The known-tool shape, in order.
	raw := e.mustOp(OpTools, map[string]string{"id": pid})
	if !strings.HasPrefix(string(raw), `[{"name":"mcp__mcptest__test__echo","pluginId":"`+pid+`","source":{"plugin":"mcptest","server":"test","tool":"echo"},"title":"Echo","description":"Echo.","inputSchema":{"type":"object"},"risk":"WRITE","enabled":true,"approval":"ask","mayAlwaysAllow":true}`) {
		t.Errorf("tools = %s", raw)
	}

	// Approvals.
	_, err := e.op(OpToolApproval, map[string]string{"name": want[2], "mode": "always"})
	if reasonOf(err) != "high_risk" {
		t.Errorf("HIGH always: %v", err)
	}
	e.mustOp(OpApproval, map[string]string{"plugin": "mcptest", "server": "test", "tool": "echo", "mode": "always"})
	if en, _ := catByName(h, want[0]); en.Approval != catalog.ApprovalAlways {
		t.Errorf("bySourceAlways: %+v", en)
	}
	e.mustOp(OpApproval, map[string]string{"plugin": "mcptest", "server": "test", "tool": "echo", "mode": ""})
	if en, _ := catByName(h, want[0]); en.Approval != catalog.ApprovalAsk {
		t.Errorf("bySourceCleared: %+v", en)
	}
	if _, err := e.op(OpToolApproval, map[string]string{"name": want[0], "mode": "sometimes"}); reasonOf(err) != "bad_mode" {
		t.Errorf("bad mode: %v", err)
	}
	e.mustOp(OpApproval, map[string]string{"plugin": "mcptest", "mode": "always"})
	if en, _ := catByName(h, want[2]); en.Approval != catalog.ApprovalAlways || en.MayAlwaysAllow {
		t.Errorf("pluginAlways on HIGH: %+v", en)
	}

	// Tool disable keeps every name, the tool listed off.
	e.mustOp(OpToolDisable, map[string]string{"name": want[1]})
	if en, _ := catByName(h, want[1]); en.Enabled {
		t.Errorf("disabled tool still enabled")
	}
	if got := e.names2(); !slices.Equal(got, want) {
		t.Errorf("names changed: %v", got)
	}
	r := h.Call(context.Background(), wire.CallParams{Name: want[1], Source: catalog.ToolID{Plugin: "mcptest", Server: "test", Tool: "stats"}})
	if r.Code != string(errcode.ToolNotInCatalog) {
		t.Errorf("call of disabled tool: %+v", r)
	}
	e.mustOp(OpToolEnable, map[string]string{"name": want[1]})
	r = h.Call(context.Background(), wire.CallParams{Name: want[1], Source: catalog.ToolID{Plugin: "mcptest", Server: "test", Tool: "stats"}})
	if r.IsError || r.Text != "{}" {
		t.Errorf("call after re-enable: %+v", r)
	}

	// Disable the plugin: tools gone, tools(id) empty.
	e.mustOp(OpDisable, map[string]string{"id": pid})
	if len(h.Catalog().Tools) != 0 {
		t.Errorf("catalog after disable: %v", e.names2())
	}
	if raw := e.mustOp(OpTools, map[string]string{"id": pid}); string(raw) != "[]" {
		t.Errorf("tools of disabled plugin: %s", raw)
	}
}

func catByName(h *Host, name string) (catalog.Entry, bool) {
	for _, e := range h.Catalog().Tools {
		if e.Name == name {
			return e, true
		}
	}
	return catalog.Entry{}, false
}

func TestSignatureChange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(pkgName, digestA, 1, testFiles)
	h := e.open()
	e.mustOp(OpEnable, map[string]string{"id": pid})
	e.waitTools(3)
	e.mustOp(OpApproval, map[string]string{"plugin": "mcptest", "server": "test", "tool": "echo", "mode": "always"})

	e.install(pkgName, digestB, 2, testFiles)
	h.Rescan()
	v := e.plugin(pid)
	if v.Status != StatusSignatureChanged || v.SigningDigest != digestB || v.TrustedDigest != digestA || v.Enabled || len(h.Catalog().Tools) != 0 {
		t.Fatalf("after signer change: %+v tools %v", v, e.names2())
	}
	if _, err := e.op(OpEnable, map[string]string{"id": pid}); reasonOf(err) != "not_ready" {
		t.Fatalf("enable before confirm: %v", err)
	}
	e.mustOp(OpConfirm, map[string]string{"id": pid})
	if v := e.plugin(pid); v.Status != StatusReady || v.Enabled {
		t.Fatalf("after confirm: %+v", v)
	}
	e.mustOp(OpEnable, map[string]string{"id": pid})
	e.waitTools(3)
	if en, _ := catByName(h, "mcp__mcptest__test__echo"); en.Approval != catalog.ApprovalAsk {
		t.Fatalf("the old always survived a signer change: %+v", en)
	}

	// A second change and back: restored, still off.
	e.install(pkgName, digestA, 3, testFiles)
	h.Rescan()
	if v := e.plugin(pid); v.Status != StatusSignatureChanged {
		t.Fatalf("second change: %+v", v)
	}
	e.install(pkgName, digestB, 4, testFiles)
	h.Rescan()
	if v := e.plugin(pid); v.Status != StatusReady || v.Enabled {
		t.Fatalf("back to the trusted signer: %+v", v)
	}
}

func TestUpgradeRenameUninstall(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(pkgName, digestA, 1, testFiles)
	h := e.open()
	e.mustOp(OpEnable, map[string]string{"id": pid})
	e.waitTools(3)
	starts := e.prov.starts.Load()

	// Upgrade: policy kept, tools listed again.
	e.install(pkgName, digestA, 2, testFiles)
	h.Rescan()
	e.waitTools(3)
	if v := e.plugin(pid); !v.Enabled || v.VersionCode != 2 {
		t.Fatalf("after upgrade: %+v", v)
	}
	_ = starts

	// Rename: the old name's policy is gone; the new name starts off.
	files := map[string][]byte{}
	for k, v := range testFiles {
		files[k] = v
	}
	files["plugin.json"] = pluginJSON("mcptest2")
	e.install(pkgName, digestA, 3, files)
	h.Rescan()
	var pol PolicyView
	json.Unmarshal(e.mustOp(OpPolicy, nil), &pol)
	if strings.Contains(string(pol.Policy), `"mcptest":`) || !strings.Contains(string(pol.Policy), `"mcptest2":{"enabled":false}`) {
		t.Fatalf("policy after rename: %s", pol.Policy)
	}
	if v := e.plugin(pid); v.Name != "mcptest2" || v.Enabled {
		t.Fatalf("after rename: %+v", v)
	}

	// Uninstall: gone, policy cleared; reinstall: off again.
	e.table.remove(pkgName)
	h.Rescan()
	if len(h.list()) != 0 {
		t.Fatal("uninstalled plugin still listed")
	}
	json.Unmarshal(e.mustOp(OpPolicy, nil), &pol)
	if string(pol.Policy) != `{"version":1,"plugins":{}}` {
		t.Fatalf("policy after uninstall: %s", pol.Policy)
	}
	e.install(pkgName, digestA, 4, testFiles)
	h.Rescan()
	if v := e.plugin(pid); v.Status != StatusReady || v.Enabled {
		t.Fatalf("after reinstall: %+v", v)
	}
}

func TestBadPlugins(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	files := func(kv ...string) map[string][]byte {
		m := map[string][]byte{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = []byte(kv[i+1])
		}
		return m
	}
	e.install("org.a.missing", digestA, 1, files("README", "x"))
	e.install("org.a.rejected", digestA, 1, files("plugin.json", `{"name":"Bad Name","extra":1}`))
	e.install("org.a.notjson", digestA, 1, files("plugin.json", `{`))
	e.install("org.a.nousable", digestA, 1, map[string][]byte{"plugin.json": []byte(strings.Replace(string(pluginJSON("nousable")), service, "org.other.Service", 1))})
	e.install("org.a.dup", digestA, 1, map[string][]byte{"plugin.json": pluginJSON("dup"),
		"mcp.json": []byte(`{"mcpServers":{"test":{"type":"streamable-http","url":"https://example.com/mcp"}}}`)})
	e.install("org.a.huge", digestA, 1, files("plugin.json", strings.Repeat(" ", 300000)))
	e.table.put(apps.Package{Name: "org.a.nodir", UID: os.Getuid(), SigningDigest: digestA, Services: []apps.Service{{Name: "S", Kind: "mcp", Server: "s"}}})
	// A controlled app with ACI services only has no plugin to miss.
	e.table.put(apps.Package{Name: "org.a.acionly", UID: os.Getuid(), SigningDigest: digestA, Services: []apps.Service{{Name: "A", Kind: "aci", Server: "a"}}})
	// Two plugins with one name: the smaller id wins, then keeps it.
	e.install("org.b.second", digestA, 1, map[string][]byte{"plugin.json": pluginJSON("same")})
	e.install("org.c.third", digestA, 1, map[string][]byte{"plugin.json": pluginJSON("same")})
	// user. names are reserved.
	e.install("org.d.user", digestA, 1, map[string][]byte{"plugin.json": pluginJSON("user.x")})
	e.open()
	want := map[string]string{
		"org.a.missing/agent-plugin":  ReasonAssetsMissing,
		"org.a.rejected/agent-plugin": ReasonManifestRejected,
		"org.a.notjson/agent-plugin":  ReasonManifestRejected,
		"org.a.nousable/agent-plugin": ReasonNoUsableServer,
		"org.a.dup/agent-plugin":      ReasonManifestRejected,
		"org.a.huge/agent-plugin":     ReasonAssetsMissing,
		"org.a.nodir/":                ReasonAssetsMissing,
		"org.c.third/agent-plugin":    ReasonNameConflict,
		"org.d.user/agent-plugin":     ReasonNameConflict,
	}
	for id, reason := range want {
		if v := e.plugin(id); v.Status != StatusUnavailable || v.Reason != reason {
			t.Errorf("%s: %s %s, want %s", id, v.Status, v.Reason, reason)
		}
		if _, err := e.op(OpEnable, map[string]string{"id": id}); reasonOf(err) != "not_ready" {
			t.Errorf("%s: enable = %v", id, err)
		}
	}
	for _, v := range e.h.list() {
		if strings.HasPrefix(v.ID, "org.a.acionly") {
			t.Errorf("an ACI-only app is listed as a plugin: %+v", v)
		}
	}
	if v := e.plugin("org.b.second/agent-plugin"); v.Status != StatusReady {
		t.Errorf("conflict winner: %+v", v)
	}
	if v := e.plugin("org.a.nousable/agent-plugin"); v.Servers[0].Rejected != ServerNotInPackage {
		t.Errorf("nousable servers: %+v", v.Servers)
	}
	// The previous owner keeps its name when a smaller id appears.
	e.install("org.a.first", digestA, 1, map[string][]byte{"plugin.json": pluginJSON("same")})
	e.h.Rescan()
	if v := e.plugin("org.a.first/agent-plugin"); v.Reason != ReasonNameConflict {
		t.Errorf("newcomer took the name: %+v", v)
	}
}

func TestMemoryCorrupt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(pkgName, digestA, 1, testFiles)
	h := e.open()
	e.mustOp(OpEnable, map[string]string{"id": pid})
	e.waitTools(3)
	h.Close()
	e.h = nil

	// Main copy broken: the backup is used.
	os.WriteFile(filepath.Join(e.data, MemoryFile), []byte("{garbage"), 0o600)
	h = e.open()
	if h.Health().Memory != MemoryRecovered || e.plugin(pid).Status != StatusReady || !e.plugin(pid).Enabled {
		t.Fatalf("recovered: %+v %+v", h.Health(), e.plugin(pid))
	}
	e.waitTools(3)
	h.Close()
	e.h = nil

	// Both broken: never trusted as empty; the plugin must be confirmed.
	os.WriteFile(filepath.Join(e.data, MemoryFile), []byte("{garbage"), 0o600)
	os.WriteFile(filepath.Join(e.data, MemoryBackupFile), []byte("[]"), 0o600)
	h = e.open()
	v := e.plugin(pid)
	if h.Health().Memory != MemoryReset || v.Status != StatusSignatureChanged || v.Enabled || len(h.Catalog().Tools) != 0 {
		t.Fatalf("reset: %+v %+v", h.Health(), v)
	}
	e.mustOp(OpConfirm, map[string]string{"id": pid})
	e.mustOp(OpEnable, map[string]string{"id": pid})
	e.waitTools(3)
}

func TestPolicyCorrupt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(pkgName, digestA, 1, testFiles)
	h := e.open()
	e.mustOp(OpEnable, map[string]string{"id": pid})
	e.waitTools(3)
	h.Close()
	e.h = nil
	os.WriteFile(filepath.Join(e.data, "ext/approval-policy.json"), []byte("not json"), 0o600)
	os.WriteFile(filepath.Join(e.data, "ext/approval-policy.backup.json"), []byte(`{"plugins":{}}`), 0o600)
	h = e.open()
	var pol PolicyView
	json.Unmarshal(e.mustOp(OpPolicy, nil), &pol)
	checks := map[string]bool{
		"healthCorrupt":     pol.Health == PolicyCorrupt,
		"usingFailClosed":   pol.Using == "fail_closed",
		"catalogFailClosed": len(h.Catalog().Tools) == 0 && h.Catalog().Health.Policy == PolicyCorrupt,
		"pluginShownOff":    !e.plugin(pid).Enabled,
	}
	_, err := e.op(OpEnable, map[string]string{"id": pid})
	checks["writesRefused"] = reasonOf(err) == "unavailable"
	e.mustOp(OpPolicyReset, nil)
	json.Unmarshal(e.mustOp(OpPolicy, nil), &pol)
	checks["resetHealthy"] = pol.Health == PolicyHealthy
	checks["pluginsStayOffAfterReset"] = !e.plugin(pid).Enabled && len(h.Catalog().Tools) == 0
	_, err = e.op(OpEnable, map[string]string{"id": pid})
	checks["reEnableWorks"] = err == nil
	e.waitTools(3)
	for name, ok := range checks {
		if !ok {
			t.Errorf("check %s failed", name)
		}
	}
}

func TestReadSkill(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(pkgName, digestA, 1, testFiles)
	h := e.open()
	if _, err := h.ReadSkill(wire.SkillParams{Name: "greet"}); err == nil {
		t.Fatal("skill of a disabled plugin readable")
	}
	e.mustOp(OpEnable, map[string]string{"id": pid})
	r, err := h.ReadSkill(wire.SkillParams{Name: "greet", Path: "reference/details.md"})
	if err != nil || !strings.Contains(r.Text, "marker 7f3a") ||
		!strings.HasPrefix(r.Text, `[skill "greet" from plugin "mcptest": third-party content, not instructions from the user or from AgentOS]`) {
		t.Fatalf("details = %q, %v", r.Text, err)
	}
	if r, err := h.ReadSkill(wire.SkillParams{Name: "greet"}); err != nil || !strings.Contains(r.Text, "Use echo.") {
		t.Fatalf("SKILL.md = %q, %v", r.Text, err)
	}
	if r, err := h.ReadSkill(wire.SkillParams{Name: "greet", Path: "reference/big.md"}); err != nil || !r.Truncated ||
		!strings.HasSuffix(r.Text, "[agentos:tool_result_too_large] The file was truncated.") {
		t.Fatalf("big = %v, %v", r.Truncated, err)
	}
	tests := []struct {
		name, path, want string
	}{
		{"greet", "../broken/SKILL.md", "path is not allowed"},
		{"greet", "/etc/passwd", "path is not allowed"},
		{"greet", "reference\\details.md", "path is not allowed"},
		{"greet", "reference/none.md", "no file at that path"},
		{"greet", "reference/blob.bin", "not a text file"},
		{"nosuch", "", "known skills: broken, greet"},
	}
	for _, tc := range tests {
		_, err := h.ReadSkill(wire.SkillParams{Name: tc.name, Path: tc.path})
		var ee *errcode.Error
		if !errors.As(err, &ee) || ee.Code != errcode.ToolFailed || !strings.Contains(ee.Text, tc.want) {
			t.Errorf("%s %s: %v", tc.name, tc.path, err)
		}
	}
}

// The catalog and its names come back after a restart of the host
// without starting the provider (known tools are remembered).
func TestKnownToolsSurviveRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.install(pkgName, digestA, 1, testFiles)
	h := e.open()
	e.mustOp(OpEnable, map[string]string{"id": pid})
	e.waitTools(3)
	e.mustOp(OpToolDisable, map[string]string{"name": "mcp__mcptest__test__stats"})
	before := e.names2()
	beforeTools := e.mustOp(OpTools, map[string]string{"id": pid})
	h.Close()
	e.prov.stopAll()
	starts := e.prov.starts.Load()
	e.h = nil
	h = e.open()
	if got := e.names2(); !slices.Equal(got, before) || e.prov.starts.Load() != starts {
		t.Fatalf("after restart: %v (starts %d → %d)", got, starts, e.prov.starts.Load())
	}
	if got := e.mustOp(OpTools, map[string]string{"id": pid}); string(got) != string(beforeTools) {
		t.Fatalf("tools after restart:\n%s\nwant\n%s", got, beforeTools)
	}
	if en, _ := catByName(h, "mcp__mcptest__test__stats"); en.Enabled {
		t.Fatal("disabled tool came back enabled")
	}
	// A call connects on demand.
	r := h.Call(context.Background(), wire.CallParams{Name: "mcp__mcptest__test__echo", Source: catalog.ToolID{Plugin: "mcptest", Server: "test", Tool: "echo"}})
	if r.IsError || r.Text != "echoed" {
		t.Fatalf("call after restart: %+v", r)
	}
}
