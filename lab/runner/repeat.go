package runner

import (
	"context"
	"fmt"

	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/reports"
)

// repeat reproduces one scenario on one device: Repeat attempts (or
// until the first failure), every attempt kept with its artifacts. The
// verdict counts them: pass when all passed, fail when none did, flaky
// otherwise; attempts lost to the lab are errors and end the series.
func (r *runner) repeat(ctx context.Context, it *item) {
	if reason := r.unmet(it.sc); reason != "" {
		it.res.Checks = skippedChecks(it.sc, reason)
		r.finish(it, reports.VerdictSkipped, reason)
		return
	}
	limit := r.o.Repeat
	if limit <= 0 {
		limit = DefaultUntilFail
	}
	leases, err := r.acquire(ctx, it)
	if err != nil {
		if ctx.Err() == nil {
			r.finish(it, reports.VerdictError, "no device: "+err.Error())
		}
		return
	}
	serials := make([]string, len(leases))
	for i, l := range leases {
		serials[i] = l.Serial()
	}
	var pass, fail, lab int
	released := false
	for n := 1; n <= limit && ctx.Err() == nil && !r.isStopping(); n++ {
		at := &Attempt{Scenario: it.sc, Number: n, Leases: leases, RunDir: r.o.RunDir, RelDir: attemptDir(it.res.Name, n),
			Keep: func(bool) bool { return true }}
		out, started, finished := r.execute(ctx, at, leases)
		a := r.record(it, at, out, serials, started, finished)
		r.noteLease(serials, started, finished, it.sc.Name, n)
		r.mu.Lock()
		r.overheads = append(r.overheads, max(finished.Sub(started)-out.StepTime, 0))
		r.mu.Unlock()
		if r.o.Progress != nil {
			r.o.Progress(it.res.Name, *a)
		}
		switch a.Verdict {
		case reports.VerdictPass:
			pass++
			continue
		case reports.VerdictError:
			lab++
			r.release(leases, out)
			released = true
		default:
			fail++
		}
		if released || r.o.UntilFail {
			break
		}
	}
	if !released {
		releaseAll(leases, pool.OK)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &it.res
	total := len(s.Attempts)
	switch {
	case total == 0:
		s.Verdict, s.Reason = reports.VerdictSkipped, "not run: the run was interrupted"
		return
	case fail == 0 && lab == 0:
		s.Verdict = reports.VerdictPass
	case pass == 0 && fail > 0:
		s.Verdict = reports.VerdictFail
	case fail > 0:
		s.Verdict = reports.VerdictFlaky
	default:
		s.Verdict = reports.VerdictError
	}
	s.Checks = s.Attempts[total-1].Checks
	for i := total - 1; i >= 0; i-- {
		if s.Attempts[i].Verdict == reports.VerdictFail || s.Attempts[i].Verdict == reports.VerdictInconclusive {
			s.Checks = s.Attempts[i].Checks
			break
		}
	}
	s.Reason = fmt.Sprintf("repeat: %d passed, %d failed, %d lost to the lab of %d", pass, fail, lab, total)
}
