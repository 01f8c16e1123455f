//go:build agentos_labclock

package labclock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The lab's build: serve's advance moves its own timers at once and a
// follower's (the extension host's, the supervisor's) within its
// interval; show reports the offset.
func TestLabBuildAdvances(t *testing.T) {
	dir := t.TempDir()
	o, err := Open(dir)
	require.NoError(t, err)
	assert.Equal(t, KindVirtual, o.Info().Kind)
	f := Follow(dir, nil)
	defer f.Close()
	_, serveTimer := o.Clock().NewTimer(5 * time.Minute)
	_, extTimer := f.Clock().NewTimer(30 * time.Second)

	in, err := o.Advance(5 * time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(300000), in.OffsetMs)
	assert.InDelta(t, time.Now().Add(5*time.Minute).UnixMilli(), in.NowMs, 5000)
	select {
	case <-serveTimer:
	default:
		t.Fatal("serve's timer did not fire when Advance returned")
	}
	select {
	case <-extTimer:
	case <-time.After(5 * time.Second):
		t.Fatal("a follower's timer did not fire")
	}
	again, err := Open(dir)
	require.NoError(t, err)
	assert.Equal(t, int64(300000), again.Info().OffsetMs)
	assert.True(t, Enabled)
}
