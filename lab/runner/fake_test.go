package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
)

// fakeLeaser is an inventory of fake devices handing out exclusive
// leases, as devices/pool does, without a health gate.
type fakeLeaser struct {
	mu       sync.Mutex
	cond     *sync.Cond
	statuses []pool.Status
	leased   map[string]*fakeLease
	// released records every release: serial and fault ("" for OK).
	released []string
	acquired []string
}

func newLeaser(serials ...string) *fakeLeaser {
	l := &fakeLeaser{leased: map[string]*fakeLease{}}
	l.cond = sync.NewCond(&l.mu)
	for _, s := range serials {
		info := devices.Info{Serial: s, Product: "agentlab_vdev", Model: "AgentLab Virtual Device", APILevel: 35, ABI: "x86_64", Root: devices.RootMagisk}
		if len(s) > 5 && s[:5] == "phone" {
			info.Product, info.Model = "husky", "Pixel 8 Pro"
		}
		l.statuses = append(l.statuses, pool.Status{Serial: s, State: pool.StateAvailable, Info: info})
	}
	return l
}

func (l *fakeLeaser) quarantine(serial string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.statuses {
		if l.statuses[i].Serial == serial {
			l.statuses[i].State = pool.StateQuarantined
		}
	}
	l.cond.Broadcast()
}

func (l *fakeLeaser) Devices() []pool.Status {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := slices.Clone(l.statuses)
	for i := range out {
		if _, ok := l.leased[out[i].Serial]; ok && out[i].State == pool.StateAvailable {
			out[i].State = pool.StateLeased
		}
	}
	return out
}

func (l *fakeLeaser) Acquire(ctx context.Context, sel pool.Selector) (Lease, error) {
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		l.cond.Broadcast()
		l.mu.Unlock()
	})
	defer stop()
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		for _, st := range l.statuses {
			if st.State != pool.StateAvailable || l.leased[st.Serial] != nil {
				continue
			}
			if len(sel.Serials) > 0 && !slices.Contains(sel.Serials, st.Serial) {
				continue
			}
			if sel.MinAPI > 0 && st.Info.APILevel < sel.MinAPI {
				continue
			}
			ls := &fakeLease{l: l, serial: st.Serial, lost: make(chan struct{})}
			l.leased[st.Serial] = ls
			l.acquired = append(l.acquired, st.Serial)
			return ls, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: %w", pool.ErrNoDevice, ctx.Err())
		}
		l.cond.Wait()
	}
}

type fakeLease struct {
	l        *fakeLeaser
	serial   string
	lost     chan struct{}
	lostOnce sync.Once
	done     bool
}

func (f *fakeLease) Device() devices.Device { return nil }
func (f *fakeLease) Serial() string         { return f.serial }
func (f *fakeLease) Lost() <-chan struct{}  { return f.lost }

// lose takes the device away as the pool does when it dies.
func (f *fakeLease) lose() {
	f.lostOnce.Do(func() { close(f.lost) })
	f.l.quarantine(f.serial)
}

func (f *fakeLease) Release(o pool.Outcome) error {
	f.l.mu.Lock()
	defer f.l.mu.Unlock()
	if f.done {
		return nil
	}
	f.done = true
	delete(f.l.leased, f.serial)
	f.l.released = append(f.l.released, f.serial+":"+o.Fault)
	f.l.cond.Broadcast()
	return nil
}

// fakeExecutor answers each attempt from a script per scenario: the
// outcome of attempt n is script[min(n, len)-1].
//
//	pass, fail, lab (a lab fault), lost (the device dies mid-attempt),
//	touch (fails while a person touches the device), touchpass,
//	hang (runs until the attempt's timeout)
type fakeExecutor struct {
	scripts map[string][]string
	// started, when set, is told each attempt's start.
	started func(name string, n int)

	mu    sync.Mutex
	calls []string // "name#n@serial,serial"
}

func (e *fakeExecutor) Run(ctx context.Context, a *Attempt) *Outcome {
	var serials []string
	for _, l := range a.Leases {
		serials = append(serials, l.Serial())
	}
	e.mu.Lock()
	e.calls = append(e.calls, fmt.Sprintf("%s#%d@%s", a.Scenario.Name, a.Number, joinComma(serials)))
	e.mu.Unlock()
	if e.started != nil {
		e.started(a.Scenario.Name, a.Number)
	}
	script := e.scripts[a.Scenario.Name]
	what := "pass"
	if len(script) > 0 {
		what = script[min(a.Number, len(script))-1]
	}
	check := func(ok bool) []reports.Check {
		return []reports.Check{{Name: "named", OK: ok, Detail: map[bool]string{true: "", false: "got 1, want 0"}[ok], Upstream: "third_party.py/x/named"}}
	}
	switch what {
	case "pass":
		return &Outcome{Checks: check(true)}
	case "fail":
		return &Outcome{Checks: check(false)}
	case "lab":
		return &Outcome{Checks: check(false), LabFault: fmt.Errorf("adb: %w", devices.ErrDeviceGone)}
	case "lost":
		a.Leases[0].(*fakeLease).lose()
		<-ctx.Done()
		return &Outcome{Checks: check(false), Err: ctx.Err()}
	case "touch":
		return &Outcome{Checks: check(false), Touches: 2}
	case "touchpass":
		return &Outcome{Checks: check(true), Touches: 1}
	case "hang":
		<-ctx.Done()
		return &Outcome{Checks: check(false), Err: ctx.Err()}
	}
	return &Outcome{LabFault: errors.New("unknown script word " + what)}
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

func mustScenario(t testing.TB, doc string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse([]byte(doc), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
