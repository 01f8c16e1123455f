package scenario

import (
	"slices"
	"strconv"
	"time"

	"github.com/agentoslab/agentlab/internal/strictyaml"
	"github.com/agentoslab/agentlab/runtime/model/script"
	"gopkg.in/yaml.v3"
)

// Scenario is one parsed and validated scenario file.
type Scenario struct {
	// Name is [a-z0-9][a-z0-9._/-]{0,127}, unique in a suite.
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Tags        []string `yaml:"tags"`
	// Upstream names the upstream suite and case this scenario ports
	// ("third_party.py/revoke-closes").
	Upstream string `yaml:"upstream"`
	// Devices is how many devices the scenario runs on, or their roles.
	Devices Devices `yaml:"devices"`
	Needs   Needs   `yaml:"needs"`
	// Timeout bounds one attempt; zero means the lab's default.
	Timeout Duration `yaml:"timeout"`
	// Attempts is this scenario's most attempts (1 = never retried);
	// zero means the lab's default.
	Attempts int `yaml:"attempts"`
	// ConsentDriver is how the lab answers consent and authorization
	// cards: admin (ctl on the admin socket, the default) or ui (the
	// owner's web console in headless Chromium, tapping like a person).
	// A run's --consent-driver overrides it.
	ConsentDriver string `yaml:"consent_driver"`
	// Vars are strings steps and checks refer to as ${vars.NAME}.
	Vars map[string]string `yaml:"vars"`
	// Model is what the model answers; nil means the stub echoes.
	Model *Model `yaml:"model"`
	// Scripts are model scripts by name, for model: {script: NAME} and
	// for the prompts of prompt and caller steps (script: NAME).
	Scripts map[string]*Script `yaml:"scripts"`
	// Setup runs first; a failing setup step is a product failure like
	// any other step, but snapshots for invariants are taken after it.
	Setup []Step `yaml:"setup"`
	Steps []Step `yaml:"steps"`
	// Checks are evaluated after the steps.
	Checks []Check `yaml:"checks"`
	// Invariants are evaluated at the end of every attempt, also when a
	// step failed.
	Invariants []Invariant `yaml:"invariants"`

	// File is the path the scenario was read from ("" for Parse of a
	// reader without a name).
	File string `yaml:"-"`
	// Schema is the "# yaml-language-server: $schema=…" reference, if the
	// file has one.
	Schema string `yaml:"-"`

	pos map[string]strictyaml.Pos
}

// Roles returns the scenario's device roles, the default role first.
func (s *Scenario) Roles() []string { return s.Devices.Roles() }

// Pos returns "file:line:col" of the field at path ("steps[2].wait"), or
// the file alone when the field was not in the file.
func (s *Scenario) Pos(path string) string {
	return s.pos[path].String(s.File)
}

// AllSteps returns setup then steps.
func (s *Scenario) AllSteps() []Step {
	out := make([]Step, 0, len(s.Setup)+len(s.Steps))
	out = append(out, s.Setup...)
	return append(out, s.Steps...)
}

// ModelKind is the model a scenario needs.
const (
	ModelStub = "stub"
	ModelLive = "live"
	ModelAny  = "any"
)

// NeedsModel is the model the scenario needs: stub (the default, and
// always when it has a script), live, or any.
func (s *Scenario) NeedsModel() string {
	switch {
	case s.Needs.Model != "":
		return s.Needs.Model
	case s.Model != nil && s.Model.Live:
		return ModelLive
	}
	return ModelStub
}

// Needs are the scenario's requirements; a run that cannot meet them
// reports the scenario as skipped.
type Needs struct {
	// Root makes the lease gate check that root works (the runtime's
	// control API needs it, so the lab always leases rooted devices; a
	// scenario says so explicitly when it runs su itself).
	Root bool `yaml:"root"`
	// Apps are the sample apps (short names or packages) that must be
	// installed.
	Apps []string `yaml:"apps"`
	// Desktop turns desktop access on before the steps.
	Desktop bool `yaml:"desktop"`
	// Model is stub, live or any; default stub (live when model is live).
	Model string `yaml:"model"`
	// Kinds restricts the device kinds (virtual, emulator, phone).
	Kinds []string `yaml:"kinds"`
	// MinAPI is the lowest API level accepted.
	MinAPI int `yaml:"min_api"`
}

