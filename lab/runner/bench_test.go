package runner

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
)

// bigRun runs n scenarios through the runner with fake devices and a
// fake executor whose outcomes mix passes, failures, flakes and lab
// faults, as the CLI would before writing the reports.
func bigRun(tb testing.TB, n int) *reports.Run {
	tb.Helper()
	var scs []*scenario.Scenario
	e := &fakeExecutor{scripts: map[string][]string{}}
	for i := range n {
		name := fmt.Sprintf("area%d/scenario-%04d", i%9, i)
		scs = append(scs, mustScenario(tb, "name: "+name+"\ntags: [bench, nightly]\nsteps: [{sleep: 1s}]\n"))
		switch i % 10 {
		case 3:
			e.scripts[name] = []string{"fail"}
		case 5:
			e.scripts[name] = []string{"fail", "pass"}
		case 7:
			e.scripts[name] = []string{"lab", "pass"}
		}
	}
	l := newLeaser("d1", "d2", "d3", "d4")
	res, err := Run(context.Background(), Options{Scenarios: scs, Leaser: l, Executor: e, RunDir: tb.TempDir(),
		RetryBudget: n, LabFaultRequeues: n})
	if err != nil {
		tb.Fatal(err)
	}
	start := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	return &reports.Run{SchemaVersion: reports.SchemaVersion, RunID: "bench", StartedAt: start, FinishedAt: start.Add(time.Hour),
		LabVersion: "bench", ConfigDigest: "sha256:0", Host: "bench", Selection: reports.Selection{Tags: []string{}},
		Model: reports.Model{Kind: reports.ModelStub}, Devices: res.Devices, Scenarios: res.Scenarios}
}

// BenchmarkRenderReports5000: every report format, the console table and
// the leak scan of the reports, for 5,000 scenario results produced by
// the runner — what agentlab run does after the queue (target < 1 s).
func BenchmarkRenderReports5000(b *testing.B) {
	run := bigRun(b, 5000)
	dir := b.TempDir()
	secrets := []reports.Secret{{Name: "model key", Value: []byte("sk-bench-0123456789abcdef")}, {Name: "pairing token", Value: []byte("tok_abcdefghijklmnopqrstuvwxyz0123456789ABC")}}
	var files []string
	for _, f := range reports.Formats() {
		files = append(files, filepath.Join(dir, f.FileName()))
	}
	b.ResetTimer()
	for b.Loop() {
		if err := reports.Write(dir, run); err != nil {
			b.Fatal(err)
		}
		if err := reports.WriteConsole(io.Discard, run, &reports.ConsoleOptions{Color: reports.ColorNever}); err != nil {
			b.Fatal(err)
		}
		if leaks, err := reports.ScanForSecrets(files, secrets); err != nil || len(leaks) > 0 {
			b.Fatalf("leaks %v err %v", leaks, err)
		}
	}
	b.StopTimer()
	var size int64
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil {
			size += fi.Size()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/render")
	b.ReportMetric(float64(size)/(1<<20), "MiB-written")
}

// BenchmarkQueue: the runner's own cost per attempt (queue, leases,
// verdicts, timelines) with an executor that does nothing.
func BenchmarkQueue(b *testing.B) {
	var scs []*scenario.Scenario
	for i := range 200 {
		scs = append(scs, mustScenario(b, fmt.Sprintf("name: s%d\nsteps: [{sleep: 1s}]\n", i)))
	}
	b.ResetTimer()
	var overheads []time.Duration
	for b.Loop() {
		res, err := Run(context.Background(), Options{Scenarios: scs, Leaser: newLeaser("d1", "d2"), Executor: &fakeExecutor{}, RunDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		overheads = append(overheads, res.Overheads...)
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N*len(scs)), "µs/attempt")
	slices.Sort(overheads)
	if len(overheads) > 0 {
		b.ReportMetric(float64(overheads[len(overheads)*99/100].Microseconds()), "p99-overhead-µs")
	}
}
