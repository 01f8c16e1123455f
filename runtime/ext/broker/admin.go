package broker

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/internal/table"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/host"
	"github.com/agentoslab/agentlab/runtime/ext/internal/wire"
)

// AdminMethods are the broker's owner methods (consent, plugins, the
// catalog, skills, the extension host) over b. Every method admits the
// owner only (root, shell, the runtime's uid): the admin socket closes
// any other peer before a byte, so no app can answer a consent card,
// change a plugin or call a tool from here.
func AdminMethods(b *Broker) []admin.Method {
	const long = 10 * time.Minute
	return []admin.Method{
		admin.Method{Name: "consent.list", Perm: admin.Owner, Summary: "consent mode, pending cards and recent answers", Handle: b.consentList},
		admin.Method{Name: "consent.pending", Perm: admin.Owner, Summary: "pending consent cards, oldest first", Handle: b.consentPending},
		admin.Method{Name: "consent.respond", Perm: admin.Owner, Summary: "answer a consent card by id", Handle: b.consentRespond},
		admin.Method{Name: "consent.mode", Perm: admin.Owner, Summary: "set the auto-answer mode", Handle: b.consentMode},
		admin.Method{Name: "consent.recent", Perm: admin.Owner, Summary: "the last 50 answered cards", Handle: b.consentRecent},
		admin.Method{Name: "consent.inject", Perm: admin.Owner, Summary: "queue a test consent card", Handle: b.consentInject},
		admin.Method{Name: "consent.decision", Perm: admin.Owner, Summary: "how a consent card ended", Handle: b.consentDecision},
		admin.Method{Name: "plugins.list", Perm: admin.Owner, Summary: "installed plugins and their servers", Handle: b.forward(host.OpList)},
		admin.Method{Name: "plugins.enable", Perm: admin.Owner, Summary: "enable a plugin", Handle: b.forward(host.OpEnable)},
		admin.Method{Name: "plugins.disable", Perm: admin.Owner, Summary: "disable a plugin (its calls in flight end unknown)", Handle: b.forward(host.OpDisable)},
		admin.Method{Name: "plugins.tools", Perm: admin.Owner, Summary: "a plugin's known tools", Handle: b.forward(host.OpTools)},
		admin.Method{Name: "plugins.approval", Perm: admin.Owner, Summary: "set always/ask at plugin, server or tool level", Handle: b.forward(host.OpApproval)},
		admin.Method{Name: "plugins.tool_approval", Perm: admin.Owner, Summary: "set always/ask of a tool by final name", Handle: b.forward(host.OpToolApproval)},
		admin.Method{Name: "plugins.tool_enable", Perm: admin.Owner, Summary: "turn a tool on by final name", Handle: b.forward(host.OpToolEnable)},
		admin.Method{Name: "plugins.tool_disable", Perm: admin.Owner, Summary: "turn a tool off by final name", Handle: b.forward(host.OpToolDisable)},
		admin.Method{Name: "plugins.confirm", Perm: admin.Owner, Summary: "accept a plugin's new signer", Handle: b.forward(host.OpConfirm)},
		admin.Method{Name: "plugins.policy", Perm: admin.Owner, Summary: "the approval policy and its health; reset", Handle: b.pluginsPolicy},
		admin.Method{Name: "plugins.diag", Perm: admin.Owner, Summary: "extension host diagnostics", Handle: b.pluginsDiag},
		admin.Method{Name: "plugins.rescan", Perm: admin.Owner, Summary: "read the installed plugins again", Handle: b.forward(host.OpRescan)},
		admin.Method{Name: "catalog", Perm: admin.Owner, Summary: "the tool catalog as the runtime sees it; wait for a tool", Timeout: long, Handle: b.catalogShow},
		admin.Method{Name: "skills", Perm: admin.Owner, Summary: "the skills catalog and skill problems", Handle: b.forward(host.OpSkills)},
		admin.Method{Name: "skill", Perm: admin.Owner, Summary: "read a skill file as read_skill does", Handle: b.skillRead},
		admin.Method{Name: "ext.call", Perm: admin.Owner, Summary: "call a plugin tool without consent (debug)", Timeout: long, Handle: b.extCall},
		admin.Method{Name: "ext.kill", Perm: admin.Owner, Summary: "kill the extension host (it is restarted)", Handle: b.extKill},
		admin.Method{Name: "ext.restart", Perm: admin.Owner, Summary: "restart the extension host now", Handle: b.extRestart},
		admin.Method{Name: "ext.status", Perm: admin.Owner, Summary: "the extension host as serve sees it", Handle: b.extStatus},
	}
}