// Model says what the model answers: a script inline, named or in a file
// (the lab's stub serves it), or the live provider of the run.
type Model struct {
	// Live: the run's live provider answers; the scenario needs a live run.
	Live bool `yaml:"live"`
	// Script is an inline runtime/model/script document, or the name of
	// one of the scenario's scripts.
	Script *ModelScript `yaml:"script"`
	// File is a script file, relative to the scenario file.
	File string `yaml:"file"`
	// Chaos: the stub's chaos model answers, drawn from its seed (what
	// agentlab chaos writes when it saves a failing sequence).
	Chaos *ModelChaos `yaml:"chaos"`

	// Parsed is the script (nil for live and chaos).
	Parsed *script.Script `yaml:"-"`
}

// ModelChaos is model.chaos: the chaos model's seed.
type ModelChaos struct {
	// Seed draws every tool call and argument; one seed answers the
	// same prompts the same way.
	Seed int64 `yaml:"seed"`
}

// ModelScript is model.script: a script written inline, or the name of
// one of the scenario's scripts.
type ModelScript struct {
	// Name is the script's name in scripts; "" when inline.
	Name string
	// Inline is the script written in place.
	Inline *Script
}

// Script is a model script (runtime/model/script's format, validated with
// the scenario): written inline as YAML, or in a side file.
type Script struct {
	// File is the side file, relative to the scenario; "" when inline.
	File string
	// Doc is the script as a JSON value tree, as written: what a prompt
	// sends (its ${…} references expanded) after the script header.
	Doc any
	// Parsed is the script as the stub runs it (as written); nil when it
	// refers to values of the attempt (${…}), which only prompts expand.
	Parsed *script.Script
	// Refs says the script holds ${…} references to the attempt.
	Refs bool

	node               *yaml.Node
	checked, parsedRaw bool
}

// Step is one action. Exactly one of the kind fields is set; the others
// are common to every kind.
type Step struct {
	// Name labels the step in results and timings; default "<kind> #<n>".
	Name string `yaml:"name"`
	// Device is the role the step acts on; default the first.
	Device string `yaml:"device"`
	// Save names the step's output for later steps and checks (${NAME…},
	// saved: NAME); default the kind's name (ask, prompt, app, run …).
	Save string `yaml:"save"`
	// Timeout bounds the step; default 60 s (waits use their own).
	Timeout Duration `yaml:"timeout"`
	// Background runs the step while the next ones go on; await: SAVE
	// waits for it. Only ask, prompt, app and run can run in the
	// background.
	Background bool `yaml:"background"`
	// AllowError saves a runtime refusal ({error:{code, message}}) as the
	// step's output instead of failing the scenario.
	AllowError bool `yaml:"allow_error"`

	Reset    []string      `yaml:"reset"`
	Seed     []string      `yaml:"seed"`
	App      *AppStep      `yaml:"app"`
	Callers  *CallersStep  `yaml:"callers"`
	Ask      *AskStep      `yaml:"ask"`
	Prompt   *PromptStep   `yaml:"prompt"`
	Consent  *ConsentStep  `yaml:"consent"`
	Tap      *TapStep      `yaml:"tap"`
	Approval *ApprovalStep `yaml:"approval"`
	Plugins  *ToggleStep   `yaml:"plugins"`
	Tools    *ToggleStep   `yaml:"tools"`
	Kill     string        `yaml:"kill"`
	Restart  string        `yaml:"restart"`
	Reboot   bool          `yaml:"reboot"`
	Wait     *WaitStep     `yaml:"wait"`
	Sleep    Duration      `yaml:"sleep"`
	Run      *RunStep      `yaml:"run"`
	Check    *Check        `yaml:"check"`
	Await    string        `yaml:"await"`
	Install  *InstallStep  `yaml:"install"`
	Caller   *CallerStep   `yaml:"caller"`
	// ACPClient runs the official ACP TypeScript client on the lab's
	// host against the device, through agentlab bridge.
	ACPClient *ACPClientStep `yaml:"acp_client"`
	Bridge    *BridgeStep    `yaml:"bridge"`
	// Include is replaced by the fragment's steps when the file is read;
	// a parsed scenario never holds one.
	Include *IncludeStep `yaml:"include"`

	kind string
}

