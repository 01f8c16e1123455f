package pool

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentoslab/agentlab/devices"
)

// newTestPool builds a pool over fake devices with the monitor off
// (tests call Refresh) and lists the source once.
func newTestPool(t *testing.T, src *fakeSource, mod func(*Options)) *Pool {
	t.Helper()
	o := &Options{Sources: []Source{src}, MonitorInterval: -1}
	if mod != nil {
		mod(o)
	}
	p, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	if err := p.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	return p
}

func stateOf(t *testing.T, p *Pool, serial string) Status {
	t.Helper()
	s, err := p.Device(serial)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestTransitions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		from, to State
		ok       bool
	}{
		{stateNew, StateAvailable, true},
		{StateAvailable, StateChecking, true},
		{StateChecking, StateLeased, true},
		{StateLeased, StateAvailable, true},
		{StateLeased, StateUnhealthy, true},
		{StateUnhealthy, StateRecovering, true},
		{StateRecovering, StateAvailable, true},
		{StateRecovering, StateQuarantined, true},
		{StateQuarantined, StateAvailable, true},
		{StateGone, StateAvailable, true},
		// A lease is granted only through the gate.
		{StateAvailable, StateLeased, false},
		{StateQuarantined, StateLeased, false},
		{StateGone, StateLeased, false},
		{StateRecovering, StateLeased, false},
		// Quarantine is left only by an operator, to available.
		{StateQuarantined, StateChecking, false},
		{StateQuarantined, StateRecovering, false},
		// A leased device is never re-checked under its holder.
		{StateLeased, StateChecking, false},
		{StateLeased, StateLeased, false},
	}
	for _, tt := range tests {
		err := checkTransition(tt.from, tt.to)
		if (err == nil) != tt.ok {
			t.Errorf("%q -> %q: err = %v, want allowed=%v", tt.from, tt.to, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrTransition) {
			t.Errorf("%q -> %q: err %v is not ErrTransition", tt.from, tt.to, err)
		}
	}
}

func TestSelectorMatches(t *testing.T) {
	t.Parallel()
	info := devices.Info{Serial: "s1", ABI: "arm64-v8a", APILevel: 33, Root: devices.RootKernelSU}
	labels := map[string]string{"site": "lab-a", "pair": "victim"}
	tests := []struct {
		name string
		sel  Selector
		want bool
	}{
		{"any", Selector{}, true},
		{"serial", Selector{Serials: []string{"s0", "s1"}}, true},
		{"other serial", Selector{Serials: []string{"s0"}}, false},
		{"abi", Selector{ABI: "arm64-v8a"}, true},
		{"wrong abi", Selector{ABI: "x86_64"}, false},
		{"api in range", Selector{MinAPI: 30, MaxAPI: 34}, true},
		{"api too low", Selector{MinAPI: 34}, false},
		{"api too high", Selector{MaxAPI: 32}, false},
		{"root method", Selector{Root: []devices.RootMethod{devices.RootMagisk, devices.RootKernelSU}}, true},
		{"wrong root method", Selector{Root: []devices.RootMethod{devices.RootMagisk}}, false},
		{"labels", Selector{Labels: map[string]string{"site": "lab-a"}}, true},
		{"label value differs", Selector{Labels: map[string]string{"site": "lab-b"}}, false},
		{"label missing", Selector{Labels: map[string]string{"rack": "1"}}, false},
	}
	for _, tt := range tests {
		if got := tt.sel.Matches(info, labels); got != tt.want {
			t.Errorf("%s: Matches = %v, want %v (%s)", tt.name, got, tt.want, tt.sel)
		}
	}
}

func TestAcquireIsExclusiveAndWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := newFakeDev("a")
		p := newTestPool(t, &fakeSource{devs: []*fakeDev{d}}, nil)
		ctx := context.Background()
		l1, err := p.Acquire(ctx, Selector{})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *Lease, 1)
		go func() {
			l, err := p.Acquire(ctx, Selector{})
			if err != nil {
				t.Error(err)
			}
			got <- l
		}()
		synctest.Wait()
		select {
		case <-got:
			t.Fatal("second Acquire got a device that is leased")
		default:
		}
		if s := stateOf(t, p, "a"); s.State != StateLeased {
			t.Fatalf("state = %s", s.State)
		}
		if err := l1.Release(OK); err != nil {
			t.Fatal(err)
		}
		l2 := <-got
		if l2.Serial() != "a" || l2.Err() != nil {
			t.Fatalf("second lease = %s, %v", l2.Serial(), l2.Err())
		}
		l1.Release(OK) // a second release of an old lease must not free l2's device
		if s := stateOf(t, p, "a"); s.State != StateLeased {
			t.Fatalf("state after stale release = %s", s.State)
		}
	})
}

