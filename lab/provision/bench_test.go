package provision

import (
	"context"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/lab/modelstub"
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
