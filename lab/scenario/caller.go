package scenario

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/internal/strictyaml"
	"github.com/agentoslab/agentlab/runtime/model/script"
	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
	"github.com/agentoslab/agentlab/sampleapps/acptestclient"
	"gopkg.in/yaml.v3"
)

// The test caller (sampleapps/acptestclient) is the scenarios' generic
// third-party caller: install installs a copy of it under another
// package name, and a caller step drives it with a typed plan that the
// lab encodes to the client's wire form, its JSON operation list.

// InstallStep installs a copy of the test caller under another package
// name (the caller registry and the install registry then see a new
// app).
type InstallStep struct {
	// Caller is the package the copy is installed as.
	Caller string `yaml:"caller"`
	// SharedUserID makes the copy declare this shared user id: copies
	// signed by one key then share one uid.
	SharedUserID string `yaml:"shared_user_id"`
	// Key names a signing key the device keeps across installs (copies
	// that must share a signer); default a fresh key for this install.
	Key string `yaml:"key"`
	// Update installs over the installed copy (an app update: the same
	// package re-signed) instead of removing it and its authorization
	// first.
	Update bool `yaml:"update"`
	// Permissions makes the copy declare these permissions (the test
	// caller declares none), e.g. aci for app capabilities.
	Permissions []string `yaml:"permissions"`
}

// CallerStep runs the test caller (or a copy of it) with a plan; the
// output is the client's result document, {ok, r: {AS: …}, steps}.
type CallerStep struct {
	// App is the caller: the test caller itself (acptestclient, the
	// default) or a copy made by install.
	App string `yaml:"app"`
	// Root runs the client's binary as root (an allowed peer of the
	// desktop socket, like adbd) instead of as the app.
	Root bool `yaml:"root"`
	// Plan are the operations, run in order.
	Plan []PlanOp `yaml:"plan"`
}

// PlanOp is one operation of a caller plan, written as its kind with the
// kind's fields ({prompt: {session: s, text: hi}}), or the kind alone
// when it takes none (connect).
type PlanOp struct {
	// Op is the kind (connect, new, prompt …).
	Op string
	PlanFields
	// written are the fields given, in order.
	written []string
}

// PlanFields are the fields of plan operations; PlanOps says which kind
// takes which. Durations are sent to the client in milliseconds.
type PlanFields struct {
	// As names the operation's result (and the connection, session or
	// prompt it makes).
	As string `yaml:"as"`
	// Conn is a connection: a connect's (or raw_open's) as; default the
	// last one.
	Conn string `yaml:"conn"`
	// Session is a session of the plan (its as) or a session id.
	Session string `yaml:"session"`
	// ID is the session load, resume, fork and delete act on: one of the
	// plan's (its as) or any id.
	ID string `yaml:"id"`
	// MaxWait bounds connect's wait while authorization is pending.
	MaxWait Duration `yaml:"max_wait"`
	// Retry is connect's retry interval while pending.
	Retry         Duration `yaml:"retry"`
	ClientName    string   `yaml:"client_name"`
	ClientVersion string   `yaml:"client_version"`
	// Scope is the session's toolScope: absent means none, [] no tools.
	Scope      *[]ToolRef  `yaml:"scope"`
	MCPServers []MCPServer `yaml:"mcp_servers"`
	Cwd        string      `yaml:"cwd"`
	// Text is a prompt's text (wait_text: the text to wait for).
	Text string `yaml:"text"`
	// Script sends one of the scenario's scripts as the prompt's text.
	Script string `yaml:"script"`
	// Pad fills the text with "x" up to this many characters.
	Pad int `yaml:"pad"`
	// Times sends the prompt this many times, one after another.
	Times int `yaml:"times"`
	// Background starts the prompt and goes on; await waits for it.
	Background bool `yaml:"background"`
	// CancelAfter cancels the prompt this long after sending it.
	CancelAfter Duration `yaml:"cancel_after"`
	// BusyRetry sends the prompt again while the runtime refuses it as
	// busy, for up to this long.
	BusyRetry Duration `yaml:"busy_retry"`
	// DropText leaves a prompt's text out of its result (stream.sha256
	// and stream.chars stand for it), for streams of megabytes.
	DropText bool `yaml:"drop_text"`
	// Prompt is the background prompt await and wait_text wait for.
	Prompt string `yaml:"prompt"`
	Mode   string `yaml:"mode"`
	Model  string `yaml:"model"`
	// Send is one message (a JSON-RPC request, a reply) sent as a line.
	Send *Value `yaml:"send"`
	// Line is sent exactly as written (for what is not a JSON message).
	Line *string `yaml:"line"`
	// Socket is caller, admin, acp, app:PKG/SERVER (a provider's server),
	// aci:PKG/SERVER (a controlled app's ACI service, which dial speaks in
	// ACI frames) or a socket name.
	Socket string `yaml:"socket"`
	// Read bounds how long raw, raw_read and dial read what comes back;
	// for listen, how long it goes on after its last connection.
	Read Duration `yaml:"read"`
	// Timeout bounds wait_closed, await and wait_text.
	Timeout Duration `yaml:"timeout"`
	// For is sleep's pause, listen's longest hold, and how far wait_clock waits the runtime's
	// clock to move.
	For Duration `yaml:"for"`
	// Since is wait_clock's reference: an earlier raw clock.show's as.
	Since string `yaml:"since"`
}

