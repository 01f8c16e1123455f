package apptool

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSharedDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "system")
	if err := SharedDir(dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSticky != 0 {
		t.Fatalf("mode = %v (%v)", fi.Mode(), err)
	}
	// An existing directory is left alone.
	own := t.TempDir()
	if err := os.Chmod(own, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := SharedDir(own); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(own); fi.Mode().Perm() != 0o750 {
		t.Fatalf("existing dir changed to %v", fi.Mode())
	}
	f := filepath.Join(dir, "x")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ShareFiles(f, filepath.Join(dir, "missing"))
	if fi, _ := os.Stat(f); fi.Mode().Perm() != 0o666 {
		t.Fatalf("file mode %v", fi.Mode())
	}
}
