package steps

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/agentoslab/agentlab/runtime/clock/labclock"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// Timer is where a timed wait (wait: {for: D}) spends its time on a
// device. Env.Timer nil means the device's runtime decides: see
// attempt.passTime.
type Timer interface {
	// Wait lets d pass for t and says how, for the evidence ("waited 2s
	// in real time").
	Wait(ctx context.Context, t *Target, d time.Duration) (how string, err error)
}

// RealTime is the Timer of runtimes without a virtual clock.
type RealTime struct{}

// Wait sleeps for d.
func (RealTime) Wait(ctx context.Context, _ *Target, d time.Duration) (string, error) {
	start := time.Now()
	if err := sleep(ctx, d); err != nil {
		return "", err
	}
	return fmt.Sprintf("waited %s in real time", time.Since(start).Round(time.Millisecond)), nil
}

// followSettle is how long an advance is given to reach the runtime's
// other processes: the extension host and the supervisor re-read the
// offset every labclock.FollowInterval and nothing they expose says they
// did, so the step lets two intervals pass before the next step looks at
// their timers.
const followSettle = 2 * labclock.FollowInterval

// passTime lets d pass on t's runtime: it advances the runtime's virtual
// clock when the runtime has one (the lab's build on a virtual device)
// and really waits when it has not (a release build, a real phone).
func (a *attempt) passTime(ctx context.Context, t *Target, d time.Duration) (string, error) {
	virtual, err := a.virtualClock(ctx, t)
	if err != nil {
		return "", err
	}
	if !virtual {
		return RealTime{}.Wait(ctx, t, d)
	}
	// The runtime's clock counts whole milliseconds.
	d = d.Round(time.Millisecond)
	var in runtimectl.ClockInfo
	if err := t.Ctl.Call(ctx, &in, "clock", "advance", d.String()); err != nil {
		return "", fmt.Errorf("advance the virtual clock by %s: %w", d, err)
	}
	if err := sleep(ctx, followSettle); err != nil {
		return "", err
	}
	return fmt.Sprintf("advanced virtual time %s", d), nil
}

// virtualClock reports whether t's runtime can advance its clock. It asks
// once per attempt and role (`ctl clock show`); a runtime that does not
// know the verb (older than it) or refuses it has the real clock. Other
// failures are not cached: the runtime may be restarting.
func (a *attempt) virtualClock(ctx context.Context, t *Target) (bool, error) {
	a.mu.Lock()
	v, ok := a.clocks[t.Role]
	a.mu.Unlock()
	if ok {
		return v, nil
	}
	var in runtimectl.ClockInfo
	err := t.Ctl.Call(ctx, &in, "clock", "show")
	var ce *runtimectl.CtlError
	switch {
	case err == nil:
		v = in.Kind == labclock.KindVirtual
	case errors.As(err, &ce), errors.Is(err, errcode.Unsupported):
		v = false
	default:
		return false, fmt.Errorf("ask the runtime for its clock: %w", err)
	}
	a.mu.Lock()
	a.clocks[t.Role] = v
	a.mu.Unlock()
	return v, nil
}

// timedWait runs wait: {for: d}; the step's record and output carry the
// evidence of how the time passed.
func (a *attempt) timedWait(ctx context.Context, n int, t *Target, d time.Duration) (any, error) {
	var how string
	var err error
	if a.env.Timer != nil {
		how, err = a.env.Timer.Wait(ctx, t, d)
	} else {
		how, err = a.passTime(ctx, t, d)
	}
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	for i := range a.records {
		if a.records[i].Index == n {
			a.records[i].Detail = how
		}
	}
	a.mu.Unlock()
	return map[string]any{"waitedMs": float64(d.Milliseconds()), "evidence": how}, nil
}
