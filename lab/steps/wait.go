package steps

import (
	"context"
	"fmt"
	"time"
)

// Timer is where a timed wait (wait: {for: D}) spends its time on a
// device. RealTime lets the time pass on the lab's clock. This is the
// seam virtual time plugs into: a runtime built with a virtual clock
// (agentosd ctl clock advance, tagged builds) will get a Timer that
// advances the device's clock by d instead, and scenarios that wait out
// timers will then take no real time.
type Timer interface {
	// Wait lets d pass for t and says how, for the evidence ("waited 2s
	// of real time").
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
	return fmt.Sprintf("waited %s of real time", time.Since(start).Round(time.Millisecond)), nil
}

// timedWait runs wait: {for: d}; the step's record and output carry the
// evidence of how the time passed.
func (a *attempt) timedWait(ctx context.Context, n int, t *Target, d time.Duration) (any, error) {
	timer := a.env.Timer
	if timer == nil {
		timer = RealTime{}
	}
	how, err := timer.Wait(ctx, t, d)
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
