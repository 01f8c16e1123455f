package runtimectl

import (
	"context"
	"fmt"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock/labclock"
)

// ClockInfo is `agentosd ctl clock show` and `clock advance`.
type ClockInfo = labclock.Info

// Clock reports the runtime's clock: Kind labclock.KindVirtual on the
// lab's build (AdvanceClock moves it), labclock.KindReal on a release
// build (a scenario has to wait for real). A runtime older than the verb
// answers a *CtlError with exit code 2; it has the real clock only.
func (c *Client) Clock(ctx context.Context) (*ClockInfo, error) {
	var in ClockInfo
	if err := c.Call(ctx, &in, "clock", "show"); err != nil {
		return nil, err
	}
	return &in, nil
}

// AdvanceClock moves the runtime's virtual clock forward by d (whole
// milliseconds, at least one): timers that became due fire at once in
// serve, and within labclock.FollowInterval in the extension host and
// the supervisor. A release build refuses with errcode.Unsupported
// (errors.Is(err, errcode.Unsupported)).
func (c *Client) AdvanceClock(ctx context.Context, d time.Duration) (*ClockInfo, error) {
	if d < time.Millisecond || d%time.Millisecond != 0 {
		return nil, fmt.Errorf("advance the clock by whole milliseconds, not %s", d)
	}
	var in ClockInfo
	if err := c.Call(ctx, &in, "clock", "advance", d.String()); err != nil {
		return nil, err
	}
	return &in, nil
}
