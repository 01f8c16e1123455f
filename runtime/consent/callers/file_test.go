package callers

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWriteFileKeepsPreviousAsBackup: each save leaves the version before
// it as the backup, as its own file, so overwriting the main file in place
// does not reach the backup, and no temporary file is left behind.
func TestWriteFileKeepsPreviousAsBackup(t *testing.T) {
	dir := t.TempDir()
	recs := func(pkgs ...string) []Record {
		var out []Record
		for _, p := range pkgs {
			out = append(out, Record{PackageName: p, Label: p, SigningDigest: strings.Repeat("ab", 32), State: StateAllowed})
		}
		return out
	}
	read := func(name string) []string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		rs, err := ParseFile(b, 100)
		require.NoError(t, err)
		var out []string
		for _, r := range rs {
			out = append(out, r.PackageName)
		}
		return out
	}
	require.NoError(t, writeFile(dir, recs("org.a")))
	require.NoFileExists(t, filepath.Join(dir, backupName), "nothing to back up on the first save")
	require.NoError(t, writeFile(dir, recs("org.a", "org.b")))
	require.NoError(t, writeFile(dir, recs("org.a", "org.b", "org.c")))
	require.Equal(t, []string{"org.a", "org.b", "org.c"}, read(FileName))
	require.Equal(t, []string{"org.a", "org.b"}, read(backupName))

	require.NoError(t, os.WriteFile(filepath.Join(dir, FileName), []byte("garbage"), 0o600))
	require.Equal(t, []string{"org.a", "org.b"}, read(backupName), "backup shares no inode with the main file")

	// A corrupt main file is not backed up over the good backup.
	require.NoError(t, writeFile(dir, recs("org.d")))
	require.Equal(t, []string{"org.a", "org.b"}, read(backupName))
	ents, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	require.ElementsMatch(t, []string{FileName, backupName}, names)
}
