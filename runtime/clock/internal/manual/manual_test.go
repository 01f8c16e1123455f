package manual

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func fixed() *Clock { return New(func() time.Time { return t0 }, false) }

func received(ch <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-ch:
		return v, true
	default:
		return time.Time{}, false
	}
}

// A timer fires when the clock reaches its time, not a nanosecond
// before, and carries the clock's time.
func TestTimerFiresWhenDue(t *testing.T) {
	c := fixed()
	_, ch := c.NewTimer(5 * time.Minute)
	c.Advance(5*time.Minute - time.Nanosecond)
	_, ok := received(ch)
	require.False(t, ok, "fired early")
	require.Equal(t, 1, c.Pending())
	c.Advance(time.Nanosecond)
	v, ok := received(ch)
	require.True(t, ok, "not fired when due")
	assert.Equal(t, t0.Add(5*time.Minute), v)
	assert.Equal(t, 0, c.Pending())
	assert.Equal(t, 5*time.Minute, c.Offset())
}

// One big advance fires everything that became due, and only that.
func TestAdvanceFiresWhatBecameDue(t *testing.T) {
	c := fixed()
	var chs []<-chan time.Time
	for _, d := range []time.Duration{3 * time.Second, time.Second, 2 * time.Second, time.Hour} {
		_, ch := c.NewTimer(d)
		chs = append(chs, ch)
	}
	c.Advance(time.Minute)
	for i, ch := range chs[:3] {
		v, ok := received(ch)
		require.True(t, ok, "timer %d did not fire", i)
		assert.Equal(t, t0.Add(time.Minute), v)
	}
	_, ok := received(chs[3])
	assert.False(t, ok, "a timer not yet due fired")
	assert.Equal(t, 1, c.Pending())
}

func TestStopAndReset(t *testing.T) {
	c := fixed()
	tm, ch := c.NewTimer(time.Minute)
	require.True(t, tm.Stop(), "Stop of a pending timer")
	require.False(t, tm.Stop(), "second Stop")
	c.Advance(time.Hour)
	_, ok := received(ch)
	require.False(t, ok, "a stopped timer fired")

	require.False(t, tm.Reset(time.Minute), "Reset of a stopped timer reports it was not pending")
	c.Advance(59 * time.Second)
	_, ok = received(ch)
	require.False(t, ok)
	require.True(t, tm.Reset(time.Minute), "Reset of a pending timer")
	c.Advance(59 * time.Second)
	_, ok = received(ch)
	require.False(t, ok, "Reset did not move the timer")
	c.Advance(time.Second)
	_, ok = received(ch)
	require.True(t, ok)
}

// After Stop or Reset no value delivered earlier is received (Go 1.23
// timers): a select on the channel after Reset waits for the new time.
func TestStopDrainsADeliveredValue(t *testing.T) {
	c := fixed()
	tm, ch := c.NewTimer(time.Second)
	c.Advance(time.Second)
	require.False(t, tm.Stop(), "already fired")
	_, ok := received(ch)
	require.False(t, ok, "a stale value survived Stop")

	tm2, ch2 := c.NewTimer(time.Second)
	c.Advance(time.Second)
	tm2.Reset(time.Minute)
	_, ok = received(ch2)
	require.False(t, ok, "a stale value survived Reset")
}

func TestAfterFunc(t *testing.T) {
	c := fixed()
	ran := make(chan time.Time, 1)
	c.AfterFunc(time.Minute, func() { ran <- c.Now() })
	stopped := c.AfterFunc(time.Minute, func() { t.Error("a stopped AfterFunc ran") })
	require.True(t, stopped.Stop())
	c.Advance(2 * time.Minute)
	assert.Equal(t, t0.Add(2*time.Minute), <-ran)
	assert.Equal(t, 0, c.Pending())
}

// A timer for zero or less fires at once, as time.NewTimer's does.
func TestNonPositiveTimerFiresAtOnce(t *testing.T) {
	c := fixed()
	_, ch := c.NewTimer(0)
	_, ok := received(ch)
	require.True(t, ok)
	ran := make(chan struct{})
	c.AfterFunc(-time.Second, func() { close(ran) })
	<-ran
}

// A ticker delivers one tick per advance however many periods passed
// (a missed tick is dropped), then ticks on its period again.
func TestTicker(t *testing.T) {
	c := fixed()
	tk, ch := c.NewTicker(10 * time.Second)
	c.Advance(9 * time.Second)
	_, ok := received(ch)
	require.False(t, ok)
	c.Advance(time.Second)
	v, ok := received(ch)
	require.True(t, ok)
	assert.Equal(t, t0.Add(10*time.Second), v)

	c.Advance(35 * time.Second) // now 45 s: ticks at 20, 30, 40 collapse into one
	_, ok = received(ch)
	require.True(t, ok)
	_, ok = received(ch)
	require.False(t, ok, "missed ticks piled up")
	c.Advance(4 * time.Second) // 49 s
	_, ok = received(ch)
	require.False(t, ok)
	c.Advance(time.Second) // 50 s: the next tick on the period grid
	_, ok = received(ch)
	require.True(t, ok)

	tk.Reset(time.Minute)
	c.Advance(59 * time.Second)
	_, ok = received(ch)
	require.False(t, ok)
	c.Advance(time.Second)
	_, ok = received(ch)
	require.True(t, ok)
	tk.Stop()
	c.Advance(time.Hour)
	_, ok = received(ch)
	require.False(t, ok)
	assert.Equal(t, 0, c.Pending())
	assert.Panics(t, func() { c.NewTicker(0) })
}

// AdvanceTo moves only forward: a follower that reads an older offset
// keeps its time.
func TestAdvanceToOnlyForward(t *testing.T) {
	c := fixed()
	require.True(t, c.AdvanceTo(time.Minute))
	require.False(t, c.AdvanceTo(time.Second))
	require.False(t, c.AdvanceTo(time.Minute))
	assert.Equal(t, t0.Add(time.Minute), c.Now())
	c.Advance(-time.Hour)
	assert.Equal(t, time.Minute, c.Offset())
}

// On a live clock time flows by itself: a short timer fires without any
// advance, and a long one fires as soon as an advance makes it due,
// without waiting for its real time.
func TestLiveClock(t *testing.T) {
	c := New(time.Now, true)
	start := time.Now()
	_, short := c.NewTimer(20 * time.Millisecond)
	<-short
	assert.GreaterOrEqual(t, time.Since(start), 20*time.Millisecond)

	var fired atomic.Bool
	done := make(chan struct{})
	c.AfterFunc(time.Hour, func() { fired.Store(true); close(done) })
	_, long := c.NewTimer(30 * time.Minute)
	c.Advance(29 * time.Minute)
	_, ok := received(long)
	require.False(t, ok)
	c.Advance(31 * time.Minute)
	<-long
	<-done
	assert.True(t, fired.Load())
	assert.Less(t, time.Since(start), 10*time.Minute, "waited real time")
	assert.WithinDuration(t, time.Now().Add(time.Hour), c.Now(), time.Minute)

	// A timer partly run down, then advanced past: re-armed for the
	// rest, not for its whole duration again.
	_, mid := c.NewTimer(200 * time.Millisecond)
	c.Advance(150 * time.Millisecond)
	select {
	case <-mid:
	case <-time.After(5 * time.Second):
		t.Fatal("a re-armed timer did not fire")
	}
}
