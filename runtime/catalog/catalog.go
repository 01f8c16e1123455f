package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// Kind says where a catalog entry comes from.
type Kind uint8

const (
	// KindPlugin: a tool of an installed plugin's MCP server; named by
	// Assign from its ToolID.
	KindPlugin Kind = iota + 1
	// KindSession: a tool of a caller-supplied MCP server of one session;
	// named by AssignSession from its SessionToolID.
	KindSession
	// KindBuiltin: a tool the runtime itself provides (read_skill); its
	// Name is fixed by the caller of New.
	KindBuiltin
	// KindACI: a capability of an installed app's ACI service, the
	// runtime being the controller; named by AssignACI from its ACIToolID.
	KindACI
)

var kindNames = [...]string{KindPlugin: "plugin", KindSession: "session", KindBuiltin: "builtin", KindACI: "aci"}

// String returns "plugin", "session", "builtin" or "aci".
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return ""
}

// MarshalText implements encoding.TextMarshaler.
func (k Kind) MarshalText() ([]byte, error) {
	if k.String() == "" {
		return nil, fmt.Errorf("marshal kind %d: %w", k, ErrBadEntry)
	}
	return []byte(k.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (k *Kind) UnmarshalText(b []byte) error {
	for i, n := range kindNames {
		if n != "" && n == string(b) {
			*k = Kind(i)
			return nil
		}
	}
	return fmt.Errorf("unmarshal kind: %w", ErrBadEntry)
}

// Approval is the user's approval setting of a plugin tool (spec §5.3).
type Approval string

const (
	ApprovalAsk    Approval = "ask"
	ApprovalAlways Approval = "always"
)

// Entry is one tool of the catalog, as the extension host pushes it
// (IExtensionHost.listTools: name, pluginId, source, title, description,
// inputSchema, risk, enabled, approval, mayAlwaysAllow).
type Entry struct {
	// Name is the final model name. New fills it for plugin and session
	// tools; a builtin entry must carry its own.
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Source is the plugin tool's id (KindPlugin only); it is also the
	// key of the user's approval policy.
	Source ToolID `json:"source"`
	// Session is the session tool's id (KindSession only).
	Session SessionToolID `json:"session"`
	// ACI is the capability's id (KindACI only).
	ACI ACIToolID `json:"aci,omitzero"`
	// PluginID is the registry id of the plugin ("<package>/<dir>").
	PluginID    string          `json:"pluginId,omitempty"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	Risk        Risk            `json:"risk"`
	// Hints are the tool's annotations as its provider declared them,
	// for showing calls (an ACP tool kind); nothing is decided on them
	// here (Risk is). Session tools carry only destructiveHint, whose
	// readOnlyHint is ignored as it is for their risk (spec §2.9).
	Hints Annotations `json:"hints"`
	// Enabled is the resolved switch: plugin ready and enabled at the
	// plugin, server and tool levels of the user's policy.
	Enabled  bool     `json:"enabled"`
	Approval Approval `json:"approval,omitempty"`
	// MayAlwaysAllow is false for session tools and HIGH tools.
	MayAlwaysAllow bool `json:"mayAlwaysAllow"`
}

// Provider is the provider string of events: "<plugin>" for plugin
// tools, "session:<server>" for session tools, "aci:<package>" for ACI
// capabilities, "agentos" for builtins.
func (e Entry) Provider() string {
	switch e.Kind {
	case KindPlugin:
		return e.Source.Plugin
	case KindSession:
		return "session:" + e.Session.Server
	case KindACI:
		return "aci:" + e.ACI.Package
	}
	return "agentos"
}

// ErrBadEntry reports an entry New cannot accept.
var ErrBadEntry = errors.New("bad catalog entry")

// Catalog is an immutable tool list with final names assigned. The
// extension host pushes the whole list on every change and the runtime
// builds a new Catalog; a session's caller-supplied tools are added with
// WithSession. A Catalog is safe for concurrent use.
type Catalog struct {
	entries []Entry // sorted by Name
	byName  map[string]int
}

// New builds a catalog: plugin tools are named with Assign, session
// tools with AssignSession, builtins keep their Name, which must be a
// valid final name outside the mcp__ and ses__ namespaces. Every entry
// needs a valid Risk. Errors wrap ErrBadEntry or Assign's errors.
func New(entries []Entry) (*Catalog, error) {
	var plugin []ToolID
	var session []SessionToolID
	var aci []ACIToolID
	for _, e := range entries {
		switch e.Kind {
		case KindPlugin:
			plugin = append(plugin, e.Source)
		case KindSession:
			session = append(session, e.Session)
		case KindACI:
			aci = append(aci, e.ACI)
		case KindBuiltin:
			if !ValidName(e.Name) || strings.HasPrefix(e.Name, PluginPrefix) || strings.HasPrefix(e.Name, SessionPrefix) || strings.HasPrefix(e.Name, ACIPrefix) {
				return nil, fmt.Errorf("catalog: builtin name %q: %w", e.Name, ErrBadEntry)
			}
		default:
			return nil, fmt.Errorf("catalog: entry kind %d: %w", e.Kind, ErrBadEntry)
		}
		if !e.Risk.Valid() {
			return nil, fmt.Errorf("catalog: entry risk %d: %w", e.Risk, ErrBadEntry)
		}
	}
	pnames, err := Assign(plugin)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	snames, err := AssignSession(session)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	anames, err := AssignACI(aci)
	if err != nil {
		return nil, fmt.Errorf("catalog: %w", err)
	}
	named := make([]Entry, len(entries))
	for i, e := range entries {
		switch e.Kind {
		case KindPlugin:
			e.Name = pnames[e.Source]
			e.Session, e.ACI = SessionToolID{}, ACIToolID{}
		case KindSession:
			e.Name = snames[e.Session]
			e.Source, e.ACI = ToolID{}, ACIToolID{}
			e.MayAlwaysAllow = false // never always-allow (spec §2.9)
		case KindACI:
			e.Name = anames[e.ACI]
			e.Source, e.Session = ToolID{}, SessionToolID{}
			// The approval policy is keyed by plugin tools; an ACI
			// capability asks (or is remembered for the session).
			e.MayAlwaysAllow = false
		case KindBuiltin:
			e.Source, e.Session, e.ACI = ToolID{}, SessionToolID{}, ACIToolID{}
		}
		if e.Risk == RiskHigh {
			e.MayAlwaysAllow = false
		}
		named[i] = e
	}
	// Sort indices, not the (large) entries, then copy once.
	order := make([]int, len(named))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return strings.Compare(named[a].Name, named[b].Name) })
	c := &Catalog{entries: make([]Entry, len(named)), byName: make(map[string]int, len(named))}
	for i, k := range order {
		c.entries[i] = named[k]
	}
	for i, e := range c.entries {
		if _, dup := c.byName[e.Name]; dup {
			return nil, fmt.Errorf("catalog: name %q twice: %w", e.Name, ErrBadEntry)
		}
		c.byName[e.Name] = i
	}
	return c, nil
}

// WithSession returns a catalog with c's plugin and builtin tools plus the
// given session tools (which replace any session tools c had). Only the
// session tools are renamed, so plugin names are unaffected. Every entry
// of session must be KindSession.
func (c *Catalog) WithSession(session []Entry) (*Catalog, error) {
	for _, e := range session {
		if e.Kind != KindSession {
			return nil, fmt.Errorf("catalog: WithSession got kind %d: %w", e.Kind, ErrBadEntry)
		}
	}
	all := make([]Entry, 0, len(c.entries)+len(session))
	for _, e := range c.entries {
		if e.Kind != KindSession {
			all = append(all, e)
		}
	}
	all = append(all, session...)
	return New(all)
}

// Len is the number of entries, visible or not.
func (c *Catalog) Len() int { return len(c.entries) }

// All returns every entry sorted by name, including disabled ones.
func (c *Catalog) All() []Entry { return append([]Entry(nil), c.entries...) }

// ByName returns the entry with this final name regardless of any view
// (for the extension host and the owner's settings, not for the model).
func (c *Catalog) ByName(name string) (Entry, bool) {
	i, ok := c.byName[name]
	if !ok {
		return Entry{}, false
	}
	return c.entries[i], true
}

// View is what decides which tools one session sees.
type View struct {
	// Scope is the session's toolScope: nil = no restriction; non-nil
	// (possibly empty) = only these (plugin, tool) pairs, and no builtins.
	Scope []ScopeEntry
	// Mode is the session mode; anything but the three modes counts as
	// chat (fail closed).
	Mode Mode
}

// SkillsAllowed reports whether the session gets the skills list in its
// system prompt: not in restricted-scope sessions and not in chat
// (spec §2.4, §6.5).
func (v View) SkillsAllowed() bool { return v.Scope == nil && StoredMode(string(v.Mode)) != ModeChat }

// visible is the one rule of spec §2.4/§2.5/§2.9: disabled tools never;
// chat none; session tools ignore toolScope and need default mode;
// builtins vanish in restricted-scope sessions; plugin tools must be in
// scope (on plugin and raw tool, regardless of server), ACI capabilities
// too (the package as the plugin, the capability id as the tool);
// read_only keeps READ only.
func (v View) visible(e Entry) bool {
	if !e.Enabled {
		return false
	}
	mode := StoredMode(string(v.Mode))
	if mode == ModeChat {
		return false
	}
	if mode == ModeReadOnly && e.Risk != RiskRead {
		return false
	}
	switch e.Kind {
	case KindSession:
		return mode == ModeDefault
	case KindBuiltin:
		return v.Scope == nil
	case KindPlugin:
		return inScope(v.Scope, e.Source.Plugin, e.Source.Tool)
	case KindACI:
		return inScope(v.Scope, e.ACI.Package, e.ACI.Capability)
	}
	return false
}

// Visible returns the tools the model is offered in this view, sorted by
// name.
func (c *Catalog) Visible(v View) []Entry {
	var out []Entry
	for _, e := range c.entries {
		if v.visible(e) {
			out = append(out, e)
		}
	}
	return out
}

// Lookup finds a tool the model asked for by name. Unknown, disabled,
// out-of-scope and mode-hidden names all give the same error,
// NotAvailable(name), so a caller cannot probe what is installed.
func (c *Catalog) Lookup(name string, v View) (Entry, error) {
	i, ok := c.byName[name]
	if !ok || !v.visible(c.entries[i]) {
		return Entry{}, NotAvailable(name)
	}
	return c.entries[i], nil
}

// maxEchoBytes bounds how much of a model-supplied name is echoed back.
const maxEchoBytes = 128

// NotAvailable is the tool_not_in_catalog error for a name: text
// "Tool <name> is not available." (spec §3.3). Names longer than 128
// bytes are cut (at a character boundary) so that a runaway model cannot
// make the error arbitrarily large.
func NotAvailable(name string) *errcode.Error {
	if len(name) > maxEchoBytes {
		cut := maxEchoBytes
		for cut > 0 && !utf8.RuneStart(name[cut]) {
			cut--
		}
		name = name[:cut] + "…"
	}
	return errcode.New(errcode.ToolNotInCatalog, "Tool "+name+" is not available.")
}