// CtlVerbs are the broker's `agentosd ctl` verbs (consent, plugins,
// catalog, skills, skill, ext).
func CtlVerbs() []admin.Verb {
	return []admin.Verb{
		admin.Verb{Group: "consent", Name: "list", Method: "consent.list", Summary: "consent mode, pending cards, recent answers"},
		admin.Verb{Group: "consent", Name: "pending", Method: "consent.pending", Summary: "pending consent cards", Text: printPending},
		admin.Verb{Group: "consent", Name: "respond", Method: "consent.respond", Args: "ID CHOICE",
			Summary: "answer a card: ALLOW_ONCE, ALLOW_FOR_SESSION, ALWAYS_ALLOW or DENY", Params: respondParams},
		admin.Verb{Group: "consent", Name: "mode", Method: "consent.mode", Args: "allow|allow-once|deny|off", Summary: "auto-answer consent cards (tests)", Params: modeParams},
		admin.Verb{Group: "consent", Name: "recent", Method: "consent.recent", Summary: "the last answered cards"},
		admin.Verb{Group: "consent", Name: "inject", Method: "consent.inject", Args: "[--risk R] [--tool T] [--args JSON] [--plugin P] [--server S] [--caller app|desktop|self] [--pkg P] [--timeout-ms N] [--remember=false]",
			Summary: "queue a test card", Params: injectParams},
		admin.Verb{Group: "consent", Name: "decision", Method: "consent.decision", Args: "ID", Summary: "how a card ended", Params: idParam("id")},
		admin.Verb{Group: "plugins", Name: "list", Method: "plugins.list", Summary: "installed plugins", Text: printPlugins},
		admin.Verb{Group: "plugins", Name: "enable", Method: "plugins.enable", Args: "ID", Summary: "enable a plugin", Params: idParam("id")},
		admin.Verb{Group: "plugins", Name: "disable", Method: "plugins.disable", Args: "ID", Summary: "disable a plugin", Params: idParam("id")},
		admin.Verb{Group: "plugins", Name: "tools", Method: "plugins.tools", Args: "ID", Summary: "a plugin's known tools", Params: idParam("id")},
		admin.Verb{Group: "plugins", Name: "approval", Method: "plugins.approval", Args: "PLUGIN [SERVER [TOOL]] always|ask|clear",
			Summary: "set the approval of a plugin, server or tool", Params: approvalParams},
		admin.Verb{Group: "plugins", Name: "tool-approval", Method: "plugins.tool_approval", Args: "NAME always|ask", Summary: "set a tool's approval by final name", Params: toolApprovalParams},
		admin.Verb{Group: "plugins", Name: "tool-enable", Method: "plugins.tool_enable", Args: "NAME", Summary: "turn a tool on", Params: idParam("name")},
		admin.Verb{Group: "plugins", Name: "tool-disable", Method: "plugins.tool_disable", Args: "NAME", Summary: "turn a tool off", Params: idParam("name")},
		admin.Verb{Group: "plugins", Name: "confirm", Method: "plugins.confirm", Args: "ID", Summary: "accept a plugin's new signer", Params: idParam("id")},
		admin.Verb{Group: "plugins", Name: "policy", Method: "plugins.policy", Args: "[reset]", Summary: "show (or reset) the approval policy", Params: policyParams},
		admin.Verb{Group: "plugins", Name: "diag", Method: "plugins.diag", Summary: "extension host diagnostics"},
		admin.Verb{Group: "plugins", Name: "rescan", Method: "plugins.rescan", Summary: "read the installed plugins again"},
		admin.Verb{Name: "catalog", Method: "catalog", Args: "[--wait NAME [--absent] [--timeout D]]", Summary: "the tool catalog; wait for a tool",
			Params: catalogParams, Finish: finishCatalog},
		admin.Verb{Name: "skills", Method: "skills", Summary: "skills and skill problems"},
		admin.Verb{Name: "skill", Method: "skill", Args: "NAME [PATH]", Summary: "read a skill file", Params: skillParams, Finish: finishSkill},
		admin.Verb{Group: "ext", Name: "call", Method: "ext.call", Args: "NAME JSON [--timeout-ms N] [--cancel-after-ms N] [--disable-after-ms N]",
			Summary: "call a plugin tool without consent (debug)", Params: extCallParams},
		admin.Verb{Group: "ext", Name: "kill", Method: "ext.kill", Summary: "kill the extension host"},
		admin.Verb{Group: "ext", Name: "restart", Method: "ext.restart", Summary: "restart the extension host"},
		admin.Verb{Group: "ext", Name: "status", Method: "ext.status", Summary: "the extension host's state"},
	}
}

