package pool

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/devices"
)

// Selector says which devices an Acquire accepts. Zero fields match
// anything.
type Selector struct {
	// Serials, when set, restricts to these serials.
	Serials []string
	// ABI is the primary ABI (ro.product.cpu.abi).
	ABI string
	// MinAPI and MaxAPI bound the API level (0 = unbounded).
	MinAPI, MaxAPI int
	// Root, when set, restricts to these root methods.
	Root []devices.RootMethod
	// Labels must all be present with these values in the device's
	// metadata.
	Labels map[string]string
	// NeedRoot makes the gate check that root works.
	NeedRoot bool
	// Module makes the gate check that this module id is installed and
	// active (not disabled, not pending removal or update).
	Module string
}

// Matches reports whether a device with this Info and these labels is
// acceptable by attributes (the gate checks the rest).
func (s Selector) Matches(info devices.Info, labels map[string]string) bool {
	if len(s.Serials) > 0 && !slices.Contains(s.Serials, info.Serial) {
		return false
	}
	if s.ABI != "" && s.ABI != info.ABI {
		return false
	}
	if s.MinAPI > 0 && info.APILevel < s.MinAPI {
		return false
	}
	if s.MaxAPI > 0 && info.APILevel > s.MaxAPI {
		return false
	}
	if len(s.Root) > 0 && !slices.Contains(s.Root, info.Root) {
		return false
	}
	for k, v := range s.Labels {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func (s Selector) String() string {
	var parts []string
	if len(s.Serials) > 0 {
		parts = append(parts, "serial in "+strings.Join(s.Serials, ","))
	}
	if s.ABI != "" {
		parts = append(parts, "abi="+s.ABI)
	}
	switch {
	case s.MinAPI > 0 && s.MaxAPI > 0:
		parts = append(parts, fmt.Sprintf("api %d..%d", s.MinAPI, s.MaxAPI))
	case s.MinAPI > 0:
		parts = append(parts, fmt.Sprintf("api>=%d", s.MinAPI))
	case s.MaxAPI > 0:
		parts = append(parts, fmt.Sprintf("api<=%d", s.MaxAPI))
	}
	if len(s.Root) > 0 {
		var r []string
		for _, m := range s.Root {
			r = append(r, string(m))
		}
		parts = append(parts, "root in "+strings.Join(r, ","))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Labels)) {
		parts = append(parts, k+"="+s.Labels[k])
	}
	if s.NeedRoot {
		parts = append(parts, "root works")
	}
	if s.Module != "" {
		parts = append(parts, "module "+s.Module)
	}
	if len(parts) == 0 {
		return "any device"
	}
	return strings.Join(parts, ", ")
}

// Outcome is what the lease holder reports on Release.
type Outcome struct {
	// Fault, when set, says the holder saw the device itself misbehave
	// (not the product under test): the pool recovers it before the next
	// lease.
	Fault string
}

// OK is the outcome of a lease that left the device healthy.
var OK = Outcome{}

// DeviceFault is the outcome of a lease during which the device failed.
func DeviceFault(reason string) Outcome { return Outcome{Fault: reason} }

// Lease is exclusive use of one device until Release.
type Lease struct {
	// Device is the leased device; Info is what the pool knows of it.
	Device devices.Device
	Info   devices.Info

	p *Pool
	m *member

	// Guarded by p.mu.
	lost       chan struct{}
	lostReason string
	released   bool
}

// Serial is the leased device's serial.
func (l *Lease) Serial() string { return l.m.serial }

// Lost is closed when the pool takes the device away during the lease
// because it died (offline, gone, unresponsive) or an operator
// quarantined it. The holder should stop and treat its work as a lab
// fault, to be re-queued.
func (l *Lease) Lost() <-chan struct{} { return l.lost }

// Err is nil while the lease holds, else ErrLeaseLost with the reason.
func (l *Lease) Err() error {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	if l.lostReason == "" {
		return nil
	}
	return fmt.Errorf("%s: %s: %w", l.m.serial, l.lostReason, ErrLeaseLost)
}

func (l *Lease) loseLocked(reason string) {
	if l.lostReason != "" {
		return
	}
	if reason == "" {
		reason = "taken away"
	}
	l.lostReason = reason
	close(l.lost)
}

// Release ends the lease. With OK the device becomes available again;
// with a DeviceFault it goes to the recovery ladder. Releasing a lost or
// released lease does nothing.
func (l *Lease) Release(o Outcome) error {
	p := l.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if l.released {
		return nil
	}
	l.released = true
	if l.m.lease != l || l.m.state != StateLeased {
		return nil
	}
	if o.Fault != "" {
		p.faultLocked(l.m, "lease holder: "+o.Fault)
		return nil
	}
	p.transitionLocked(l.m, StateAvailable, "released")
	return nil
}

// Acquire waits for a device that matches sel and passes the health gate,
// and leases it exclusively. Devices are tried in serial order. It
// returns when ctx ends (ErrNoDevice, naming what each candidate lacked)
// or the pool closes (ErrClosed).
func (p *Pool) Acquire(ctx context.Context, sel Selector) (*Lease, error) {
	w := &waiter{sel: sel, rejected: map[string]uint64{}}
	why := map[string]string{}
	p.mu.Lock()
	p.waiters = append(p.waiters, w)
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.waiters = slices.DeleteFunc(p.waiters, func(o *waiter) bool { return o == w })
		// A device this call held back may now go to a younger waiter.
		p.wakeLocked()
		p.mu.Unlock()
	}()
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, fmt.Errorf("acquire: %w", ErrClosed)
		}
		m := p.pickLocked(w, why)
		if m == nil {
			wait := p.changed
			p.mu.Unlock()
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("acquire %s: %w: %w (%s)", sel, ErrNoDevice, ctx.Err(), p.whyNot(sel, why))
			case <-wait:
			}
			continue
		}
		p.transitionLocked(m, StateChecking, "health gate")
		dev, info := m.dev, m.info
		p.mu.Unlock()

		pr := p.gate(ctx, dev, info, sel)

		p.mu.Lock()
		if m.state != StateChecking {
			// Closed or taken meanwhile; look again.
			p.mu.Unlock()
			continue
		}
		switch pr.v {
		case pass:
			l := &Lease{Device: dev, Info: info, p: p, m: m, lost: make(chan struct{})}
			m.lease = l
			p.transitionLocked(m, StateLeased, "leased: "+sel.String())
			p.mu.Unlock()
			return l, nil
		case mismatch:
			p.transitionLocked(m, StateAvailable, "gate: "+pr.String())
			w.rejected[m.serial], why[m.serial] = m.gen, pr.String()
		case aborted:
			p.transitionLocked(m, StateAvailable, "gate aborted by caller")
		case condition:
			m.recheckAt = time.Now().Add(p.opts.RecheckInterval)
			p.transitionLocked(m, StateUnhealthy, "gate: "+pr.String())
			why[m.serial] = pr.String()
		case fault:
			why[m.serial] = pr.String()
			m.rootFault = pr.check == "root"
			p.faultLocked(m, "gate: "+pr.String())
		}
		p.mu.Unlock()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("acquire %s: %w: %w (%s)", sel, ErrNoDevice, ctx.Err(), p.whyNot(sel, why))
		}
	}
}

