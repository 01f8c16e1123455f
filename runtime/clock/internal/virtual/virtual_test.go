package virtual

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseOffset(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"offset_ns=0\n", 0, true},
		{"offset_ns=300000000000\n", 5 * time.Minute, true},
		{"offset_ns=300000000000", 0, false}, // no newline: a torn write
		{"offset_ns=-1\n", 0, false},         // time never goes back
		{"offset_ns=+5\n", 0, false},         // one spelling per offset
		{"offset_ns=05\n", 0, false},         //
		{"offset_ns=5\n\n", 0, false},        // one line
		{"offset_ns=99999999999999999999\n", 0, false},
		{"offset=5\n", 0, false},
		{"", 0, false},
	} {
		got, err := ParseOffset([]byte(tc.in))
		if !tc.ok {
			assert.Error(t, err, "%q", tc.in)
			continue
		}
		require.NoError(t, err, "%q", tc.in)
		assert.Equal(t, tc.want, got, "%q", tc.in)
	}
}

// What ParseOffset accepts, FormatOffset writes back byte for byte.
func FuzzParseOffset(f *testing.F) {
	f.Add([]byte("offset_ns=300000000000\n"))
	f.Add([]byte("offset_ns=0\n"))
	f.Add([]byte("offset_ns=-1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseOffset(b)
		if err != nil {
			return
		}
		if d < 0 {
			t.Fatalf("negative offset %d from %q", d, b)
		}
		if got := FormatOffset(d); string(got) != string(b) {
			t.Fatalf("%q parsed as %d, formats as %q", b, d, got)
		}
	})
}

// The owner's advance reaches a follower in another process through the
// offset file, and a restarted owner starts where it left off.
func TestOwnerAndFollower(t *testing.T) {
	dir := t.TempDir()
	o, err := Open(dir)
	require.NoError(t, err)
	f := Follow(dir, 5*time.Millisecond, nil)
	defer f.Close()
	_, expiry := f.Clock().NewTimer(5 * time.Minute)

	require.NoError(t, o.Advance(5*time.Minute))
	assert.Equal(t, 5*time.Minute, o.Offset())
	select {
	case <-expiry:
	case <-time.After(10 * time.Second):
		t.Fatal("the follower's timer did not fire after the owner advanced")
	}
	assert.Equal(t, 5*time.Minute, f.Offset())
	assert.WithinDuration(t, o.Clock().Now(), f.Clock().Now(), time.Second)

	b, err := os.ReadFile(filepath.Join(dir, FileName))
	require.NoError(t, err)
	assert.Equal(t, "offset_ns=300000000000\n", string(b))

	again, err := Open(dir)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Minute, again.Offset(), "a restarted serve went back in time")

	require.Error(t, o.Advance(0))
	require.Error(t, o.Advance(-time.Second))
	assert.Equal(t, 5*time.Minute, o.Offset())
}

// A corrupt offset file stops serve from starting (time would go back
// under stored timestamps); a follower keeps its time and goes on.
func TestCorruptFile(t *testing.T) {
	dir := t.TempDir()
	o, err := Open(dir)
	require.NoError(t, err)
	require.NoError(t, o.Advance(time.Hour))
	f := Follow(dir, 5*time.Millisecond, nil)
	defer f.Close()
	require.Equal(t, time.Hour, f.Offset())

	require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), []byte("garbage"), 0o644))
	_, err = Open(dir)
	require.Error(t, err)
	_, err = ReadOffset(filepath.Join(dir, FileName))
	require.Error(t, err)
	assert.Equal(t, time.Hour, f.Offset())

	// The owner still holds its offset and rewrites the file.
	require.NoError(t, o.Advance(time.Minute))
	require.Eventually(t, func() bool { return f.Offset() == time.Hour+time.Minute }, 10*time.Second, 5*time.Millisecond)
	f.Close()
	f.Close() // idempotent
}

// An owner whose file cannot be written does not move: the followers
// would not follow.
func TestAdvanceWriteFailureMovesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gone")
	require.NoError(t, os.Mkdir(dir, 0o700))
	o, err := Open(dir)
	require.NoError(t, err)
	require.NoError(t, os.Remove(dir))
	require.Error(t, o.Advance(time.Minute))
	assert.Zero(t, o.Offset())
}