// Kinds of steps, as written in a file.
const (
	KindReset     = "reset"
	KindSeed      = "seed"
	KindApp       = "app"
	KindCallers   = "callers"
	KindAsk       = "ask"
	KindPrompt    = "prompt"
	KindConsent   = "consent"
	KindTap       = "tap"
	KindApproval  = "approval"
	KindPlugins   = "plugins"
	KindTools     = "tools"
	KindKill      = "kill"
	KindRestart   = "restart"
	KindReboot    = "reboot"
	KindWait      = "wait"
	KindSleep     = "sleep"
	KindRun       = "run"
	KindCheck     = "check"
	KindAwait     = "await"
	KindInstall   = "install"
	KindCaller    = "caller"
	KindBridge    = "bridge"
	KindACPClient = "acp_client"
	KindInclude   = "include"
)

// StepKinds lists every step kind.
var StepKinds = []string{KindReset, KindSeed, KindApp, KindCallers, KindAsk, KindPrompt, KindConsent, KindTap,
	KindApproval, KindPlugins, KindTools, KindKill, KindRestart, KindReboot, KindWait, KindSleep, KindRun, KindCheck, KindAwait,
	KindInstall, KindCaller, KindACPClient, KindBridge, KindInclude}

// Kind is the step's kind.
func (s *Step) Kind() string { return s.kind }

// OutputName is where the step's output is saved.
func (s *Step) OutputName() string {
	if s.Save != "" {
		return s.Save
	}
	return s.kind
}

// AppStep runs one of an app's debug commands under the app's uid
// (`agentosd ctl app run PKG -- ARGS`).
type AppStep struct {
	// Name is the app (short name or package).
	Name string `yaml:"name"`
	// Args are the command's arguments: text, or a mapping or list that
	// the lab passes as one JSON argument (a tool's arguments).
	Args []Arg `yaml:"args"`
}

// Arg is one argument of an app's command: a scalar is its text as
// written; a mapping or a list is sent as compact JSON.
type Arg struct {
	Text string
	// JSON is the mapping or list; nil for text.
	JSON *Value
}

// CallersStep changes the caller-authorization registry. Exactly one
// field is set.
type CallersStep struct {
	Allow  string `yaml:"allow"`
	Deny   string `yaml:"deny"`
	Revoke string `yaml:"revoke"`
	Remove string `yaml:"remove"`
	// Answer answers an app's pending authorization card.
	Answer *CallersAnswer `yaml:"answer"`
	// Config sets the registry's timings; an empty config restores the
	// defaults.
	Config *CallersConfig `yaml:"config"`
}

// CallersAnswer answers the pending authorization card of App (or the
// request with id Request).
type CallersAnswer struct {
	App     string `yaml:"app"`
	Request string `yaml:"request"`
	Allow   bool   `yaml:"allow"`
	// Wait bounds how long to wait for the card to appear; default 30 s.
	Wait Duration `yaml:"wait"`
}

// CallersConfig are the registry's timings.
type CallersConfig struct {
	Cooldown Duration `yaml:"cooldown"`
	TTL      Duration `yaml:"ttl"`
	Abandon  Duration `yaml:"abandon"`
}

// AskStep asks the agent through a caller app (`ask_agent`): its
// options go to the app as one JSON object; the app's run report is the
// step's output.
type AskStep struct {
	App string `yaml:"app"`
	// Args are the app's ask_agent options (note_id, text, address,
	// include_processed, instructions, language …).
	Args map[string]Value `yaml:"args"`
}

