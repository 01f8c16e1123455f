package host

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/internal/provider"
	"github.com/agentoslab/agentlab/runtime/ext/internal/wire"
	"github.com/agentoslab/agentlab/runtime/ext/manifest"
	"github.com/agentoslab/agentlab/runtime/ext/skills"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Launcher starts and stops provider services.
type Launcher = provider.Launcher

// Packages is the package table as the host reads it (*apps.Table).
type Packages interface {
	// All returns every installed package.
	All() []apps.Package
	// Changed is closed at the next change.
	Changed() <-chan struct{}
}

// Options configure a Host. Table is required.
type Options struct {
	// DataDir is the runtime's data directory; the host keeps its files in
	// DataDir/ext.
	DataDir string
	// Table is the package table (read-only).
	Table Packages
	// Files reads plugin assets; nil means DirFiles.
	Files Files
	// Names are the runtime's socket names (apps' sockets, the link).
	Names transport.Names
	// Launcher starts provider services; nil means services must already
	// listen (tests).
	Launcher Launcher
	// CallTimeout is the default tool-call timeout (120 s).
	CallTimeout time.Duration
	// IdleTimeout closes idle provider connections (30 s).
	IdleTimeout time.Duration
	// ConnectTimeout bounds start + dial + initialize + tools/list (15 s).
	ConnectTimeout time.Duration
	// ListDebounce spaces tools/list refreshes after list_changed (200 ms).
	ListDebounce time.Duration
	// Clock times idle releases and call timeouts; nil means the real
	// clock.
	Clock clock.Clock
	// Logger receives plugin ids, states and codes, never arguments or
	// results; nil discards.
	Logger *slog.Logger
}

type serverKey struct {
	id     string // plugin id
	server string
}

// pluginState is a scanned plugin plus the host's verdict on its signer.
type pluginState struct {
	*scanned
	// SignatureChanged: the signer differs from the trusted one and the
	// owner has not confirmed it.
	SignatureChanged bool
}

func (p *pluginState) status() string {
	if p.Status == StatusReady && p.SignatureChanged {
		return StatusSignatureChanged
	}
	return p.Status
}

func (p *pluginState) ready() bool { return p.status() == StatusReady }

// Host is the extension host: discovery, policy, provider connections and
// the catalog. Safe for concurrent use.
type Host struct {
	o     Options
	files Files

	mu        sync.Mutex
	mem       *memory                        // guarded by mu
	memHealth string                         // guarded by mu
	pol       *policyStore                   // guarded by mu
	plugins   map[string]*pluginState        // by id; guarded by mu
	servers   map[serverKey]*provider.Server // guarded by mu
	refresh   map[serverKey]bool             // refreshes in progress; guarded by mu
	cat       *catalog.Catalog               // ext-side named catalog; guarded by mu
	skillCat  []skills.Skill                 // guarded by mu
	pushed    []byte                         // last catalog content; guarded by mu
	version   uint64                         // guarded by mu
	latest    wire.Catalog                   // guarded by mu
	stats     map[string]int                 // diag counters; guarded by mu
	closed    bool                           // guarded by mu
	notify    chan struct{}                  // a new catalog is ready
	wg        sync.WaitGroup                 // background work
}

