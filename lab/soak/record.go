package soak

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/admin"
)

// HostDevice is the device name of the host adb server's series.
const HostDevice = "host"

// Recorder collects the samples of a soak, series in first-seen order.
type Recorder struct {
	series     []*reports.SoakSeries
	index      map[[2]string]*reports.SoakSeries
	iterations int
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder { return &Recorder{index: map[[2]string]*reports.SoakSeries{}} }

// Add records one figure of device after iteration.
func (r *Recorder) Add(device, metric string, iteration int, at time.Time, v float64) {
	k := [2]string{device, metric}
	s := r.index[k]
	if s == nil {
		s = &reports.SoakSeries{Device: device, Metric: metric, Unit: unitOf(metric), Samples: []reports.SoakSample{}}
		r.index[k] = s
		r.series = append(r.series, s)
	}
	s.Samples = append(s.Samples, reports.SoakSample{Iteration: iteration, At: at, Value: v})
	r.iterations = max(r.iterations, iteration)
}

// AddProcess records the runtime's figures of device.
func (r *Recorder) AddProcess(device string, iteration int, at time.Time, p admin.Process) {
	r.Add(device, MetricRuntimeRSS, iteration, at, float64(p.RSSBytes))
	if p.FDs >= 0 {
		r.Add(device, MetricRuntimeFDs, iteration, at, float64(p.FDs))
	}
	r.Add(device, MetricRuntimeGoroutines, iteration, at, float64(p.Goroutines))
	r.Add(device, MetricRuntimeStore, iteration, at, float64(p.StoreBytes))
}

// Result judges every series (Bounds) and returns the soak as reported.
func (r *Recorder) Result(spent time.Duration) *reports.Soak {
	out := &reports.Soak{DurationMs: spent.Milliseconds(), Iterations: r.iterations, Series: []reports.SoakSeries{}}
	for _, s := range r.series {
		c := *s
		v := make([]float64, len(c.Samples))
		for i, sm := range c.Samples {
			v[i] = sm.Value
		}
		c.Growth, c.Bound, c.Grew = Judge(v, Bounds[c.Metric])
		out.Series = append(out.Series, c)
	}
	return out
}

// Checks are the soak's verdict as checks: one per series, failing where
// the series grew.
func Checks(s *reports.Soak) []reports.Check {
	var out []reports.Check
	for _, sr := range s.Series {
		out = append(out, reports.Check{Name: sr.Metric + " on " + sr.Device + " stays flat", OK: !sr.Grew,
			Detail: fmt.Sprintf("grew %s over %d samples (bound %s)", reports.FormatFigure(sr.Unit, sr.Growth), len(sr.Samples), reports.FormatFigure(sr.Unit, sr.Bound))})
	}
	return out
}

func unitOf(metric string) string {
	switch metric {
	case MetricRuntimeRSS, MetricRuntimeStore, MetricADBRSS:
		return "bytes"
	}
	return "count"
}

// HostProcess reads a host process's RSS and open descriptors from /proc
// (the lab's own adb server).
func HostProcess(pid int) (rss int64, fds int, err error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	if rss, err = admin.ProcRSS(filepath.Join(dir, "status")); err != nil {
		return 0, 0, fmt.Errorf("adb server: %w", err)
	}
	ents, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return 0, 0, fmt.Errorf("adb server: %w", err)
	}
	return rss, len(ents), nil
}
