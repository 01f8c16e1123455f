package provision

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/lab/runtimectl"
)

// BenchmarkProvisionVirtual provisions a virtual device from nothing (a
// fresh device: no module, no apps, no model) to ready: module installed,
// reboot, runtime answering, every bundle installed, the stub model set,
// plugins enabled. The timer covers Provision only; boot+provision-s adds
// the device's first boot. Target: under 5 s.
func BenchmarkProvisionVirtual(b *testing.B) {
	testenv.NeedVirtualDevices(b)
	arts := artifacts(b)
	stub, err := modelstub.Start(nil)
	if err != nil {
		b.Fatal(err)
	}
	defer stub.Close()
	token := modelstub.NewToken()
	stub.Bind(token, nil)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		start := time.Now()
		td := startDevice(b, nil)
		b.StartTimer()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		res, err := Provision(ctx, td.dev, arts, &Options{Model: Model{Stub: &StubModel{Port: stub.Port(), Token: token}}})
		cancel()
		if err != nil {
			b.Fatalf("provision: %v (%+v)", err, res)
		}
		b.StopTimer()
		total += time.Since(start)
		for _, s := range res.Steps {
			b.ReportMetric(s.Duration.Seconds(), s.Name+"-s")
		}
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "boot+provision-s")
}

// BenchmarkCtlCall is the lab's cost of one runtime call on a provisioned
// virtual device (`status` through a real adb server): on the client's
// kept session (`agentosd ctl --lines`), and one-shot (an adb shell, su
// and an agentosd process per call, what a person at `adb shell` pays).
// Every lab step that reads or changes the runtime pays this.
func BenchmarkCtlCall(b *testing.B) {
	testenv.NeedVirtualDevices(b)
	arts := artifacts(b)
	td := startDevice(b, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if res, err := Provision(ctx, td.dev, arts, &Options{}); err != nil {
		b.Fatalf("provision: %v (%+v)", err, res)
	}
	for _, mode := range []struct {
		name    string
		oneShot bool
	}{{"session", false}, {"one-shot", true}} {
		b.Run(mode.name, func(b *testing.B) {
			c := runtimectl.New(td.dev, &runtimectl.Options{OneShot: mode.oneShot})
			defer c.Close()
			if _, err := c.Status(ctx); err != nil { // opens the session
				b.Fatal(err)
			}
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				if _, err := c.Status(ctx); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