// New opens the host's files and scans the installed packages. It does
// not start any app.
func New(o Options) (*Host, error) {
	if o.Table == nil {
		return nil, fmt.Errorf("ext host: no package table")
	}
	if o.Files == nil {
		o.Files = DirFiles{}
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = provider.DefaultCallTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Host{
		o: o, files: o.Files,
		plugins: map[string]*pluginState{}, servers: map[serverKey]*provider.Server{},
		refresh: map[serverKey]bool{}, stats: map[string]int{},
		notify: make(chan struct{}, 1),
	}
	h.mem, h.memHealth = loadMemory(o.DataDir)
	h.pol = openPolicy(o.DataDir)
	if h.memHealth != MemoryIntact {
		o.Logger.Warn("ext host: registry memory", "health", h.memHealth)
	}
	if h.pol.health != PolicyHealthy {
		o.Logger.Warn("ext host: approval policy", "health", h.pol.health)
	}
	h.Rescan()
	return h, nil
}

// Close stops every provider connection and background work.
func (h *Host) Close() {
	h.mu.Lock()
	h.closed = true
	servers := h.servers
	h.servers = map[serverKey]*provider.Server{}
	h.mu.Unlock()
	for _, s := range servers {
		s.Close()
	}
	h.wg.Wait()
}

// Updates is signalled (coalesced) whenever a new catalog is ready.
func (h *Host) Updates() <-chan struct{} { return h.notify }

// Catalog returns the latest catalog.
func (h *Host) Catalog() wire.Catalog {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.latest
}

// Rescan reads every installed package's plugin again and applies the
// discovery rules: signatures, upgrades, renames, uninstalls, names.
func (h *Host) Rescan() {
	var found []*scanned
	for _, p := range h.o.Table.All() {
		if s := scanPackage(p, h.files); s != nil {
			found = append(found, s)
		}
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.stats["scans"]++
	h.reconcileLocked(found)
	stale := h.syncServersLocked()
	h.publishLocked()
	h.mu.Unlock()
	h.retire(stale)
	h.refreshTools()
}

// retire closes managers the host no longer uses and stops their
// services, so the next call to an upgraded app runs its new version.
func (h *Host) retire(stale []*provider.Server) {
	for _, s := range stale {
		s.Close()
		if h.o.Launcher == nil {
			continue
		}
		pkg, server := s.Target()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := h.o.Launcher.Stop(ctx, pkg, server); err != nil {
			h.o.Logger.Debug("ext host: stopping a retired service failed", "package", pkg, "server", server)
		}
		cancel()
	}
}

// reconcileLocked applies spec §6.4 to a fresh scan.
func (h *Host) reconcileLocked(found []*scanned) {
	byID := map[string]*scanned{}
	var claims []manifest.Claim
	for _, s := range found {
		byID[s.ID] = s
		if s.Name != "" {
			claims = append(claims, manifest.Claim{ID: s.ID, Name: s.Name})
		}
	}
	names := manifest.ResolveNames(claims, h.mem.Owners)
	for _, id := range names.Conflicts {
		if s := byID[id]; s != nil && s.Status == StatusReady {
			s.Status, s.Reason = StatusUnavailable, ReasonNameConflict
		}
	}
	h.mem.Owners = names.Owner
	used := func(name, exceptID string) bool {
		for _, s := range found {
			if s.ID != exceptID && s.Name == name {
				return true
			}
		}
		return false
	}

	var forget, disable, disableIfUnset []string
	for _, s := range found {
		if s.Name == "" {
			continue
		}
		digest := s.Package.SigningDigest
		m := h.mem.Plugins[s.ID]
		switch {
		case m == nil && h.memHealth == MemoryReset:
			// Memory lost: never trust the current signer blindly.
			m = &memoryEntry{Package: s.Package.Name, Name: s.Name, Pending: digest, VersionCode: s.Package.VersionCode}
			forget, disable = append(forget, s.Name), append(disable, s.Name)
			h.o.Logger.Warn("ext host: plugin must be confirmed again (memory lost)", "plugin", s.ID)
		case m == nil:
			m = &memoryEntry{Package: s.Package.Name, Name: s.Name, Trusted: digest, VersionCode: s.Package.VersionCode}
			if !(faultinject.Enabled && faultinject.Active(faultinject.PluginsEnabledByDefault)) { // the fault leaves it on
				disableIfUnset = append(disableIfUnset, s.Name)
			}
			h.o.Logger.Info("ext host: plugin discovered", "plugin", s.ID)
		default:
			if m.Name != s.Name {
				if !used(m.Name, s.ID) {
					forget = append(forget, m.Name)
				}
				h.o.Logger.Info("ext host: plugin renamed", "plugin", s.ID)
				m.Name, m.Known = s.Name, nil
				disableIfUnset = append(disableIfUnset, s.Name)
			}
			switch {
			case m.Trusted != digest && m.Pending != digest:
				m.Pending = digest
				forget, disable = append(forget, s.Name), append(disable, s.Name)
				h.o.Logger.Warn("ext host: plugin signer changed", "plugin", s.ID)
			case m.Trusted == digest && m.Pending != "":
				m.Pending = "" // back to the trusted signer: restored (still off)
			}
			if m.VersionCode != s.Package.VersionCode {
				m.VersionCode, m.Known = s.Package.VersionCode, nil
				h.o.Logger.Info("ext host: plugin upgraded", "plugin", s.ID)
			}
		}
		h.mem.Plugins[s.ID] = m
	}
	for id, m := range h.mem.Plugins {
		if byID[id] == nil {
			delete(h.mem.Plugins, id)
			if !used(m.Name, "") {
				forget = append(forget, m.Name)
			}
			h.o.Logger.Info("ext host: plugin removed", "plugin", id)
		}
	}
	if err := h.mem.save(h.o.DataDir); err != nil {
		h.o.Logger.Error("ext host: registry memory not written", "err", err)
	}
	if len(forget)+len(disable)+len(disableIfUnset) > 0 && h.pol.health != PolicyCorrupt {
		err := h.pol.update(func(p *consent.Policy) error {
			for _, n := range forget {
				p.ForgetPlugin(n)
			}
			for _, n := range disable {
				p.SetEnabled(consent.Target{Plugin: n}, false)
			}
			for _, n := range disableIfUnset {
				if pp := p.Plugins[n]; pp == nil || pp.Enabled == nil {
					p.SetEnabled(consent.Target{Plugin: n}, false)
				}
			}
			return nil
		})
		if err != nil {
			h.o.Logger.Error("ext host: approval policy not written", "code", errcode.CodeOf(err))
		}
	}

	plugins := map[string]*pluginState{}
	for _, s := range found {
		ps := &pluginState{scanned: s}
		if m := h.mem.Plugins[s.ID]; m != nil && s.Name != "" && m.Trusted != s.Package.SigningDigest {
			ps.SignatureChanged = true
		}
		plugins[s.ID] = ps
	}
	h.plugins = plugins
}

// pluginEnabledLocked: the plugin level of the policy is on.
func (h *Host) pluginEnabledLocked(p *pluginState) bool {
	return p.Name != "" && h.pol.policy.PluginEnabled(p.Name)
}

// syncServersLocked keeps one connection manager per usable server of a
// ready plugin, aborts the calls of plugins that were turned off and
// starts listing the tools of enabled servers nobody listed yet. It
// returns managers to close once the lock is released.
func (h *Host) syncServersLocked() []*provider.Server {
	want := map[serverKey]*pluginState{}
	enabledNow := map[string]bool{}
	for _, p := range h.plugins {
		if !p.ready() {
			continue
		}
		on := h.pluginEnabledLocked(p)
		if on {
			enabledNow[p.Name] = true
		}
		for _, d := range p.usableServers() {
			want[serverKey{p.ID, d.Name}] = p
		}
	}
	var stale []*provider.Server
	for k, s := range h.servers {
		p := want[k]
		if p == nil || !h.sameProcess(k, p) {
			stale = append(stale, s)
			delete(h.servers, k)
		}
	}
	for k, p := range want {
		if h.servers[k] == nil {
			h.servers[k] = h.newServer(k, p)
		}
	}
	for k, s := range h.servers {
		p := want[k]
		if !enabledNow[p.Name] || !h.serverEnabledLocked(p.Name, k.server) {
			if st := s.Status(); st.Connected || st.InFlight > 0 || st.Queued > 0 {
				// Turned off: calls in flight end as result unknown and the
				// connection is closed.
				h.wg.Add(1)
				go func() {
					defer h.wg.Done()
					s.Abort("the plugin was turned off")
				}()
			}
			continue
		}
	}
	return stale
}

// refreshTools lists the tools of enabled servers nobody listed yet (a
// plugin just enabled, upgraded or renamed), each in the background. It
// runs after retired managers were stopped, so a new connection never
// meets a service that is about to be stopped.
func (h *Host) refreshTools() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return
	}
	for k, s := range h.servers {
		p := h.plugins[k.id]
		m := h.mem.Plugins[k.id]
		if p == nil || m == nil || m.Known[k.server] != nil || h.refresh[k] ||
			!h.pluginEnabledLocked(p) || !h.serverEnabledLocked(p.Name, k.server) {
			continue
		}
		h.refresh[k] = true
		h.stats["refreshes"]++
		h.wg.Add(1)
		go func() {
			defer h.wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 2*provider.DefaultConnectTimeout)
			err := s.Refresh(ctx)
			cancel()
			h.mu.Lock()
			delete(h.refresh, k)
			h.mu.Unlock()
			if err != nil {
				h.o.Logger.Warn("ext host: listing tools failed", "plugin", k.id, "server", k.server)
			}
		}()
	}
}

