//go:build !agentos_labclock

package labclock

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// A release build has the real clock only: advance is refused, nothing
// is read or written, and show says "real".
func TestReleaseBuildHasTheRealClock(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), []byte("offset_ns=3600000000000\n"), 0o644))
	o, err := Open(dir)
	require.NoError(t, err)
	assert.Equal(t, clock.Real(), o.Clock(), "a release build must use the real clock")
	_, err = o.Advance(5 * time.Minute)
	require.ErrorIs(t, err, ErrRealClock)
	assert.Equal(t, errcode.Unsupported, errcode.CodeOf(err))
	in := o.Info()
	assert.Equal(t, KindReal, in.Kind)
	assert.Zero(t, in.OffsetMs, "a release build read the offset file")
	assert.InDelta(t, time.Now().UnixMilli(), in.NowMs, float64(time.Minute.Milliseconds()))

	f := Follow(dir, nil)
	assert.Equal(t, clock.Real(), f.Clock())
	f.Close()
	assert.False(t, Enabled)
}