// PlanOps lists every operation kind and the fields it takes.
var PlanOps = map[string][]string{
	acptestclient.OpConnect:    {"as", "max_wait", "retry", "client_name", "client_version"},
	acptestclient.OpDisconnect: {"as", "conn"},
	acptestclient.OpWaitClosed: {"as", "conn", "timeout"},
	acptestclient.OpNew:        {"as", "conn", "scope", "mcp_servers", "cwd"},
	acptestclient.OpFork:       {"as", "conn", "id", "scope", "mcp_servers", "cwd"},
	acptestclient.OpLoad:       {"as", "conn", "id", "mcp_servers", "cwd"},
	acptestclient.OpResume:     {"as", "conn", "id", "mcp_servers", "cwd"},
	acptestclient.OpList:       {"as", "conn", "cwd"},
	acptestclient.OpDelete:     {"as", "conn", "id"},
	acptestclient.OpClose:      {"as", "session"},
	acptestclient.OpSetMode:    {"as", "session", "mode"},
	acptestclient.OpSetModel:   {"as", "session", "model"},
	acptestclient.OpPrompt:     {"as", "session", "text", "script", "pad", "times", "background", "cancel_after", "busy_retry", "drop_text"},
	acptestclient.OpCancel:     {"as", "session"},
	acptestclient.OpAwait:      {"as", "prompt", "timeout"},
	acptestclient.OpWaitText:   {"as", "prompt", "text", "timeout"},
	acptestclient.OpRawOpen:    {"as", "read"},
	acptestclient.OpRawConnect: {"as", "socket"},
	acptestclient.OpRaw:        {"as", "conn", "send", "line", "read"},
	acptestclient.OpRawRead:    {"as", "conn", "read"},
	acptestclient.OpRawClose:   {"as", "conn"},
	acptestclient.OpDial:       {"as", "socket", "send", "line", "read"},
	acptestclient.OpSleep:      {"as", "for"},
	acptestclient.OpWaitClock:  {"as", "conn", "for", "since", "timeout"},
	acptestclient.OpListen:     {"as", "socket", "for", "read"},
}

// planOpNames are PlanOps' kinds in the client's order.
var planOpNames = acptestclient.Ops

