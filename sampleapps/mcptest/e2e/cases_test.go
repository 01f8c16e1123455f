package e2e

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps/apptest"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/broker"
	"github.com/agentoslab/agentlab/runtime/ext/host"
	"github.com/agentoslab/agentlab/sampleapps/mcptest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	pluginID = mcptest.Package + "/agent-plugin"
	echo     = "mcp__mcptest__test__echo"
	slow     = "mcp__mcptest__test__slow"
	stats    = "mcp__mcptest__test__stats"
	wipe     = "mcp__mcptest__test__wipe"
	die      = "mcp__mcptest__test__die"
	addTool  = "mcp__mcptest__test__add_tool"
	rmTool   = "mcp__mcptest__test__remove_tool"
	extra    = "mcp__mcptest__test__extra"
)

// checks collects a case's named checks and reports the failed ones.
type checks struct {
	t     *testing.T
	names []string
	ok    map[string]bool
	info  map[string]string
}

func newChecks(t *testing.T) *checks {
	c := &checks{t: t, ok: map[string]bool{}, info: map[string]string{}}
	t.Cleanup(c.report)
	return c
}

func (c *checks) add(name string, ok bool, detail ...any) {
	c.names = append(c.names, name)
	c.ok[name] = ok
	if !ok {
		c.info[name] = fmt.Sprint(detail...)
	}
}

func (c *checks) report() {
	for _, n := range c.names {
		if !c.ok[n] {
			c.t.Errorf("check %s failed: %s", n, c.info[n])
		}
	}
	c.t.Logf("checks: %d, failed: %d", len(c.names), len(c.names)-countTrue(c.ok))
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

func (s *stack) plugin() (host.PluginView, bool) {
	s.t.Helper()
	var list []host.PluginView
	s.mustCall("plugins.list", nil, &list)
	for _, p := range list {
		if p.ID == pluginID {
			return p, true
		}
	}
	return host.PluginView{}, false
}

func (s *stack) catalog() broker.CatalogView {
	s.t.Helper()
	var v broker.CatalogView
	s.mustCall("catalog", nil, &v)
	return v
}

func (s *stack) entry(name string) (catalog.Entry, bool) {
	for _, e := range s.catalog().Tools {
		if e.Name == name {
			return e, true
		}
	}
	return catalog.Entry{}, false
}

// waitEntry polls the catalog until pred holds for name (or 20 s).
func (s *stack) waitEntry(name string, pred func(e catalog.Entry, ok bool) bool) bool {
	return assert.Eventually(s.t, func() bool { return pred(s.entry(name)) }, 20*time.Second, 50*time.Millisecond, "catalog entry %s", name)
}

// waitCatalog is `catalog --wait NAME [--absent]`.
func (s *stack) waitCatalog(name string, absent bool) bool {
	var v broker.CatalogView
	s.mustCall("catalog", map[string]any{"wait": name, "absent": absent, "timeoutMs": 30000}, &v)
	return v.Met != nil && *v.Met
}

func (s *stack) extCall(name, args string, opts ...int64) broker.ExtCallResult {
	s.t.Helper()
	p := broker.ExtCallParams{Name: name}
	if args != "" {
		p.Arguments = json.RawMessage(args)
	}
	if len(opts) > 0 {
		p.TimeoutMs = opts[0]
	}
	if len(opts) > 1 {
		p.CancelAfterMs = opts[1]
	}
	if len(opts) > 2 {
		p.DisableAfterMs = opts[2]
	}
	var r broker.ExtCallResult
	s.mustCall("ext.call", p, &r)
	return r
}

func (s *stack) stats() mcptest.Stats {
	s.t.Helper()
	r := s.extCall(stats, "")
	var st mcptest.Stats
	if err := json.Unmarshal(r.Structured, &st); err != nil {
		s.t.Fatalf("stats: %+v", r)
	}
	return st
}

func (s *stack) server() host.ServerView {
	p, _ := s.plugin()
	if len(p.Servers) == 0 {
		return host.ServerView{}
	}
	return p.Servers[0]
}

func (s *stack) recent() []consent.RecentEntry {
	var r []consent.RecentEntry
	s.mustCall("consent.recent", nil, &r)
	return r
}

func (s *stack) running() bool {
	var ps []launcher.Proc
	s.mustCall("app.ps", nil, &ps)
	return slices.ContainsFunc(ps, func(p launcher.Proc) bool { return p.Package == mcptest.Package })
}

func reason(err error) string {
	var e *errcode.Error
	if errors.As(err, &e) {
		if r, ok := e.Details["reason"].(string); ok {
			return r
		}
	}
	return ""
}

// keysOf returns the keys of the first object of a JSON array, in order.
func keysOf(raw json.RawMessage) []string {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('[') {
		return nil
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var keys []string
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return keys
		}
		keys = append(keys, k.(string))
		var v json.RawMessage
		dec.Decode(&v)
	}
	return keys
}

func uidOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 1 && f[0] == "Uid:" {
			n, _ := strconv.Atoi(f[1])
			return n
		}
	}
	return -1
}

// asUID runs this test binary's helper mode as uid and returns its output.
func asUID(t *testing.T, uid int, args ...string) string {
	t.Helper()
	out, err := apptest.Command(uid, selfBin, args).Output()
	if err != nil {
		t.Logf("helper %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

// strangerUID runs no app and is not the runtime.
const strangerUID = 24999

// TestExtensionHost is spec §10.8: the 25 cases of the upstream
// extension-host suite, in its order, on one stack.
func TestExtensionHost(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	cases := []struct {
		name string
		run  func(*testing.T, *stack)
	}{
		{"discover", caseDiscover},
		{"no-permission", caseNoPermission},
		{"enable", caseEnable},
		{"approvals", caseApprovals},
		{"call", caseCall},
		{"uid-check", caseUIDCheck},
		{"timeout", caseTimeout},
		{"cancel", caseCancel},
		{"list-changed", caseListChanged},
		{"plugin-death", casePluginDeath},
		{"force-stop", caseForceStop},
		{"disable-inflight", caseDisableInflight},
		{"tool-disable", caseToolDisable},
		{"idle", caseIdle},
		{"background", caseBackground},
		{"ext-death", caseExtDeath},
		{"known-tools", caseKnownTools},
		{"e2e-always", caseE2EAlways},
		{"e2e-ask", caseE2EAsk},
		{"e2e-consent", caseE2EConsent},
		{"e2e-high", caseE2EHigh},
		{"e2e-disabled", caseE2EDisabled},
		{"policy-corrupt", casePolicyCorrupt},
		{"signature", caseSignature},
		{"uninstall", caseUninstall},
	}
	for _, c := range cases {
		s.t = t
		if !t.Run(c.name, func(t *testing.T) {
			s.t = t
			c.run(t, s)
		}) {
			// Later cases build on earlier ones' state.
			t.Fatalf("case %s failed; the rest depend on it", c.name)
		}
	}
}

func caseDiscover(t *testing.T, s *stack) {
	c := newChecks(t)
	s.install(s.bundle(0, mcptest.BundleOptions{}))
	p, found := s.plugin()
	c.add("found", found && p.Name == mcptest.Plugin, p)
	c.add("ready", p.Status == host.StatusReady, p.Status, p.Reason)
	c.add("offByDefault", !p.Enabled)
	c.add("serverDisabledByPolicy", len(p.Servers) == 1 && p.Servers[0].State == "disabled" && p.Servers[0].Error == "user_policy", p.Servers)
	c.add("noRejectedServers", len(p.Servers) == 1 && p.Servers[0].Rejected == "", p.Servers)
	cat := s.catalog()
	c.add("noToolsInCatalog", !slices.ContainsFunc(cat.Tools, func(e catalog.Entry) bool { return e.PluginID == pluginID }), cat.Tools)
	c.add("policyHealthy", cat.Health.Policy == host.PolicyHealthy, cat.Health)
	c.add("memoryIntact", cat.Health.Memory == host.MemoryIntact, cat.Health)
}

// The analogue of BIND_MCP_SERVICE: only the runtime may have the
// launcher start a provider's service, and a provider's server admits
// only the runtime (and itself); every other uid is closed without a byte.
func caseNoPermission(t *testing.T, s *stack) {
	c := newChecks(t)
	pkg := s.appInfo()
	start := fmt.Sprintf(`{"id":1,"method":"start","params":{"package":%q,"server":"test"}}`, mcptest.Package)
	out := asUID(t, pkg.UID, "intrude", launcher.SocketName(s.names), start)
	c.add("deniedBySystem", out == "closed", out)
	c.add("servicePermissionDeclared", hasService(pkg.Services), pkg.Services)
	// Start the provider the runtime's way (a bind by the extension host)
	// is not possible while the plugin is off: the runtime starts nothing
	// for a disabled plugin. Enable, bind, then probe as a stranger.
	s.mustCall("plugins.enable", map[string]string{"id": pluginID}, nil)
	s.waitCatalog(echo, false)
	s.extCall(echo, `{"text":"bind"}`)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	out = asUID(t, strangerUID, "intrude", s.names.App(mcptest.Package, mcptest.Server), init)
	logged := assert.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(pkg.DataDir, launcher.LogName(mcptest.Server)))
		return bytes.Contains(b, []byte("peer is not the runtime"))
	}, 10*time.Second, 50*time.Millisecond)
	c.add("deniedForBindMcpService", out == "closed" && logged, out, " logged=", logged)
	s.mustCall("plugins.disable", map[string]string{"id": pluginID}, nil)
}