func TestAcquireBySelector(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		arm, x86 := newFakeDev("arm"), newFakeDev("x86")
		arm.abi, arm.api = "arm64-v8a", 30
		p := newTestPool(t, &fakeSource{devs: []*fakeDev{arm, x86}}, func(o *Options) {
			o.Labels = map[string]map[string]string{"x86": {"role": "victim"}}
		})
		l, err := p.Acquire(context.Background(), Selector{Labels: map[string]string{"role": "victim"}})
		if err != nil || l.Serial() != "x86" {
			t.Fatalf("by label: %v %v", l, err)
		}
		l2, err := p.Acquire(context.Background(), Selector{ABI: "arm64-v8a", MaxAPI: 31})
		if err != nil || l2.Serial() != "arm" {
			t.Fatalf("by abi: %v %v", l2, err)
		}
	})
}

// TestHealthGate: a device failing a check is passed over for a healthy
// one, and ends in the state the kind of failure calls for.
func TestHealthGate(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(f *fakeDev)
		sel    Selector
		// state of the broken device right after the Acquire
		state  State
		reason string
	}{
		{"boot not completed", func(f *fakeDev) { f.boot = "0" }, Selector{}, StateRecovering, "boot: sys.boot_completed is not 1"},
		{"shell silent", func(f *fakeDev) { f.hang = true }, Selector{}, StateRecovering, "shell: no answer within 5s"},
		{"battery low", func(f *fakeDev) { f.battery.Level = 5 }, Selector{}, StateUnhealthy, "battery: level 5% below 20%"},
		{"storage low", func(f *fakeDev) { f.free = 1 << 20 }, Selector{}, StateUnhealthy, "storage: 1048576 bytes free on /data"},
		{"no battery is fine", func(f *fakeDev) { f.battery = devices.Battery{} }, Selector{}, StateLeased, "leased"},
		{"root asked, none", func(f *fakeDev) { f.root = devices.RootNone }, Selector{NeedRoot: true}, StateAvailable, "root: device has no root method"},
		{"root asked, su broken", func(f *fakeDev) { f.suOK = false }, Selector{NeedRoot: true}, StateRecovering, "root: magisk root does not work"},
		{"module asked, missing", func(f *fakeDev) {}, Selector{Module: "agentos"}, StateAvailable, "module: module agentos is not installed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				bad, good := newFakeDev("a"), newFakeDev("b")
				tt.break_(bad)
				good.modules["agentos"] = true
				p := newTestPool(t, &fakeSource{devs: []*fakeDev{bad, good}}, func(o *Options) { o.Recovery.NoReboot = true })
				events, cancel := p.Subscribe(64)
				defer cancel()
				l, err := p.Acquire(context.Background(), tt.sel)
				if err != nil {
					t.Fatal(err)
				}
				want := "b"
				if tt.state == StateLeased {
					want = "a"
				}
				if l.Serial() != want {
					t.Fatalf("leased %s, want %s", l.Serial(), want)
				}
				// The event that ends "a"'s gate says why; a fault then
				// starts recovery at once.
				var seen []Event
				for len(events) > 0 {
					if e := <-events; e.Serial == "a" {
						seen = append(seen, e)
					}
				}
				var gateEnd, next *Event
				for i := range seen {
					if seen[i].From == StateChecking {
						gateEnd = &seen[i]
						if i+1 < len(seen) {
							next = &seen[i+1]
						}
						break
					}
				}
				if gateEnd == nil {
					t.Fatalf("no gate result for a in %+v", seen)
				}
				wantFirst := tt.state
				if tt.state == StateRecovering {
					wantFirst = StateUnhealthy
				}
				if gateEnd.To != wantFirst || !strings.Contains(gateEnd.Reason, tt.reason) {
					t.Fatalf("gate ended %s %q; want %s with %q", gateEnd.To, gateEnd.Reason, wantFirst, tt.reason)
				}
				recovering := next != nil && next.To == StateRecovering
				if (tt.state == StateRecovering) != recovering {
					t.Fatalf("recovery started = %v after %s; next event %+v", recovering, tt.name, next)
				}
			})
		})
	}
}