// serverEnabledLocked: the server level is not switched off.
func (h *Host) serverEnabledLocked(plugin, server string) bool {
	pp := h.pol.policy.Plugins[plugin]
	if pp == nil {
		return true
	}
	sp := pp.Servers[server]
	return sp == nil || sp.Enabled == nil || *sp.Enabled
}

// sameProcess: the manager still describes the package as installed
// (uid, version, signer); an upgrade gets a fresh manager, so a call
// never reuses a connection to the old version.
func (h *Host) sameProcess(k serverKey, p *pluginState) bool {
	s := h.servers[k]
	return s != nil && s.Ident() == ident(p)
}

func ident(p *pluginState) string {
	return fmt.Sprintf("%d/%d/%s", p.Package.UID, p.Package.VersionCode, p.Package.SigningDigest)
}

func (h *Host) newServer(k serverKey, p *pluginState) *provider.Server {
	return provider.New(provider.Config{
		Package:        p.Package.Name,
		UID:            p.Package.UID,
		Server:         k.server,
		Socket:         h.o.Names.App(p.Package.Name, k.server),
		Ident:          ident(p),
		Launcher:       h.o.Launcher,
		IdleTimeout:    h.o.IdleTimeout,
		ConnectTimeout: h.o.ConnectTimeout,
		ListDebounce:   h.o.ListDebounce,
		Clock:          h.o.Clock,
		Logger:         h.o.Logger,
		OnTools:        func(tools []plugin.ToolInfo) { h.onTools(k, tools) },
	})
}