func hasService(svcs any) bool {
	b, _ := json.Marshal(svcs)
	return bytes.Contains(b, []byte(`"name":"`+mcptest.Service+`","kind":"mcp","server":"test"`))
}

func caseEnable(t *testing.T, s *stack) {
	c := newChecks(t)
	start := time.Now()
	s.mustCall("plugins.enable", map[string]string{"id": pluginID}, nil)
	met := s.waitCatalog(echo, false)
	t.Logf("enableToCatalogMs=%d", time.Since(start).Milliseconds())
	var mine []catalog.Entry
	for _, e := range s.catalog().Tools {
		if e.PluginID == pluginID {
			mine = append(mine, e)
		}
	}
	c.add("enabled", met)
	c.add("toolsAppeared", len(mine) == 7, len(mine))
	w, _ := s.entry(wipe)
	c.add("highRisk", w.Risk == catalog.RiskHigh && !w.MayAlwaysAllow, w)
	e, _ := s.entry(echo)
	c.add("echoWriteAsk", e.Risk == catalog.RiskWrite && e.Approval == catalog.ApprovalAsk, e)
	raw, err := s.rawCall("plugins.tools", map[string]string{"id": pluginID})
	keys := keysOf(raw)
	c.add("knownToolShape", err == nil && slices.Equal(keys, []string{"name", "pluginId", "source", "title", "description", "inputSchema", "risk", "enabled", "approval", "mayAlwaysAllow"}), keys)
	sv := s.server()
	c.add("serverConnected", (sv.State == "connected" || sv.State == "idle") && sv.ToolCount == 7, sv)
	p, _ := s.plugin()
	c.add("skills", slices.Equal(p.Skills, []string{"broken", "greet"}) && p.SkillCount == 2, p.Skills)
	c.add("skillProblem", slices.ContainsFunc(p.SkillProblems, func(sp host.SkillProblem) bool { return sp.Dir == "broken" }), p.SkillProblems)
	var sk broker.SkillView
	s.mustCall("skill", map[string]string{"name": "greet", "path": "reference/details.md"}, &sk)
	c.add("skillFileRead", !sk.IsError && strings.Contains(sk.Text, "marker 7f3a"), sk)
	s.mustCall("skill", map[string]string{"name": "greet", "path": "../broken/SKILL.md"}, &sk)
	c.add("skillPathRejected", sk.IsError && sk.Code == string(errcode.ToolFailed) && strings.Contains(sk.Text, "not allowed"), sk)
}

func (s *stack) rawCall(method string, params any) (json.RawMessage, error) {
	var raw json.RawMessage
	err := s.call(method, params, &raw)
	return raw, err
}

func caseApprovals(t *testing.T, s *stack) {
	c := newChecks(t)
	err := s.call("plugins.tool_approval", map[string]string{"name": wipe, "mode": "always"}, nil)
	c.add("highRiskRefused", reason(err) == "high_risk", err)
	s.mustCall("plugins.approval", map[string]string{"plugin": "mcptest", "server": "test", "tool": "echo", "mode": "always"}, nil)
	c.add("bySourceAlways", s.waitEntry(echo, func(e catalog.Entry, ok bool) bool { return e.Approval == catalog.ApprovalAlways }))
	s.mustCall("plugins.approval", map[string]string{"plugin": "mcptest", "server": "test", "tool": "echo", "mode": ""}, nil)
	c.add("bySourceCleared", s.waitEntry(echo, func(e catalog.Entry, ok bool) bool { return e.Approval == catalog.ApprovalAsk }))
	err = s.call("plugins.tool_approval", map[string]string{"name": echo, "mode": "sometimes"}, nil)
	c.add("badModeRefused", reason(err) == "bad_mode", err)
	s.mustCall("plugins.approval", map[string]string{"plugin": "mcptest", "mode": "always"}, nil)
	c.add("pluginAlways", s.waitEntry(wipe, func(e catalog.Entry, ok bool) bool {
		return e.Approval == catalog.ApprovalAlways && !e.MayAlwaysAllow && e.Risk == catalog.RiskHigh
	}))
	s.mustCall("plugins.approval", map[string]string{"plugin": "mcptest", "mode": ""}, nil)
	s.waitEntry(wipe, func(e catalog.Entry, ok bool) bool { return e.Approval == catalog.ApprovalAsk })
}

