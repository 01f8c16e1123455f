package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/internal/wire"
	"github.com/agentoslab/agentlab/runtime/ext/skills"
	"github.com/agentoslab/agentlab/runtime/internal/rpc"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Defaults (spec §4.6).
const (
	DefaultCallTimeout   = 120 * time.Second
	DefaultAlwaysTimeout = 5 * time.Second
	// resultGrace is how long a cancelled call waits for the extension
	// host's own answer (the provider's cancellation) before giving up.
	resultGrace = 5 * time.Second
	// adminTimeout bounds an owner operation forwarded to the host.
	adminTimeout = 30 * time.Second
	// pidWait bounds how long an accepted link waits for the pid of the
	// process just started to be known.
	pidWait = 2 * time.Second
)

// ACITools is the seam to the capabilities of installed apps' ACI
// services (package runtime/aci/controller): catalog entries of kind aci
// and their calls. The broker runs its flow for them as for plugin tools
// (scope, mode, risk, consent, dispatch).
type ACITools interface {
	// Entries are the capabilities (unnamed; the broker names them).
	Entries() []catalog.Entry
	// Version changes whenever Entries does.
	Version() uint64
	// CallACI runs one call the flow allowed: confirmed says the owner
	// answered a consent card for this very call; progress receives a
	// callAsync's progress in order.
	CallACI(ctx context.Context, id catalog.ACIToolID, args json.RawMessage, caller engine.Caller, confirmed bool, progress func(percent int, message string)) engine.ToolResult
}

// SessionTools is the seam to caller-supplied MCP servers (package
// sessionmcp): their tools per session and their calls.
type SessionTools interface {
	// Tools returns the session's tools (KindSession entries, unnamed),
	// first retrying unreachable servers when their throttle allows (it is
	// called before each task).
	Tools(ctx context.Context, sessionID string) []catalog.Entry
	// Known returns the session's tools without any network I/O.
	Known(sessionID string) []catalog.Entry
	// Call runs one tool of the session's servers.
	Call(ctx context.Context, sessionID string, id catalog.SessionToolID, name string, args json.RawMessage, timeout time.Duration) engine.ToolResult
	// Forget drops the session's servers.
	Forget(sessionID string)
}

// Options configure a Broker.
type Options struct {
	// Names are the runtime's sockets; the link is Names.Ext().
	Names transport.Names
	// DataDir and AppsDir are passed to the extension host.
	DataDir, AppsDir string
	// ExtFlags are extra flags of `agentosd ext` (timeouts in tests).
	ExtFlags []string
	// ExtCommand builds the extension host's command; nil runs this
	// binary with ExtArgs().
	ExtCommand func() (*exec.Cmd, error)
	// ExtStderr receives the extension host's log; nil discards.
	ExtStderr io.Writer
	// RestartBackoff is the first restart delay (1 s).
	RestartBackoff time.Duration
	// Consent is the coordinator; nil makes one.
	Consent *consent.Coordinator
	// Sessions are the caller-supplied MCP servers; nil means none.
	Sessions SessionTools
	// ACI are the apps' ACI capabilities; nil means none.
	ACI ACITools
	// CallTimeout is toolTimeoutMillis (120 s).
	CallTimeout time.Duration
	// AlwaysTimeout bounds the "always allow" write-back (5 s).
	AlwaysTimeout time.Duration
	// Clock times consent cards (of the coordinator the broker makes) and
	// the extension host's restart backoff; nil means the real clock.
	Clock clock.Clock
	// Logger receives ids, names, codes and states, never arguments,
	// results or prompts; nil discards.
	Logger *slog.Logger
}

// Broker is serve's side of the extension host: it starts and watches
// `agentosd ext`, mirrors its catalog, and implements engine.Tools (the
// broker flow of spec §5.2: catalog, scope and mode check by name, risk
// policy, consent, dispatch, result). Safe for concurrent use.
type Broker struct {
	o       Options
	consent *consent.Coordinator
	memory  consent.SessionMemory

	svc    transport.Service // the link socket
	cancel context.CancelFunc
	wg     sync.WaitGroup

	restartNow chan struct{}

	mu           sync.Mutex
	peer         *rpc.Peer        // guarded by mu
	linkPID      int              // guarded by mu
	extPID       int              // guarded by mu
	extProc      *os.Process      // guarded by mu
	extStarted   time.Time        // guarded by mu
	extRestarts  int              // guarded by mu
	forceRestart bool             // guarded by mu
	links        int              // link connections; guarded by mu
	drops        int              // link ends; guarded by mu
	cat          *catalog.Catalog // the mirror; guarded by mu
	skillCat     []skills.Skill   // guarded by mu
	health       wire.Health      // guarded by mu
	version      uint64           // guarded by mu
	changed      chan struct{}    // closed and replaced on every catalog or link change; guarded by mu
	catalogLink  int              // the link (b.links) whose catalog b.cat is; guarded by mu
	pidCh        chan struct{}    // closed and replaced when extPID changes; guarded by mu
	aciCat       *catalog.Catalog // ACI capabilities named, for aciVersion; guarded by mu
	aciVersion   uint64           // guarded by mu
	closed       bool             // guarded by mu
}

