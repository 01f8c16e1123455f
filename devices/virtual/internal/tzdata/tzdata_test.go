package tzdata

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	rtz "github.com/agentoslab/agentlab/runtime/platform/tzdata"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What the virtual device writes, the runtime's reader of Android's
// format reads: every zone loads and says the same as the host's file.
func TestHostDatabaseReadsBack(t *testing.T) {
	if _, err := os.Stat(HostZoneinfo); err != nil {
		t.Skip("the host has no " + HostZoneinfo)
	}
	path := filepath.Join(t.TempDir(), "tzdata")
	wrote, err := WriteFromHost(path)
	require.NoError(t, err)
	require.True(t, wrote)
	wrote, err = WriteFromHost(path)
	require.NoError(t, err)
	assert.False(t, wrote, "the same release is not written again")

	db, err := rtz.Open(path)
	require.NoError(t, err)
	assert.Greater(t, db.Len(), 300)
	version, _, _, err := FromDir(HostZoneinfo)
	require.NoError(t, err)
	assert.Equal(t, version, db.Version())

	at := time.Date(2030, 1, 15, 23, 0, 0, 0, time.UTC)
	for _, name := range []string{"Asia/Shanghai", "America/New_York", "Europe/Berlin", "UTC"} {
		loc, err := db.Load(name)
		require.NoError(t, err, name)
		host, err := time.LoadLocation(name)
		require.NoError(t, err)
		assert.Equal(t, at.In(host).Format(time.RFC3339), at.In(loc).Format(time.RFC3339), name)
	}
	_, err = db.Load("posix/Asia/Shanghai")
	require.ErrorIs(t, err, rtz.ErrNoZone, "the posix/ copies are left out")
}

func TestBuildRefusesBadInput(t *testing.T) {
	_, err := Build("2025bb", map[string][]byte{"UTC": []byte("TZif")}, nil)
	require.Error(t, err)
	_, err = Build("2025b", map[string][]byte{string(make([]byte, 40)): []byte("TZif")}, nil)
	require.Error(t, err)
}
