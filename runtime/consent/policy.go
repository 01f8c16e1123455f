package consent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/agentoslab/agentlab/runtime/catalog"
)

// Where the extension host keeps the user's approval policy, relative to
// the runtime's data directory (spec §5.3 keeps it in the app's files/ext/).
const (
	PolicyFile       = "ext/approval-policy.json"
	PolicyBackupFile = "ext/approval-policy.backup.json"
)

// PolicyVersion is the version Policy writes.
const PolicyVersion = 1

// Errors of the policy file and its settings API, matched with errors.Is.
var (
	// ErrPolicyFormat: the file is not a policy (not JSON, version missing
	// or not a positive integer, a level that is not an object). The
	// caller keeps its last good copy or fails closed.
	ErrPolicyFormat = errors.New("approval policy: format error")
	// ErrHighRisk ("high_risk"): a HIGH tool cannot be set to always.
	ErrHighRisk = errors.New("high_risk: a high-risk tool cannot be set to always allow")
	// ErrBadMode ("bad_mode"): an approval other than ask or always.
	ErrBadMode = errors.New("bad_mode: approval must be ask or always")
	// ErrBadTarget: a target without a plugin, or a tool without a server.
	ErrBadTarget = errors.New("approval policy: target needs a plugin, and a server for a tool")
)

// Level is the setting at one level (plugin, server or tool). A nil
// Enabled and an empty Approval mean "not set here".
type Level struct {
	Enabled  *bool            `json:"enabled,omitempty"`
	Approval catalog.Approval `json:"approval,omitempty"`
}

func (l Level) empty() bool { return l.Enabled == nil && l.Approval == "" }

// ServerPolicy is a server's level and its tools' levels.
type ServerPolicy struct {
	Level
	Tools map[string]*Level `json:"tools,omitempty"`
}

// PluginPolicy is a plugin's level and its servers.
type PluginPolicy struct {
	Level
	Servers map[string]*ServerPolicy `json:"servers,omitempty"`
}

// Policy is the user's approval policy, keyed by (plugin name, server
// name, raw MCP tool name) — never by final model name, and never by
// caller: one "always allow" applies to every caller. It is a plain value;
// whoever shares one guards it with a lock.
type Policy struct {
	Version int
	Plugins map[string]*PluginPolicy
	// UnlistedPluginsEnabled says whether a plugin with no enabled setting
	// is enabled. NewPolicy and ParsePolicy set it to true; FailClosedPolicy
	// (unreadable file and no backup) to false. It is not written to the
	// file.
	UnlistedPluginsEnabled bool
}

// NewPolicy is an empty policy: everything enabled, everything asks.
func NewPolicy() *Policy {
	return &Policy{Version: PolicyVersion, Plugins: map[string]*PluginPolicy{}, UnlistedPluginsEnabled: true}
}

// FailClosedPolicy is the policy to use when the file is unreadable and
// there is no usable backup: plugins the user never enabled stay off.
func FailClosedPolicy() *Policy {
	p := NewPolicy()
	p.UnlistedPluginsEnabled = false
	return p
}

// ParsePolicy reads a policy file. Structure errors are ErrPolicyFormat;
// values are read leniently as the spec says: an unknown approval (or a
// non-string one) is "ask", a non-boolean enabled is false. Unknown keys
// are ignored.
func ParsePolicy(data []byte) (*Policy, error) {
	root, err := policyObject(data, "policy")
	if err != nil {
		return nil, err
	}
	v, ok := root["version"]
	if !ok {
		return nil, fmt.Errorf("%w: version is missing", ErrPolicyFormat)
	}
	version, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 32)
	if err != nil || version < 1 {
		return nil, fmt.Errorf("%w: version must be a positive integer", ErrPolicyFormat)
	}
	p := NewPolicy()
	p.Version = int(version)
	plugins, err := optionalObject(root, "plugins")
	if err != nil {
		return nil, err
	}
	for name, raw := range plugins {
		obj, err := policyObject(raw, "plugin entry")
		if err != nil {
			return nil, err
		}
		pp := &PluginPolicy{Level: readLevel(obj)}
		servers, err := optionalObject(obj, "servers")
		if err != nil {
			return nil, err
		}
		for sname, sraw := range servers {
			sobj, err := policyObject(sraw, "server entry")
			if err != nil {
				return nil, err
			}
			sp := &ServerPolicy{Level: readLevel(sobj)}
			tools, err := optionalObject(sobj, "tools")
			if err != nil {
				return nil, err
			}
			for tname, traw := range tools {
				tobj, err := policyObject(traw, "tool entry")
				if err != nil {
					return nil, err
				}
				l := readLevel(tobj)
				if sp.Tools == nil {
					sp.Tools = map[string]*Level{}
				}
				sp.Tools[tname] = &l
			}
			if pp.Servers == nil {
				pp.Servers = map[string]*ServerPolicy{}
			}
			pp.Servers[sname] = sp
		}
		p.Plugins[name] = pp
	}
	return p, nil
}

