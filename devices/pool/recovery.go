package pool

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/devices"
)

// rung is one step of the recovery ladder.
type rung struct {
	name    string
	timeout time.Duration
	// action does the step; nil only re-reads the state.
	action func(ctx context.Context) error
}

// ladder builds the rungs that apply to m (A.11 item 2): re-read state →
// reconnect the transport → adb connect again (TCP devices) → reboot and
// wait for boot. Quarantine follows the last rung.
func (p *Pool) ladder(m *member) []rung {
	step := p.opts.Recovery.StepTimeout
	rs := []rung{{name: "reread", timeout: step}}
	if r, ok := m.src.(Reconnecter); ok {
		rs = append(rs, rung{name: "reconnect", timeout: step, action: func(ctx context.Context) error {
			return r.Reconnect(ctx, m.serial)
		}})
	}
	if c, ok := m.src.(Connecter); ok && c.CanConnect(m.serial) {
		rs = append(rs, rung{name: "connect", timeout: step, action: func(ctx context.Context) error {
			return c.Connect(ctx, m.serial)
		}})
	}
	if !p.opts.Recovery.NoReboot {
		rs = append(rs, rung{name: "reboot", timeout: p.opts.Recovery.RebootTimeout, action: func(ctx context.Context) error {
			d := p.deviceOf(m)
			if err := d.Reboot(ctx); err != nil {
				return err
			}
			return d.WaitBoot(ctx)
		}})
	}
	return rs
}

func (p *Pool) deviceOf(m *member) interface {
	Reboot(context.Context) error
	WaitBoot(context.Context) error
} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return m.dev
}

// recover runs the ladder for m, which entered recovering at generation
// gen. It ends with m available (and its Info re-read) or quarantined
// with every rung's failure as the reason. Close stops it between and
// within rungs.
func (p *Pool) recover(m *member, gen uint64, reason string) {
	defer p.wg.Done()
	p.mu.Lock()
	if n := p.recentRecoveriesLocked(m); n >= p.opts.Recovery.MaxRecoveries {
		if m.state == StateRecovering && m.gen == gen && !p.closed {
			p.transitionLocked(m, StateQuarantined, fmt.Sprintf("flapping: recovered %d times in %s, failed again (%s)", n, p.opts.Recovery.FlapWindow, reason))
		}
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	var failed []string
	for _, r := range p.ladder(m) {
		if p.ctx.Err() != nil {
			return
		}
		p.mu.Lock()
		if m.state != StateRecovering || m.gen != gen {
			p.mu.Unlock()
			return
		}
		p.publishLocked(Event{Serial: m.serial, From: StateRecovering, To: StateRecovering, Step: r.name, Reason: reason})
		p.mu.Unlock()

		ctx, cancel := context.WithTimeout(p.ctx, r.timeout)
		var err error
		if r.action != nil {
			err = r.action(ctx)
		}
		if err == nil {
			err = p.settle(ctx, m)
		}
		info, infoErr := p.deviceInfo(ctx, m, err)
		cancel()
		if p.ctx.Err() != nil {
			return
		}
		if err == nil {
			p.mu.Lock()
			if m.state == StateRecovering && m.gen == gen {
				if infoErr == nil {
					m.info, m.hasInfo = info, true
				}
				m.rootFault = false
				m.recovered = append(m.recovered, time.Now())
				p.transitionLocked(m, StateAvailable, "recovered by "+r.name)
			}
			p.mu.Unlock()
			return
		}
		failed = append(failed, r.name+": "+err.Error())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.state == StateRecovering && m.gen == gen && !p.closed {
		p.transitionLocked(m, StateQuarantined, "recovery failed ("+reason+"): "+strings.Join(failed, "; "))
	}
}

// recentRecoveriesLocked counts the ladder's successes within the flap
// window, dropping older ones.
func (p *Pool) recentRecoveriesLocked(m *member) int {
	cut := time.Now().Add(-p.opts.Recovery.FlapWindow)
	kept := m.recovered[:0]
	for _, t := range m.recovered {
		if t.After(cut) {
			kept = append(kept, t)
		}
	}
	m.recovered = kept
	return len(kept)
}

// settle waits until m passes the gate's device checks (a condition such
// as low battery is not the ladder's business and counts as settled),
// root included when root was what failed; it polls with backoff until
// ctx ends.
func (p *Pool) settle(ctx context.Context, m *member) error {
	wait := 100 * time.Millisecond
	for {
		p.mu.Lock()
		d, info, sel := m.dev, m.info, Selector{NeedRoot: m.rootFault}
		p.mu.Unlock()
		pr := p.gate(ctx, d, info, sel)
		if pr.v == pass || pr.v == condition {
			return nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("still unhealthy: %s", pr)
			}
			return ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, 2*time.Second)
	}
}

func (p *Pool) deviceInfo(ctx context.Context, m *member, settled error) (devices.Info, error) {
	if settled != nil {
		return devices.Info{}, settled
	}
	p.mu.Lock()
	d := m.dev
	p.mu.Unlock()
	c, cancel := context.WithTimeout(ctx, p.opts.Health.ShellTimeout)
	defer cancel()
	return d.Info(c)
}
