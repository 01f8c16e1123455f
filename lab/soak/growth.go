// Package soak is agentlab run --soak's measuring side: what is sampled
// after every iteration and the rule that tells a leak from noise.
//
// The growth rule, per series of n ≥ MinSamples samples: the median of
// the last quarter minus the median of the first quarter is the growth;
// the series grew when the growth exceeds its bound, max(Floor,
// Rel × first-quarter median), and the least-squares slope over the
// second half, projected over that half, still exceeds half the bound.
// The medians make single spikes (a GC pause, a scenario's burst)
// harmless, the floors keep small absolute noise from failing a run, and
// the second-half slope lets a warm-up step that then plateaus pass.
package soak

import (
	"slices"
)

// MinSamples is the fewest samples the rule judges; a shorter series
// never fails.
const MinSamples = 4

// Bound is how much a figure may grow over a soak.
type Bound struct {
	// Floor is the absolute growth always allowed, in the metric's unit.
	Floor float64
	// Rel is the growth allowed relative to the starting level.
	Rel float64
}

// Bounds are the documented bounds by metric.
var Bounds = map[string]Bound{
	// The Go heap settles after a few iterations; 16 MiB or a quarter.
	MetricRuntimeRSS: {Floor: 16 << 20, Rel: 0.25},
	// Descriptors and goroutines come back when a prompt ends: a handful
	// in flight is noise, a steady climb is a leak.
	MetricRuntimeFDs:        {Floor: 8, Rel: 0.2},
	MetricRuntimeGoroutines: {Floor: 8, Rel: 0.2},
	// The store keeps every session a scenario made, so it grows by
	// design; only growth past 64 MiB or doubling fails.
	MetricRuntimeStore: {Floor: 64 << 20, Rel: 1},
	MetricADBRSS:       {Floor: 16 << 20, Rel: 0.25},
	MetricADBFDs:       {Floor: 8, Rel: 0.2},
}

// The metrics.
const (
	MetricRuntimeRSS        = "runtime.rss"
	MetricRuntimeFDs        = "runtime.fds"
	MetricRuntimeGoroutines = "runtime.goroutines"
	MetricRuntimeStore      = "runtime.store"
	MetricADBRSS            = "adb.rss"
	MetricADBFDs            = "adb.fds"
)

// Judge applies the growth rule to v with bound b: the growth measured,
// the bound it is held to, and whether it grew.
func Judge(v []float64, b Bound) (growth, bound float64, grew bool) {
	n := len(v)
	if n < MinSamples {
		return 0, b.Floor, false
	}
	q := n / 4
	first, last := median(v[:q]), median(v[n-q:])
	growth = last - first
	bound = max(b.Floor, b.Rel*first)
	half := v[n/2:]
	still := slope(half) * float64(len(half)-1)
	return growth, bound, growth > bound && still > bound/2
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	m := len(s) / 2
	if len(s)%2 == 1 {
		return s[m]
	}
	return (s[m-1] + s[m]) / 2
}

// slope is the least-squares slope of v over its indexes.
func slope(v []float64) float64 {
	n := float64(len(v))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i, y := range v {
		x := float64(i)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}
