//go:build linux

package pool_test

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/devices/adbserver"
	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	// This test binary is also every virtual device's init and tools.
	virtual.Init()
	os.Exit(m.Run())
}

// lab is adb servers with virtual devices connected to them.
type lab struct {
	servers []*adb.Server
	devs    map[string]*virtual.Device // by serial
}

// newLab starts one private adb server per entry of perServer and that
// many virtual devices on each.
func newLab(t testing.TB, perServer ...int) *lab {
	t.Helper()
	testenv.NeedVirtualDevices(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := &lab{devs: map[string]*virtual.Device{}}
	state := t.TempDir()
	for _, n := range perServer {
		as, err := adbserver.Start(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { as.Close() })
		srv := adb.NewServer(as.Addr(), nil)
		l.servers = append(l.servers, srv)
		for range n {
			vd, err := virtual.Start(ctx, &virtual.Options{StateDir: state})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				vd.Stop(sctx)
			})
			if err := srv.Connect(ctx, vd.Serial()); err != nil {
				t.Fatal(err)
			}
			l.devs[vd.Serial()] = vd
		}
	}
	return l
}

func (l *lab) sources() []pool.Source {
	var out []pool.Source
	for _, s := range l.servers {
		out = append(out, pool.ADB(s))
	}
	return out
}

func waitState(t *testing.T, p *pool.Pool, serial string, want pool.State, d time.Duration) pool.Status {
	t.Helper()
	var s pool.Status
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := p.Device(serial)
		require.NoError(c, err)
		require.Equal(c, want, got.State, "%s: state %s (%s)", serial, got.State, got.Reason)
		s = got
	}, d, 50*time.Millisecond)
	return s
}

// TestFourVirtualDevices: four devices on two adb servers are leased at
// once; one device's init is killed mid-lease and another is dropped
// from its adb server. The pool takes the dead device's lease away and
// quarantines it with the ladder's reasons, reconnects the dropped one,
// and the other leases and devices are untouched.
func TestFourVirtualDevices(t *testing.T) {
	if raceEnabled {
		// Every in-device tool is this race-instrumented binary: probes
		// take seconds and the outcome depends on the machine's load. The
		// pool's logic is race-tested by the unit tests.
		t.Skip("timing-bound end-to-end test; run it without -race")
	}
	t.Parallel()
	l := newLab(t, 2, 2)
	p, err := pool.New(&pool.Options{
		Sources:         l.sources(),
		MonitorInterval: 200 * time.Millisecond,
		Health:          pool.Health{ShellTimeout: 3 * time.Second},
		Recovery:        pool.Recovery{StepTimeout: 3 * time.Second, RebootTimeout: 5 * time.Second},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	events, cancelEvents := p.Subscribe(1024)
	defer cancelEvents()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := p.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	if got := len(p.Devices()); got != 4 {
		t.Fatalf("inventory has %d devices, want 4: %+v", got, p.Devices())
	}

	leases := map[string]*pool.Lease{}
	for range 3 {
		ls, err := p.Acquire(ctx, pool.Selector{NeedRoot: true})
		if err != nil {
			t.Fatal(err)
		}
		leases[ls.Serial()] = ls
	}
	var victim, dropped string
	for serial := range leases {
		victim = serial
		break
	}
	for serial := range l.devs {
		if leases[serial] == nil {
			dropped = serial
		}
	}

	// Kill the victim's init: its pid namespace and adbd die with it.
	if err := syscall.Kill(l.devs[victim].InitPID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Drop the available device from its adb server behind the pool's back.
	for _, s := range l.servers {
		s.Disconnect(ctx, dropped)
	}

	select {
	case <-leases[victim].Lost():
	case <-time.After(30 * time.Second):
		t.Fatal("the pool did not take away the dead device's lease")
	}
	q := waitState(t, p, victim, pool.StateQuarantined, time.Minute)
	for _, rung := range []string{"reread:", "reconnect:", "connect:", "reboot:"} {
		if !strings.Contains(q.Reason, rung) {
			t.Errorf("quarantine reason lacks %q: %s", rung, q.Reason)
		}
	}
	r := waitState(t, p, dropped, pool.StateAvailable, time.Minute)
	if !strings.HasPrefix(r.Reason, "recovered by connect") {
		t.Errorf("dropped device back with reason %q, want recovered by connect", r.Reason)
	}

	for serial, ls := range leases {
		if serial == victim {
			continue
		}
		if err := ls.Err(); err != nil {
			t.Errorf("healthy lease %s lost: %v", serial, err)
		}
		if s, _ := p.Device(serial); s.State != pool.StateLeased {
			t.Errorf("%s state %s, want leased", serial, s.State)
		}
		res, err := ls.Device.Su(ctx, "id -u")
		if err != nil || strings.TrimSpace(string(res.Stdout)) != "0" {
			t.Errorf("leased %s unusable: %+v %v", serial, res, err)
		}
	}
	// The recovered device can be leased again.
	ls, err := p.Acquire(ctx, pool.Selector{Serials: []string{dropped}})
	if err != nil {
		t.Fatal(err)
	}
	ls.Release(pool.OK)
	for _, ls := range leases {
		ls.Release(pool.OK)
	}
	if s, _ := p.Device(victim); s.State != pool.StateQuarantined {
		t.Errorf("releasing the lost lease moved %s to %s", victim, s.State)
	}

	// Progress events show the victim's ladder, rung by rung.
	var rungs []string
	for len(events) > 0 {
		if e := <-events; e.Serial == victim && e.Step != "" {
			rungs = append(rungs, e.Step)
		}
	}
	if strings.Join(rungs, " ") != "reread reconnect connect reboot" {
		t.Errorf("victim's rungs = %v", rungs)
	}
}

// BenchmarkAcquireRelease measures a lease round trip: pick, full health
// gate (state, boot, shell, battery, storage, root) on a virtual device,
// lease, release.
func BenchmarkAcquireRelease(b *testing.B) {
	l := newLab(b, 1)
	p, err := pool.New(&pool.Options{Sources: l.sources(), MonitorInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	if err := p.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		ls, err := p.Acquire(ctx, pool.Selector{NeedRoot: true})
		if err != nil {
			b.Fatal(err)
		}
		ls.Release(pool.OK)
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/lease")
}
