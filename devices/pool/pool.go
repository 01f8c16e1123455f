// Package pool keeps the lab's device inventory across several sources
// (adb servers, or anything that can list devices), gates every lease on
// the device's health, hands out exclusive leases by attributes, and runs
// a recovery ladder on devices that fail, quarantining those it cannot
// bring back (lab-reference A.11 items 1-2, after Tradefed and Marathon).
//
// Every state change goes through one function (Pool.transitionLocked),
// which enforces the state machine in state.go and publishes an Event.
package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/devices"
)

// Found is one device a source lists.
type Found struct {
	Serial string
	// State is the adb transport state ("device", "offline", ...).
	State  string
	Device devices.Device
}

// Source lists devices: an adb server, or any inventory that can.
type Source interface {
	Name() string
	Devices(ctx context.Context) ([]Found, error)
}

// Reconnecter is a Source that can kick a device's transport
// (adb reconnect): the second rung of the ladder.
type Reconnecter interface {
	Reconnect(ctx context.Context, serial string) error
}

// Connecter is a Source that can connect a TCP device again
// (adb disconnect + adb connect): the third rung. CanConnect says which
// serials it applies to.
type Connecter interface {
	CanConnect(serial string) bool
	Connect(ctx context.Context, serial string) error
}

// Health configures the gate run before every lease. Zero values take the
// defaults named on each field.
type Health struct {
	// ShellTimeout bounds each probe; a shell that does not answer within
	// it fails the gate. Default 5 s.
	ShellTimeout time.Duration
	// MinBattery is the lowest battery level leased, where a battery
	// exists. Default 20; negative disables.
	MinBattery int
	// MinFreeStorage is the fewest free bytes on StoragePath. Default
	// 256 MiB; negative disables.
	MinFreeStorage int64
	// StoragePath is the filesystem checked. Default "/data".
	StoragePath string
}

// Recovery configures the ladder.
type Recovery struct {
	// StepTimeout bounds one rung's action and the wait for the device to
	// be healthy after it. Default 30 s.
	StepTimeout time.Duration
	// RebootTimeout bounds the reboot rung. Default 3 min.
	RebootTimeout time.Duration
	// NoReboot skips the reboot rung (for devices a reboot would lose).
	NoReboot bool
	// MaxRecoveries within FlapWindow quarantine a device that keeps
	// failing after being recovered. Defaults 3 and 30 min.
	MaxRecoveries int
	FlapWindow    time.Duration
}

// Options configure a Pool. Only Sources is required.
type Options struct {
	Sources []Source
	// Labels are per-device metadata by serial, matched by Selector.Labels.
	Labels   map[string]map[string]string
	Health   Health
	Recovery Recovery
	// MonitorInterval is how often sources are listed and leased devices
	// watched. Default 2 s; negative disables the loop (tests call
	// Refresh).
	MonitorInterval time.Duration
	// RecheckInterval is how long a device failing a condition (battery,
	// storage) waits before it is checked again. Default 1 min.
	RecheckInterval time.Duration
	// Logger receives state changes. Nil discards.
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.Health.ShellTimeout <= 0 {
		o.Health.ShellTimeout = 5 * time.Second
	}
	if o.Health.MinBattery == 0 {
		o.Health.MinBattery = 20
	}
	if o.Health.MinFreeStorage == 0 {
		o.Health.MinFreeStorage = 256 << 20
	}
	if o.Health.StoragePath == "" {
		o.Health.StoragePath = "/data"
	}
	if o.Recovery.StepTimeout <= 0 {
		o.Recovery.StepTimeout = 30 * time.Second
	}
	if o.Recovery.RebootTimeout <= 0 {
		o.Recovery.RebootTimeout = 3 * time.Minute
	}
	if o.Recovery.MaxRecoveries <= 0 {
		o.Recovery.MaxRecoveries = 3
	}
	if o.Recovery.FlapWindow <= 0 {
		o.Recovery.FlapWindow = 30 * time.Minute
	}
	if o.MonitorInterval == 0 {
		o.MonitorInterval = 2 * time.Second
	}
	if o.RecheckInterval <= 0 {
		o.RecheckInterval = time.Minute
	}
}

