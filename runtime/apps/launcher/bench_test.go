package launcher

import (
	"context"
	"testing"
	"time"
)

// BenchmarkStartStop measures an app server from the runtime's start
// request to a listener verified as the app's uid (ms/start), and the
// stop that follows.
func BenchmarkStartStop(b *testing.B) {
	e := newEnv(b, nil)
	ctx := context.Background()
	var startTotal time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := e.client.Start(ctx, testPkg, "main"); err != nil {
			b.Fatal(err)
		}
		startTotal += time.Since(t0)
		if _, err := e.client.Stop(ctx, testPkg, "main"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(startTotal.Milliseconds())/float64(b.N), "ms/start")
}

// BenchmarkRun measures a one-shot debug command as the app's uid.
func BenchmarkRun(b *testing.B) {
	e := newEnv(b, nil)
	ctx := context.Background()
	for b.Loop() {
		r, err := e.client.Run(ctx, testPkg, []string{"exit", "0"}, 0)
		if err != nil || r.ExitCode != 0 {
			b.Fatal(r, err)
		}
	}
}