func caseCall(t *testing.T, s *stack) {
	c := newChecks(t)
	before := s.stats()
	r := s.extCall(echo, `{"text":"hi"}`)
	c.add("completed", r.Accepted && r.Outcome == "completed" && r.Text == "hi" && !r.IsError, r)
	var st struct{ Text string }
	json.Unmarshal(r.Structured, &st)
	c.add("structured", st.Text == "hi", string(r.Structured))
	r = s.extCall(echo, `{}`)
	c.add("argsErrorIsError", r.Accepted && r.IsError && r.Code == string(errcode.ToolFailed), r)
	r = s.extCall("mcp__mcptest__test__nope", `{}`)
	c.add("notInCatalogNotAccepted", !r.Accepted && r.Code == string(errcode.ToolNotInCatalog), r)
	after := s.stats()
	c.add("exactlyOnce", after.Calls == before.Calls+2 && after.PID == before.PID, before, after)
}

func caseUIDCheck(t *testing.T, s *stack) {
	c := newChecks(t)
	pkg := s.appInfo()
	before := s.stats()
	r := s.extCall(echo, `{"text":"uid"}`)
	var st struct{ PID int }
	json.Unmarshal(r.Structured, &st)
	c.add("callOk", r.Outcome == "completed", r)
	c.add("peerUidIsPlugin", st.PID == r.ProviderPID && uidOf(st.PID) == pkg.UID, st.PID, r.ProviderPID, uidOf(st.PID), pkg.UID)
	sv := s.server()
	c.add("noUidRejects", sv.Conn != nil && sv.Conn.UIDRejects == 0, sv.Conn)
	c.add("messagesReceived", s.stats().Calls > before.Calls)

	// A squatter on the name, under another uid, is refused.
	s.mustCall("app.stop", map[string]string{"package": mcptest.Package}, nil)
	require.Eventually(t, func() bool { return !s.running() && !s.server().Connected }, 10*time.Second, 50*time.Millisecond)
	sq := apptest.Command(strangerUID, selfBin, []string{"squat", s.names.App(mcptest.Package, mcptest.Server)})
	var out bytes.Buffer
	sq.Stdout = &out
	if err := sq.Start(); err != nil {
		t.Fatal(err)
	}
	listening := assert.Eventually(t, func() bool {
		return strings.Contains(out.String(), "listening")
	}, 10*time.Second, 50*time.Millisecond)
	r = s.extCall(echo, `{"text":"to a squatter"}`)
	sq.Process.Signal(syscall.SIGTERM)
	sq.Wait()
	c.add("squatterRefused", listening && r.Code == string(errcode.ToolUnavailable), r)
	c.add("squatterGotNoMessage", strings.Contains(out.String(), "bytes=0"), out.String())
	r = s.extCall(echo, `{"text":"again"}`)
	c.add("callOkAfterSquatter", r.Outcome == "completed", r)
}

func caseTimeout(t *testing.T, s *stack) {
	c := newChecks(t)
	before := s.stats()
	r := s.extCall(slow, `{"ms":10000}`, 1500)
	c.add("outcomeUnknown", r.Outcome == "unknown", r)
	c.add("toolTimeout", r.Code == string(errcode.ToolTimeout) && strings.Contains(r.Text, "did not respond in 1500 ms"), r.Text)
	c.add("elapsed", r.ElapsedMs >= 1400 && r.ElapsedMs <= 4000, r.ElapsedMs)
	c.add("exactlyOnce", assert.Eventually(t, func() bool {
		return s.stats().Calls == before.Calls+1
	}, 10*time.Second, 50*time.Millisecond))
}

func caseCancel(t *testing.T, s *stack) {
	c := newChecks(t)
	before := s.stats()
	r := s.extCall(slow, `{"ms":10000}`, 0, 1000)
	c.add("outcomeUnknown", r.Outcome == "unknown" && r.Code == string(errcode.ToolResultUnknown), r)
	c.add("detailsCancelled", r.Details["cancelled"] == true, r.Details)
	c.add("elapsed", r.ElapsedMs >= 900 && r.ElapsedMs <= 4000, r.ElapsedMs)
	var after mcptest.Stats
	saw := assert.Eventually(t, func() bool {
		after = s.stats()
		return after.Cancelled == before.Cancelled+1
	}, 10*time.Second, 50*time.Millisecond)
	c.add("pluginSawCancel", saw && after.PID == before.PID, before, after)
	c.add("exactlyOnce", after.Calls == before.Calls+1, before, after)
}

func caseListChanged(t *testing.T, s *stack) {
	c := newChecks(t)
	s.extCall(addTool, `{}`)
	c.add("added", s.waitCatalog(extra, false))
	r := s.extCall(extra, `{}`)
	c.add("callable", r.Text == "extra", r)
	s.extCall(rmTool, `{}`)
	c.add("removed", s.waitCatalog(extra, true))
}