func policyObject(raw []byte, what string) (map[string]json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return nil, fmt.Errorf("%w: %s is not an object", ErrPolicyFormat, what)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: %s is not valid JSON", ErrPolicyFormat, what)
	}
	return m, nil
}

func optionalObject(obj map[string]json.RawMessage, key string) (map[string]json.RawMessage, error) {
	raw, ok := obj[key]
	if !ok {
		return nil, nil
	}
	return policyObject(raw, key)
}

func readLevel(obj map[string]json.RawMessage) Level {
	var l Level
	if raw, ok := obj["enabled"]; ok {
		b := string(bytes.TrimSpace(raw)) == "true" // anything but true, false → false
		l.Enabled = &b
	}
	if raw, ok := obj["approval"]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil && catalog.Approval(s) == catalog.ApprovalAlways {
			l.Approval = catalog.ApprovalAlways
		} else {
			l.Approval = catalog.ApprovalAsk
		}
	}
	return l
}

// policyFile is the on-disk shape: struct fields keep the spec's key
// order, maps are written sorted by key.
type policyFile struct {
	Version int                      `json:"version"`
	Plugins map[string]*PluginPolicy `json:"plugins"`
}

// Marshal writes the policy file: {"version":…,"plugins":{…}} with
// entries sorted by name and empty entries (no setting and no children)
// omitted.
func (p *Policy) Marshal() []byte {
	c := p.Clone()
	c.prune()
	version := c.Version
	if version < 1 {
		version = PolicyVersion
	}
	b, err := json.Marshal(policyFile{Version: version, Plugins: c.Plugins})
	if err != nil {
		// Only strings, bools and maps of them: cannot fail.
		panic("consent: marshal policy: " + err.Error())
	}
	return b
}

// prune drops empty entries bottom-up.
func (p *Policy) prune() {
	for pn, pp := range p.Plugins {
		for sn, sp := range pp.Servers {
			for tn, tl := range sp.Tools {
				if tl == nil || tl.empty() {
					delete(sp.Tools, tn)
				}
			}
			if len(sp.Tools) == 0 {
				sp.Tools = nil
			}
			if sp.Level.empty() && sp.Tools == nil {
				delete(pp.Servers, sn)
			}
		}
		if len(pp.Servers) == 0 {
			pp.Servers = nil
		}
		if pp.Level.empty() && pp.Servers == nil {
			delete(p.Plugins, pn)
		}
	}
	if p.Plugins == nil {
		p.Plugins = map[string]*PluginPolicy{}
	}
}

// Clone is a deep copy.
func (p *Policy) Clone() *Policy {
	c := &Policy{Version: p.Version, Plugins: make(map[string]*PluginPolicy, len(p.Plugins)), UnlistedPluginsEnabled: p.UnlistedPluginsEnabled}
	for pn, pp := range p.Plugins {
		if pp == nil {
			continue
		}
		np := &PluginPolicy{Level: pp.Level.clone()}
		for sn, sp := range pp.Servers {
			if sp == nil {
				continue
			}
			ns := &ServerPolicy{Level: sp.Level.clone()}
			for tn, tl := range sp.Tools {
				if tl == nil {
					continue
				}
				l := tl.clone()
				if ns.Tools == nil {
					ns.Tools = map[string]*Level{}
				}
				ns.Tools[tn] = &l
			}
			if np.Servers == nil {
				np.Servers = map[string]*ServerPolicy{}
			}
			np.Servers[sn] = ns
		}
		c.Plugins[pn] = np
	}
	return c
}

func (l Level) clone() Level {
	if l.Enabled != nil {
		b := *l.Enabled
		l.Enabled = &b
	}
	return l
}

// Resolution is the policy's answer for one tool.
type Resolution struct {
	// Enabled is false when any level says enabled:false, or when the
	// plugin has no enabled setting and unlisted plugins are off.
	Enabled bool
	// Approval is the first set value from tool, server, plugin; else ask.
	Approval catalog.Approval
}