// PlanOpRequired are the fields an operation cannot go without.
var PlanOpRequired = map[string][]string{
	acptestclient.OpFork: {"id"}, acptestclient.OpLoad: {"id"}, acptestclient.OpResume: {"id"}, acptestclient.OpDelete: {"id"},
	acptestclient.OpClose: {"session"}, acptestclient.OpSetMode: {"session", "mode"}, acptestclient.OpSetModel: {"session", "model"},
	acptestclient.OpPrompt: {"session"}, acptestclient.OpCancel: {"session"},
	acptestclient.OpAwait: {"prompt"}, acptestclient.OpWaitText: {"prompt", "text"},
	acptestclient.OpRawConnect: {"socket"}, acptestclient.OpDial: {"socket"}, acptestclient.OpSleep: {"for"},
	acptestclient.OpWaitClock: {"for"}, acptestclient.OpListen: {"socket", "for"},
}

var planFieldsType = reflect.TypeFor[PlanFields]()

// decodePlanOp reads "kind", {kind: {fields}} or, for sleep, {sleep: DURATION}.
func decodePlanOp(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	op := v.Addr().Interface().(*PlanOp)
	var kindNode, fields *yaml.Node
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str":
		kindNode = n
	case n.Kind == yaml.MappingNode && len(n.Content) == 2:
		kindNode, fields = n.Content[0], n.Content[1]
	default:
		d.Addf(n, path, "want an operation: its kind alone (connect) or the kind with its fields ({new: {as: s}}), got %s", describe(n))
		return
	}
	kind := kindNode.Value
	allowed, ok := PlanOps[kind]
	if !ok {
		d.Addf(kindNode, path, "%s", unknownIn(fmt.Sprintf("unknown operation %q", kind), kind, planOpNames))
		return
	}
	op.Op = kind
	kp := join(path, kind)
	d.Record(kp, kindNode)
	switch {
	case fields == nil || strictyaml.IsNull(fields):
	case kind == acptestclient.OpSleep && fields.Kind == yaml.ScalarNode:
		// sleep: 500ms, like the sleep step.
		if x, ok := parseDuration(d, fields, kp); ok {
			op.For = Duration(x)
			op.written = []string{"for"}
		}
	case fields.Kind != yaml.MappingNode:
		d.Addf(fields, kp, "want the operation's fields (%s), got %s", strings.Join(allowed, ", "), describe(fields))
	default:
		// Only the kind's own fields: another kind's field is a problem
		// here, and is left out of the decoding.
		own := *fields
		own.Content = nil
		for i := 0; i+1 < len(fields.Content); i += 2 {
			k := fields.Content[i]
			if _, known := strictyaml.FieldIndex(planFieldsType, k.Value); known && !slices.Contains(allowed, k.Value) {
				d.Addf(k, join(kp, k.Value), "%s", unknownIn(fmt.Sprintf("%s takes no %s", kind, k.Value), k.Value, allowed))
				continue
			}
			own.Content = append(own.Content, k, fields.Content[i+1])
			op.written = append(op.written, k.Value)
		}
		d.DecodeStruct(&own, reflect.ValueOf(&op.PlanFields).Elem(), kp)
	}
}

// Expander resolves what a plan refers to when it is encoded: ${…} in
// strings and in send's values, and a named script's prompt text.
type Expander struct {
	String func(string) (string, error)
	Value  func(any) (any, error)
	Script func(name string) (string, error)
}

// LookupExpander expands references with look and scripts with the
// scenario's, for running a plan; the client's own ${r:…}, ${pad:…},
// ${secret:…} and ${wrong:…} are left to it.
func (s *Scenario) LookupExpander(look Lookup) Expander {
	return Expander{
		String: func(x string) (string, error) { return ExpandString(escapeClientRefs(x), look) },
		Value:  func(x any) (any, error) { return ExpandText(escapeClientRefsIn(x), look) },
		Script: func(name string) (string, error) { return s.ScriptText(name, look) },
	}
}

