package runner_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/devices/virtual/virtualtest"
	"github.com/agentoslab/agentlab/lab/runner"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
)

// BenchmarkLabOverhead measures the lab's own time per scenario on a real
// virtual device behind a real adb server and the real pool: a no-op
// scenario's wall time (lease with its health gate, the attempt's set-up,
// checks, release) minus the time inside its steps (target < 200 ms).
func BenchmarkLabOverhead(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	vd := virtualtest.Start(b, nil)
	p, err := pool.New(&pool.Options{Sources: []pool.Source{pool.ADB(vd.Server)}, MonitorInterval: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	if err := p.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	sc, err := scenario.Parse([]byte("name: noop\nsteps:\n  - run: {shell: 'true'}\n"), "noop.yaml", nil)
	if err != nil {
		b.Fatal(err)
	}
	const perRun = 10
	scs := make([]*scenario.Scenario, perRun)
	for i := range scs {
		c := *sc
		c.Name = fmt.Sprintf("noop-%d", i)
		scs[i] = &c
	}
	exec := &runner.DeviceExecutor{Kinds: map[string]reports.DeviceKind{vd.VD.Serial(): reports.DeviceVirtual}}
	var overheads []time.Duration
	b.ResetTimer()
	for b.Loop() {
		res, err := runner.Run(ctx, runner.Options{Scenarios: scs, Leaser: runner.Pool(p), Executor: exec, RunDir: b.TempDir(),
			Base: pool.Selector{NeedRoot: true}, Parallel: 1})
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res.Scenarios {
			if r.Verdict != reports.VerdictPass {
				b.Fatalf("%s: %s %s", r.Name, r.Verdict, r.Reason)
			}
		}
		overheads = append(overheads, res.Overheads...)
	}
	b.StopTimer()
	slices.Sort(overheads)
	var sum time.Duration
	for _, o := range overheads {
		sum += o
	}
	b.ReportMetric(float64(sum.Milliseconds())/float64(len(overheads)), "overhead-ms/scenario")
	b.ReportMetric(float64(overheads[len(overheads)*95/100].Milliseconds()), "p95-overhead-ms")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N*perRun), "wall-ms/scenario")
}
