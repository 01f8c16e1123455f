package soak

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func series(n int, f func(i int) float64) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

func TestJudge(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	noise := func(amp float64) float64 { return (rng.Float64()*2 - 1) * amp }
	fds := Bounds[MetricRuntimeFDs]
	rss := Bounds[MetricRuntimeRSS]
	for _, tc := range []struct {
		name string
		v    []float64
		b    Bound
		grew bool
	}{
		{"flat", series(40, func(int) float64 { return 30 }), fds, false},
		{"noisy flat", series(40, func(int) float64 { return 30 + noise(5) }), fds, false},
		{"spike at the end", series(40, func(i int) float64 { return 30 + float64(i/39)*100 }), fds, false},
		{"warm-up step then plateau", series(40, func(i int) float64 { return 30 + float64(min(i, 15)) }), fds, false},
		{"small slow growth under the floor", series(40, func(i int) float64 { return 30 + float64(i)/8 }), fds, false},
		{"fd per iteration", series(40, func(i int) float64 { return 30 + float64(i) }), fds, true},
		{"fd per iteration, noisy", series(40, func(i int) float64 { return 30 + float64(i) + noise(4) }), fds, true},
		{"short leak", series(10, func(i int) float64 { return 30 + 3*float64(i) }), fds, true},
		{"too short to judge", series(3, func(i int) float64 { return 30 + 100*float64(i) }), fds, false},
		{"rss noisy flat", series(30, func(int) float64 { return 40<<20 + noise(6<<20) }), rss, false},
		{"rss leaking 1 MiB an iteration", series(30, func(i int) float64 { return 40<<20 + float64(i)*(1<<20) + noise(2<<20) }), rss, true},
		{"relative bound on a big level", series(40, func(i int) float64 { return 1000 + float64(i)*4 }), fds, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			growth, bound, grew := Judge(tc.v, tc.b)
			assert.Equal(t, tc.grew, grew, "growth %.1f bound %.1f", growth, bound)
		})
	}
}

// TestRecorder: series per device and metric, judged with their
// metric's bound, the failing ones as failing checks.
func TestRecorder(t *testing.T) {
	rec := NewRecorder()
	at := time.Unix(0, 0)
	for i := 1; i <= 12; i++ {
		rec.AddProcess("vd-1", i, at, admin.Process{Goroutines: 40, RSSBytes: 30 << 20, FDs: 20 + 2*i, StoreBytes: 1 << 20})
		rec.Add(HostDevice, MetricADBFDs, i, at, 15)
	}
	s := rec.Result(time.Minute)
	assert.Equal(t, 12, s.Iterations)
	require.Len(t, s.Series, 5)
	var grew []string
	for _, sr := range s.Series {
		assert.Len(t, sr.Samples, 12)
		if sr.Grew {
			grew = append(grew, sr.Device+" "+sr.Metric)
		}
	}
	assert.Equal(t, []string{"vd-1 runtime.fds"}, grew)
	var failing []string
	for _, c := range Checks(s) {
		if !c.OK {
			failing = append(failing, c.Name)
		}
	}
	assert.Equal(t, []string{"runtime.fds on vd-1 stays flat"}, failing)
}
