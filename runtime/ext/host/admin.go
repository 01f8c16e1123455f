package host

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/internal/provider"
	"github.com/agentoslab/agentlab/runtime/ext/manifest"
)

// Owner operations (wire.MethodAdmin ops), forwarded by serve's admin API.
const (
	OpList         = "plugins.list"
	OpEnable       = "plugins.enable"
	OpDisable      = "plugins.disable"
	OpTools        = "plugins.tools"
	OpApproval     = "plugins.approval"
	OpToolApproval = "plugins.tool_approval"
	OpToolEnable   = "plugins.tool_enable"
	OpToolDisable  = "plugins.tool_disable"
	OpConfirm      = "plugins.confirm"
	OpPolicy       = "plugins.policy"
	OpPolicyReset  = "plugins.policy_reset"
	OpDiag         = "plugins.diag"
	OpSkills       = "skills"
	OpRescan       = "plugins.rescan"
)

// ServerView is one declared server as the owner sees it.
type ServerView struct {
	Name     string `json:"name"`
	Service  string `json:"service,omitempty"`
	Rejected string `json:"rejected,omitempty"`
	// State: disabled (error user_policy), unavailable, or the
	// connection's idle, connecting, connected, failed.
	State     string `json:"state"`
	Error     string `json:"error,omitempty"`
	Connected bool   `json:"connected"`
	ToolCount int    `json:"toolCount"`
	// Conn is the connection's counters (when the server is in use).
	Conn *provider.Status `json:"conn,omitempty"`
}

// PluginView is one plugin as `plugins list` shows it.
type PluginView struct {
	ID            string                 `json:"id"`
	Package       string                 `json:"package"`
	Name          string                 `json:"name,omitempty"`
	DisplayName   string                 `json:"displayName,omitempty"`
	Version       string                 `json:"version,omitempty"`
	VersionCode   int64                  `json:"versionCode"`
	SigningDigest string                 `json:"signingDigest"`
	TrustedDigest string                 `json:"trustedDigest,omitempty"`
	Builtin       bool                   `json:"builtin"`
	Status        string                 `json:"status"`
	Reason        string                 `json:"reason,omitempty"`
	Enabled       bool                   `json:"enabled"`
	Problems      []manifest.Problem     `json:"problems,omitempty"`
	Unsupported   []manifest.Unsupported `json:"unsupported,omitempty"`
	Servers       []ServerView           `json:"servers"`
	Skills        []string               `json:"skills"`
	SkillCount    int                    `json:"skillCount"`
	SkillProblems []SkillProblem         `json:"skillProblems,omitempty"`
}

// Admin runs one owner operation.
func (h *Host) Admin(ctx context.Context, op string, params json.RawMessage) (any, error) {
	switch op {
	case OpList:
		return h.list(), nil
	case OpEnable, OpDisable:
		var p struct {
			ID string `json:"id"`
		}
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return nil, h.setPluginEnabled(p.ID, op == OpEnable)
	case OpTools:
		var p struct {
			ID string `json:"id"`
		}
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return h.tools(p.ID)
	case OpApproval:
		var p struct {
			Plugin string `json:"plugin"`
			Server string `json:"server"`
			Tool   string `json:"tool"`
			Mode   string `json:"mode"`
		}
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return nil, h.setApproval(catalog.ToolID{Plugin: p.Plugin, Server: p.Server, Tool: p.Tool}, p.Mode)
	case OpToolApproval, OpToolEnable, OpToolDisable:
		var p struct {
			Name string `json:"name"`
			Mode string `json:"mode"`
		}
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		src, err := h.sourceOf(p.Name)
		if err != nil {
			return nil, err
		}
		switch op {
		case OpToolApproval:
			return nil, h.setApproval(src, p.Mode)
		default:
			return nil, h.setToolEnabled(src, op == OpToolEnable)
		}
	case OpConfirm:
		var p struct {
			ID string `json:"id"`
		}
		if err := decode(params, &p); err != nil {
			return nil, err
		}
		return nil, h.confirm(p.ID)
	case OpPolicy:
		return h.policyView(), nil
	case OpPolicyReset:
		return nil, h.policyReset()
	case OpDiag:
		return h.diag(), nil
	case OpSkills:
		return h.skillsView(), nil
	case OpRescan:
		if r, ok := h.o.Table.(interface{ Reload() error }); ok {
			r.Reload() // on error the last good table stays
		}
		h.Rescan()
		return nil, nil
	}
	return nil, errcode.Newf(errcode.Unsupported, "unknown extension-host operation %q", clip(op, 64))
}

func decode(raw json.RawMessage, v any) error {
	if len(raw) == 0 {
		raw = json.RawMessage(`{}`)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errcode.New(errcode.InvalidParams, "bad parameters")
	}
	return nil
}

