// Package clocktest is the fake clock for the runtime's tests: time
// stands still until the test moves it with Advance, which fires every
// timer, ticker and AfterFunc that became due, in order. Only tests
// import it (internal/archtest keeps it out of the runtime's own code).
package clocktest

import (
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/clock/internal/manual"
)

// Clock is a manual clock.Clock. Safe for concurrent use.
type Clock struct{ m *manual.Clock }

var _ clock.Clock = (*Clock)(nil)

// New returns a clock standing at t.
func New(t time.Time) *Clock {
	return &Clock{m: manual.New(func() time.Time { return t }, false)}
}

// Now implements clock.Clock.
func (c *Clock) Now() time.Time { return c.m.Now() }

// NewTimer implements clock.Clock.
func (c *Clock) NewTimer(d time.Duration) (clock.Timer, <-chan time.Time) { return c.m.NewTimer(d) }

// AfterFunc implements clock.Clock: f runs in its own goroutine when an
// Advance makes it due.
func (c *Clock) AfterFunc(d time.Duration, f func()) clock.Timer { return c.m.AfterFunc(d, f) }

// NewTicker implements clock.Clock.
func (c *Clock) NewTicker(d time.Duration) (clock.Ticker, <-chan time.Time) { return c.m.NewTicker(d) }

// Advance moves the clock by d and fires what became due. AfterFunc
// functions run in their own goroutines: wait for their effect, not for
// Advance.
func (c *Clock) Advance(d time.Duration) { c.m.Advance(d) }

// Pending is the number of timers, tickers and AfterFuncs waiting: a
// test waits for the code under test to arm its timer before advancing
// past it.
func (c *Clock) Pending() int { return c.m.Pending() }
