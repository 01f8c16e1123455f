package labclock

import (
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// FileName is the offset file in the runtime's data directory.
const FileName = "clock"

// FollowInterval is how often a follower re-reads the offset file.
const FollowInterval = 100 * time.Millisecond

// MaxAdvance bounds one advance: a year is more than any rule needs and
// keeps the offset far from overflowing.
const MaxAdvance = 366 * 24 * time.Hour

// Clock kinds in Info.
const (
	KindVirtual = "virtual"
	KindReal    = "real"
)

// ErrRealClock is what advancing a release build's clock answers.
var ErrRealClock = errcode.New(errcode.Unsupported, "this build has the real clock only")

// Info is the clock as clock.show and clock.advance report it.
type Info struct {
	// Kind is KindVirtual (this build can advance) or KindReal.
	Kind string `json:"kind"`
	// NowMs is the clock's time in Unix milliseconds.
	NowMs int64 `json:"nowMs"`
	// OffsetMs is how far the clock is ahead of the real clock.
	OffsetMs int64 `json:"offsetMs"`
}

func info(kind string, now time.Time, off time.Duration) Info {
	return Info{Kind: kind, NowMs: now.UnixMilli(), OffsetMs: off.Milliseconds()}
}

// checkAdvance validates an advance by d.
func checkAdvance(d time.Duration) error {
	if d <= 0 || d > MaxAdvance {
		return errcode.Newf(errcode.InvalidParams, "advance by more than 0 and at most %s, not %s", MaxAdvance, d)
	}
	return nil
}