// encode turns one operation into the client's wire form.
func (op *PlanOp) encode(x Expander) (acptestclient.Op, error) {
	var err error
	str := func(s string) string {
		if err != nil || s == "" {
			return s
		}
		var out string
		out, err = x.String(s)
		return out
	}
	w := acptestclient.Op{Op: op.Op, As: op.As, Conn: str(op.Conn), Session: str(op.Session), ID: str(op.ID),
		MaxWaitMs: ms(op.MaxWait), RetryMs: ms(op.Retry), ClientName: str(op.ClientName), ClientVersion: str(op.ClientVersion),
		Cwd: str(op.Cwd), Text: str(op.Text), Pad: op.Pad, Times: op.Times, Background: op.Background,
		CancelAfterMs: ms(op.CancelAfter), BusyRetryMs: ms(op.BusyRetry), DropText: op.DropText, Prompt: op.Prompt, Mode: str(op.Mode), Model: str(op.Model),
		Socket: str(op.Socket), ReadMs: ms(op.Read), TimeoutMs: ms(op.Timeout), Ms: ms(op.For), Since: op.Since}
	if op.Scope != nil {
		scope := make([]acpclient.ToolRef, len(*op.Scope))
		for i, t := range *op.Scope {
			scope[i] = acpclient.ToolRef{Plugin: str(t.Plugin), Tool: str(t.Tool)}
		}
		w.Scope = &scope
	}
	for _, m := range op.MCPServers {
		s := acptestclient.Server{Name: str(m.Name), URL: str(m.URL)}
		for _, h := range m.Headers {
			s.Headers = append(s.Headers, acptestclient.Header{Name: str(h.Name), Value: str(h.Value)})
		}
		w.MCPServers = append(w.MCPServers, s)
	}
	if op.Line != nil {
		line := str(*op.Line)
		w.Line = &line
	}
	if err != nil {
		return w, err
	}
	if op.Script != "" {
		if w.Text, err = x.Script(op.Script); err != nil {
			return w, err
		}
	}
	if op.Send != nil {
		v, err := x.Value(op.Send.V)
		if err != nil {
			return w, err
		}
		b, err := marshalCompact(v)
		if err != nil {
			return w, err
		}
		if op.Op == acptestclient.OpDial {
			// dial takes a line; send is the lab's way to write one as YAML.
			line := string(b)
			w.Line = &line
		} else {
			w.Send = b
		}
	}
	return w, nil
}

func ms(d Duration) int { return int(time.Duration(d) / time.Millisecond) }

// clientRefs are the ${…} forms the test caller substitutes itself.
var clientRefs = []string{"${r:", "${pad:", "${secret:", "${wrong:"}

// escapeClientRefs keeps the client's own ${…} forms from the lab's
// expansion.
func escapeClientRefs(s string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	for _, r := range clientRefs {
		s = strings.ReplaceAll(s, r, "$"+r)
	}
	// "$$${r:" would be a literal "$" followed by the reference: undo the
	// doubling where the author already escaped it.
	for _, r := range clientRefs {
		s = strings.ReplaceAll(s, "$$$"+r[1:], "$$"+r[1:])
	}
	return s
}

func escapeClientRefsIn(v any) any {
	switch t := v.(type) {
	case string:
		return escapeClientRefs(t)
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = escapeClientRefsIn(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			out[k] = escapeClientRefsIn(e)
		}
		return out
	}
	return v
}

func marshalCompact(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(strings.TrimSuffix(b.String(), "\n")), nil
}

// MaxArg is the most bytes of one argument of an app's command (the
// launcher refuses longer ones); MaxArgs the most arguments.
const (
	MaxArg  = 4096
	MaxArgs = 64
)

// EncodePlan encodes the step's plan into the arguments of the client's
// run command (without "run"): JSON arrays of operations, each argument
// at most MaxArg bytes.
func (c *CallerStep) EncodePlan(x Expander) ([]string, error) {
	var args []string
	var cur []json.RawMessage
	size := 2
	flush := func() {
		if len(cur) == 0 {
			return
		}
		b, _ := json.Marshal(cur)
		args = append(args, string(b))
		cur, size = nil, 2
	}
	for i := range c.Plan {
		w, err := c.Plan[i].encode(x)
		if err != nil {
			return nil, fmt.Errorf("plan[%d] %s: %w", i, c.Plan[i].Op, err)
		}
		b, err := marshalCompact(w)
		if err != nil {
			return nil, err
		}
		if len(b)+2 > MaxArg {
			return nil, fmt.Errorf("plan[%d] %s encodes to %d bytes, more than one argument holds (%d)", i, c.Plan[i].Op, len(b), MaxArg-2)
		}
		if size+len(b)+1 > MaxArg {
			flush()
		}
		cur = append(cur, b)
		size += len(b) + 1
	}
	flush()
	if len(args)+1 > MaxArgs {
		return nil, fmt.Errorf("the plan needs %d arguments, more than a command takes (%d)", len(args), MaxArgs-1)
	}
	return args, nil
}