// PromptStep prompts over desktop ACP: the lab pairs with the device
// (desktop access on, a pairing code), opens a session with the options
// given and collects the whole event stream as the step's output.
type PromptStep struct {
	Text string `yaml:"text"`
	// Script sends one of the scenario's scripts as the prompt (instead
	// of text), so the stub answers it as the script says.
	Script string `yaml:"script"`
	// Session continues the session of an earlier prompt (its save
	// name); the options below then do not apply.
	Session string `yaml:"session"`
	// ToolScope restricts the session's tools; absent means no scope,
	// [] means no tools.
	ToolScope *[]ToolRef `yaml:"tool_scope"`
	// Mode is default, read_only or chat.
	Mode       string      `yaml:"mode"`
	MCPServers []MCPServer `yaml:"mcp_servers"`
	// CancelAfter sends session/cancel this long after the prompt.
	CancelAfter Duration `yaml:"cancel_after"`
}

// BridgeStep runs the lab's acp-bridge (agentlab bridge, spec §8.4) as an
// editor would: it pairs with a fresh pairing code (or the token an
// earlier bridge step of the attempt stored), sends initialize, opens a
// session and sends the prompt, then keeps the editor's side open for
// hold. Desktop access must be on. The output is the bridge's exit code
// and what the editor saw.
type BridgeStep struct {
	// Token connects with the stored token instead of a new code.
	Token bool `yaml:"token"`
	// Text or Script is the prompt (one of scripts); neither sends none.
	Text   string `yaml:"text"`
	Script string `yaml:"script"`
	// CancelAfter sends session/cancel this long after the prompt.
	CancelAfter Duration `yaml:"cancel_after"`
	// Hold keeps stdin open this long after the last answer (0: closed at
	// once, exit 0); the phone closing first ends the bridge (exit 6).
	Hold Duration `yaml:"hold"`
}

// ToolRef is a toolScope entry: the plugin's name and the raw tool name.
type ToolRef struct {
	Plugin string `yaml:"plugin"`
	Tool   string `yaml:"tool"`
}

// MCPServer is a caller-supplied MCP server (http only).
type MCPServer struct {
	Name    string   `yaml:"name"`
	URL     string   `yaml:"url"`
	Headers []Header `yaml:"headers"`
}

// Header is one HTTP header of an MCP server.
type Header struct {
	Name  string `yaml:"name"`
	Value string `yaml:"value"`
}

// Consent drivers.
const (
	DriverAdmin = "admin"
	DriverUI    = "ui"
)

// ConsentDrivers lists the accepted drivers.
var ConsentDrivers = []string{DriverAdmin, DriverUI}

// Consent modes and choices.
const (
	ConsentAllow     = "allow"
	ConsentAllowOnce = "allow_once"
	ConsentDeny      = "deny"
	ConsentOff       = "off"
	ConsentAsk       = "ask"

	ChoiceAllowOnce       = "ALLOW_ONCE"
	ChoiceAllowForSession = "ALLOW_FOR_SESSION"
	ChoiceAlwaysAllow     = "ALWAYS_ALLOW"
	ChoiceDeny            = "DENY"
	// ChoiceNone leaves a card pending (for tap steps or timeouts).
	ChoiceNone = "none"
)

// ConsentModes and Choices list the accepted values.
var (
	ConsentModes = []string{ConsentAllow, ConsentAllowOnce, ConsentDeny, ConsentOff, ConsentAsk}
	Choices      = []string{ChoiceAllowOnce, ChoiceAllowForSession, ChoiceAlwaysAllow, ChoiceDeny, ChoiceNone}
)

// ConsentStep sets how consent cards are answered: the runtime's
// auto-answer mode, or (mode ask, the default when rules are given) a
// consent driver that polls the pending cards, answers each by the first
// rule that matches it (else Default) and records every card it saw.
type ConsentStep struct {
	Mode    string        `yaml:"mode"`
	Rules   []ConsentRule `yaml:"rules"`
	Default string        `yaml:"default"`
	// Interval is the driver's poll interval; default 500 ms.
	Interval Duration `yaml:"interval"`
	// Stop stops the driver (the cards seen stay recorded).
	Stop bool `yaml:"stop"`
}

// ConsentRule matches a card; every field set must match.
type ConsentRule struct {
	// Index is the card's 1-based position among the cards seen in this
	// attempt (FIFO order).
	Index int `yaml:"index"`
	// Tool is a regular expression matched against the tool's final name
	// and its display name.
	Tool string `yaml:"tool"`
	// Risk is read, write or high.
	Risk string `yaml:"risk"`
	// Caller is a regular expression matched against the caller package.
	Caller string `yaml:"caller"`
	Choice string `yaml:"choice"`
}