func notFound(what string) *errcode.Error {
	return errcode.Newf(errcode.InvalidParams, "no such %s", what).WithDetails(map[string]any{"reason": "not_found"})
}

func (h *Host) list() []PluginView {
	h.mu.Lock()
	defer h.mu.Unlock()
	ids := make([]string, 0, len(h.plugins))
	for id := range h.plugins {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]PluginView, 0, len(ids))
	for _, id := range ids {
		out = append(out, h.viewLocked(h.plugins[id]))
	}
	return out
}

func (h *Host) viewLocked(p *pluginState) PluginView {
	v := PluginView{
		ID: p.ID, Package: p.Package.Name, Name: p.Name, DisplayName: p.DisplayName, Version: p.Version,
		VersionCode: p.Package.VersionCode, SigningDigest: p.Package.SigningDigest,
		Status: p.status(), Reason: p.Reason, Problems: p.Problems, Unsupported: p.Unsupported,
		Servers: []ServerView{}, Skills: []string{}, SkillProblems: p.SkillProblems,
	}
	if p.status() == StatusSignatureChanged {
		v.Reason = ""
	}
	if m := h.mem.Plugins[p.ID]; m != nil {
		v.TrustedDigest = m.Trusted
	}
	v.Enabled = p.ready() && h.pluginEnabledLocked(p)
	for _, s := range p.Skills {
		v.Skills = append(v.Skills, s.Name)
	}
	v.SkillCount = len(p.Skills)
	m := h.mem.Plugins[p.ID]
	for _, d := range p.Servers {
		sv := ServerView{Name: d.Name, Service: d.Service, Rejected: d.Rejected}
		switch {
		case d.Rejected != "" || !p.ready():
			sv.State = "unavailable"
		case !h.pluginEnabledLocked(p) || !h.serverEnabledLocked(p.Name, d.Name):
			sv.State, sv.Error = "disabled", "user_policy"
		default:
			if s := h.servers[serverKey{p.ID, d.Name}]; s != nil {
				st := s.Status()
				sv.Conn = &st
				sv.State, sv.Error, sv.Connected = st.State, st.Error, st.Connected
			} else {
				sv.State = provider.StateIdle
			}
		}
		if m != nil {
			sv.ToolCount = len(m.Known[d.Name])
		}
		v.Servers = append(v.Servers, sv)
	}
	return v
}

// afterPolicyLocked applies a policy change: managers, calls, catalog.
// The managers it returns must be closed once the lock is released.
func (h *Host) afterPolicyLocked() []*provider.Server {
	stale := h.syncServersLocked()
	h.publishLocked()
	return stale
}

// closeAll retires managers and then lists what needs listing.
func (h *Host) closeAll(ss []*provider.Server) {
	h.retire(ss)
	h.refreshTools()
}

func (h *Host) setPluginEnabled(id string, on bool) error {
	h.mu.Lock()
	p := h.plugins[id]
	if p == nil {
		h.mu.Unlock()
		return notFound("plugin")
	}
	if on && !p.ready() {
		h.mu.Unlock()
		return errcode.Newf(errcode.InvalidState, "the plugin is %s; it cannot be enabled", p.status()).WithDetails(map[string]any{"reason": "not_ready"})
	}
	if p.Name == "" {
		h.mu.Unlock()
		return errcode.New(errcode.InvalidState, "the plugin has no valid manifest").WithDetails(map[string]any{"reason": "not_ready"})
	}
	err := h.pol.update(func(pol *consent.Policy) error {
		return pol.SetEnabled(consent.Target{Plugin: p.Name}, on)
	})
	if err != nil {
		h.mu.Unlock()
		return err
	}
	h.stats["policyWrites"]++
	cs := h.afterPolicyLocked()
	h.mu.Unlock()
	h.closeAll(cs)
	return nil
}

func (h *Host) setToolEnabled(src catalog.ToolID, on bool) error {
	h.mu.Lock()
	err := h.pol.update(func(pol *consent.Policy) error {
		return pol.SetEnabled(consent.Target{Plugin: src.Plugin, Server: src.Server, Tool: src.Tool}, on)
	})
	if err != nil {
		h.mu.Unlock()
		return err
	}
	h.stats["policyWrites"]++
	cs := h.afterPolicyLocked()
	h.mu.Unlock()
	h.closeAll(cs)
	return nil
}

// setApproval sets always/ask ("" clears) at the plugin (server and tool
// empty), server or tool level. A tool-level always on a HIGH tool is
// refused high_risk; another mode bad_mode.
func (h *Host) setApproval(src catalog.ToolID, mode string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	risk := catalog.RiskWrite
	if src.Tool != "" {
		e, ok := h.entryBySourceLocked(src)
		if !ok {
			return notFound("tool")
		}
		risk = e.Risk
	}
	err := h.pol.update(func(pol *consent.Policy) error {
		return pol.SetApproval(consent.Target{Plugin: src.Plugin, Server: src.Server, Tool: src.Tool}, catalog.Approval(mode), risk)
	})
	if err != nil {
		return policyErr(err)
	}
	h.stats["policyWrites"]++
	h.publishLocked()
	return nil
}