var _ engine.Tools = (*Broker)(nil)

// New returns a broker; Start runs it.
func New(o Options) *Broker {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.AlwaysTimeout <= 0 {
		o.AlwaysTimeout = DefaultAlwaysTimeout
	}
	if o.ExtStderr == nil {
		o.ExtStderr = io.Discard
	}
	o.Clock = clock.Or(o.Clock)
	c := o.Consent
	if c == nil {
		c = consent.NewCoordinator(&consent.CoordinatorOptions{Clock: o.Clock, Logger: o.Logger})
	}
	empty, _ := catalog.New(nil)
	return &Broker{
		o: o, consent: c, cat: empty,
		restartNow: make(chan struct{}, 1),
		changed:    make(chan struct{}),
		pidCh:      make(chan struct{}),
	}
}

// Consent returns the consent coordinator.
func (b *Broker) Consent() *consent.Coordinator { return b.consent }

// Start listens on the link socket and starts the extension host.
func (b *Broker) Start(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	if err := b.svc.Start(ctx, b.o.Names.Ext(), b.admit); err != nil {
		cancel()
		return fmt.Errorf("broker: %w", err)
	}
	b.cancel = cancel
	b.wg.Add(1)
	go func() { defer b.wg.Done(); b.superviseExt(ctx) }()
	return nil
}

// Close stops the extension host, the link and the consent coordinator.
func (b *Broker) Close() {
	b.mu.Lock()
	b.closed = true
	peer := b.peer
	b.mu.Unlock()
	if b.cancel != nil {
		b.cancel()
	}
	if peer != nil {
		peer.Close()
	}
	b.svc.Close()
	b.wg.Wait()
	b.consent.Close()
}

func (b *Broker) pidChanged() {
	b.mu.Lock()
	close(b.pidCh)
	b.pidCh = make(chan struct{})
	b.mu.Unlock()
}

// admit takes links from this process's uid only; serveLink then checks
// that the peer is the process the broker started.
func (b *Broker) admit(c *transport.Conn) transport.Admission {
	if cred := c.Cred(); cred.UID != os.Getuid() {
		b.o.Logger.Warn("broker: link refused", "uid", cred.UID, "pid", cred.PID)
		return transport.Refuse(nil)
	}
	return transport.Admission{Serve: b.serveLink}
}

// serveLink runs the extension host's link until it ends. The pid check
// waits (briefly) for the pid of the process just started, so it runs
// here rather than on the accept loop.
func (b *Broker) serveLink(ctx context.Context, c *transport.Conn) {
	cred := c.Cred()
	if !b.isExt(ctx, cred.PID) {
		b.o.Logger.Warn("broker: link refused", "uid", cred.UID, "pid", cred.PID)
		return
	}
	peer := rpc.New(c, &rpc.Options{Notify: b.onNotify, MaxLineChars: wire.MaxLineChars, Logger: b.o.Logger})
	b.mu.Lock()
	old := b.peer
	b.peer, b.linkPID = peer, cred.PID
	b.links++
	b.signalLocked()
	b.mu.Unlock()
	if old != nil {
		old.Close()
	}
	err := peer.Run(ctx)
	b.mu.Lock()
	if b.peer == peer {
		b.peer, b.linkPID = nil, 0
	}
	b.drops++
	b.signalLocked()
	b.mu.Unlock()
	b.o.Logger.Info("broker: extension host link ended", "err", errString(err))
}