// slowInFlight starts a slow call and waits until the provider runs it.
func (s *stack) slowInFlight() (<-chan broker.ExtCallResult, int) {
	s.t.Helper()
	pid := s.stats().PID
	res := make(chan broker.ExtCallResult, 1)
	go func() {
		var r broker.ExtCallResult
		s.call("ext.call", broker.ExtCallParams{Name: slow, Arguments: json.RawMessage(`{"ms":60000}`)}, &r)
		res <- r
	}()
	require.Eventually(s.t, func() bool { return s.stats().InFlight == 1 }, 10*time.Second, 50*time.Millisecond)
	return res, pid
}

func casePluginDeath(t *testing.T, s *stack) {
	c := newChecks(t)
	res, pid := s.slowInFlight()
	s.extCall(die, `{"after_ms":300}`)
	start := time.Now()
	r := <-res
	c.add("unknown", r.Code == string(errcode.ToolResultUnknown) && r.Outcome == "unknown", r)
	c.add("fast", time.Since(start) < 3*time.Second, time.Since(start))
	after := s.stats()
	c.add("reconnectedNewPid", after.PID != pid && after.PID != 0, pid, after.PID)
}

// force-stop: the owner stops the app from outside (the launcher's
// SIGTERM, then SIGKILL) while a call runs.
func caseForceStop(t *testing.T, s *stack) {
	c := newChecks(t)
	res, pid := s.slowInFlight()
	s.mustCall("app.stop", map[string]string{"package": mcptest.Package}, nil)
	r := <-res
	c.add("unknown", r.Code == string(errcode.ToolResultUnknown), r)
	after := s.stats()
	c.add("reconnected", after.PID != pid && after.PID != 0, pid, after.PID)
}

func caseDisableInflight(t *testing.T, s *stack) {
	c := newChecks(t)
	r := s.extCall(slow, `{"ms":60000}`, 0, 0, 2000)
	p, _ := s.plugin()
	c.add("disabled", !p.Enabled)
	c.add("inflightUnknown", r.Outcome == "unknown" && r.ElapsedMs >= 1900 && r.ElapsedMs <= 5000, r)
	c.add("removedFromCatalog", s.waitCatalog(echo, true))
	r = s.extCall(echo, `{"text":"x"}`)
	c.add("callNotAccepted", !r.Accepted, r)
	sv := s.server()
	c.add("serverDisabled", sv.State == "disabled", sv)
	s.mustCall("plugins.enable", map[string]string{"id": pluginID}, nil)
	c.add("reEnabled", s.waitCatalog(echo, false) && s.extCall(echo, `{"text":"y"}`).Outcome == "completed")
}

func pluginNames(s *stack) []string {
	var out []string
	for _, e := range s.catalog().Tools {
		if e.PluginID == pluginID {
			out = append(out, e.Name)
		}
	}
	sort.Strings(out)
	return out
}

func caseToolDisable(t *testing.T, s *stack) {
	c := newChecks(t)
	names := pluginNames(s)
	s.mustCall("plugins.tool_disable", map[string]string{"name": stats}, nil)
	c.add("removed", s.waitCatalog(stats, true))
	var tools []map[string]any
	s.mustCall("plugins.tools", map[string]string{"id": pluginID}, &tools)
	c.add("stillListedDisabled", slices.ContainsFunc(tools, func(m map[string]any) bool { return m["name"] == stats && m["enabled"] == false }), tools)
	r := s.extCall(stats, `{}`)
	c.add("callNotAccepted", !r.Accepted, r)
	c.add("othersKeepNames", slices.Equal(pluginNames(s), names), pluginNames(s))
	s.mustCall("plugins.tool_enable", map[string]string{"name": stats}, nil)
	c.add("reEnabled", s.waitCatalog(stats, false))
}

func caseIdle(t *testing.T, s *stack) {
	c := newChecks(t)
	s.extCall(echo, `{"text":"warm"}`)
	res := make(chan broker.ExtCallResult, 1)
	go func() {
		var r broker.ExtCallResult
		s.call("ext.call", broker.ExtCallParams{Name: slow, Arguments: json.RawMessage(`{"ms":5000}`)}, &r)
		res <- r
	}()
	time.Sleep(4 * time.Second) // past the 3 s idle period, with a call in flight
	sv := s.server()
	c.add("boundWhileBusy", sv.Connected && s.running(), sv)
	<-res
	idle := assert.Eventually(t, func() bool {
		sv = s.server()
		return sv.State == "idle" && !sv.Connected && sv.Conn != nil && sv.Conn.IdleReleases > 0
	}, 15*time.Second, 50*time.Millisecond)
	c.add("idleState", idle, sv)
	c.add("serviceReleased", assert.Eventually(t, func() bool { return !s.running() }, 15*time.Second, 50*time.Millisecond))
	c.add("reconnects", s.extCall(echo, `{"text":"again"}`).Outcome == "completed" && s.running())
}