// Errors.
var (
	// ErrClosed: the pool was closed.
	ErrClosed = errors.New("pool closed")
	// ErrNoDevice: Acquire's context ended before a matching device
	// passed the gate; the error text says what each candidate lacked.
	ErrNoDevice = errors.New("no device available")
	// ErrUnknownDevice: no member has that serial.
	ErrUnknownDevice = errors.New("unknown device")
	// ErrLeaseLost: the device died or was taken away during the lease.
	ErrLeaseLost = errors.New("lease lost")
)

// member is one device in the inventory. Its fields are guarded by
// Pool.mu.
type member struct {
	serial string
	src    Source
	dev    devices.Device
	state  State
	reason string
	since  time.Time
	// gen counts transitions, so an Acquire can tell a device it rejected
	// has changed since.
	gen     uint64
	info    devices.Info
	hasInfo bool
	lease   *Lease
	// adbState is the state the source listed last.
	adbState string
	// recheckAt is when a device unhealthy for a condition is re-gated.
	recheckAt time.Time
	// rootFault is set when the device failed the gate's root check, so
	// that recovery checks root too before calling it healthy.
	rootFault bool
	// recovered holds when the ladder last brought the device back, to
	// spot a device that keeps failing (flapping).
	recovered []time.Time
}

// Pool is the inventory. Create it with New, stop it with Close.
type Pool struct {
	opts Options
	log  *slog.Logger

	ctx    context.Context // cancelled by Close; parent of background work
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex // guards the fields that follow
	// members by serial. Serials are assumed unique across sources.
	members map[string]*member
	labels  map[string]map[string]string
	// changed is closed and replaced on every transition, waking Acquire.
	changed chan struct{}
	subs    map[*subscriber]struct{}
	seq     uint64
	closed  bool
	// waiters are the Acquire calls in progress, oldest first: an older
	// waiter has first claim on any device it matches.
	waiters   []*waiter
	waiterSeq uint64
}

// waiter is one Acquire call. Its fields are guarded by Pool.mu.
type waiter struct {
	sel Selector
	// rejected remembers devices this call turned down, by generation,
	// so that a device that changes state is considered again.
	rejected map[string]uint64
}

// wants reports whether w would take m now.
func (p *Pool) wantsLocked(w *waiter, m *member) bool {
	if g, ok := w.rejected[m.serial]; ok && g == m.gen {
		return false
	}
	return m.hasInfo && w.sel.Matches(m.info, p.labels[m.serial])
}

// New creates a pool and, unless MonitorInterval is negative, starts its
// monitor loop. It does not list the sources: call Refresh for an
// inventory at once.
func New(opts *Options) (*Pool, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if len(o.Sources) == 0 {
		return nil, errors.New("pool: no sources")
	}
	o.setDefaults()
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{
		opts:    o,
		log:     log,
		ctx:     ctx,
		cancel:  cancel,
		members: map[string]*member{},
		labels:  map[string]map[string]string{},
		changed: make(chan struct{}),
		subs:    map[*subscriber]struct{}{},
	}
	for s, l := range o.Labels {
		p.labels[s] = maps.Clone(l)
	}
	if o.MonitorInterval > 0 {
		p.wg.Add(1)
		go p.monitor()
	}
	return p, nil
}

// Close stops the monitor and every recovery, waits for them, and ends
// pending Acquires with ErrClosed. Leases stay valid handles but the pool
// no longer watches them.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.wakeLocked()
	for s := range p.subs {
		close(s.ch)
		delete(p.subs, s)
	}
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	return nil
}

