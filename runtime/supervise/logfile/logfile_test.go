package logfile

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestRotation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(dir, "app.log", &Options{MaxBytes: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	line := bytes.Repeat([]byte("x"), 39)
	line = append(line, '\n') // 40 bytes
	for i := 0; i < 7; i++ {
		w.Write(line)
	}
	cur, _ := os.ReadFile(filepath.Join(dir, "app.log"))
	old, _ := os.ReadFile(filepath.Join(dir, "app.log.1"))
	// 7 writes of 40 with a 100-byte cap: 80 | 80 | 80 → current 40, .1 80.
	if len(cur) != 40 || len(old) != 80 {
		t.Fatalf("current %d bytes, backup %d bytes", len(cur), len(old))
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 2 {
		t.Fatalf("%d files; only one backup is kept", len(ents))
	}
}

func TestHostileNames(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(dir, victim string)
	}{
		{"symlink", func(dir, victim string) { os.Symlink(victim, filepath.Join(dir, "app.log")) }},
		{"hard link", func(dir, victim string) { os.Link(victim, filepath.Join(dir, "app.log")) }},
		{"fifo", func(dir, victim string) { syscall.Mkfifo(filepath.Join(dir, "app.log"), 0o666) }},
		{"directory", func(dir, victim string) { os.Mkdir(filepath.Join(dir, "app.log"), 0o755) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			victim := filepath.Join(t.TempDir(), "victim")
			os.WriteFile(victim, []byte("secret"), 0o600)
			tt.setup(dir, victim)
			done := make(chan error, 1)
			go func() {
				w, err := Open(dir, "app.log", nil)
				if err == nil {
					w.Write([]byte("log line\n"))
					w.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("open blocked")
			}
			if b, _ := os.ReadFile(victim); string(b) != "secret" {
				t.Fatalf("victim changed: %q", b)
			}
			fi, err := os.Lstat(filepath.Join(dir, "app.log"))
			if err != nil || !fi.Mode().IsRegular() {
				t.Fatalf("log is %v %v", fi, err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "app.log")); string(b) != "log line\n" {
				t.Fatalf("log %q", b)
			}
		})
	}
}

func TestOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown")
	}
	t.Parallel()
	dir := t.TempDir()
	w, err := Open(dir, "app.log", &Options{UID: 10177, GID: 10177})
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("x\n"))
	w.Close()
	fi, _ := os.Stat(filepath.Join(dir, "app.log"))
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 10177 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("owner %d mode %v", st.Uid, fi.Mode())
	}
	// A file owned by another uid is replaced, not appended to.
	os.Chown(filepath.Join(dir, "app.log"), 10178, 10178)
	w, _ = Open(dir, "app.log", &Options{UID: 10177, GID: 10177})
	w.Write([]byte("y\n"))
	w.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, "app.log")); string(b) != "y\n" {
		t.Fatalf("foreign file appended to: %q", b)
	}
}
