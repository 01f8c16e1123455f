package scenario

import (
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/agentoslab/agentlab/internal/strictyaml"
	"github.com/agentoslab/agentlab/sampleapps/acptestclient"
)

// Limits checked by validation.
const (
	MaxDevices    = 8
	MaxAttempts   = 10
	MaxTimeout    = 24 * time.Hour
	MaxSleep      = 10 * time.Minute
	MaxSteps      = 500
	maxNameLen    = 128
	maxToolScope  = 32
	maxScopeEntry = 128
)

var (
	nameRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9._/-]{0,127}$`)
	tagRE   = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,64}$`)
	roleRE  = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)
	saveRE  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_-]{0,63}$`)
	risks   = []string{"read", "write", "high"}
	modes   = []string{"default", "read_only", "chat"}
	reserve = []string{"vars", "device", "attempt", "scenario", RefScripts}
)

// validator checks what the types alone cannot: required fields, value
// sets, references between steps and checks, and names.
type validator struct {
	s    *Scenario
	d    *strictyaml.Decoder
	opts *Options

	roles     []string
	saves     map[string]string // save name → step kind, in order of definition
	bg        map[string]bool   // saves of background steps
	awaited   map[string]bool
	stepNames map[string]bool
	checks    map[string]string // check name → path
	installed map[string]bool   // packages of test-caller copies installed so far
	inScript  bool              // checking the references of a script
}

// errf reports a problem at the position of path (or of its nearest
// parent that was written).
func (v *validator) errf(path, format string, args ...any) { v.d.Errorf(path, format, args...) }

func (v *validator) hasProblem(path string) bool { return v.d.HasProblem(path) }

func (v *validator) has(path string) bool { return v.d.Has(path) }

func (v *validator) validate() {
	s := v.s
	v.saves, v.bg, v.awaited = map[string]string{}, map[string]bool{}, map[string]bool{}
	v.stepNames, v.checks, v.installed = map[string]bool{}, map[string]string{}, map[string]bool{}
	switch {
	case s.Name == "":
		v.errf("name", "a scenario needs a name")
	case !nameRE.MatchString(s.Name):
		v.errf("name", "%q: want lower case letters, digits and . _ / - (at most 128)", clip(s.Name, 40))
	}
	for i, t := range s.Tags {
		if !tagRE.MatchString(t) {
			v.errf(index("tags", i), "tag %q: want letters, digits and _ . : / -", clip(t, 40))
		}
	}
	v.devices()
	v.needs()
	if s.Timeout.D() > MaxTimeout {
		v.errf("timeout", "longer than %s", MaxTimeout)
	}
	if s.Attempts < 0 || s.Attempts > MaxAttempts {
		v.errf("attempts", "want 1 to %d (0 = the lab's default), got %d", MaxAttempts, s.Attempts)
	}
	if s.ConsentDriver != "" && !slices.Contains(ConsentDrivers, s.ConsentDriver) {
		v.errf("consent_driver", "want admin or ui, got %q", clip(s.ConsentDriver, 20))
	}
	for k := range s.Vars {
		if !saveRE.MatchString(k) {
			v.errf(join("vars", k), "variable name %q: want [A-Za-z_][A-Za-z0-9_-]*", clip(k, 40))
		}
	}
	v.scripts()
	if s.Model != nil {
		v.model()
	}
	if len(s.Steps) == 0 {
		v.errf("steps", "a scenario needs at least one step")
	}
	if len(s.Setup)+len(s.Steps) > MaxSteps {
		v.errf("steps", "more than %d steps", MaxSteps)
	}
	for i := range s.Setup {
		v.step(&s.Setup[i], index("setup", i))
	}
	for i := range s.Steps {
		v.step(&s.Steps[i], index("steps", i))
	}
	for i := range s.Checks {
		v.check(&s.Checks[i], index("checks", i))
	}
	for i := range s.Invariants {
		v.invariant(&s.Invariants[i], index("invariants", i))
	}
	v.unusedScripts()
}

func (v *validator) devices() {
	d := v.s.Devices
	if len(d.Names) > 0 {
		seen := map[string]bool{}
		for i, n := range d.Names {
			switch {
			case !roleRE.MatchString(n):
				v.errf(index("devices", i), "role %q: want a lower-case name ([a-z][a-z0-9_-]*)", clip(n, 40))
			case seen[n]:
				v.errf(index("devices", i), "role %q listed twice", n)
			}
			seen[n] = true
		}
	}
	if v.has("devices") && (d.Count < 1 || d.Count > MaxDevices) {
		v.errf("devices", "want 1 to %d devices, got %d", MaxDevices, d.Count)
	}
	v.roles = d.Roles()
}

func (v *validator) needs() {
	n := v.s.Needs
	for i, a := range n.Apps {
		v.app(index("needs.apps", i), a)
	}
	if n.Model != "" && !slices.Contains([]string{ModelStub, ModelLive, ModelAny}, n.Model) {
		v.errf("needs.model", "want stub, live or any, got %q", clip(n.Model, 40))
	}
	for i, k := range n.Kinds {
		if !slices.Contains(DeviceKinds, k) {
			v.errf(index("needs.kinds", i), "want one of %s, got %q", strings.Join(DeviceKinds, ", "), clip(k, 40))
		}
	}
	if n.MinAPI < 0 {
		v.errf("needs.min_api", "must not be negative")
	}
}

func (v *validator) model() {
	m := v.s.Model
	set := 0
	for _, b := range []bool{m.Live, m.Script != nil, m.File != "", m.Chaos != nil} {
		if b {
			set++
		}
	}
	if set != 1 {
		v.errf("model", "want exactly one of live, script, file and chaos")
		return
	}
	if m.Live {
		if nm := v.s.Needs.Model; nm == ModelStub {
			v.errf("needs.model", "the model is live, so needs.model cannot be stub")
		}
		return
	}
	if v.s.Needs.Model == ModelLive {
		v.errf("needs.model", "a scripted model runs on the stub, so needs.model cannot be live")
	}
	if m.Chaos != nil {
		return
	}
	var sc *Script
	at := "model.script"
	switch {
	case m.File != "":
		sc, at = &Script{File: m.File}, "model.file"
		if !v.readScript(sc, at) {
			return
		}
	case m.Script.Inline != nil:
		sc = m.Script.Inline
	default:
		if _, ok := v.s.Scripts[m.Script.Name]; !ok {
			v.scriptUse(at, m.Script.Name)
			return
		}
		sc = v.s.Scripts[m.Script.Name]
		sc.checked = true
	}
	if sc == nil {
		return
	}
	v.modelScript(sc, at)
	m.Parsed = sc.Parsed
}

func (v *validator) app(path, a string) {
	if _, ok := PackageOf(a); !ok {
		v.errf(path, "unknown app %q: want one of %s, or a package name", clip(a, 40), appNames())
	}
}

func (v *validator) role(path, r string) {
	if r != "" && !slices.Contains(v.roles, r) {
		v.errf(path, "unknown device role %q: the scenario's roles are %s", clip(r, 40), strings.Join(v.roles, ", "))
	}
}

// refs checks the ${…} references of a string field.
func (v *validator) refs(path, s string) {
	refs, err := Refs(s)
	if err != nil {
		v.errf(path, "%v", err)
		return
	}
	for _, r := range refs {
		switch {
		case r.Name == "vars":
			if k, ok := firstKey(r.Path); ok {
				if _, defined := v.s.Vars[k]; !defined {
					v.errf(path, "${%s}: no variable %q in vars", r.Raw, k)
				}
			}
		case r.Name == RefScripts:
			k, ok := firstKey(r.Path)
			if !ok || len(r.Path.segs) != 1 {
				v.errf(path, "${%s}: write ${scripts.NAME}, NAME one of scripts", r.Raw)
				break
			}
			if v.inScript {
				v.errf(path, "${%s}: a script cannot send another script", r.Raw)
				break
			}
			v.scriptUse(path, k)
		case slices.Contains(reserve, r.Name):
		default:
			if _, ok := v.saves[r.Name]; !ok {
				v.errf(path, "${%s}: no earlier step saves %q", r.Raw, r.Name)
			}
		}
	}
}

// refsAny checks the references of every string inside a value.
func (v *validator) refsAny(path string, x any) {
	switch t := x.(type) {
	case string:
		v.refs(path, t)
	case []any:
		for i, e := range t {
			v.refsAny(index(path, i), e)
		}
	case map[string]any:
		for k, e := range t {
			v.refsAny(join(path, k), e)
		}
	}
}

func firstKey(p Path) (string, bool) {
	if len(p.segs) == 0 || p.segs[0].kind != segKey {
		return "", false
	}
	return p.segs[0].key, true
}

func (v *validator) choice(path, c string, allowNone bool) {
	if !slices.Contains(Choices, c) || (!allowNone && c == ChoiceNone) {
		want := Choices
		if !allowNone {
			want = Choices[:len(Choices)-1]
		}
		v.errf(path, "want one of %s, got %q", strings.Join(want, ", "), clip(c, 40))
	}
}

func (v *validator) regexp(path, re string) {
	if _, err := regexp.Compile(re); err != nil {
		v.errf(path, "bad regular expression: %v", err)
	}
}

func (v *validator) step(st *Step, path string) {
	if st.kind == "" || !st.hasValue() {
		return // reported by the decoder
	}
	kp := join(path, st.kind)
	v.role(join(path, "device"), st.Device)
	if st.Name != "" {
		if v.stepNames[st.Name] {
			v.errf(join(path, "name"), "another step is named %q", st.Name)
		}
		v.stepNames[st.Name] = true
	}
	if st.Save != "" {
		switch {
		case !saveRE.MatchString(st.Save):
			v.errf(join(path, "save"), "%q: want [A-Za-z_][A-Za-z0-9_-]*", clip(st.Save, 40))
		case slices.Contains(reserve, st.Save):
			v.errf(join(path, "save"), "%q is reserved", st.Save)
		}
	}
	if st.Timeout.D() > MaxTimeout {
		v.errf(join(path, "timeout"), "longer than %s", MaxTimeout)
	}
	canBG := slices.Contains([]string{KindAsk, KindPrompt, KindApp, KindRun, KindCaller, KindBridge}, st.kind)
	if st.Background && !canBG {
		v.errf(join(path, "background"), "only ask, prompt, app, caller, bridge and run steps run in the background")
	}
	if st.AllowError && !slices.Contains([]string{KindApp, KindCallers, KindAsk, KindPrompt, KindTap, KindApproval, KindPlugins, KindTools,
		KindRun, KindKill, KindRestart, KindInstall, KindCaller, KindBridge}, st.kind) {
		v.errf(join(path, "allow_error"), "a %s step has no error to allow", st.kind)
	}
	switch st.kind {
	case KindReset, KindSeed:
		list := st.Reset
		if st.kind == KindSeed {
			list = st.Seed
		}
		if len(list) == 0 {
			v.errf(kp, "name at least one app")
		}
		for i, a := range list {
			v.app(index(kp, i), a)
		}
	case KindApp:
		if st.App.Name == "" {
			v.errf(kp, "app.name is required")
		} else {
			v.app(join(kp, "name"), st.App.Name)
		}
		if len(st.App.Args) == 0 {
			v.errf(join(kp, "args"), "name the command to run (dump, reset, seed, tool …)")
		} else if st.App.Args[0].Text == acptestclient.CommandRun && v.isTestCaller(st.App.Name) {
			v.errf(join(kp, "args"), "drive the test caller with a caller step: {caller: {app: %s, plan: [connect, …]}}", st.App.Name)
		}
		for i, a := range st.App.Args {
			if a.JSON != nil {
				v.refsAny(index(join(kp, "args"), i), a.JSON.V)
			} else {
				v.refs(index(join(kp, "args"), i), a.Text)
			}
		}
	case KindCallers:
		v.callers(st.Callers, kp)
	case KindAsk:
		if st.Ask.App == "" {
			v.errf(kp, "ask.app is required")
		} else {
			v.app(join(kp, "app"), st.Ask.App)
		}
		for k, a := range st.Ask.Args {
			v.refsAny(join(join(kp, "args"), k), a.V)
		}
	case KindPrompt:
		v.prompt(st.Prompt, kp)
	case KindInstall:
		v.install(st.Install, kp)
	case KindCaller:
		v.caller(st.Caller, kp)
	case KindBridge:
		b := st.Bridge
		switch {
		case b.Text != "" && b.Script != "":
			v.errf(join(kp, "script"), "want text or script, not both")
		case b.Script != "":
			v.scriptUse(join(kp, "script"), b.Script)
		}
		v.refs(join(kp, "text"), b.Text)
		if b.CancelAfter > 0 && b.Text == "" && b.Script == "" {
			v.errf(join(kp, "cancel_after"), "there is no prompt to cancel: give text or script")
		}
	case KindInclude:
		v.errf(kp, "include is expanded when a scenario is read: only in its setup and steps, not in a fragment")
	case KindConsent:
		v.consent(st.Consent, kp)
	case KindTap:
		if st.Tap.Card < 1 {
			v.errf(join(kp, "card"), "want the card's 1-based position, got %d", st.Tap.Card)
		}
		v.choice(join(kp, "choice"), st.Tap.Choice, false)
	case KindApproval:
		v.approval(st.Approval, kp)
	case KindPlugins, KindTools:
		t := st.Plugins
		if st.kind == KindTools {
			t = st.Tools
		}
		if len(t.Enable)+len(t.Disable) == 0 {
			v.errf(kp, "name something to enable or disable")
		}
		for i, x := range t.Enable {
			v.refs(index(join(kp, "enable"), i), x)
		}
		for i, x := range t.Disable {
			v.refs(index(join(kp, "disable"), i), x)
		}
	case KindKill, KindRestart:
		target := st.Kill
		if st.kind == KindRestart {
			target = st.Restart
		}
		if target != TargetExt && target != TargetRuntime {
			if _, ok := PackageOf(target); !ok {
				v.errf(kp, "want ext, runtime or an app, got %q", clip(target, 40))
			}
		}
	case KindReboot:
		if !st.Reboot {
			v.errf(kp, "write reboot: true")
		}
	case KindWait:
		w := st.Wait
		if v.has(join(kp, "for")) {
			v.timedWait(w, kp)
			break
		}
		v.condition(&w.Until, join(kp, "until"))
		if w.Timeout.D() > MaxTimeout {
			v.errf(join(kp, "timeout"), "longer than %s", MaxTimeout)
		}
		if w.Check != nil {
			v.checkName(w.Check.Name, join(kp, "check.name"))
		}
	case KindSleep:
		switch {
		case v.hasProblem(kp):
		case st.Sleep <= 0:
			v.errf(kp, "want a positive duration")
		case st.Sleep.D() > MaxSleep:
			v.errf(kp, "longer than %s; use wait with a condition", MaxSleep)
		}
	case KindACPClient:
		if !slices.Contains(ACPSuites, st.ACPClient.Suite) {
			v.errf(join(kp, "suite"), "unknown suite %q (known: %s)", st.ACPClient.Suite, strings.Join(ACPSuites, ", "))
		}
	case KindRun:
		r := st.Run
		if (r.Shell == "") == (len(r.Ctl) == 0) {
			v.errf(kp, "want exactly one of shell and ctl")
		}
		if r.Su && r.Shell == "" {
			v.errf(join(kp, "su"), "su applies to shell")
		}
		v.refs(join(kp, "shell"), r.Shell)
		for i, a := range r.Ctl {
			v.refs(index(join(kp, "ctl"), i), a)
		}
	case KindCheck:
		v.check(st.Check, kp)
	case KindAwait:
		switch {
		case !v.bg[st.Await]:
			v.errf(kp, "no earlier background step saves %q", clip(st.Await, 40))
		case v.awaited[st.Await]:
			v.errf(kp, "%q is already awaited", st.Await)
		}
		v.awaited[st.Await] = true
	}
	out := st.OutputName()
	if st.Background {
		if v.bg[out] && !v.awaited[out] {
			v.errf(path, "background step saves %q while an earlier one with that name still runs", out)
		}
		v.bg[out] = true
		delete(v.awaited, out)
	}
	v.saves[out] = st.kind
	if st.Name != "" {
		v.saves[st.Name] = st.kind
	}
}

func (v *validator) callers(c *CallersStep, kp string) {
	set := 0
	for _, x := range []struct {
		field, val string
	}{{"allow", c.Allow}, {"deny", c.Deny}, {"revoke", c.Revoke}, {"remove", c.Remove}} {
		if x.val != "" {
			set++
			v.app(join(kp, x.field), x.val)
		}
	}
	if c.Answer != nil {
		set++
		a := c.Answer
		if (a.App == "") == (a.Request == "") {
			v.errf(join(kp, "answer"), "want exactly one of app and request")
		}
		if a.App != "" {
			v.app(join(kp, "answer.app"), a.App)
		}
		v.refs(join(kp, "answer.request"), a.Request)
	}
	if c.Config != nil {
		set++
	}
	if set != 1 {
		v.errf(kp, "want exactly one of allow, deny, revoke, remove, answer and config")
	}
}

// timedWait checks wait: {for: D}.
func (v *validator) timedWait(w *WaitStep, kp string) {
	for _, f := range []string{"until", "timeout", "interval", "check"} {
		if v.has(join(kp, f)) {
			v.errf(join(kp, f), "a timed wait (for) takes no %s", f)
		}
	}
	switch {
	case v.hasProblem(join(kp, "for")):
	case w.For <= 0:
		v.errf(join(kp, "for"), "want a positive duration")
	case w.For.D() > MaxSleep:
		v.errf(join(kp, "for"), "longer than %s", MaxSleep)
	}
}

func (v *validator) prompt(p *PromptStep, kp string) {
	switch {
	case p.Text == "" && p.Script == "":
		v.errf(kp, "want text, or script (one of scripts)")
	case p.Text != "" && p.Script != "":
		v.errf(join(kp, "script"), "want text or script, not both")
	case p.Script != "":
		v.scriptUse(join(kp, "script"), p.Script)
	}
	v.refs(join(kp, "text"), p.Text)
	if p.Session != "" {
		if v.saves[p.Session] != KindPrompt {
			v.errf(join(kp, "session"), "no earlier prompt saves %q", clip(p.Session, 40))
		}
		if p.ToolScope != nil || p.Mode != "" || p.MCPServers != nil {
			v.errf(join(kp, "session"), "a continued session keeps its options: drop tool_scope, mode and mcp_servers")
		}
	}
	if p.Mode != "" && !slices.Contains(modes, p.Mode) {
		v.errf(join(kp, "mode"), "want one of %s, got %q", strings.Join(modes, ", "), clip(p.Mode, 40))
	}
	if p.ToolScope != nil {
		if len(*p.ToolScope) > maxToolScope {
			v.errf(join(kp, "tool_scope"), "more than %d entries (the runtime refuses such a session; test that with run)", maxToolScope)
		}
		for i, t := range *p.ToolScope {
			ip := index(join(kp, "tool_scope"), i)
			if t.Plugin == "" || t.Tool == "" || len(t.Plugin) > maxScopeEntry || len(t.Tool) > maxScopeEntry {
				v.errf(ip, "want plugin and tool, each 1 to %d characters", maxScopeEntry)
			}
			if strings.HasPrefix(t.Tool, "mcp__") {
				v.errf(join(ip, "tool"), "tool is the raw tool name, not the final mcp__… name")
			}
		}
	}
	for i, m := range p.MCPServers {
		ip := index(join(kp, "mcp_servers"), i)
		if m.Name == "" || m.URL == "" {
			v.errf(ip, "want name and url")
		}
		v.refs(join(ip, "url"), m.URL)
		for j, h := range m.Headers {
			if h.Name == "" {
				v.errf(index(join(ip, "headers"), j), "a header needs a name")
			}
			v.refs(index(join(ip, "headers"), j), h.Value)
		}
	}
}

func (v *validator) consent(c *ConsentStep, kp string) {
	if c.Stop {
		if c.Mode != "" || c.Rules != nil || c.Default != "" {
			v.errf(join(kp, "stop"), "stop takes nothing else")
		}
		return
	}
	if c.Mode == "" && c.Rules == nil && c.Default == "" {
		v.errf(kp, "want a mode, or rules and a default for the consent driver")
	}
	if c.Mode != "" && !slices.Contains(ConsentModes, c.Mode) {
		v.errf(join(kp, "mode"), "want one of %s, got %q", strings.Join(ConsentModes, ", "), clip(c.Mode, 40))
	}
	if (c.Rules != nil || c.Default != "") && c.Mode != "" && c.Mode != ConsentAsk {
		v.errf(join(kp, "mode"), "the driver's rules answer cards: mode must be ask (or absent), got %q", c.Mode)
	}
	if c.Default != "" {
		v.choice(join(kp, "default"), c.Default, true)
	}
	for i, r := range c.Rules {
		rp := index(join(kp, "rules"), i)
		if r.Index == 0 && r.Tool == "" && r.Risk == "" && r.Caller == "" {
			v.errf(rp, "a rule matches by index, tool, risk or caller")
		}
		if r.Index < 0 {
			v.errf(join(rp, "index"), "want a 1-based position")
		}
		if r.Tool != "" {
			v.regexp(join(rp, "tool"), r.Tool)
		}
		if r.Caller != "" {
			v.regexp(join(rp, "caller"), r.Caller)
		}
		if r.Risk != "" && !slices.Contains(risks, r.Risk) {
			v.errf(join(rp, "risk"), "want read, write or high, got %q", clip(r.Risk, 40))
		}
		v.choice(join(rp, "choice"), r.Choice, true)
	}
}

func (v *validator) approval(a *ApprovalStep, kp string) {
	v.refs(join(kp, "tool"), a.Tool)
	switch {
	case a.Plugin == "" && a.Tool == "":
		v.errf(kp, "want tool (a final name), or plugin (with server and tool) for an approval by source")
	case a.Plugin == "" && a.Server != "":
		v.errf(join(kp, "server"), "server needs plugin")
	}
	want := []string{"always", "ask"}
	if a.Plugin != "" {
		want = append(want, "clear")
	}
	if !slices.Contains(want, a.Mode) {
		v.errf(join(kp, "mode"), "want %s, got %q", strings.Join(want, ", "), clip(a.Mode, 40))
	}
}

func (v *validator) checkName(name, path string) {
	switch {
	case name == "":
		v.errf(path, "a check needs a name")
		return
	case len(name) > maxNameLen:
		v.errf(path, "longer than %d characters", maxNameLen)
	case strings.IndexFunc(name, unicode.IsControl) >= 0:
		v.errf(path, "control characters in the name")
	}
	if prev, dup := v.checks[name]; dup {
		v.errf(path, "check %q is also defined at %s", name, v.s.Pos(prev))
	}
	v.checks[name] = path
}

func (v *validator) check(c *Check, path string) {
	v.checkName(c.Name, join(path, "name"))
	for i, k := range c.Kinds {
		if !slices.Contains(DeviceKinds, k) {
			v.errf(index(join(path, "kinds"), i), "want one of %s, got %q", strings.Join(DeviceKinds, ", "), clip(k, 40))
		}
	}
	v.condition(&c.Condition, path)
}

// condition validates a condition at path.
func (v *validator) condition(c *Condition, path string) {
	v.role(join(path, "device"), c.Device)
	subjects := []string{}
	for _, x := range []struct {
		key string
		set bool
	}{{"of", c.Of != ""}, {"dump", c.Dump != ""}, {"saved", c.Saved != ""}, {"events", c.Events != ""},
		{"shell", c.Shell != ""}, {"timing", c.Timing != nil}} {
		if x.set {
			subjects = append(subjects, x.key)
		}
	}
	groups := 0
	if c.AllOf != nil {
		groups++
	}
	if c.AnyOf != nil {
		groups++
	}
	if groups > 0 {
		if groups > 1 || len(subjects) > 0 || c.Matcher.hasTest() || c.Matcher.Path != "" {
			v.errf(path, "a group (all_of or any_of) stands alone: its members carry subjects and matchers")
		}
		members, key := c.AllOf, "all_of"
		if c.AnyOf != nil {
			members, key = c.AnyOf, "any_of"
		}
		if len(members) == 0 {
			v.errf(join(path, key), "an empty group")
		}
		for i := range members {
			if members[i].Device == "" {
				members[i].Device = c.Device
			}
			v.condition(&members[i], index(join(path, key), i))
		}
		return
	}
	switch len(subjects) {
	case 0:
		v.errf(path, "want a subject: of (%s), dump, saved, events, shell or timing; or a group", strings.Join(Ofs, ", "))
		return
	case 1:
	default:
		v.errf(path, "one subject per condition, got %s", strings.Join(subjects, " and "))
		return
	}
	switch {
	case c.Of != "":
		if !slices.Contains(Ofs, c.Of) {
			v.errf(join(path, "of"), "want one of %s, got %q", strings.Join(Ofs, ", "), clip(c.Of, 40))
		}
	case c.Dump != "":
		v.app(join(path, "dump"), c.Dump)
	case c.Saved != "":
		if _, ok := v.saves[c.Saved]; !ok {
			v.errf(join(path, "saved"), "no earlier step saves %q", clip(c.Saved, 40))
		}
	case c.Events != "":
		if v.saves[c.Events] != KindPrompt {
			v.errf(join(path, "events"), "no earlier prompt saves %q", clip(c.Events, 40))
		}
	case c.Shell != "":
		v.refs(join(path, "shell"), c.Shell)
	case c.Timing != nil:
		v.timing(c.Timing, join(path, "timing"))
		if c.Matcher.hasTest() || c.Matcher.Path != "" {
			v.errf(path, "timing takes max and min, not matchers")
		}
		return
	}
	c.Matcher.compile(func(field, msg string) { v.errf(join(path, field), "%s", msg) })
	if err := c.Matcher.checkShape(); err != "" {
		v.errf(path, "%s", err)
	}
}

// checkShape reports matchers that can never be meant.
func (m *Matcher) checkShape() string {
	if m.Exists != nil && *m.Exists == false && m.needsOne() {
		return "exists: false with a value test can never hold"
	}
	return ""
}

func (v *validator) timing(t *Timing, path string) {
	ref := func(field, s string) {
		name := strings.TrimSuffix(strings.TrimSuffix(s, ".start"), ".end")
		if !v.stepNames[name] && v.saves[name] == "" {
			v.errf(join(path, field), "no step named %q", clip(name, 40))
		}
	}
	switch {
	case t.Step != "" && (t.From != "" || t.To != ""):
		v.errf(path, "want step, or from and to")
	case t.Step != "":
		ref("step", t.Step)
	case t.From != "" && t.To != "":
		ref("from", t.From)
		ref("to", t.To)
	default:
		v.errf(path, "want step, or from and to")
	}
	if t.Max == 0 && t.Min == 0 {
		v.errf(path, "want max, min or both")
	}
	if t.Max > 0 && t.Min > t.Max {
		v.errf(join(path, "min"), "above max")
	}
}

// Default names of the built-in invariants.
const (
	InvariantNothingDeleted = "nothingDeleted"
	InvariantNoSMSSent      = "noSmsSent"
	InvariantCardsOnly      = "cardsOnly"
)

func (v *validator) invariant(inv *Invariant, path string) {
	v.role(join(path, "device"), inv.Device)
	set := []string{}
	if inv.NothingDeleted != nil {
		set = append(set, "nothing_deleted")
		if inv.Name == "" {
			inv.Name = InvariantNothingDeleted
		}
		if len(inv.NothingDeleted) == 0 {
			v.errf(join(path, "nothing_deleted"), "name at least one app")
		}
		for i, a := range inv.NothingDeleted {
			v.app(index(join(path, "nothing_deleted"), i), a)
			if _, ok := IDPaths[AppName(a)]; !ok {
				v.errf(index(join(path, "nothing_deleted"), i), "the lab does not know how to list %q's items; use a condition", a)
			}
		}
	}
	if inv.NoSMSSent {
		set = append(set, "no_sms_sent")
		if inv.Name == "" {
			inv.Name = InvariantNoSMSSent
		}
	}
	if inv.CardsOnly != nil {
		set = append(set, "cards_only")
		if inv.Name == "" {
			inv.Name = InvariantCardsOnly
		}
	}
	if inv.Condition != nil {
		set = append(set, "condition")
		if inv.Condition.Device == "" {
			inv.Condition.Device = inv.Device
		}
		v.condition(inv.Condition, join(path, "condition"))
	}
	if len(set) != 1 {
		v.errf(path, "want exactly one of nothing_deleted, no_sms_sent, cards_only and condition")
		return
	}
	v.checkName(inv.Name, join(path, "name"))
}

// IDPaths are the JSON paths that list an app's items in its dump, for
// nothing_deleted.
var IDPaths = map[string]string{
	"alarm":    ".alarms[*].id",
	"calendar": ".events[*].id",
	"notes":    ".notes[*].id",
	"sms":      ".messages[*].id",
	"todo":     ".todos[*].id",
}

// OutboxPath lists the SMS app's sent messages in its dump.
const OutboxPath = ".outbox"