// forward sends an owner operation to the extension host as it came.
func (b *Broker) forward(op string) admin.Handler {
	return func(ctx context.Context, c *admin.Call) (any, error) {
		var res json.RawMessage
		if err := b.adminOp(ctx, op, c.Params, &res); err != nil {
			return nil, err
		}
		if len(res) == 0 {
			return struct{}{}, nil
		}
		return res, nil
	}
}

func (b *Broker) consentList(_ context.Context, c *admin.Call) (any, error) {
	co := b.Consent()
	return map[string]any{"mode": co.Mode(), "pending": co.Pending(), "recent": co.Recent()}, nil
}

func (b *Broker) consentPending(_ context.Context, c *admin.Call) (any, error) {
	return b.Consent().Pending(), nil
}

func (b *Broker) consentRespond(_ context.Context, c *admin.Call) (any, error) {
	var p struct {
		ID     string `json:"id"`
		Choice string `json:"choice"`
	}
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	return map[string]any{"accepted": b.Consent().Respond(p.ID, consent.Choice(p.Choice))}, nil
}

func (b *Broker) consentMode(_ context.Context, c *admin.Call) (any, error) {
	var p struct {
		Mode string `json:"mode"`
	}
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	m, ok := consent.ParseAutoMode(p.Mode)
	if !ok {
		return nil, errcode.New(errcode.InvalidParams, "mode must be allow, allowOnce, deny or off").WithDetails(map[string]any{"reason": "bad_mode"})
	}
	b.Consent().SetMode(m)
	return map[string]any{"mode": m}, nil
}

func (b *Broker) consentRecent(_ context.Context, c *admin.Call) (any, error) {
	return b.Consent().Recent(), nil
}

// InjectParams is `consent inject` (consent_surface_check's cards).
type InjectParams struct {
	Risk      string          `json:"risk"`
	Tool      string          `json:"tool"`
	Args      json.RawMessage `json:"args"`
	Plugin    string          `json:"plugin"`
	Server    string          `json:"server"`
	Caller    string          `json:"caller"`
	Package   string          `json:"pkg"`
	TimeoutMs int64           `json:"timeoutMs"`
	Remember  *bool           `json:"remember"`
}

func (b *Broker) consentInject(_ context.Context, c *admin.Call) (any, error) {
	var p InjectParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if p.Risk == "" {
		p.Risk = "WRITE"
	}
	risk, err := catalog.ParseRisk(strings.ToUpper(p.Risk))
	if err != nil {
		return nil, err
	}
	if p.Tool == "" {
		p.Tool = "test_tool"
	}
	var src *catalog.ToolID
	if p.Plugin != "" && p.Server != "" {
		src = &catalog.ToolID{Plugin: p.Plugin, Server: p.Server, Tool: p.Tool}
	}
	kind := consent.CallerSelf
	switch strings.ToLower(p.Caller) {
	case "", "self":
	case "app":
		kind = consent.CallerApp
	case "desktop":
		kind = consent.CallerDesktop
	default:
		return nil, errcode.New(errcode.InvalidParams, "caller must be app, desktop or self")
	}
	remember := p.Remember == nil || *p.Remember
	if len(p.Args) == 0 {
		p.Args = json.RawMessage(`{}`)
	}
	r := consent.Request{
		Caller:   consent.Initiator{Kind: kind, Package: p.Package, Label: p.Package},
		ToolName: p.Tool, Source: src, Arguments: p.Args, Risk: risk,
		Options: consent.Options(consent.Offer{Risk: risk, Rememberable: remember, Source: src, WritebackAvailable: true, AlwaysAllowOffered: true}),
		Timeout: time.Duration(p.TimeoutMs) * time.Millisecond,
	}
	id, out, ok := b.Consent().Post(r)
	if !ok {
		return map[string]any{"requestId": id, "decision": out.Decision()}, nil
	}
	return map[string]any{"requestId": id}, nil
}

