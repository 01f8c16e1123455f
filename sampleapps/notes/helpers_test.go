package notes

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

// t0 is the fixed start of test clocks: Monday 2026-10-12 06:00 UTC.
var t0 = time.Date(2026, 10, 12, 6, 0, 0, 0, time.UTC)

func newApp(t testing.TB, loc *time.Location, agent Agent) (*App, *sampletest.Clock) {
	t.Helper()
	clk := sampletest.NewClock(t0)
	a, err := Open(context.Background(), t.TempDir(), &Options{Clock: clk.Now, Location: loc, Language: "zh-CN", Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, clk
}

func dumpJSON(t testing.TB, a *App) string {
	t.Helper()
	d, err := a.dump(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d.Now = "" // the clock moves; the store is what counts
	b, _ := json.Marshal(d)
	return string(b)
}
