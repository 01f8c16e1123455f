package lab

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/lab/runner"
	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/agentoslab/agentlab/lab/soak"
	"github.com/agentoslab/agentlab/reports"
)

// SoakScenario names the lab-level scenario a soak's verdict is reported
// as.
const SoakScenario = "lab/soak"

// sampleTimeout bounds one device's status call.
const sampleTimeout = 30 * time.Second

// soak repeats the queue until Options.Soak is spent, each iteration's
// scenarios named soakN/…, sampling after every iteration; the figures'
// verdict is the lab/soak scenario.
func (r *run) soak(ctx context.Context) (*runner.Result, error) {
	start := time.Now()
	deadline := start.Add(r.o.Soak)
	rec := soak.NewRecorder()
	total := &runner.Result{}
	for i := 1; ; i++ {
		r.soakIteration = i
		res, err := r.queue(ctx, fmt.Sprintf("soak%d/", i))
		if err != nil {
			return nil, err
		}
		total.Scenarios = append(total.Scenarios, res.Scenarios...)
		total.Devices = res.Devices
		total.Overheads = append(total.Overheads, res.Overheads...)
		total.Interrupted = total.Interrupted || res.Interrupted
		if res.Interrupted || ctx.Err() != nil {
			break
		}
		r.sample(ctx, rec, i)
		if !time.Now().Before(deadline) || r.stopping() {
			break
		}
	}
	r.soaked = rec.Result(time.Since(start))
	sc := reports.Scenario{Name: SoakScenario, Tags: []string{"lab"}, Devices: []string{}, Verdict: reports.VerdictPass,
		Attempts: []reports.Attempt{}, Artifacts: []reports.Artifact{}, Checks: soak.Checks(r.soaked)}
	var grew []string
	for _, c := range sc.Checks {
		if !c.OK {
			grew = append(grew, c.Name+": "+c.Detail)
		}
	}
	sc.Reason = fmt.Sprintf("%d iterations in %s, %d series flat", r.soaked.Iterations,
		time.Duration(r.soaked.DurationMs)*time.Millisecond, len(sc.Checks)-len(grew))
	if len(grew) > 0 {
		sc.Verdict, sc.Reason = reports.VerdictFail, "grew: "+strings.Join(grew, "; ")
	}
	progressf(r.o, "soak: %s", sc.Reason)
	total.Scenarios = append(total.Scenarios, sc)
	return total, nil
}

func (r *run) stopping() bool {
	select {
	case <-r.o.Stop:
		return true
	default:
		return false
	}
}

// sample records every ready device's runtime figures and the host adb
// servers'. A device that does not answer leaves a gap, not a failure:
// its scenarios say what went wrong.
func (r *run) sample(ctx context.Context, rec *soak.Recorder, iteration int) {
	for _, d := range r.devs {
		if !d.ready || d.dev == nil {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, sampleTimeout)
		st, err := runtimectl.New(d.dev, &runtimectl.Options{Logger: r.o.Logger, OneShot: true}).Status(sctx)
		cancel()
		switch {
		case err != nil:
			progressf(r.o, "soak: %s: status: %v", d.Serial, err)
		case st.Process == nil:
			progressf(r.o, "soak: %s: the runtime reports no process figures", d.Serial)
		default:
			rec.AddProcess(d.Serial, iteration, time.Now(), *st.Process)
		}
	}
	for n, s := range r.inv.servers {
		name := soak.HostDevice
		if n > 0 {
			name = fmt.Sprintf("%s%d", soak.HostDevice, n+1)
		}
		rss, fds, err := soak.HostProcess(s.PID())
		if err != nil {
			progressf(r.o, "soak: %v", err)
			continue
		}
		now := time.Now()
		rec.Add(name, soak.MetricADBRSS, iteration, now, float64(rss))
		rec.Add(name, soak.MetricADBFDs, iteration, now, float64(fds))
	}
}
