package admin

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseVmRSS(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     int64
		err      bool
	}{
		{"kB", "Name:\tx\nVmRSS:\t  1234 kB\nVmData: 9 kB\n", 1234 << 10, false},
		{"absent", "Name:\tkthreadd\n", 0, false},
		{"unit", "VmRSS:\t1234 MB\n", 0, true},
		{"negative", "VmRSS:\t-1 kB\n", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseVmRSS([]byte(tc.in))
			if tc.err {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestReadProcessCounts: the figures follow what the process holds (a
// section that reported a constant would hide every leak).
func TestReadProcessCounts(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	db := filepath.Join(t.TempDir(), "agentos.db")
	require.NoError(t, os.WriteFile(db, make([]byte, 1000), 0o600))
	require.NoError(t, os.WriteFile(db+"-wal", make([]byte, 24), 0o600))
	before, err := ReadProcess(StoreFiles(db)...)
	require.NoError(t, err)
	assert.Equal(t, int64(1024), before.StoreBytes)
	assert.Positive(t, before.RSSBytes)

	stop := make(chan struct{})
	defer close(stop)
	for range 20 {
		go func() { <-stop }()
	}
	var files []*os.File
	for range 5 {
		f, err := os.Open(db)
		require.NoError(t, err)
		files = append(files, f)
	}
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	after, err := ReadProcess()
	require.NoError(t, err)
	assert.GreaterOrEqual(t, after.Goroutines-before.Goroutines, 20)
	assert.Equal(t, 5, after.FDs-before.FDs)
}
