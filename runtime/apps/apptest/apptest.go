// Package apptest helps tests run real processes under other uids (app
// uids, the shell uid, the runtime's uid): it stages an executable where
// those uids can run it and builds commands with their credentials.
// Tests that use it need root (testenv.NeedRoot).
package apptest

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// OpenDir returns a fresh temporary directory that every uid can enter
// and read (mode 0755 up its temporary parents), removed after the test.
// Go's own temporary directories are 0700, which other uids cannot
// traverse.
func OpenDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	// t.TempDir is <os.TempDir()>/<TestName><random>/<nnn>: open both.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatalf("chmod %s: %v", d, err)
		}
	}
	return dir
}

// Stage copies the executable at path into an OpenDir with mode 0755 and
// returns the copy's path. Stage(t, "") stages the running test binary.
func Stage(t testing.TB, path string) string {
	t.Helper()
	if path == "" {
		exe, err := os.Executable()
		if err != nil {
			t.Fatalf("executable: %v", err)
		}
		path = exe
	}
	src, err := os.Open(path)
	if err != nil {
		t.Fatalf("stage: %v", err)
	}
	defer src.Close()
	dst := filepath.Join(OpenDir(t), filepath.Base(path))
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatalf("stage: %v", err)
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		t.Fatalf("stage: %v", err)
	}
	if err := out.Close(); err != nil {
		t.Fatalf("stage: %v", err)
	}
	return dst
}

// Command returns a command that runs path with args as uid (gid = uid,
// no supplementary groups) in a minimal environment plus env.
func Command(uid int, path string, args []string, env ...string) *exec.Cmd {
	cmd := exec.Command(path, args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin"}, env...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	return cmd
}