func TestRecoveryLadder(t *testing.T) {
	tests := []struct {
		name  string
		tcp   bool
		setup func(f *fakeDev, s *fakeSource)
		state State
		// reason of the last transition; steps are the rungs tried
		reason string
		steps  string
	}{
		{"reread finds it back", false, func(f *fakeDev, s *fakeSource) {
			go func() { time.Sleep(time.Second); f.set(func(f *fakeDev) { f.state = "device" }) }()
		}, StateAvailable, "recovered by reread", "reread"},
		{"reconnect fixes it", false, func(f *fakeDev, s *fakeSource) {
			s.onRecon = func(string) { f.set(func(f *fakeDev) { f.state = "device" }) }
		}, StateAvailable, "recovered by reconnect", "reread reconnect"},
		{"adb connect fixes a tcp device", true, func(f *fakeDev, s *fakeSource) {
			s.onConn = func(string) { f.set(func(f *fakeDev) { f.state = "device" }) }
		}, StateAvailable, "recovered by connect", "reread reconnect connect"},
		{"reboot fixes a device stuck in boot", false, func(f *fakeDev, s *fakeSource) {
			f.set(func(f *fakeDev) { f.state, f.boot, f.rebootFixes = "device", "0", true })
		}, StateAvailable, "recovered by reboot", "reread reconnect reboot"},
		{"nothing helps", true, func(f *fakeDev, s *fakeSource) {}, StateQuarantined,
			"recovery failed (gate: state: adb state offline): reread: still unhealthy: state: adb state offline; reconnect: still unhealthy", "reread reconnect connect reboot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d, good := newFakeDev("a"), newFakeDev("b")
				src := &fakeSource{devs: []*fakeDev{d, good}, tcp: tt.tcp}
				p := newTestPool(t, src, nil)
				events, cancel := p.Subscribe(256)
				defer cancel()
				d.set(func(f *fakeDev) { f.state = "offline" })
				tt.setup(d, src)
				l, err := p.Acquire(context.Background(), Selector{})
				if err != nil || l.Serial() != "b" {
					t.Fatalf("Acquire = %v, %v", l, err)
				}
				synctest.Wait()
				// Let the ladder run to its end on the fake clock.
				deadline := time.Now().Add(time.Hour)
				for time.Now().Before(deadline) {
					s := stateOf(t, p, "a")
					if s.State == StateAvailable || s.State == StateQuarantined {
						break
					}
					time.Sleep(time.Second)
				}
				s := stateOf(t, p, "a")
				if s.State != tt.state || !strings.HasPrefix(s.Reason, tt.reason) {
					t.Fatalf("a = %s %q; want %s %q", s.State, s.Reason, tt.state, tt.reason)
				}
				var steps []string
				for len(events) > 0 {
					if e := <-events; e.Serial == "a" && e.Step != "" {
						steps = append(steps, e.Step)
					}
				}
				if strings.Join(steps, " ") != tt.steps {
					t.Fatalf("rungs = %v, want %s", steps, tt.steps)
				}
			})
		})
	}
}

// TestLeasedDeviceDies: the monitor sees a leased device go offline, the
// holder's lease is lost with a reason, the device goes through recovery,
// and another device's lease is untouched.
func TestLeasedDeviceDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := newFakeDev("a"), newFakeDev("b")
		src := &fakeSource{devs: []*fakeDev{a, b}}
		p, err := New(&Options{Sources: []Source{src}, MonitorInterval: time.Second, Recovery: Recovery{NoReboot: true}})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		p.Refresh(context.Background())
		la, err := p.Acquire(context.Background(), Selector{Serials: []string{"a"}})
		if err != nil {
			t.Fatal(err)
		}
		lb, err := p.Acquire(context.Background(), Selector{Serials: []string{"b"}})
		if err != nil {
			t.Fatal(err)
		}
		a.set(func(f *fakeDev) { f.state = "offline" })
		select {
		case <-la.Lost():
		case <-time.After(10 * time.Second):
			t.Fatal("lease of the dead device not lost")
		}
		if err := la.Err(); !errors.Is(err, ErrLeaseLost) || !strings.Contains(err.Error(), "adb state offline") {
			t.Fatalf("lost lease err = %v", err)
		}
		if lb.Err() != nil || stateOf(t, p, "b").State != StateLeased {
			t.Fatalf("other lease disturbed: %v %s", lb.Err(), stateOf(t, p, "b").State)
		}
		// Off the monitor's 1 s beat, so it is idle while the test acts.
		time.Sleep(5*time.Minute + 500*time.Millisecond)
		if s := stateOf(t, p, "a"); s.State != StateQuarantined || !strings.Contains(s.Reason, "reconnect") {
			t.Fatalf("a = %s %q", s.State, s.Reason)
		}
		if err := la.Release(OK); err != nil {
			t.Fatal(err)
		}
		if s := stateOf(t, p, "a"); s.State != StateQuarantined {
			t.Fatalf("releasing a lost lease changed the state to %s", s.State)
		}
		a.set(func(f *fakeDev) { f.state = "device" }) // an operator fixed it
		if err := p.Unquarantine("a"); err != nil {
			t.Fatal(err)
		}
		if s := stateOf(t, p, "a"); s.State != StateAvailable {
			t.Fatalf("after unquarantine: %s", s.State)
		}
	})
}

func TestReleaseWithFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newFakeDev("a")
		p := newTestPool(t, &fakeSource{devs: []*fakeDev{a}}, nil)
		l, err := p.Acquire(context.Background(), Selector{})
		if err != nil {
			t.Fatal(err)
		}
		l.Release(DeviceFault("adb shell hung during the scenario"))
		if err := l.Err(); err != nil {
			t.Fatalf("a released lease reports %v", err)
		}
		synctest.Wait()
		if s := stateOf(t, p, "a"); s.State != StateAvailable || s.Reason != "recovered by reread" {
			t.Fatalf("a = %s %q", s.State, s.Reason)
		}
	})
}

func TestConditionRecheck(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newFakeDev("a")
		a.battery.Level = 3
		p := newTestPool(t, &fakeSource{devs: []*fakeDev{a}}, func(o *Options) { o.RecheckInterval = time.Minute })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := p.Acquire(ctx, Selector{})
		cancel()
		if !errors.Is(err, ErrNoDevice) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "a: unhealthy, battery: level 3% below 20%") {
			t.Fatalf("Acquire err = %v", err)
		}
		a.set(func(f *fakeDev) { f.battery.Level = 80 })
		p.Refresh(context.Background())
		if s := stateOf(t, p, "a"); s.State != StateUnhealthy {
			t.Fatalf("re-checked before RecheckInterval: %s", s.State)
		}
		time.Sleep(time.Minute)
		p.Refresh(context.Background())
		if s := stateOf(t, p, "a"); s.State != StateAvailable {
			t.Fatalf("after re-check: %s %q", s.State, s.Reason)
		}
	})
}

func TestGoneAndBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newFakeDev("emulator-5554")
		src := &fakeSource{devs: []*fakeDev{a}}
		p := newTestPool(t, src, nil)
		src.hide("emulator-5554", true)
		p.Refresh(context.Background())
		if s := stateOf(t, p, "emulator-5554"); s.State != StateGone {
			t.Fatalf("state = %s", s.State)
		}
		src.hide("emulator-5554", false)
		p.Refresh(context.Background())
		if s := stateOf(t, p, "emulator-5554"); s.State != StateAvailable {
			t.Fatalf("state = %s", s.State)
		}
	})
}

func TestCloseEndsAcquire(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newTestPool(t, &fakeSource{}, nil)
		errc := make(chan error, 1)
		go func() {
			_, err := p.Acquire(context.Background(), Selector{})
			errc <- err
		}()
		synctest.Wait()
		p.Close()
		if err := <-errc; !errors.Is(err, ErrClosed) {
			t.Fatalf("Acquire after Close = %v", err)
		}
	})
}

func TestEventsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newFakeDev("a")
		p := newTestPool(t, &fakeSource{devs: []*fakeDev{a}}, nil)
		ch, cancel := p.Subscribe(1)
		for i := 0; i < 3; i++ {
			l, err := p.Acquire(context.Background(), Selector{})
			if err != nil {
				t.Fatal(err)
			}
			l.Release(OK)
		}
		e := <-ch
		if e.Seq == 0 || e.Serial != "a" {
			t.Fatalf("event = %+v", e)
		}
		select {
		case e := <-ch:
			t.Fatalf("buffer of 1 held a second event %+v", e)
		default:
		}
		cancel()
		if _, ok := <-ch; ok {
			t.Fatal("channel open after cancel")
		}
	})
}