// pickLocked returns the first available device, by serial, that w wants
// and that no older waiter wants (first come, first served).
func (p *Pool) pickLocked(w *waiter, why map[string]string) *member {
	older := p.waiters[:slices.Index(p.waiters, w)]
next:
	for _, serial := range slices.Sorted(maps.Keys(p.members)) {
		m := p.members[serial]
		if m.state != StateAvailable || !p.wantsLocked(w, m) {
			continue
		}
		for _, o := range older {
			if p.wantsLocked(o, m) {
				continue next
			}
		}
		delete(why, serial)
		return m
	}
	return nil
}

// whyNot explains, per device, why Acquire got nothing.
func (p *Pool) whyNot(sel Selector, why map[string]string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]string{}
	for serial, m := range p.members {
		switch {
		case why[serial] != "":
			out[serial] = string(m.state) + ", " + why[serial]
		case m.hasInfo && !sel.Matches(m.info, p.labels[serial]):
			out[serial] = "does not match"
		default:
			out[serial] = string(m.state)
			if m.reason != "" {
				out[serial] += " (" + m.reason + ")"
			}
		}
	}
	if len(out) == 0 {
		return "inventory is empty"
	}
	return describe(out)
}

// recheck re-gates a device that was unhealthy for a condition.
func (p *Pool) recheck(ctx context.Context, m *member) {
	p.mu.Lock()
	dev, info := m.dev, m.info
	p.mu.Unlock()
	pr := p.gate(ctx, dev, info, Selector{})
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.state != StateChecking {
		return
	}
	switch pr.v {
	case pass, aborted:
		p.transitionLocked(m, StateAvailable, "condition re-check passed")
	case condition:
		m.recheckAt = time.Now().Add(p.opts.RecheckInterval)
		p.transitionLocked(m, StateUnhealthy, "gate: "+pr.String())
	default:
		p.faultLocked(m, "gate: "+pr.String())
	}
}