func (p *Pool) monitor() {
	defer p.wg.Done()
	t := time.NewTicker(p.opts.MonitorInterval)
	defer t.Stop()
	for {
		ctx, cancel := context.WithTimeout(p.ctx, max(p.opts.MonitorInterval, p.opts.Health.ShellTimeout))
		if err := p.Refresh(ctx); err != nil && p.ctx.Err() == nil {
			p.log.Debug("pool refresh", "err", err)
		}
		cancel()
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// transitionLocked is the one place a member's state changes. It checks
// the state machine, records the reason, ends a lease the device leaves,
// publishes an Event, wakes waiting Acquires, and starts the recovery
// ladder on entry to recovering.
func (p *Pool) transitionLocked(m *member, to State, reason string) {
	from := m.state
	if err := checkTransition(from, to); err != nil {
		// A bug: say so loudly, keep the state consistent.
		p.log.Error("pool: refused transition", "serial", m.serial, "err", err)
		return
	}
	m.state, m.reason, m.since = to, reason, time.Now()
	m.gen++
	if to != StateUnhealthy {
		m.recheckAt = time.Time{}
	}
	if from == StateLeased && m.lease != nil {
		// The device left its holder without a Release: the lease is lost.
		if !m.lease.released {
			m.lease.loseLocked(reason)
		}
		m.lease = nil
	}
	p.log.Info("device state", "serial", m.serial, "from", string(from), "to", string(to), "reason", reason)
	p.publishLocked(Event{Serial: m.serial, From: from, To: to, Reason: reason})
	p.wakeLocked()
	if to == StateRecovering {
		p.wg.Add(1)
		go p.recover(m, m.gen, reason)
	}
}

func (p *Pool) wakeLocked() {
	close(p.changed)
	p.changed = make(chan struct{})
}

// Refresh lists every source once, adds new devices (probing their Info),
// notices devices that went offline or away, re-gates devices whose
// condition re-check is due, and starts recovery where needed.
func (p *Pool) Refresh(ctx context.Context) error {
	var errs []error
	seen := map[string]bool{}
	type newDev struct {
		f   Found
		src Source
	}
	var fresh []newDev
	for _, src := range p.opts.Sources {
		list, err := src.Devices(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("list %s: %w", src.Name(), err))
			// Its devices are not "gone" because the listing failed.
			p.mu.Lock()
			for _, m := range p.members {
				if m.src == src {
					seen[m.serial] = true
				}
			}
			p.mu.Unlock()
			continue
		}
		for _, f := range list {
			seen[f.Serial] = true
			p.mu.Lock()
			m := p.members[f.Serial]
			if m == nil {
				p.mu.Unlock()
				fresh = append(fresh, newDev{f, src})
				continue
			}
			m.adbState = f.State
			if f.Device != nil {
				m.dev = f.Device
			}
			p.observeLocked(m, true)
			p.mu.Unlock()
		}
	}
	for _, n := range fresh {
		p.add(ctx, n.f, n.src)
	}
	p.mu.Lock()
	for serial, m := range p.members {
		if !seen[serial] {
			m.adbState = ""
			p.observeLocked(m, false)
		}
	}
	var due []*member
	now := time.Now()
	for _, m := range p.members {
		if m.state == StateUnhealthy && !m.recheckAt.IsZero() && !now.Before(m.recheckAt) {
			p.transitionLocked(m, StateChecking, "condition re-check")
			due = append(due, m)
		}
	}
	p.mu.Unlock()
	for _, m := range due {
		p.recheck(ctx, m)
	}
	return errors.Join(errs...)
}

// observeLocked reacts to what a listing said about a member.
func (p *Pool) observeLocked(m *member, listed bool) {
	switch m.state {
	case StateAvailable, StateLeased:
		switch {
		case listed && m.adbState == "device":
		case listed:
			p.faultLocked(m, "adb state "+m.adbState)
		case p.canConnect(m):
			p.faultLocked(m, "no longer listed by "+m.src.Name())
		default:
			if m.state == StateLeased {
				p.faultLocked(m, "no longer listed by "+m.src.Name())
			} else {
				p.transitionLocked(m, StateGone, "no longer listed by "+m.src.Name())
			}
		}
	case StateGone:
		if listed && m.adbState == "device" {
			p.transitionLocked(m, StateAvailable, "listed again")
		}
	case StateUnhealthy:
		if !listed && !p.canConnect(m) {
			p.transitionLocked(m, StateGone, "no longer listed by "+m.src.Name())
		}
	}
}

func (p *Pool) canConnect(m *member) bool {
	c, ok := m.src.(Connecter)
	return ok && c.CanConnect(m.serial)
}

// faultLocked marks a device unhealthy for a fault and starts recovery.
func (p *Pool) faultLocked(m *member, reason string) {
	if m.state != StateUnhealthy {
		p.transitionLocked(m, StateUnhealthy, reason)
	}
	if p.closed {
		return
	}
	p.transitionLocked(m, StateRecovering, reason)
}

// add probes a newly listed device and enters it into the inventory.
func (p *Pool) add(ctx context.Context, f Found, src Source) {
	m := &member{serial: f.Serial, src: src, dev: f.Device, adbState: f.State}
	var info devices.Info
	var err error
	if f.State == "device" && f.Device != nil {
		pctx, cancel := context.WithTimeout(ctx, p.opts.Health.ShellTimeout)
		info, err = f.Device.Info(pctx)
		cancel()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.members[f.Serial] != nil {
		return
	}
	p.members[f.Serial] = m
	switch {
	case f.Device == nil:
		p.transitionLocked(m, StateUnhealthy, "source gave no device handle")
	case f.State != "device":
		p.faultLocked(m, "adb state "+f.State)
	case err != nil:
		p.faultLocked(m, "probe: "+err.Error())
	default:
		m.info, m.hasInfo = info, true
		p.transitionLocked(m, StateAvailable, "discovered on "+src.Name())
	}
}

// Status is a snapshot of one device.
type Status struct {
	Serial string
	Source string
	State  State
	// Reason says why the device is in State (for unhealthy, quarantined
	// and gone: what failed).
	Reason string
	Since  time.Time
	Info   devices.Info
	Labels map[string]string
}

// Devices returns a snapshot of the inventory, sorted by serial.
func (p *Pool) Devices() []Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]Status, 0, len(p.members))
	for _, m := range p.members {
		out = append(out, Status{Serial: m.serial, Source: m.src.Name(), State: m.state, Reason: m.reason,
			Since: m.since, Info: m.info, Labels: maps.Clone(p.labels[m.serial])})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Serial < out[j].Serial })
	return out
}