// onTools records a server's tool list and publishes the catalog.
func (h *Host) onTools(k serverKey, tools []plugin.ToolInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := h.mem.Plugins[k.id]
	if m == nil || h.closed {
		return
	}
	sort.Slice(tools, func(i, j int) bool { return tools[i].Name < tools[j].Name })
	if m.Known == nil {
		m.Known = map[string][]plugin.ToolInfo{}
	}
	if old, ok := m.Known[k.server]; ok && sameTools(old, tools) {
		return
	}
	if tools == nil {
		tools = []plugin.ToolInfo{}
	}
	m.Known[k.server] = tools
	h.stats["toolLists"]++
	if err := h.mem.save(h.o.DataDir); err != nil {
		h.o.Logger.Error("ext host: registry memory not written", "err", err)
	}
	h.publishLocked()
}

func sameTools(a, b []plugin.ToolInfo) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

// knownTool is one catalog tool as the owner's tools show it
// (IExtensionHost.listTools: name, pluginId, source, title, description,
// inputSchema, risk, enabled, approval, mayAlwaysAllow — in that order).
type knownTool struct {
	Name           string           `json:"name"`
	PluginID       string           `json:"pluginId"`
	Source         catalog.ToolID   `json:"source"`
	Title          string           `json:"title"`
	Description    string           `json:"description"`
	InputSchema    json.RawMessage  `json:"inputSchema"`
	Risk           catalog.Risk     `json:"risk"`
	Enabled        bool             `json:"enabled"`
	Approval       catalog.Approval `json:"approval"`
	MayAlwaysAllow bool             `json:"mayAlwaysAllow"`
}

// Catalog bounds: what one push to serve may carry. Tools past them (in
// plugin id order) are left out and counted in the diagnostics.
const (
	MaxCatalogTools = 2048
	MaxCatalogBytes = 8 << 20 // schemas and descriptions
)

