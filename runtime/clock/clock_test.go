package clock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func TestSleep(t *testing.T) {
	c := clocktest.New(t0)
	done := make(chan error, 1)
	go func() { done <- clock.Sleep(context.Background(), c, time.Minute) }()
	require.Eventually(t, func() bool { return c.Pending() == 1 }, 5*time.Second, time.Millisecond)
	c.Advance(time.Minute)
	require.NoError(t, <-done)

	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- clock.Sleep(ctx, c, time.Minute) }()
	require.Eventually(t, func() bool { return c.Pending() == 1 }, 5*time.Second, time.Millisecond)
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	assert.Equal(t, 0, c.Pending(), "Sleep left its timer")
	require.NoError(t, clock.Sleep(context.Background(), c, 0))
}

// WithTimeout ends its context when the time is up on the clock — and
// only then — with the cause a caller tells a timeout by.
func TestWithTimeout(t *testing.T) {
	c := clocktest.New(t0)
	ctx, cancel := clock.WithTimeout(context.Background(), c, 2*time.Minute)
	defer cancel()
	c.Advance(time.Minute)
	require.NoError(t, ctx.Err())
	c.Advance(time.Minute)
	<-ctx.Done()
	assert.True(t, clock.TimedOut(ctx))
	assert.ErrorIs(t, context.Cause(ctx), context.DeadlineExceeded)
	_, has := ctx.Deadline()
	assert.False(t, has, "a clock timeout must not set a wall-clock deadline")

	// Cancelled by hand or by its parent: not a timeout, and the timer
	// is gone.
	parent, cancelParent := context.WithCancel(context.Background())
	ctx2, cancel2 := clock.WithTimeout(parent, c, time.Minute)
	cancelParent()
	<-ctx2.Done()
	assert.False(t, clock.TimedOut(ctx2))
	cancel2()
	assert.Equal(t, 0, c.Pending())

	// The real clock's own timeouts count too.
	rctx, rcancel := context.WithTimeout(context.Background(), time.Nanosecond)
	defer rcancel()
	<-rctx.Done()
	assert.True(t, clock.TimedOut(rctx))
}

func TestReal(t *testing.T) {
	c := clock.Or(nil)
	assert.Equal(t, clock.Real(), c)
	start := c.Now()
	_, ch := c.NewTimer(time.Millisecond)
	<-ch
	assert.GreaterOrEqual(t, clock.Since(c, start), time.Millisecond)
	fake := clocktest.New(t0)
	assert.Same(t, fake, clock.Or(fake))
	fake.Advance(time.Second)
	assert.Equal(t, time.Second, clock.Since(fake, t0))
}