// Device returns the snapshot of one device.
func (p *Pool) Device(serial string) (Status, error) {
	for _, s := range p.Devices() {
		if s.Serial == serial {
			return s, nil
		}
	}
	return Status{}, fmt.Errorf("%s: %w", serial, ErrUnknownDevice)
}

// SetLabels replaces a device's labels (per-device metadata).
func (p *Pool) SetLabels(serial string, labels map[string]string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.labels[serial] = maps.Clone(labels)
	p.wakeLocked()
}

// Quarantine takes a device out of service by an operator's decision. A
// leased device loses its lease.
func (p *Pool) Quarantine(serial, reason string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.members[serial]
	if m == nil {
		return fmt.Errorf("quarantine %s: %w", serial, ErrUnknownDevice)
	}
	if m.state == StateLeased {
		p.transitionLocked(m, StateUnhealthy, reason)
	}
	if err := checkTransition(m.state, StateQuarantined); err != nil {
		return fmt.Errorf("quarantine %s: %w", serial, err)
	}
	p.transitionLocked(m, StateQuarantined, "operator: "+reason)
	return nil
}

// Unquarantine returns a quarantined device to service; it is gated again
// before its next lease.
func (p *Pool) Unquarantine(serial string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	m := p.members[serial]
	if m == nil {
		return fmt.Errorf("unquarantine %s: %w", serial, ErrUnknownDevice)
	}
	if m.state != StateQuarantined {
		return fmt.Errorf("unquarantine %s in state %s: %w", serial, m.state, ErrTransition)
	}
	p.transitionLocked(m, StateAvailable, "operator released quarantine")
	return nil
}

// describe lists serials with their states, for error texts.
func describe(m map[string]string) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + m[k]
	}
	return strings.Join(parts, "; ")
}