// entriesLocked lists the catalog entries: every known tool of every
// usable server of ready plugins enabled at the plugin level, including
// tools switched off at the server or tool level (Enabled false, so their
// names stay stable).
func (h *Host) entriesLocked() ([]catalog.Entry, []skills.Skill) {
	var entries []catalog.Entry
	var sk []skills.Skill
	size, dropped := 0, 0
	defer func() { h.stats["catalogDropped"] = dropped }()
	ids := make([]string, 0, len(h.plugins))
	for id := range h.plugins {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		p := h.plugins[id]
		if !p.ready() || !h.pluginEnabledLocked(p) {
			continue
		}
		sk = append(sk, p.Skills...)
		m := h.mem.Plugins[id]
		if m == nil {
			continue
		}
		for _, d := range p.usableServers() {
			for _, t := range m.Known[d.Name] {
				cost := len(t.InputSchema) + len(t.Description) + len(t.Title)
				if len(entries) == MaxCatalogTools || size+cost > MaxCatalogBytes {
					dropped++
					continue
				}
				size += cost
				src := catalog.ToolID{Plugin: p.Name, Server: d.Name, Tool: t.Name}
				hints := catalog.Annotations{DestructiveHint: t.DestructiveHint, ReadOnlyHint: t.ReadOnlyHint, OpenWorldHint: t.OpenWorldHint}
				risk := catalog.EffectiveRisk(nil, hints)
				res := h.pol.policy.Resolve(src)
				entries = append(entries, catalog.Entry{
					Kind: catalog.KindPlugin, Source: src, PluginID: id,
					Title: t.Title, Description: t.Description, InputSchema: t.InputSchema,
					Risk: risk, Hints: hints, Enabled: res.Enabled, Approval: res.Approval, MayAlwaysAllow: risk.MayAlwaysAllow(),
				})
			}
		}
	}
	return entries, skills.BuildCatalog(sk)
}

// publishLocked rebuilds the catalog and, when it changed, signals the
// link to push it.
func (h *Host) publishLocked() {
	entries, sk := h.entriesLocked()
	cat, err := catalog.New(entries)
	if err != nil {
		h.o.Logger.Error("ext host: catalog not built", "err", err)
		return
	}
	h.cat, h.skillCat = cat, sk
	next := wire.Catalog{Tools: cat.All(), Skills: sk, Health: h.healthLocked()}
	if next.Tools == nil {
		next.Tools = []catalog.Entry{}
	}
	if next.Skills == nil {
		next.Skills = []skills.Skill{}
	}
	b, _ := json.Marshal(next)
	if bytes.Equal(b, h.pushed) {
		return
	}
	h.pushed = b
	h.version++
	next.Version = h.version
	h.latest = next
	h.stats["catalogs"]++
	select {
	case h.notify <- struct{}{}:
	default:
	}
}

func (h *Host) healthLocked() wire.Health {
	return wire.Health{Policy: h.pol.health, PolicyUsing: h.pol.using, Memory: h.memHealth}
}

// Call runs a plugin tool call (wire.MethodCall).
func (h *Host) Call(ctx context.Context, p wire.CallParams) wire.CallResult {
	h.mu.Lock()
	h.stats["calls"]++
	s, err := h.callableLocked(p.Source)
	h.mu.Unlock()
	if err != nil {
		return wire.CallResult{Code: string(errcode.ToolNotInCatalog), IsError: true, Outcome: engine.OutcomeRejected,
			Text: errcode.ToolText(errcode.ToolNotInCatalog, catalog.NotAvailable(p.Name).Text)}
	}
	timeout := h.o.CallTimeout
	if p.TimeoutMs > 0 {
		timeout = time.Duration(p.TimeoutMs) * time.Millisecond
	}
	return s.Call(ctx, p.Name, p.Source.Tool, p.Arguments, timeout)
}

var errNotCallable = errcode.New(errcode.ToolNotInCatalog, "not available")

