package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Packages is the package table as the controller reads it (*apps.Table).
type Packages interface {
	All() []apps.Package
	ByName(name string) (apps.Package, bool)
}

// Launcher starts an app's service under its uid (*launcher.Client): the
// controller's wake.
type Launcher interface {
	Start(ctx context.Context, pkg, server string) (*launcher.Proc, error)
}

// DefaultWakeAttempts is how many times a service that does not answer is
// woken before the controller gives up: with the rebind backoff between
// them, 0.8 + 1.6 + 3.2 s of waiting.
const DefaultWakeAttempts = 4

// DefaultAuditSize is how many calls the audit keeps (upstream's 500).
const DefaultAuditSize = 500

// Options configure a Controller. Packages is required.
type Options struct {
	Packages Packages
	// Names are the runtime's socket names (the ACI sockets' prefix).
	Names transport.Names
	// Launcher wakes stopped apps; nil means no waking (a service that
	// does not answer is unavailable).
	Launcher Launcher
	// WakeAttempts bounds the wakes of one operation; 0 means
	// DefaultWakeAttempts.
	WakeAttempts int
	// AuditSize is the audit's length; 0 means DefaultAuditSize.
	AuditSize int
	// Clock times the rebind backoff, call budgets and the audit; nil
	// means the real clock.
	Clock clock.Clock
	// Logger receives packages, capability ids, codes and durations,
	// never arguments or results; nil discards.
	Logger *slog.Logger
}

// Controller discovers ACI services and calls their capabilities. Safe for
// concurrent use.
type Controller struct {
	o Options

	mu       sync.Mutex
	services map[serviceKey]*service
	catalog  []catalog.Entry // cached; nil after a change
	version  uint64
	changed  chan struct{}

	audit *auditRing
}

type serviceKey struct{ pkg, server string }

// service is one ACI service as last discovered.
type service struct {
	pkg      apps.Package
	svc      apps.Service
	socket   string
	caps     []wire.Capability
	problems []string
	protocol string
	// err is why the last discovery failed ("" when it worked); caps
	// stay what an earlier discovery found.
	err          string
	discoveredAt time.Time
}

// New returns a controller; Discover fills it.
func New(o Options) *Controller {
	if o.WakeAttempts <= 0 {
		o.WakeAttempts = DefaultWakeAttempts
	}
	if o.AuditSize <= 0 {
		o.AuditSize = DefaultAuditSize
	}
	o.Clock = clock.Or(o.Clock)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Controller{o: o, services: map[serviceKey]*service{}, changed: make(chan struct{}), audit: newAuditRing(o.AuditSize)}
}

// ServiceView is one discovered service for `ctl aci list`.
type ServiceView struct {
	Package      string   `json:"package"`
	Label        string   `json:"label"`
	Service      string   `json:"service"`
	UID          int      `json:"uid"`
	Socket       string   `json:"socket"`
	Protocol     string   `json:"protocol,omitempty"`
	Capabilities []string `json:"capabilities"`
	// Problems are capability elements that were skipped, with why.
	Problems     []string `json:"problems,omitempty"`
	Error        string   `json:"error,omitempty"`
	DiscoveredAt int64    `json:"discoveredAt,omitempty"` // unix ms
}

// aciServices lists the ACI services of the installed packages.
func (c *Controller) aciServices(only string) []serviceKey {
	var out []serviceKey
	for _, p := range c.o.Packages.All() {
		if only != "" && p.Name != only {
			continue
		}
		for _, s := range p.Services {
			if s.Kind == apps.ServiceKindACI {
				out = append(out, serviceKey{p.Name, s.Server})
			}
		}
	}
	return out
}

// Discover fetches the capabilities of every installed ACI service (of
// one package when pkg is not ""), waking those that do not answer, and
// forgets services that are no longer installed. Services are discovered
// concurrently; a failure is recorded on its service, never fatal.
func (c *Controller) Discover(ctx context.Context, pkg string) []ServiceView {
	keys := c.aciServices(pkg)
	c.mu.Lock()
	for k := range c.services {
		if (pkg == "" || k.pkg == pkg) && !slices.Contains(keys, k) {
			delete(c.services, k)
			c.bumpLocked()
		}
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.discoverOne(ctx, k)
		}()
	}
	wg.Wait()
	return c.Services(pkg)
}

