package clock

import (
	"context"
	"errors"
	"time"
)

// Clock is the runtime's time source. Implementations are safe for
// concurrent use. Timers and tickers behave as the time package's do
// (Go 1.23 semantics: after Stop or Reset returns, no stale value is
// received from the channel), counted on this clock.
type Clock interface {
	// Now returns the current time on this clock, with a monotonic
	// reading where the implementation has one (Real, the lab's virtual
	// clock), so Sub between two readings is immune to wall-clock jumps.
	Now() time.Time
	// NewTimer is time.NewTimer: the channel receives the time once d
	// has passed.
	NewTimer(d time.Duration) (Timer, <-chan time.Time)
	// AfterFunc is time.AfterFunc: f runs in its own goroutine once d
	// has passed.
	AfterFunc(d time.Duration, f func()) Timer
	// NewTicker is time.NewTicker: the channel receives the time every
	// d, dropping ticks a slow receiver misses. d must be positive.
	NewTicker(d time.Duration) (Ticker, <-chan time.Time)
}

// Timer is a pending timer. *time.Timer satisfies it.
type Timer interface {
	// Stop prevents the timer from firing; it reports whether it did so
	// (false: it had already fired or been stopped).
	Stop() bool
	// Reset makes the timer fire d from now; it reports whether the
	// timer was pending.
	Reset(d time.Duration) bool
}

// Ticker is a running ticker. *time.Ticker satisfies it.
type Ticker interface {
	Stop()
	Reset(d time.Duration)
}

// Real returns the real clock: the time package itself.
func Real() Clock { return real{} }

type real struct{}

func (real) Now() time.Time { return time.Now() }

func (real) NewTimer(d time.Duration) (Timer, <-chan time.Time) {
	t := time.NewTimer(d)
	return t, t.C
}

func (real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

func (real) NewTicker(d time.Duration) (Ticker, <-chan time.Time) {
	t := time.NewTicker(d)
	return t, t.C
}

// Or returns c, or the real clock when c is nil: what an Options.Clock
// field left nil means.
func Or(c Clock) Clock {
	if c == nil {
		return Real()
	}
	return c
}

// Since is c.Now().Sub(t).
func Since(c Clock, t time.Time) time.Duration { return c.Now().Sub(t) }

// Sleep waits d on c. It returns nil once d has passed, or ctx's error
// if ctx ends first.
func Sleep(ctx context.Context, c Clock, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t, ch := c.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-ch:
		return nil
	}
}

// WithTimeout returns a copy of ctx that ends when d has passed on c,
// or when ctx ends, or when cancel is called. When the time is up,
// context.Cause(ctx) is context.DeadlineExceeded; ctx.Err() is then
// context.Canceled, whatever the clock, so callers tell a timeout by
// its cause.
//
// The returned context has no deadline of its own: a context's
// deadline is wall time, which the I/O below it (socket deadlines)
// would act on, and a virtual clock is not wall time. Bound I/O with
// context.WithTimeout; use this for the product's own timeouts.
func WithTimeout(ctx context.Context, c Clock, d time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	t := c.AfterFunc(d, func() { cancel(context.DeadlineExceeded) })
	return ctx, func() {
		t.Stop()
		cancel(context.Canceled)
	}
}

// TimedOut reports whether ctx (from WithTimeout, or context.WithTimeout)
// ended because its time was up.
func TimedOut(ctx context.Context) bool {
	return ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded)
}