// background: Android's foreground-service and cached-apps-freezer checks
// have no counterpart here (no process priorities freeze an app). What
// remains is the substance: an app that is not running at all is started
// fresh for a call.
func caseBackground(t *testing.T, s *stack) {
	c := newChecks(t)
	pid := s.stats().PID
	s.mustCall("app.stop", map[string]string{"package": mcptest.Package}, nil)
	c.add("appNotRunning", assert.Eventually(t, func() bool { return !s.running() }, 15*time.Second, 50*time.Millisecond))
	r := s.extCall(echo, `{"text":"from the background"}`)
	c.add("freshBindCallWorks", r.Outcome == "completed" && r.ProviderPID != pid && s.running(), r)
	t.Log("not applicable: AgentService foreground state and the cached-apps freezer (Android only)")
}

func (s *stack) extStatus() broker.Status {
	var st broker.Status
	s.mustCall("ext.status", nil, &st)
	return st
}

func caseExtDeath(t *testing.T, s *stack) {
	c := newChecks(t)
	st0 := s.extStatus()
	names := pluginNames(s)
	var k struct {
		Killed bool `json:"killed"`
	}
	s.mustCall("ext.kill", nil, &k)
	var st broker.Status
	back := assert.Eventually(t, func() bool {
		st = s.extStatus()
		return st.Connected && st.Restarts > st0.Restarts && st.PID != st0.PID
	}, 30*time.Second, 50*time.Millisecond)
	c.add("killedAndRestarted", k.Killed && back, st0, st)
	c.add("agentSawDisconnectReconnect", st.LinkDrops > st0.LinkDrops && st.LinkConnects > st0.LinkConnects, st0, st)
	c.add("catalogBackSameNames", assert.Eventually(t, func() bool {
		return slices.Equal(pluginNames(s), names)
	}, 20*time.Second, 50*time.Millisecond), pluginNames(s))
	c.add("callWorks", s.extCall(echo, `{"text":"after"}`).Outcome == "completed")
}

func (s *stack) restartExt() {
	s.t.Helper()
	st0 := s.extStatus()
	s.mustCall("ext.restart", nil, nil)
	require.Eventually(s.t, func() bool {
		st := s.extStatus()
		return st.Connected && st.LinkConnects > st0.LinkConnects
	}, 30*time.Second, 50*time.Millisecond, "the extension host did not come back")
}

func caseKnownTools(t *testing.T, s *stack) {
	c := newChecks(t)
	s.mustCall("plugins.tool_disable", map[string]string{"name": stats}, nil)
	s.waitCatalog(stats, true)
	before, _ := s.rawCall("plugins.tools", map[string]string{"id": pluginID})
	s.restartExt()
	after, _ := s.rawCall("plugins.tools", map[string]string{"id": pluginID})
	c.add("stillListedAfterRebuild", bytes.Equal(before, after), string(after))
	var tools []map[string]any
	json.Unmarshal(after, &tools)
	c.add("disabledToolKeepsName", slices.ContainsFunc(tools, func(m map[string]any) bool { return m["name"] == stats && m["enabled"] == false }))
	e, _ := s.entry(stats)
	c.add("notInCatalog", !e.Enabled, e)
	c.add("exactKeys", slices.Equal(keysOf(after), []string{"name", "pluginId", "source", "title", "description", "inputSchema", "risk", "enabled", "approval", "mayAlwaysAllow"}), keysOf(after))
	s.mustCall("plugins.disable", map[string]string{"id": pluginID}, nil)
	empty, _ := s.rawCall("plugins.tools", map[string]string{"id": pluginID})
	c.add("disabledPluginEmpty", string(empty) == "[]", string(empty))
	s.mustCall("plugins.enable", map[string]string{"id": pluginID}, nil)
	again, _ := s.rawCall("plugins.tools", map[string]string{"id": pluginID})
	c.add("enableOnceRestoresList", bytes.Equal(again, before), string(again))
	s.mustCall("plugins.tool_enable", map[string]string{"name": stats}, nil)
	c.add("toolReEnabled", s.waitCatalog(stats, false))
}