func (c *Controller) discoverOne(ctx context.Context, k serviceKey) {
	p, ok := c.o.Packages.ByName(k.pkg)
	if !ok {
		return
	}
	svc, _ := p.Service(k.server)
	s := &service{pkg: p, svc: svc, socket: c.o.Names.ACI(p.Name, svc.Server)}
	cl := &wire.Client{Socket: s.socket, UID: p.UID}
	var caps []wire.Capability
	var problems []error
	err := c.withWake(ctx, s, func(ctx context.Context) error {
		var err error
		caps, problems, err = cl.Capabilities(ctx)
		return err
	})
	if err == nil {
		s.caps = caps
		for _, pr := range problems {
			s.problems = append(s.problems, pr.Error())
		}
		s.protocol, err = c.negotiate(ctx, cl, caps)
		if err != nil {
			s.caps = nil
		}
	}
	s.discoveredAt = c.o.Clock.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		s.err = err.Error()
		if old, ok := c.services[k]; ok && !errors.Is(err, wire.ErrPeerUID) && !errors.Is(err, wire.ErrNoCommonProtocol) {
			// Keep what worked before (upstream kept its cache when an
			// app went away); a call wakes the app again.
			s.caps, s.protocol, s.problems = old.caps, old.protocol, old.problems
		}
		c.o.Logger.Warn("aci: discovery failed", "package", k.pkg, "service", k.server, "err", err)
	} else {
		c.o.Logger.Info("aci: discovered", "package", k.pkg, "service", k.server, "capabilities", len(s.caps), "skipped", len(s.problems))
	}
	c.services[k] = s
	c.bumpLocked()
}

// negotiate asks aci_protocol, when the service declares it, which
// protocol versions it speaks.
func (c *Controller) negotiate(ctx context.Context, cl *wire.Client, caps []wire.Capability) (string, error) {
	if !slices.ContainsFunc(caps, func(x wire.Capability) bool { return x.ID == wire.ProtocolCapability }) {
		return wire.Negotiate("")
	}
	ctx, cancel := context.WithTimeout(ctx, wire.DefaultOpTimeout)
	defer cancel()
	r, err := cl.Do(ctx, &wire.Request{Method: wire.MethodCall, Capability: wire.ProtocolCapability, CallID: wire.NewCallID()}, nil)
	if err != nil {
		return "", fmt.Errorf("aci_protocol: %w", err)
	}
	if err := r.Err(); err != nil {
		return "", fmt.Errorf("aci_protocol: %w", err)
	}
	return wire.Negotiate(r.Result[wire.ResultSupported].Text())
}

// withWake runs op against a service, waking it through the launcher
// when it does not answer, with the rebind backoff between attempts. A
// socket held by another uid is never retried: waking cannot fix it.
func (c *Controller) withWake(ctx context.Context, s *service, op func(context.Context) error) error {
	err := op(ctx)
	for n := 0; err != nil && c.o.Launcher != nil && n < c.o.WakeAttempts; n++ {
		if errors.Is(err, wire.ErrPeerUID) || !errors.Is(err, wire.ServiceUnavailable) {
			return err
		}
		if n > 0 {
			if serr := clock.Sleep(ctx, c.o.Clock, wire.RebindDelay(n-1)); serr != nil {
				return err
			}
		}
		c.o.Logger.Info("aci: waking", "package", s.pkg.Name, "service", s.svc.Server, "attempt", n+1)
		if _, werr := c.o.Launcher.Start(ctx, s.pkg.Name, s.svc.Server); werr != nil {
			if launcher.Reason(werr) == "socket_taken" {
				return fmt.Errorf("%w: %v", wire.ErrPeerUID, werr)
			}
			err = fmt.Errorf("wake: %w", wire.Wrap(wire.ServiceUnavailable, werr))
			continue
		}
		err = op(ctx)
	}
	return err
}

// Services returns the discovered services (of one package when pkg is
// not ""), sorted.
func (c *Controller) Services(pkg string) []ServiceView {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := []ServiceView{}
	for k, s := range c.services {
		if pkg != "" && k.pkg != pkg {
			continue
		}
		v := ServiceView{Package: s.pkg.Name, Label: s.pkg.Label, Service: s.svc.Server, UID: s.pkg.UID, Socket: s.socket,
			Protocol: s.protocol, Capabilities: []string{}, Problems: s.problems, Error: s.err}
		if !s.discoveredAt.IsZero() {
			v.DiscoveredAt = s.discoveredAt.UnixMilli()
		}
		for _, cp := range s.caps {
			v.Capabilities = append(v.Capabilities, cp.ID)
		}
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Package != out[j].Package {
			return out[i].Package < out[j].Package
		}
		return out[i].Service < out[j].Service
	})
	return out
}

// bumpLocked records a change of the discovered set.
func (c *Controller) bumpLocked() {
	c.catalog = nil
	c.version++
	close(c.changed)
	c.changed = make(chan struct{})
}

// Changed returns a channel closed at the next change of the capabilities
// (for waiting on a discovery).
func (c *Controller) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// Follow discovers every service now and again whenever the package table
// changes (an install, an update, an uninstall), until ctx ends. changed
// is the table's change feed (*apps.Table.Changed).
func (c *Controller) Follow(ctx context.Context, changed func() <-chan struct{}) {
	for {
		ch := changed()
		c.Discover(ctx, "")
		select {
		case <-ctx.Done():
			return
		case <-ch:
		}
	}
}

// capability finds a discovered capability by its catalog id.
func (c *Controller) capability(id catalog.ACIToolID) (*service, *wire.Capability, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.services[serviceKey{id.Package, id.Service}]
	if !ok {
		return nil, nil, false
	}
	for i := range s.caps {
		if s.caps[i].ID == id.Capability {
			return s, &s.caps[i], true
		}
	}
	return nil, nil, false
}