// isExt waits briefly for the started process's pid and compares.
func (b *Broker) isExt(ctx context.Context, pid int) bool {
	deadline := time.NewTimer(pidWait)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		cur, ch := b.extPID, b.pidCh
		b.mu.Unlock()
		if cur == pid {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (b *Broker) signalLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// onNotify receives the extension host's notifications.
func (b *Broker) onNotify(method string, params json.RawMessage) {
	switch method {
	case wire.NotifyCatalog:
		var c wire.Catalog
		if err := json.Unmarshal(params, &c); err != nil {
			b.o.Logger.Warn("broker: bad catalog push")
			return
		}
		entries := c.Tools
		if len(c.Skills) > 0 {
			// read_skill is offered whenever there are skills to read.
			entries = append(append([]catalog.Entry(nil), c.Tools...), skills.ToolEntry())
		}
		cat, err := catalog.New(entries)
		if err != nil {
			b.o.Logger.Warn("broker: catalog push refused", "err", err)
			return
		}
		b.mu.Lock()
		b.cat, b.skillCat, b.health, b.version = cat, c.Skills, c.Health, c.Version
		b.catalogLink = b.links
		b.signalLocked()
		b.mu.Unlock()
		b.o.Logger.Info("broker: catalog", "version", c.Version, "tools", cat.Len(), "skills", len(c.Skills))
	case wire.NotifyHello:
		var h wire.Hello
		json.Unmarshal(params, &h)
		b.o.Logger.Info("broker: extension host connected", "pid", h.PID)
	}
}

// Catalog returns the catalog the extension host last pushed.
func (b *Broker) Catalog() *catalog.Catalog {
	cat, _ := b.mirror()
	return cat
}

// mirror returns the current catalog and skills.
func (b *Broker) mirror() (*catalog.Catalog, []skills.Skill) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.cat, b.skillCat
}

func (b *Broker) link() *rpc.Peer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peer
}

// errExtDown is returned by owner operations while the host is down.
func errExtDown() *errcode.Error {
	return errcode.New(errcode.Busy, "the extension host is not running; try again in a moment").
		WithDetails(map[string]any{"reason": "ext_down"})
}

// adminOp forwards an owner operation to the extension host.
func (b *Broker) adminOp(ctx context.Context, op string, params any, result any) error {
	peer := b.link()
	if peer == nil {
		return errExtDown()
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return errcode.Wrap(errcode.InvalidParams, "bad parameters", err)
	}
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	err = peer.Call(ctx, wire.MethodAdmin, wire.AdminParams{Op: op, Params: raw}, result)
	if errors.Is(err, rpc.ErrClosed) {
		return errExtDown()
	}
	return err
}

// Status is `ext status`.
type Status struct {
	Running        bool        `json:"running"`
	PID            int         `json:"pid,omitempty"`
	Connected      bool        `json:"connected"`
	Restarts       int         `json:"restarts"`
	LinkConnects   int         `json:"linkConnects"`
	LinkDrops      int         `json:"linkDrops"`
	CatalogVersion uint64      `json:"catalogVersion"`
	ToolCount      int         `json:"toolCount"`
	SkillCount     int         `json:"skillCount"`
	Health         wire.Health `json:"health"`
}

// Status returns the extension host's state as serve sees it.
func (b *Broker) Status() Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	return Status{
		Running: b.extPID != 0, PID: b.extPID, Connected: b.peer != nil,
		Restarts: b.extRestarts, LinkConnects: b.links, LinkDrops: b.drops,
		CatalogVersion: b.version, ToolCount: b.cat.Len(), SkillCount: len(b.skillCat), Health: b.health,
	}
}

// WaitCatalog waits until a tool with this final name is in the catalog
// (absent: until it is not) and enabled, or ctx ends. It reports whether
// the condition was met.
func (b *Broker) WaitCatalog(ctx context.Context, name string, absent bool) bool {
	return b.waitUntil(ctx, func() bool {
		e, ok := b.cat.ByName(name)
		return (ok && e.Enabled) != absent
	})
}

// waitNewLink waits until an extension host connected after link number
// after (Status().LinkConnects) and pushed its catalog, or ctx ends.
func (b *Broker) waitNewLink(ctx context.Context, after int) bool {
	return b.waitUntil(ctx, func() bool { return b.peer != nil && b.links > after && b.catalogLink == b.links })
}

// WaitLink waits until the extension host is connected (or ctx ends).
func (b *Broker) WaitLink(ctx context.Context) bool {
	return b.waitUntil(ctx, func() bool { return b.peer != nil })
}

// waitUntil waits until cond, evaluated under b.mu at every catalog or
// link change, holds, or ctx ends; it reports whether cond held.
func (b *Broker) waitUntil(ctx context.Context, cond func() bool) bool {
	for {
		b.mu.Lock()
		ok, ch := cond(), b.changed
		b.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}