func (b *Broker) consentDecision(_ context.Context, c *admin.Call) (any, error) {
	var p struct {
		ID string `json:"id"`
	}
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	return map[string]any{"decision": b.Consent().Decision(p.ID)}, nil
}

func (b *Broker) pluginsPolicy(ctx context.Context, c *admin.Call) (any, error) {
	var p struct {
		Reset bool `json:"reset"`
	}
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if p.Reset {
		if err := b.adminOp(ctx, host.OpPolicyReset, struct{}{}, nil); err != nil {
			return nil, err
		}
	}
	var res json.RawMessage
	if err := b.adminOp(ctx, host.OpPolicy, struct{}{}, &res); err != nil {
		return nil, err
	}
	return res, nil
}

func (b *Broker) pluginsDiag(ctx context.Context, c *admin.Call) (any, error) {
	out := map[string]any{"serve": b.Status()}
	var res json.RawMessage
	if err := b.adminOp(ctx, host.OpDiag, struct{}{}, &res); err != nil {
		out["ext"] = map[string]any{"error": errcode.From(err).Message()}
	} else {
		out["ext"] = res
	}
	return out, nil
}

// CatalogView is `catalog`.
type CatalogView struct {
	Met     *bool           `json:"met,omitempty"`
	Version uint64          `json:"version"`
	Health  wire.Health     `json:"health"`
	Tools   []catalog.Entry `json:"tools"`
}

func (b *Broker) catalogShow(ctx context.Context, c *admin.Call) (any, error) {
	var p struct {
		Wait      string `json:"wait"`
		Absent    bool   `json:"absent"`
		TimeoutMs int64  `json:"timeoutMs"`
	}
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	var v CatalogView
	if p.Wait != "" {
		timeout := time.Duration(p.TimeoutMs) * time.Millisecond
		if timeout <= 0 {
			timeout = 10 * time.Second
		}
		wctx, cancel := context.WithTimeout(ctx, timeout)
		met := b.WaitCatalog(wctx, p.Wait, p.Absent)
		cancel()
		v.Met = &met
	}
	b.mu.Lock()
	v.Version, v.Health, v.Tools = b.version, b.health, b.cat.All()
	b.mu.Unlock()
	if v.Tools == nil {
		v.Tools = []catalog.Entry{}
	}
	return v, nil
}

// SkillView is `skill`: what read_skill would return.
type SkillView struct {
	Text    string `json:"text"`
	IsError bool   `json:"isError"`
	Code    string `json:"code,omitempty"`
}

func (b *Broker) skillRead(ctx context.Context, c *admin.Call) (any, error) {
	var p struct {
		Name string `json:"name"`
		Path string `json:"path"`
	}
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	args, _ := json.Marshal(map[string]string{"name": p.Name, "path": p.Path})
	if p.Path == "" {
		args, _ = json.Marshal(map[string]string{"name": p.Name})
	}
	r := b.readSkill(ctx, args)
	return SkillView{Text: r.Text, IsError: r.IsError, Code: r.Code}, nil
}

// ExtCallParams is `ext call` (the ExtensionDebugReceiver's call).
type ExtCallParams struct {
	Name           string          `json:"name"`
	Arguments      json.RawMessage `json:"arguments"`
	TimeoutMs      int64           `json:"timeoutMs"`
	CancelAfterMs  int64           `json:"cancelAfterMs"`
	DisableAfterMs int64           `json:"disableAfterMs"`
}