// sourceOf maps a final name to its source, for tools of the catalog
// (enabled or not).
func (h *Host) sourceOf(name string) (catalog.ToolID, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cat != nil {
		if e, ok := h.cat.ByName(name); ok && e.Kind == catalog.KindPlugin {
			return e.Source, nil
		}
	}
	return catalog.ToolID{}, notFound("tool")
}

// tools lists a plugin's known tools (KnownTool); a plugin that is off
// lists none.
func (h *Host) tools(id string) ([]knownTool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.plugins[id]
	if p == nil {
		return nil, notFound("plugin")
	}
	out := []knownTool{}
	if h.cat == nil {
		return out, nil
	}
	for _, e := range h.cat.All() {
		if e.Kind != catalog.KindPlugin || e.PluginID != id {
			continue
		}
		out = append(out, knownTool{
			Name: e.Name, PluginID: e.PluginID, Source: e.Source, Title: e.Title, Description: e.Description,
			InputSchema: e.InputSchema, Risk: e.Risk, Enabled: e.Enabled, Approval: e.Approval, MayAlwaysAllow: e.MayAlwaysAllow,
		})
	}
	return out, nil
}

// confirm accepts a plugin's new signer. The plugin becomes ready and
// stays off until the owner enables it.
func (h *Host) confirm(id string) error {
	h.mu.Lock()
	p := h.plugins[id]
	m := h.mem.Plugins[id]
	if p == nil || m == nil {
		h.mu.Unlock()
		return notFound("plugin")
	}
	if !p.SignatureChanged {
		h.mu.Unlock()
		return errcode.New(errcode.InvalidState, "the plugin's signer has not changed").WithDetails(map[string]any{"reason": "not_changed"})
	}
	m.Trusted, m.Pending = p.Package.SigningDigest, ""
	if err := h.mem.save(h.o.DataDir); err != nil {
		h.mu.Unlock()
		return errcode.Wrap(errcode.StoreFailed, "the registry memory could not be written", err)
	}
	p.SignatureChanged = false
	h.stats["confirms"]++
	cs := h.afterPolicyLocked()
	h.mu.Unlock()
	h.closeAll(cs)
	return nil
}

// PolicyView is `plugins policy`.
type PolicyView struct {
	Health string          `json:"health"`
	Using  string          `json:"using"`
	Policy json.RawMessage `json:"policy"`
}

func (h *Host) policyView() PolicyView {
	h.mu.Lock()
	defer h.mu.Unlock()
	return PolicyView{Health: h.pol.health, Using: h.pol.using, Policy: h.pol.policy.Marshal()}
}

// policyReset replaces the policy with a fresh one in which every
// installed third-party plugin is off.
func (h *Host) policyReset() error {
	h.mu.Lock()
	var off []string
	for _, p := range h.plugins {
		if p.Name != "" {
			off = append(off, p.Name)
		}
	}
	slices.Sort(off)
	if err := h.pol.reset(off); err != nil {
		h.mu.Unlock()
		return err
	}
	h.stats["policyResets"]++
	cs := h.afterPolicyLocked()
	h.mu.Unlock()
	h.closeAll(cs)
	return nil
}

// Diag is `plugins diag`.
type Diag struct {
	Health         any            `json:"health"`
	Stats          map[string]int `json:"stats"`
	CatalogVersion uint64         `json:"catalogVersion"`
	ToolCount      int            `json:"toolCount"`
	SkillCount     int            `json:"skillCount"`
	Plugins        []PluginView   `json:"plugins"`
}

func (h *Host) diag() Diag {
	plugins := h.list()
	h.mu.Lock()
	defer h.mu.Unlock()
	stats := map[string]int{}
	for k, v := range h.stats {
		stats[k] = v
	}
	d := Diag{Health: h.healthLocked(), Stats: stats, CatalogVersion: h.version, SkillCount: len(h.skillCat), Plugins: plugins}
	if h.cat != nil {
		d.ToolCount = h.cat.Len()
	}
	return d
}

// SkillsView is `skills`.
type SkillsView struct {
	Skills   any                       `json:"skills"`
	Problems map[string][]SkillProblem `json:"problems"`
}

func (h *Host) skillsView() SkillsView {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := SkillsView{Skills: h.skillCat, Problems: map[string][]SkillProblem{}}
	for id, p := range h.plugins {
		if len(p.SkillProblems) > 0 {
			v.Problems[id] = p.SkillProblems
		}
	}
	return v
}