// e2e runs a prompt that calls tool under consent mode, and checks what
// every e2e case checks.
func e2e(t *testing.T, s *stack, c *checks, mode, tool string) ([]event, []consent.RecentEntry) {
	n0 := len(s.recent())
	s.mustCall("consent.mode", map[string]string{"mode": mode}, nil)
	var l struct {
		Mode string `json:"mode"`
	}
	s.mustCall("consent.list", nil, &l)
	m, _ := consent.ParseAutoMode(mode)
	c.add("consentModeSet", l.Mode == string(m), l.Mode)
	raw := strings.TrimPrefix(tool, "mcp__mcptest__test__")
	evs := s.prompt(fmt.Sprintf("steps:\n  - toolCalls:\n      - mcp: [mcptest, test, %s]\n        arguments: {text: e2e}\nfinal: done\n", raw))
	rec := s.recent()
	var fresh []consent.RecentEntry
	if len(rec) >= n0 {
		fresh = rec[n0:]
	}
	alwaysOnlyWrite, neverPicked := true, true
	for _, e := range fresh {
		if slices.Contains(e.Options, consent.AlwaysAllow) != (e.Risk == catalog.RiskWrite) {
			alwaysOnlyWrite = false
		}
		if strings.Contains(e.AnsweredWith, string(consent.AlwaysAllow)) {
			neverPicked = false
		}
	}
	c.add("alwaysAllowOnlyForWrite", alwaysOnlyWrite, fresh)
	c.add("alwaysAllowNeverPicked", neverPicked, fresh)
	return evs, fresh
}

func toolStatuses(evs []event) []string {
	var out []string
	for _, e := range evs {
		if e.Kind == "tool" {
			out = append(out, e.Status)
		}
	}
	return out
}

func lastTool(evs []event) event {
	var last event
	for _, e := range evs {
		if e.Kind == "tool" {
			last = e
		}
	}
	return last
}

func caseE2EAlways(t *testing.T, s *stack) {
	c := newChecks(t)
	s.mustCall("plugins.approval", map[string]string{"plugin": "mcptest", "server": "test", "tool": "echo", "mode": "always"}, nil)
	s.waitEntry(echo, func(e catalog.Entry, ok bool) bool { return e.Approval == catalog.ApprovalAlways })
	evs, fresh := e2e(t, s, c, "deny", echo)
	c.add("completed", lastTool(evs).Status == "COMPLETED", evs)
	c.add("consentAsExpected", len(fresh) == 0, fresh)
	c.add("consentAnswer", true)
	s.mustCall("plugins.approval", map[string]string{"plugin": "mcptest", "server": "test", "tool": "echo", "mode": ""}, nil)
	s.waitEntry(echo, func(e catalog.Entry, ok bool) bool { return e.Approval == catalog.ApprovalAsk })
}

func caseE2EAsk(t *testing.T, s *stack) {
	c := newChecks(t)
	before := s.stats()
	evs, fresh := e2e(t, s, c, "deny", echo)
	last := lastTool(evs)
	c.add("toolDenied", last.Status == "DENIED" && strings.HasPrefix(last.Result, "[agentos:tool_denied]"), last)
	c.add("toolNotRun", s.stats().Calls == before.Calls)
	c.add("consentAsExpected", len(fresh) == 1 && fresh[0].Tool == echo, fresh)
	c.add("consentAnswer", len(fresh) == 1 && fresh[0].AnsweredWith == "auto:DENY", fresh)
}

func caseE2EConsent(t *testing.T, s *stack) {
	c := newChecks(t)
	evs, fresh := e2e(t, s, c, "allowOnce", echo)
	c.add("completed", slices.Equal(toolStatuses(evs), []string{"PENDING_APPROVAL", "RUNNING", "COMPLETED"}) && lastTool(evs).Result == "e2e", evs)
	c.add("consentAsExpected", len(fresh) == 1 && fresh[0].Tool == echo, fresh)
	c.add("consentAnswer", len(fresh) == 1 && fresh[0].AnsweredWith == "auto:ALLOW_ONCE", fresh)
}

func caseE2EHigh(t *testing.T, s *stack) {
	c := newChecks(t)
	s.mustCall("plugins.approval", map[string]string{"plugin": "mcptest", "mode": "always"}, nil)
	s.waitEntry(wipe, func(e catalog.Entry, ok bool) bool { return e.Approval == catalog.ApprovalAlways })
	evs, fresh := e2e(t, s, c, "deny", wipe)
	c.add("wipeStillAsks", len(fresh) == 1 && fresh[0].Tool == wipe, fresh)
	c.add("riskHigh", len(fresh) == 1 && fresh[0].Risk == catalog.RiskHigh, fresh)
	c.add("noAllowForSession", len(fresh) == 1 && slices.Equal(fresh[0].Options, []consent.Choice{consent.AllowOnce, consent.Deny}), fresh)
	c.add("denied", lastTool(evs).Status == "DENIED", evs)
	c.add("consentAsExpected", len(fresh) == 1)
	c.add("consentAnswer", len(fresh) == 1 && fresh[0].AnsweredWith == "auto:DENY", fresh)
	s.mustCall("plugins.approval", map[string]string{"plugin": "mcptest", "mode": ""}, nil)
	s.waitEntry(wipe, func(e catalog.Entry, ok bool) bool { return e.Approval == catalog.ApprovalAsk })
}