// IncludeStep names a fragment whose steps replace it, and the values
// of the fragment's params.
type IncludeStep struct {
	// Fragment is NAME of NAME.fragment.yaml, found in the scenario's
	// folder or the folder above it.
	Fragment string `yaml:"fragment"`
	// With gives every param the fragment declares.
	With map[string]string `yaml:"with"`
}

var (
	keyNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)
	// planErrRE finds the operation a client's plan error is about.
	planErrRE = regexp.MustCompile(`operation (\d+) `)
	planOpRE  = regexp.MustCompile(`^operation \d+ \([a-z_]+\): `)
)

// TestCaller is the test caller's own package.
const TestCaller = acptestclient.Package

// isTestCaller reports whether app is the test caller or a copy an
// earlier install step made.
func (v *validator) isTestCaller(app string) bool {
	pkg, _ := PackageOf(app)
	return pkg == TestCaller || v.installed[pkg]
}

func (v *validator) install(in *InstallStep, kp string) {
	switch pkg, _ := PackageOf(in.Caller); {
	case in.Caller == "":
		v.errf(kp, "install.caller is required: the package the copy of the test caller is installed as")
	case !packageRE.MatchString(in.Caller):
		v.errf(join(kp, "caller"), "%q: want a package name (org.example.app)", clip(in.Caller, 40))
	case AppName(pkg) != pkg:
		v.errf(join(kp, "caller"), "%s is the sample app %s: install a copy of the test caller under a package of its own", in.Caller, AppName(pkg))
	default:
		v.installed[in.Caller] = true
	}
	if in.SharedUserID != "" && !packageRE.MatchString(in.SharedUserID) {
		v.errf(join(kp, "shared_user_id"), "%q: want a name like a package (org.example.shared)", clip(in.SharedUserID, 40))
	}
	if in.Key != "" && !keyNameRE.MatchString(in.Key) {
		v.errf(join(kp, "key"), "%q: want a lower-case name ([a-z0-9][a-z0-9_-]*)", clip(in.Key, 40))
	}
	for i, p := range in.Permissions {
		// The names go into the device's sed expression: letters, digits, _ and . only.
		if !keyNameRE.MatchString(p) || strings.ContainsAny(p, "-") {
			v.errf(join(kp, fmt.Sprintf("permissions[%d]", i)), "%q: want a lower-case name ([a-z0-9][a-z0-9_]*)", clip(p, 40))
		}
	}
}

func (v *validator) caller(c *CallerStep, kp string) {
	switch {
	case c.Root && c.App != "":
		v.errf(join(kp, "root"), "root runs the test caller's own binary as root: drop app")
	case c.App != "":
		if _, ok := PackageOf(c.App); !ok {
			v.app(join(kp, "app"), c.App)
		} else if !v.isTestCaller(c.App) {
			v.errf(join(kp, "app"), "%s is neither the test caller (acptestclient) nor a copy an earlier install step made", clip(c.App, 60))
		}
	}
	pp := join(kp, "plan")
	if len(c.Plan) == 0 {
		v.errf(pp, "a plan needs at least one operation (connect, new, prompt …)")
		return
	}
	if len(c.Plan) > acptestclient.MaxOps {
		v.errf(pp, "more than %d operations", acptestclient.MaxOps)
	}
	good := true
	for i := range c.Plan {
		if !v.planOp(&c.Plan[i], index(pp, i)) {
			good = false
		}
	}
	if !good {
		return
	}
	// What the client itself checks (names, bounds), on the plan as the
	// lab would send it, with every reference standing for a word.
	args, err := c.EncodePlan(stubExpander(v.s))
	if err == nil {
		_, err = acptestclient.ParsePlan(args)
	}
	if err != nil {
		at := pp
		if m := planErrRE.FindStringSubmatch(err.Error()); m != nil {
			if n, _ := strconv.Atoi(m[1]); n >= 1 && n <= len(c.Plan) {
				at = join(index(pp, n-1), c.Plan[n-1].Op)
			}
		}
		msg := strings.TrimPrefix(err.Error(), acptestclient.ErrPlan.Error()+": ")
		v.errf(at, "%s", planOpRE.ReplaceAllString(msg, ""))
	}
}