// callableLocked finds the manager of an enabled, known tool.
func (h *Host) callableLocked(src catalog.ToolID) (*provider.Server, error) {
	id := h.mem.Owners[src.Plugin]
	p := h.plugins[id]
	if p == nil || !p.ready() || !h.pluginEnabledLocked(p) || !h.pol.policy.Resolve(src).Enabled {
		return nil, errNotCallable
	}
	m := h.mem.Plugins[id]
	if m == nil || !slices.ContainsFunc(m.Known[src.Server], func(t plugin.ToolInfo) bool { return t.Name == src.Tool }) {
		return nil, errNotCallable
	}
	s := h.servers[serverKey{id, src.Server}]
	if s == nil {
		return nil, errNotCallable
	}
	return s, nil
}

// ReadSkill is read_skill's file access (wire.MethodSkill). Errors are
// tool_failed *errcode.Error values with the spec's sentences.
func (h *Host) ReadSkill(p wire.SkillParams) (wire.SkillResult, error) {
	h.mu.Lock()
	sk, ok := skills.Find(h.skillCat, p.Name)
	var known []string
	for _, s := range h.skillCat {
		known = append(known, s.ID)
	}
	var pl *pluginState
	if ok {
		pl = h.plugins[sk.PluginID]
	}
	h.stats["skillReads"]++
	h.mu.Unlock()
	if !ok || pl == nil {
		return wire.SkillResult{}, skills.UnknownSkill(known)
	}
	path := p.Path
	if path == "" {
		path = skills.DefaultSkillFileName
	}
	if err := skills.CheckPath(path); err != nil {
		return wire.SkillResult{}, skills.BadPath(err)
	}
	rel := skills.FilePath(sk.Dir, path)
	if !pl.Files[rel] {
		return wire.SkillResult{}, skills.NoSuchFile()
	}
	b, err := h.files.Read(pl.Package, rel, skills.MaxReadBytes+1)
	if err != nil {
		return wire.SkillResult{}, skills.ReadFailed(err)
	}
	text, truncated, err := skills.ReadResult(sk.ID, sk.Plugin, b)
	if err != nil {
		return wire.SkillResult{}, err
	}
	return wire.SkillResult{Text: text, Truncated: truncated}, nil
}

// SetAlways is the consent card's "always allow" (wire.MethodAlways): a
// tool-level always for a known tool whose risk allows it.
func (h *Host) SetAlways(src catalog.ToolID) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.entryBySourceLocked(src)
	if !ok {
		return errcode.New(errcode.InvalidParams, "no such tool in the catalog").WithDetails(map[string]any{"reason": "not_found"})
	}
	err := h.pol.update(func(p *consent.Policy) error { return p.SetAlways(src, e.Risk) })
	if err != nil {
		return policyErr(err)
	}
	h.publishLocked()
	return nil
}

func (h *Host) entryBySourceLocked(src catalog.ToolID) (catalog.Entry, bool) {
	if h.cat == nil {
		return catalog.Entry{}, false
	}
	for _, e := range h.cat.All() {
		if e.Kind == catalog.KindPlugin && e.Source == src {
			return e, true
		}
	}
	return catalog.Entry{}, false
}

// policyErr maps the policy setters' errors to the owner's error codes.
func policyErr(err error) error {
	switch {
	case err == nil:
		return nil
	case isErr(err, consent.ErrHighRisk):
		return errcode.New(errcode.InvalidParams, "a high-risk tool cannot be set to always allow").WithDetails(map[string]any{"reason": "high_risk"})
	case isErr(err, consent.ErrBadMode):
		return errcode.New(errcode.InvalidParams, "approval must be always or ask").WithDetails(map[string]any{"reason": "bad_mode"})
	case isErr(err, consent.ErrBadTarget):
		return errcode.New(errcode.InvalidParams, "name a plugin, and a server for a tool")
	}
	return err
}

func isErr(err, target error) bool {
	for e := err; e != nil; {
		if e == target {
			return true
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			return false
		}
		e = u.Unwrap()
	}
	return false
}

// Health reports the state of the policy and memory files.
func (h *Host) Health() wire.Health {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.healthLocked()
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