// TestRootFaultDoesNotLoop: a device whose su is broken stays alive, so
// only a recovery that checks root again can tell it is still broken; it
// must end quarantined, not bounce between the gate and the ladder.
func TestRootFaultDoesNotLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newFakeDev("a")
		a.suOK = false
		p := newTestPool(t, &fakeSource{devs: []*fakeDev{a}}, func(o *Options) { o.Recovery.NoReboot = true })
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		_, err := p.Acquire(ctx, Selector{NeedRoot: true})
		if !errors.Is(err, ErrNoDevice) {
			t.Fatalf("Acquire = %v", err)
		}
		if s := stateOf(t, p, "a"); s.State != StateQuarantined || !strings.Contains(s.Reason, "root: magisk root does not work") {
			t.Fatalf("a = %s %q", s.State, s.Reason)
		}
	})
}

func TestFlappingDeviceIsQuarantined(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newFakeDev("a")
		p := newTestPool(t, &fakeSource{devs: []*fakeDev{a}}, nil)
		for i := 0; i < 4; i++ {
			l, err := p.Acquire(context.Background(), Selector{})
			if err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
			l.Release(DeviceFault("scenario saw adb drop"))
			synctest.Wait()
		}
		if s := stateOf(t, p, "a"); s.State != StateQuarantined || !strings.HasPrefix(s.Reason, "flapping: recovered 3 times") {
			t.Fatalf("a = %s %q", s.State, s.Reason)
		}
	})
}

// TestAcquireIsFirstComeFirstServed: when a device frees up, the oldest
// waiting Acquire that matches it gets it.
func TestAcquireIsFirstComeFirstServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newFakeDev("a")
		p := newTestPool(t, &fakeSource{devs: []*fakeDev{a}}, nil)
		held, err := p.Acquire(context.Background(), Selector{})
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan string, 3)
		leases := make(chan *Lease, 3)
		for _, name := range []string{"first", "second", "third"} {
			go func() {
				l, err := p.Acquire(context.Background(), Selector{})
				if err != nil {
					t.Error(err)
					return
				}
				got <- name
				leases <- l
			}()
			synctest.Wait() // queue them in this order
		}
		for _, want := range []string{"first", "second", "third"} {
			held.Release(OK)
			synctest.Wait()
			if name := <-got; name != want {
				t.Fatalf("lease went to %s, want %s", name, want)
			}
			held = <-leases
		}
		held.Release(OK)
	})
}

func TestSeveralSourcesAndListingErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, b := newFakeDev("a"), newFakeDev("b")
		s1, s2 := &fakeSource{devs: []*fakeDev{a}}, &fakeSource{devs: []*fakeDev{b}}
		p, err := New(&Options{Sources: []Source{s1, s2}, MonitorInterval: -1})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := len(p.Devices()); n != 2 {
			t.Fatalf("inventory = %d devices", n)
		}
		// A source that fails to list keeps its devices: the server may be
		// briefly away, the devices are not gone.
		s2.set(func(s *fakeSource) { s.fail = errors.New("adb server unreachable") })
		if err := p.Refresh(context.Background()); err == nil || !strings.Contains(err.Error(), "adb server unreachable") {
			t.Fatalf("Refresh = %v", err)
		}
		if s := stateOf(t, p, "b"); s.State != StateAvailable {
			t.Fatalf("b = %s after a failed listing", s.State)
		}
	})
}

func TestOperatorQuarantine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newFakeDev("a")
		p := newTestPool(t, &fakeSource{devs: []*fakeDev{a}}, nil)
		l, err := p.Acquire(context.Background(), Selector{})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Quarantine("a", "screen cracked"); err != nil {
			t.Fatal(err)
		}
		if err := l.Err(); !errors.Is(err, ErrLeaseLost) {
			t.Fatalf("lease of a quarantined device: %v", err)
		}
		if s := stateOf(t, p, "a"); s.State != StateQuarantined || s.Reason != "operator: screen cracked" {
			t.Fatalf("a = %s %q", s.State, s.Reason)
		}
		if err := p.Quarantine("zz", "x"); !errors.Is(err, ErrUnknownDevice) {
			t.Fatalf("Quarantine(unknown) = %v", err)
		}
		if err := p.Unquarantine("a"); err != nil {
			t.Fatal(err)
		}
		if err := p.Unquarantine("a"); !errors.Is(err, ErrTransition) {
			t.Fatalf("second Unquarantine = %v", err)
		}
	})
}