func caseE2EDisabled(t *testing.T, s *stack) {
	c := newChecks(t)
	s.mustCall("plugins.tool_disable", map[string]string{"name": echo}, nil)
	s.waitCatalog(echo, true)
	evs, fresh := e2e(t, s, c, "allow", echo)
	last := lastTool(evs)
	c.add("modelGotUnavailable", last.Status == "FAILED" && last.Result == "[agentos:tool_not_in_catalog] Tool "+echo+" is not available.", last)
	c.add("consentAsExpected", len(fresh) == 0, fresh)
	c.add("consentAnswer", true)
	s.mustCall("plugins.tool_enable", map[string]string{"name": echo}, nil)
	s.waitCatalog(echo, false)
	s.mustCall("consent.mode", map[string]string{"mode": "off"}, nil)
}

func casePolicyCorrupt(t *testing.T, s *stack) {
	c := newChecks(t)
	dir := filepath.Join(s.root, "runtime")
	for _, f := range []string{consent.PolicyFile, consent.PolicyBackupFile} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("corrupt {"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s.restartExt()
	var pol host.PolicyView
	s.mustCall("plugins.policy", nil, &pol)
	c.add("healthCorrupt", pol.Health == host.PolicyCorrupt, pol.Health)
	c.add("usingFailClosed", pol.Using == "fail_closed", pol.Using)
	var diag struct {
		Ext host.Diag `json:"ext"`
	}
	s.mustCall("plugins.diag", nil, &diag)
	c.add("catalogFailClosed", diag.Ext.ToolCount == 0, diag.Ext.ToolCount)
	cat := s.catalog()
	c.add("mirrorFailClosed", assert.Eventually(t, func() bool {
		cat = s.catalog()
		return len(cat.Tools) == 0 && cat.Health.Policy == host.PolicyCorrupt
	}, 10*time.Second, 50*time.Millisecond), cat)
	p, _ := s.plugin()
	c.add("pluginShownOff", !p.Enabled)
	err := s.call("plugins.enable", map[string]string{"id": pluginID}, nil)
	c.add("writesRefused", reason(err) == "unavailable", err)
	s.mustCall("plugins.policy", map[string]bool{"reset": true}, &pol)
	c.add("resetHealthy", pol.Health == host.PolicyHealthy, pol.Health)
	p, _ = s.plugin()
	c.add("pluginsStayOffAfterReset", !p.Enabled)
	err = s.call("plugins.enable", map[string]string{"id": pluginID}, nil)
	c.add("reEnableWorks", err == nil, err)
	c.add("mirrorRecovers", s.waitCatalog(echo, false) && s.catalog().Health.Policy == host.PolicyHealthy)
}

func caseSignature(t *testing.T, s *stack) {
	c := newChecks(t)
	old, _ := s.plugin()
	s.install(s.bundle(1, mcptest.BundleOptions{VersionCode: 2}))
	p, _ := s.plugin()
	c.add("statusSignatureChanged", p.Status == host.StatusSignatureChanged, p.Status)
	c.add("newDigest", p.SigningDigest != old.SigningDigest && p.TrustedDigest == old.SigningDigest, p.SigningDigest, p.TrustedDigest)
	c.add("disabled", !p.Enabled)
	c.add("toolsRemoved", s.waitCatalog(echo, true))
	err := s.call("plugins.enable", map[string]string{"id": pluginID}, nil)
	c.add("enableRefusedNotReady", reason(err) == "not_ready", err)
	s.mustCall("plugins.confirm", map[string]string{"id": pluginID}, nil)
	p, _ = s.plugin()
	c.add("confirmReadyButOff", p.Status == host.StatusReady && !p.Enabled, p)
	s.mustCall("plugins.enable", map[string]string{"id": pluginID}, nil)
	c.add("reEnableWorks", s.waitCatalog(echo, false) && s.extCall(echo, `{"text":"new signer"}`).Outcome == "completed")
}

func caseUninstall(t *testing.T, s *stack) {
	c := newChecks(t)
	s.mustCall("app.uninstall", map[string]string{"package": mcptest.Package}, nil)
	s.mustCall("plugins.rescan", nil, nil)
	c.add("toolsRemoved", s.waitCatalog(echo, true))
	_, found := s.plugin()
	c.add("pluginRemoved", !found)
	s.install(s.bundle(1, mcptest.BundleOptions{VersionCode: 3}))
	p, found := s.plugin()
	c.add("rediscovered", found && p.Status == host.StatusReady, p)
	c.add("offAgain", !p.Enabled)
}
