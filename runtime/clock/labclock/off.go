//go:build !agentos_labclock

package labclock

import (
	"log/slog"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
)

// Enabled is false: this build has the real clock only.
const Enabled = false

// Owner is serve's clock: in this build the real clock.
type Owner struct{}

// Open returns the real clock; it reads nothing.
func Open(string) (*Owner, error) { return &Owner{}, nil }

// Clock is the real clock.
func (*Owner) Clock() clock.Clock { return clock.Real() }

// Info reports the real clock.
func (*Owner) Info() Info { return info(KindReal, time.Now(), 0) }

// Advance always answers ErrRealClock.
func (*Owner) Advance(time.Duration) (Info, error) { return Info{}, ErrRealClock }

// Follower is a follower's clock: in this build the real clock.
type Follower struct{}

// Follow returns the real clock; it reads nothing and starts nothing.
func Follow(string, *slog.Logger) *Follower { return &Follower{} }

// Clock is the real clock.
func (*Follower) Clock() clock.Clock { return clock.Real() }

// Close does nothing.
func (*Follower) Close() {}