// planOp checks one operation; false when it is wrong.
func (v *validator) planOp(op *PlanOp, path string) bool {
	if op.Op == "" {
		return false // reported by the decoder
	}
	kp := join(path, op.Op)
	if v.d.HasProblem(kp) || v.hasProblemUnder(kp) {
		return false
	}
	before := len(v.d.Problems())
	for _, f := range PlanOpRequired[op.Op] {
		if !slices.Contains(op.written, f) {
			v.errf(kp, "%s needs %s", op.Op, f)
		}
	}
	if op.Text != "" && op.Script != "" {
		v.errf(join(kp, "script"), "want text or script, not both")
	}
	if op.Script != "" {
		v.scriptUse(join(kp, "script"), op.Script)
	}
	switch {
	case op.Op == acptestclient.OpRaw && (op.Send == nil) == (op.Line == nil):
		v.errf(kp, "raw needs exactly one of send and line")
	case op.Op == acptestclient.OpDial && op.Send != nil && op.Line != nil:
		v.errf(kp, "dial takes send or line, not both")
	}
	for _, f := range []struct {
		key string
		d   Duration
	}{{"max_wait", op.MaxWait}, {"retry", op.Retry}, {"cancel_after", op.CancelAfter}, {"busy_retry", op.BusyRetry},
		{"read", op.Read}, {"timeout", op.Timeout}, {"for", op.For}} {
		if f.d.D()%time.Millisecond != 0 {
			v.errf(join(kp, f.key), "the client counts in milliseconds: %s is not a whole number of them", f.d)
		}
	}
	for _, f := range []struct {
		key, s string
	}{{"conn", op.Conn}, {"session", op.Session}, {"id", op.ID}, {"client_name", op.ClientName}, {"client_version", op.ClientVersion},
		{"cwd", op.Cwd}, {"text", op.Text}, {"mode", op.Mode}, {"model", op.Model}, {"socket", op.Socket}} {
		v.refs(join(kp, f.key), escapeClientRefs(f.s))
	}
	if op.Line != nil {
		v.refs(join(kp, "line"), escapeClientRefs(*op.Line))
	}
	if op.Send != nil {
		v.refsAny(join(kp, "send"), escapeClientRefsIn(op.Send.V))
	}
	return len(v.d.Problems()) == before
}

func (v *validator) hasProblemUnder(path string) bool {
	for _, p := range v.d.Problems() {
		if strings.HasPrefix(p.Path, path+".") {
			return true
		}
	}
	return false
}

// stubExpander encodes a plan for validation: every reference to the
// attempt stands for a word.
func stubExpander(s *Scenario) Expander {
	return Expander{
		String: func(x string) (string, error) { return stubString(escapeClientRefs(x)), nil },
		Value: func(x any) (any, error) {
			return mapStrings(escapeClientRefsIn(x), stubString), nil
		},
		Script: func(name string) (string, error) {
			sc := s.Scripts[name]
			if sc == nil {
				return "", fmt.Errorf("no script %q", name)
			}
			b, err := yaml.Marshal(mapStrings(escapeScriptRefs(sc.Doc), stubString))
			return script.Header + "\n" + string(b), err
		},
	}
}
