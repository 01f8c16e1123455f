//go:build linux

package virtual

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestInstallTool: the device's copy of the binary is a hard link only
// when that is the running binary and anyone may run it, a fresh 0755
// copy of the running binary otherwise; it is replaced atomically and a
// current copy is left alone.
func TestInstallTool(t *testing.T) {
	t.Parallel()
	running := []byte("the running binary")
	tests := []struct {
		name string
		// setup makes the files in dir and returns exe and self.
		setup    func(t *testing.T, dir, dst string) (exe, self string)
		wantLink bool // dst is self's inode
	}{
		{"exe is the running binary: hard link", func(t *testing.T, dir, dst string) (string, string) {
			p := write(t, dir, "agentlab", running, 0o755)
			return p, p
		}, true},
		{"exe replaced by a rebuild: copy of the running one", func(t *testing.T, dir, dst string) (string, string) {
			self := write(t, dir, "old", running, 0o755)
			return write(t, dir, "agentlab", []byte("a newer build"), 0o755), self
		}, false},
		{"exe deleted: copy", func(t *testing.T, dir, dst string) (string, string) {
			return filepath.Join(dir, "gone"), write(t, dir, "old", running, 0o755)
		}, false},
		{"exe unknown: copy", func(t *testing.T, dir, dst string) (string, string) {
			return "", write(t, dir, "old", running, 0o755)
		}, false},
		{"exe not world-executable: copy, its mode untouched", func(t *testing.T, dir, dst string) (string, string) {
			p := write(t, dir, "agentlab", running, 0o700)
			return p, p
		}, false},
		{"empty placeholder of an older version replaced", func(t *testing.T, dir, dst string) (string, string) {
			write(t, filepath.Dir(dst), filepath.Base(dst), nil, 0o755)
			p := write(t, dir, "agentlab", running, 0o755)
			return p, p
		}, true},
		{"a stale copy replaced", func(t *testing.T, dir, dst string) (string, string) {
			write(t, filepath.Dir(dst), filepath.Base(dst), []byte("an older build"), 0o755)
			return "", write(t, dir, "old", running, 0o755)
		}, false},
		{"a stale copy of the same size replaced", func(t *testing.T, dir, dst string) (string, string) {
			write(t, filepath.Dir(dst), filepath.Base(dst), []byte("the running binarY"), 0o755)
			return "", write(t, dir, "old", running, 0o755)
		}, false},
		{"a current copy nobody may run replaced", func(t *testing.T, dir, dst string) (string, string) {
			write(t, filepath.Dir(dst), filepath.Base(dst), running, 0o700)
			return "", write(t, dir, "old", running, 0o755)
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			dst := filepath.Join(dir, "root", "system", "bin", "vdevtool")
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			exe, self := tt.setup(t, dir, dst)
			selfMode := mode(t, self)
			if err := installTool(dst, exe, self); err != nil {
				t.Fatalf("installTool: %v", err)
			}
			got, err := os.ReadFile(dst)
			if err != nil || !bytes.Equal(got, running) {
				t.Fatalf("dst holds %q (%v), want the running binary", got, err)
			}
			if m := mode(t, dst); m&0o755 != 0o755 {
				t.Errorf("dst mode %v: the shell uid can not run it", m)
			}
			if linked := sameFile(t, dst, self); linked != tt.wantLink {
				t.Errorf("dst is a hard link of the running binary: %v, want %v", linked, tt.wantLink)
			}
			if m := mode(t, self); m != selfMode {
				t.Errorf("the running binary's mode changed: %v -> %v", selfMode, m)
			}
			if _, err := os.Lstat(dst + ".new"); !os.IsNotExist(err) {
				t.Errorf("temporary file left: %v", err)
			}
			// A second start with the same binary changes nothing.
			before, _ := os.Stat(dst)
			if err := installTool(dst, exe, self); err != nil {
				t.Fatalf("second installTool: %v", err)
			}
			if !sameFile(t, dst, "") || !os.SameFile(before, stat(t, dst)) {
				t.Errorf("second install with the same binary replaced dst")
			}
		})
	}
}

// TestInstallToolNoRunningBinary: a vanished running binary is an error,
// not an empty tool.
func TestInstallToolNoRunningBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dst := filepath.Join(dir, "vdevtool")
	if err := installTool(dst, "", filepath.Join(dir, "nothing")); err == nil {
		t.Fatal("installTool without a running binary succeeded")
	}
	if _, err := os.Lstat(dst); !os.IsNotExist(err) {
		t.Errorf("dst made anyway: %v", err)
	}
}

func write(t *testing.T, dir, name string, b []byte, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
	return p
}

func stat(t *testing.T, p string) os.FileInfo {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi
}

func mode(t *testing.T, p string) os.FileMode { return stat(t, p).Mode().Perm() }

// sameFile reports whether a and b are one inode; b == "" means a exists.
func sameFile(t *testing.T, a, b string) bool {
	if b == "" {
		stat(t, a)
		return true
	}
	return os.SameFile(stat(t, a), stat(t, b))
}