// ExtCallResult is what `ext call` reports.
type ExtCallResult struct {
	Accepted   bool            `json:"accepted"`
	Outcome    string          `json:"outcome"`
	Code       string          `json:"code,omitempty"`
	Text       string          `json:"text"`
	IsError    bool            `json:"isError"`
	Structured json.RawMessage `json:"structured,omitempty"`
	// ProviderPID is the provider process that answered.
	ProviderPID int            `json:"providerPid,omitempty"`
	ElapsedMs   int64          `json:"elapsedMs"`
	Details     map[string]any `json:"details,omitempty"`
}

// CallDirect calls a plugin tool by final name without consent (the
// owner's debug call): timeouts, cancellation after a delay and
// disabling the plugin after a delay are for the fault cases.
func (b *Broker) CallDirect(ctx context.Context, p ExtCallParams) ExtCallResult {
	cat, _ := b.mirror()
	e, ok := cat.ByName(p.Name)
	if !ok || e.Kind != catalog.KindPlugin || !e.Enabled {
		r := toolError(errcode.ToolNotInCatalog, catalog.NotAvailable(p.Name).Text, engine.OutcomeRejected)
		return ExtCallResult{Accepted: false, Outcome: r.Outcome, Code: r.Code, Text: r.Text, IsError: true}
	}
	timeout := b.o.CallTimeout
	if p.TimeoutMs > 0 {
		timeout = time.Duration(p.TimeoutMs) * time.Millisecond
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if p.CancelAfterMs > 0 {
		t := time.AfterFunc(time.Duration(p.CancelAfterMs)*time.Millisecond, cancel)
		defer t.Stop()
	}
	if p.DisableAfterMs > 0 {
		done := make(chan struct{})
		defer func() { <-done }()
		t := time.AfterFunc(time.Duration(p.DisableAfterMs)*time.Millisecond, func() {
			defer close(done)
			dctx, dcancel := context.WithTimeout(context.WithoutCancel(ctx), adminTimeout)
			defer dcancel()
			if err := b.adminOp(dctx, host.OpDisable, map[string]string{"id": e.PluginID}, nil); err != nil {
				b.o.Logger.Warn("broker: disable during call failed", "code", errcode.CodeOf(err))
			}
		})
		defer func() {
			if t.Stop() {
				close(done)
			}
		}()
	}
	start := time.Now()
	args := p.Arguments
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	r, raw := b.callExt(ctx, wire.CallParams{Name: e.Name, Source: e.Source, Arguments: args}, timeout)
	out := ExtCallResult{Accepted: true, Outcome: r.Outcome, Code: r.Code, Text: r.Text, IsError: r.IsError,
		ElapsedMs: time.Since(start).Milliseconds(), Details: r.Details}
	if raw != nil {
		out.Structured, out.ProviderPID = raw.Structured, raw.ProviderPID
	}
	return out
}

func (b *Broker) extCall(ctx context.Context, c *admin.Call) (any, error) {
	var p ExtCallParams
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	return b.CallDirect(ctx, p), nil
}

func (b *Broker) extKill(_ context.Context, c *admin.Call) (any, error) {
	pid, ok := b.KillExt()
	return map[string]any{"killed": ok, "pid": pid}, nil
}

// extRestartWait bounds how long ext.restart waits for the new host.
const extRestartWait = 30 * time.Second

// extRestart answers once the new extension host is connected and its
// catalog is serve's: what an owner means by "restart", and what lets the
// next command (a call, a catalog read) see the new host, not the old one
// or none.
func (b *Broker) extRestart(ctx context.Context, c *admin.Call) (any, error) {
	links := b.Status().LinkConnects
	pid, ok := b.RestartExt()
	ctx, cancel := context.WithTimeout(ctx, extRestartWait)
	defer cancel()
	if !b.waitNewLink(ctx, links) {
		return nil, errcode.New(errcode.Busy, "the extension host was restarted but did not come back in time; see `agentosd ctl ext status`").
			WithDetails(map[string]any{"reason": "ext_down"})
	}
	return map[string]any{"killed": ok, "pid": pid, "newPid": b.Status().PID}, nil
}

func (b *Broker) extStatus(_ context.Context, c *admin.Call) (any, error) {
	return b.Status(), nil
}

// ctl argument parsers.

func idParam(key string) func([]string, io.Reader) (any, error) {
	return func(args []string, _ io.Reader) (any, error) {
		if len(args) != 1 {
			return nil, admin.Usagef("expected one argument")
		}
		return map[string]string{key: args[0]}, nil
	}
}

func respondParams(args []string, _ io.Reader) (any, error) {
	if len(args) != 2 {
		return nil, admin.Usagef("expected ID and CHOICE")
	}
	return map[string]string{"id": args[0], "choice": strings.ToUpper(args[1])}, nil
}

func modeParams(args []string, _ io.Reader) (any, error) {
	if len(args) != 1 {
		return nil, admin.Usagef("expected a mode")
	}
	return map[string]string{"mode": args[0]}, nil
}

func injectParams(args []string, _ io.Reader) (any, error) {
	fs := flag.NewFlagSet("inject", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var p InjectParams
	var argsJSON string
	remember := fs.Bool("remember", true, "offer ALLOW_FOR_SESSION")
	fs.StringVar(&p.Risk, "risk", "WRITE", "READ, WRITE or HIGH")
	fs.StringVar(&p.Tool, "tool", "test_tool", "tool name")
	fs.StringVar(&argsJSON, "args", "{}", "arguments (JSON)")
	fs.StringVar(&p.Plugin, "plugin", "", "source plugin")
	fs.StringVar(&p.Server, "server", "", "source server")
	fs.StringVar(&p.Caller, "caller", "self", "app, desktop or self")
	fs.StringVar(&p.Package, "pkg", "", "caller package")
	fs.Int64Var(&p.TimeoutMs, "timeout-ms", 0, "card timeout")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return nil, admin.Usagef("bad flags")
	}
	if !json.Valid([]byte(argsJSON)) {
		return nil, admin.Usagef("--args must be JSON")
	}
	p.Args = json.RawMessage(argsJSON)
	p.Remember = remember
	return p, nil
}

func approvalParams(args []string, _ io.Reader) (any, error) {
	if len(args) < 2 || len(args) > 4 {
		return nil, admin.Usagef("expected PLUGIN [SERVER [TOOL]] MODE")
	}
	mode := args[len(args)-1]
	if mode == "clear" {
		mode = ""
	}
	p := map[string]string{"plugin": args[0], "mode": mode}
	if len(args) > 2 {
		p["server"] = args[1]
	}
	if len(args) > 3 {
		p["tool"] = args[2]
	}
	return p, nil
}

func toolApprovalParams(args []string, _ io.Reader) (any, error) {
	if len(args) != 2 {
		return nil, admin.Usagef("expected NAME MODE")
	}
	return map[string]string{"name": args[0], "mode": args[1]}, nil
}

func policyParams(args []string, _ io.Reader) (any, error) {
	switch {
	case len(args) == 0:
		return map[string]bool{}, nil
	case len(args) == 1 && args[0] == "reset":
		return map[string]bool{"reset": true}, nil
	}
	return nil, admin.Usagef("expected nothing or reset")
}

func catalogParams(args []string, _ io.Reader) (any, error) {
	fs := flag.NewFlagSet("catalog", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	wait := fs.String("wait", "", "final tool name to wait for")
	absent := fs.Bool("absent", false, "wait until the tool is gone")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return nil, admin.Usagef("bad flags")
	}
	p := map[string]any{"wait": *wait, "absent": *absent, "timeoutMs": timeout.Milliseconds()}
	return admin.TimeoutParams{Params: p, Timeout: *timeout + 30*time.Second}, nil
}

func finishCatalog(res json.RawMessage, asJSON bool, stdout, stderr io.Writer) int {
	var v CatalogView
	if err := json.Unmarshal(res, &v); err != nil {
		fmt.Fprintln(stderr, "agentosd ctl catalog: bad result")
		return admin.ExitFailed
	}
	if asJSON {
		fmt.Fprintf(stdout, "%s\n", res)
	} else {
		var rows [][]string
		for _, t := range v.Tools {
			rows = append(rows, []string{t.Name, string(t.Risk), fmt.Sprint(t.Enabled), string(t.Approval), fmt.Sprint(t.Source)})
		}
		table.Write(stdout, []string{"name", "risk", "enabled", "approval", "source"}, rows)
		if v.Met != nil {
			fmt.Fprintf(stdout, "met: %v\n", *v.Met)
		}
	}
	if v.Met != nil && !*v.Met {
		return admin.ExitFailed
	}
	return admin.ExitOK
}

func skillParams(args []string, _ io.Reader) (any, error) {
	switch len(args) {
	case 1:
		return map[string]string{"name": args[0]}, nil
	case 2:
		return map[string]string{"name": args[0], "path": args[1]}, nil
	}
	return nil, admin.Usagef("expected NAME [PATH]")
}

func finishSkill(res json.RawMessage, asJSON bool, stdout, stderr io.Writer) int {
	var v SkillView
	if err := json.Unmarshal(res, &v); err != nil {
		return admin.ExitFailed
	}
	if asJSON {
		fmt.Fprintf(stdout, "%s\n", res)
	} else if v.IsError {
		fmt.Fprintln(stderr, v.Text)
	} else {
		fmt.Fprintln(stdout, v.Text)
	}
	if v.IsError {
		return admin.ExitFailed
	}
	return admin.ExitOK
}

func extCallParams(args []string, _ io.Reader) (any, error) {
	var pos []string
	p := ExtCallParams{}
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "--") {
			pos = append(pos, a)
			continue
		}
		if i+1 >= len(args) {
			return nil, admin.Usagef("%s needs a value", a)
		}
		n, err := strconv.ParseInt(args[i+1], 10, 64)
		if err != nil || n < 0 {
			return nil, admin.Usagef("%s needs a non-negative number", a)
		}
		i++
		switch a {
		case "--timeout-ms":
			p.TimeoutMs = n
		case "--cancel-after-ms":
			p.CancelAfterMs = n
		case "--disable-after-ms":
			p.DisableAfterMs = n
		default:
			return nil, admin.Usagef("unknown flag %s", a)
		}
	}
	if len(pos) < 1 || len(pos) > 2 {
		return nil, admin.Usagef("expected NAME [JSON]")
	}
	p.Name = pos[0]
	if len(pos) == 2 {
		if !json.Valid([]byte(pos[1])) {
			return nil, admin.Usagef("arguments must be JSON")
		}
		p.Arguments = json.RawMessage(pos[1])
	}
	timeout := 10 * time.Minute
	if p.TimeoutMs > 0 {
		timeout = time.Duration(p.TimeoutMs)*time.Millisecond + 30*time.Second
	}
	return admin.TimeoutParams{Params: p, Timeout: timeout}, nil
}

