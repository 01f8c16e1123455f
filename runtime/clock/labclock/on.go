//go:build agentos_labclock

package labclock

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/clock/internal/virtual"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// Enabled is true: this build's clock is virtual.
const Enabled = true

// Owner is serve's clock and the owner of its offset. Safe for
// concurrent use.
type Owner struct{ v *virtual.Owner }

// Open returns serve's clock, dataDir being the runtime's data
// directory: virtual, at the offset the offset file holds (0 when there
// is none). An unreadable offset file is an error: starting at another
// offset would move time backwards under what is stored.
func Open(dataDir string) (*Owner, error) {
	v, err := virtual.Open(dataDir)
	if err != nil {
		return nil, fmt.Errorf("labclock: %w", err)
	}
	return &Owner{v}, nil
}

// Clock is the clock every part of serve uses.
func (o *Owner) Clock() clock.Clock { return o.v.Clock() }

// Info reports the clock.
func (o *Owner) Info() Info { return info(KindVirtual, o.v.Clock().Now(), o.v.Offset()) }

// Advance moves the clock forward by d: it writes the new offset for the
// followers, then fires serve's timers that became due.
func (o *Owner) Advance(d time.Duration) (Info, error) {
	if err := checkAdvance(d); err != nil {
		return Info{}, err
	}
	if err := o.v.Advance(d); err != nil {
		return Info{}, errcode.Wrap(errcode.Internal, "the clock's offset could not be written", err)
	}
	return o.Info(), nil
}

// Follower is the clock of a process that follows serve's offset.
type Follower struct{ v *virtual.Follower }

// Follow returns a clock that follows the offset file in dataDir (the
// runtime's data directory): read now, then every FollowInterval until
// Close. A missing file is offset 0; an unreadable one is logged and
// leaves the clock where it is.
func Follow(dataDir string, log *slog.Logger) *Follower {
	return &Follower{virtual.Follow(dataDir, FollowInterval, log)}
}

// Clock is the followed clock.
func (f *Follower) Clock() clock.Clock { return f.v.Clock() }

// Close stops following; the clock keeps its offset.
func (f *Follower) Close() { f.v.Close() }