// TapStep waits for the Card-th card of the attempt and answers it.
type TapStep struct {
	Card   int    `yaml:"card"`
	Choice string `yaml:"choice"`
}

// ApprovalStep sets a tool's approval: by final name (Tool alone) or by
// source (Plugin, with Server and Tool optional).
type ApprovalStep struct {
	Plugin string `yaml:"plugin"`
	Server string `yaml:"server"`
	Tool   string `yaml:"tool"`
	// Mode is always or ask; clear too, by source.
	Mode string `yaml:"mode"`
}

// ToggleStep enables and disables plugins (by id) or tools (by final
// name).
type ToggleStep struct {
	Enable  []string `yaml:"enable"`
	Disable []string `yaml:"disable"`
}

// Kill and restart targets besides app names.
const (
	TargetExt     = "ext"
	TargetRuntime = "runtime"
)

// WaitStep waits until a condition holds, or (For) lets a fixed span of
// time pass.
type WaitStep struct {
	Until Condition `yaml:"until"`
	// For is a timed wait: the span passes (today in real time; on a
	// runtime with virtual time, by advancing its clock), and the
	// evidence says how. It takes none of the other fields.
	For Duration `yaml:"for"`
	// Timeout default 30 s; Interval default 500 ms.
	Timeout  Duration `yaml:"timeout"`
	Interval Duration `yaml:"interval"`
	// Check, when set, records the wait as a named check (ok when the
	// condition held in time) instead of failing the scenario.
	Check *CheckName `yaml:"check"`
}

// CheckName names a check and its upstream mapping.
type CheckName struct {
	Name     string `yaml:"name"`
	Upstream string `yaml:"upstream"`
}

// RunStep runs a raw command: the escape hatch, for what no other step
// expresses. Exactly one of Shell and Ctl.
type RunStep struct {
	Shell string `yaml:"shell"`
	// Su runs Shell as root.
	Su bool `yaml:"su"`
	// Ctl runs `agentosd ctl --json ARGS` as root.
	Ctl []string `yaml:"ctl"`
	// ExpectExit is the exit code that counts as success; default 0.
	ExpectExit *int `yaml:"expect_exit"`
}

// ACP client suites (ACPClientStep.Suite).
const (
	// ACPSuiteDevice: the protocol's methods and errors, through one
	// paired bridge.
	ACPSuiteDevice = "device"
	// ACPSuitePairing: pairing and the bridge's security, over several
	// bridges and state files.
	ACPSuitePairing = "pairing"
)

// ACPSuites lists the client's suites.
var ACPSuites = []string{ACPSuiteDevice, ACPSuitePairing}

// ACPClientStep runs the official ACP TypeScript client (the lab's
// pinned @agentclientprotocol/sdk) on the lab's host with node, its agent
// being `agentlab bridge` paired with a fresh code and connected to the
// device's desktop socket. The output is the client's
// {suite, tests: {NAME: {ok, skipped, detail}}, passed, failed, skipped}.
type ACPClientStep struct {
	// Suite is the client's test list: device or pairing.
	Suite string `yaml:"suite"`
}

// Check is a named condition; its result appears in the reports with
// its upstream mapping.
type Check struct {
	Name        string `yaml:"name"`
	Upstream    string `yaml:"upstream"`
	Description string `yaml:"description"`
	// Kinds are the device kinds the check applies to (virtual,
	// emulator, phone); on another kind it is not evaluated and is
	// reported skipped ("not applicable on virtual devices"), never
	// passed. Empty means every kind.
	Kinds     []string `yaml:"kinds"`
	Condition `yaml:",inline"`
}

// AppliesTo says whether the check is evaluated on a device of kind.
func (c *Check) AppliesTo(kind string) bool {
	return len(c.Kinds) == 0 || slices.Contains(c.Kinds, kind)
}

// Subjects of a condition, for `of:`.
const (
	OfCallers        = "callers"
	OfCards          = "cards"
	OfConsentRecent  = "consent_recent"
	OfConsentPending = "consent_pending"
	OfModelRequests  = "model_requests"
	OfCatalog        = "catalog"
	OfPlugins        = "plugins"
	OfStatus         = "status"
	OfDesktop        = "desktop"
)