// Resolve answers for a plugin tool (spec §5.3).
func (p *Policy) Resolve(id catalog.ToolID) Resolution {
	var levels []Level // tool, server, plugin
	pp := p.Plugins[id.Plugin]
	if pp != nil {
		if sp := pp.Servers[id.Server]; sp != nil {
			if tl := sp.Tools[id.Tool]; tl != nil {
				levels = append(levels, *tl)
			}
			levels = append(levels, sp.Level)
		}
		levels = append(levels, pp.Level)
	}
	r := Resolution{Enabled: true, Approval: catalog.ApprovalAsk}
	approvalSet := false
	for _, l := range levels {
		if l.Enabled != nil && !*l.Enabled {
			r.Enabled = false
		}
		if !approvalSet && l.Approval != "" {
			approvalSet = true
			if l.Approval == catalog.ApprovalAlways {
				r.Approval = catalog.ApprovalAlways
			}
		}
	}
	if (pp == nil || pp.Enabled == nil) && !p.UnlistedPluginsEnabled {
		r.Enabled = false
	}
	return r
}

// PluginEnabled reports whether the plugin level is on: what decides
// whether the plugin's skills are listed (server and tool switches do not
// affect skills).
func (p *Policy) PluginEnabled(plugin string) bool {
	pp := p.Plugins[plugin]
	if pp == nil || pp.Enabled == nil {
		return p.UnlistedPluginsEnabled
	}
	return *pp.Enabled
}

// Target names one level: Plugin alone, Plugin+Server, or all three.
type Target struct {
	Plugin, Server, Tool string
}

func (t Target) valid() bool {
	return t.Plugin != "" && !(t.Tool != "" && t.Server == "")
}

// level returns the Level of t, creating entries on the way.
func (p *Policy) level(t Target) *Level {
	if p.Plugins == nil {
		p.Plugins = map[string]*PluginPolicy{}
	}
	pp := p.Plugins[t.Plugin]
	if pp == nil {
		pp = &PluginPolicy{}
		p.Plugins[t.Plugin] = pp
	}
	if t.Server == "" {
		return &pp.Level
	}
	if pp.Servers == nil {
		pp.Servers = map[string]*ServerPolicy{}
	}
	sp := pp.Servers[t.Server]
	if sp == nil {
		sp = &ServerPolicy{}
		pp.Servers[t.Server] = sp
	}
	if t.Tool == "" {
		return &sp.Level
	}
	if sp.Tools == nil {
		sp.Tools = map[string]*Level{}
	}
	tl := sp.Tools[t.Tool]
	if tl == nil {
		tl = &Level{}
		sp.Tools[t.Tool] = tl
	}
	return tl
}

// SetEnabled sets the enabled switch of one level.
func (p *Policy) SetEnabled(t Target, enabled bool) error {
	if !t.valid() {
		return ErrBadTarget
	}
	p.level(t).Enabled = &enabled
	return nil
}

// SetApproval sets the approval of one level: "ask", "always", or ""
// to inherit from the level above. Any other value is ErrBadMode. A tool
// level can be set to always only when its risk allows it (not HIGH, and
// a known risk): else ErrHighRisk. A plugin- or server-level always is
// allowed; HIGH tools under it still ask at run time (Requirement).
func (p *Policy) SetApproval(t Target, a catalog.Approval, toolRisk catalog.Risk) error {
	if !t.valid() {
		return ErrBadTarget
	}
	switch a {
	case "", catalog.ApprovalAsk, catalog.ApprovalAlways:
	default:
		return ErrBadMode
	}
	if a == catalog.ApprovalAlways && t.Tool != "" && !toolRisk.MayAlwaysAllow() {
		return ErrHighRisk
	}
	p.level(t).Approval = a
	return nil
}

// SetAlways is the consent card's "always allow" write-back: a tool-level
// always for a WRITE (or READ) tool.
func (p *Policy) SetAlways(id catalog.ToolID, risk catalog.Risk) error {
	return p.SetApproval(Target{id.Plugin, id.Server, id.Tool}, catalog.ApprovalAlways, risk)
}

// ForgetPlugin clears every setting of a plugin (signature change,
// rename, uninstall). Discovery then writes enabled:false for a
// third-party plugin as it does for a new one.
func (p *Policy) ForgetPlugin(plugin string) { delete(p.Plugins, plugin) }