func printPending(w io.Writer, res json.RawMessage) error {
	var vs []consent.View
	if err := json.Unmarshal(res, &vs); err != nil {
		return err
	}
	var rows [][]string
	for _, v := range vs {
		var opts []string
		for _, o := range v.Options {
			opts = append(opts, string(o.Choice))
		}
		caller := v.CallerKind
		if v.CallerPackage != "" {
			caller += " " + v.CallerPackage
		}
		rows = append(rows, []string{v.RequestID, v.ToolDisplayName, string(v.Risk), caller,
			fmt.Sprintf("%dms", v.RemainingMs), strings.Join(opts, ",")})
	}
	return table.Write(w, []string{"request", "tool", "risk", "caller", "remaining", "options"}, rows)
}

func printPlugins(w io.Writer, res json.RawMessage) error {
	var vs []host.PluginView
	if err := json.Unmarshal(res, &vs); err != nil {
		return err
	}
	var rows [][]string
	for _, v := range vs {
		status := v.Status
		if v.Reason != "" {
			status += " (" + v.Reason + ")"
		}
		var servers []string
		for _, s := range v.Servers {
			servers = append(servers, fmt.Sprintf("%s:%s/%d", s.Name, s.State, s.ToolCount))
		}
		rows = append(rows, []string{v.ID, v.Name, status, fmt.Sprint(v.Enabled), strings.Join(servers, " "), fmt.Sprint(v.SkillCount)})
	}
	return table.Write(w, []string{"id", "name", "status", "enabled", "servers", "skills"}, rows)
}