// Ofs lists the subjects `of:` accepts.
var Ofs = []string{OfCallers, OfCards, OfConsentRecent, OfConsentPending, OfModelRequests, OfCatalog, OfPlugins, OfStatus, OfDesktop}

// Condition is what a check, a wait or an invariant evaluates: a value
// (one subject, a JSON path into it and a matcher), or a group of
// conditions that must all hold (all_of) or of which one must
// (any_of: the accepted outcomes of a live model).
type Condition struct {
	Device string `yaml:"device"`

	// Subject: exactly one of these (or a group).
	Of     string  `yaml:"of"`
	Dump   string  `yaml:"dump"`
	Saved  string  `yaml:"saved"`
	Events string  `yaml:"events"`
	Shell  string  `yaml:"shell"`
	Timing *Timing `yaml:"timing"`

	Matcher `yaml:",inline"`

	AllOf []Condition `yaml:"all_of"`
	AnyOf []Condition `yaml:"any_of"`
}

// Timing measures steps: the duration of Step, or from From's start to
// To's end (".start"/".end" pick the other edge). Bounds are inclusive.
type Timing struct {
	Step string   `yaml:"step"`
	From string   `yaml:"from"`
	To   string   `yaml:"to"`
	Max  Duration `yaml:"max"`
	Min  Duration `yaml:"min"`
}

// Matcher tests the values a JSON path selects. Every field set must
// hold. eq, ne, gt … test exactly one value; all, any and none test each
// selected value (or each element of one selected array); count tests
// how many values were selected, len the length of the one value.
type Matcher struct {
	// Path is a JSON path into the subject (".callers[?packageName==\"x\"].state");
	// empty is the whole subject.
	Path string `yaml:"path"`

	Exists   *bool    `yaml:"exists"`
	Eq       *Value   `yaml:"eq"`
	Ne       *Value   `yaml:"ne"`
	Gt       *float64 `yaml:"gt"`
	Ge       *float64 `yaml:"ge"`
	Lt       *float64 `yaml:"lt"`
	Le       *float64 `yaml:"le"`
	In       []Value  `yaml:"in"`
	Contains *Value   `yaml:"contains"`
	Matches  string   `yaml:"matches"`
	Len      *Matcher `yaml:"len"`
	Count    *Matcher `yaml:"count"`
	All      *Matcher `yaml:"all"`
	Any      *Matcher `yaml:"any"`
	None     *Matcher `yaml:"none"`
	Not      *Matcher `yaml:"not"`

	c *compiled
}

// Invariant is a check evaluated at the end of every attempt: one of the
// built-in invariants, or a condition.
type Invariant struct {
	Name        string `yaml:"name"`
	Upstream    string `yaml:"upstream"`
	Description string `yaml:"description"`
	Device      string `yaml:"device"`

	// NothingDeleted: every item the named apps held after setup is still
	// there at the end.
	NothingDeleted []string `yaml:"nothing_deleted"`
	// NoSMSSent: the SMS app's outbox did not grow.
	NoSMSSent bool `yaml:"no_sms_sent"`
	// CardsOnly: every consent card of the attempt was for one of these
	// tools (final, raw or display names).
	CardsOnly []string `yaml:"cards_only"`
	// Condition, when none of the above is set.
	Condition *Condition `yaml:"condition"`
}

// Duration is a time.Duration written as a Go duration ("15s", "2m").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// Value is any YAML value, held as its JSON equivalent (nil, bool,
// float64, string, []any, map[string]any).
type Value struct {
	V any
}

// Devices is a device count or a list of role names.
type Devices struct {
	Count int
	Names []string
}

// Roles are the role names: the listed ones, else "device1" … "deviceN"
// (one device when unset).
func (d Devices) Roles() []string {
	if len(d.Names) > 0 {
		return d.Names
	}
	n := max(d.Count, 1)
	out := make([]string, n)
	for i := range out {
		out[i] = "device" + strconv.Itoa(i+1)
	}
	return out
}
