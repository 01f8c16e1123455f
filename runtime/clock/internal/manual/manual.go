// Package manual is a clock whose time is a base plus an offset that
// only grows, by Advance: the engine of the test clock (clocktest, a
// base that stands still) and of the lab's virtual clock (labclock, the
// real clock as its base, so time also flows on its own).
//
// Timers are kept by the time they are due on this clock. Advance fires
// every timer that became due (delivering in due order); with a moving
// base each pending timer also waits on a real timer for the rest of
// its time, re-armed whenever the offset grows.
package manual

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
)

// Clock is a clock.Clock whose offset moves forward by Advance.
type Clock struct {
	base func() time.Time
	live bool // base moves on its own: pending timers wait on real timers too

	offset atomic.Int64 // time.Duration; written under mu

	mu     sync.Mutex
	timers map[*timer]struct{} // pending timers and tickers; guarded by mu
}

var _ clock.Clock = (*Clock)(nil)

// New returns a clock reading base()+offset, at offset 0. live says
// that base moves on its own (time.Now); a fixed base makes a clock that
// moves only by Advance.
func New(base func() time.Time, live bool) *Clock {
	return &Clock{base: base, live: live, timers: map[*timer]struct{}{}}
}

// Now implements clock.Clock.
func (c *Clock) Now() time.Time { return c.base().Add(c.Offset()) }

// Offset is how far Advance moved the clock in all.
func (c *Clock) Offset() time.Duration { return time.Duration(c.offset.Load()) }

// Advance moves the clock forward by d (a d <= 0 does nothing) and fires
// what became due: channel timers and tickers receive the new time,
// AfterFunc functions start, each in its own goroutine.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advanceLocked(d)
}

// AdvanceTo moves the offset to off if that is ahead of it, as Advance
// does; it reports whether the clock moved. A clock following another
// process's offset uses it.
func (c *Clock) AdvanceTo(off time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := off - c.Offset()
	c.advanceLocked(d)
	return d > 0
}

func (c *Clock) advanceLocked(d time.Duration) {
	if d <= 0 {
		return
	}
	c.offset.Add(int64(d))
	now := c.Now()
	var due []*timer
	for t := range c.timers {
		if !t.at.After(now) {
			due = append(due, t)
		} else if t.rt != nil {
			t.rt.Reset(t.at.Sub(now))
		}
	}
	slices.SortFunc(due, func(a, b *timer) int { return a.at.Compare(b.at) })
	for _, t := range due {
		c.fireLocked(t, now)
	}
}

// Pending is the number of timers and tickers waiting to fire.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// NewTimer implements clock.Clock.
func (c *Clock) NewTimer(d time.Duration) (clock.Timer, <-chan time.Time) {
	t := &timer{c: c, ch: make(chan time.Time, 1)}
	c.mu.Lock()
	t.armLocked(d)
	c.mu.Unlock()
	return t, t.ch
}

// AfterFunc implements clock.Clock.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &timer{c: c, f: f}
	c.mu.Lock()
	t.armLocked(d)
	c.mu.Unlock()
	return t
}

// NewTicker implements clock.Clock.
func (c *Clock) NewTicker(d time.Duration) (clock.Ticker, <-chan time.Time) {
	if d <= 0 {
		panic("clock: non-positive interval for NewTicker")
	}
	t := &timer{c: c, ch: make(chan time.Time, 1), period: d}
	c.mu.Lock()
	t.armLocked(d)
	c.mu.Unlock()
	return ticker{t}, t.ch
}

// fireLocked delivers t at now: a ticker is re-armed for its next tick
// after now, a timer leaves the pending set.
func (c *Clock) fireLocked(t *timer, now time.Time) {
	if t.period > 0 {
		n := now.Sub(t.at)/t.period + 1
		t.at = t.at.Add(n * t.period)
		if t.rt != nil {
			t.rt.Reset(t.at.Sub(now))
		}
	} else {
		delete(c.timers, t)
		t.pending = false
		if t.rt != nil {
			t.rt.Stop()
		}
	}
	if t.ch != nil {
		select {
		case t.ch <- now:
		default: // a tick the receiver has not taken yet stands for this one
		}
		return
	}
	go t.f()
}

// wake runs on t's real timer: t is due unless it was stopped or moved.
func (c *Clock) wake(t *timer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !t.pending {
		return
	}
	now := c.Now()
	if now.Before(t.at) {
		t.rt.Reset(t.at.Sub(now))
		return
	}
	c.fireLocked(t, now)
}

// timer is a timer, an AfterFunc or (period > 0) a ticker. Its fields
// are guarded by c.mu.
type timer struct {
	c       *Clock
	at      time.Time
	period  time.Duration
	ch      chan time.Time // nil for AfterFunc
	f       func()
	rt      *time.Timer // the real timer of a live clock
	pending bool
}

func (t *timer) armLocked(d time.Duration) {
	c := t.c
	now := c.Now()
	t.at = now.Add(d)
	t.pending = true
	c.timers[t] = struct{}{}
	if !t.at.After(now) {
		c.fireLocked(t, now)
		return
	}
	if c.live {
		if t.rt == nil {
			t.rt = time.AfterFunc(d, func() { c.wake(t) })
		} else {
			t.rt.Reset(d)
		}
	}
}

// drainLocked drops a value delivered but not received, so none is
// received after Stop or Reset.
func (t *timer) drainLocked() {
	if t.ch == nil {
		return
	}
	select {
	case <-t.ch:
	default:
	}
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.pending
	t.pending = false
	delete(t.c.timers, t)
	if t.rt != nil {
		t.rt.Stop()
	}
	t.drainLocked()
	return was
}

func (t *timer) Reset(d time.Duration) bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	was := t.pending
	t.drainLocked()
	t.armLocked(d)
	return was
}

// ticker gives a periodic timer the clock.Ticker methods.
type ticker struct{ t *timer }

func (k ticker) Stop() { k.t.Stop() }

func (k ticker) Reset(d time.Duration) {
	if d <= 0 {
		panic("clock: non-positive interval for Ticker.Reset")
	}
	k.t.c.mu.Lock()
	defer k.t.c.mu.Unlock()
	k.t.period = d
	k.t.drainLocked()
	k.t.armLocked(d)
}
