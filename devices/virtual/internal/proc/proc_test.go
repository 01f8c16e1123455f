//go:build linux

package proc

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
)

func TestStartExitCodes(t *testing.T) {
	t.Parallel()
	r := NewReaper(false)
	defer r.Close()
	tests := []struct {
		script string
		want   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -9 $$", 128 + 9},
	}
	for _, tt := range tests {
		p, err := r.Start(&Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", tt.script}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		code, err := p.Wait(ctx)
		cancel()
		if err != nil || code != tt.want {
			t.Errorf("%q: code %d err %v, want %d", tt.script, code, err, tt.want)
		}
	}
}

func TestStartAsUser(t *testing.T) {
	testenv.NeedRoot(t)
	t.Parallel()
	r := NewReaper(false)
	defer r.Close()
	out := filepath.Join(t.TempDir(), "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p, err := r.Start(&Cmd{Path: "/bin/sh", Args: []string{"sh", "-c", "id -u; id -g"},
		Cred: &syscall.Credential{Uid: 10123, Gid: 10123}, Files: []*os.File{nil, f, f}})
	if err != nil {
		t.Fatal(err)
	}
	if code, _ := p.Wait(context.Background()); code != 0 {
		t.Fatalf("exit %d", code)
	}
	b, _ := os.ReadFile(out)
	if string(b) != "10123\n10123\n" {
		t.Fatalf("id output %q", b)
	}
}

func TestRunAs(t *testing.T) {
	testenv.NeedRoot(t)
	t.Parallel()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := RunAs(2000, 2000, func() error {
		if _, err := os.ReadFile(secret); !errors.Is(err, os.ErrPermission) {
			t.Errorf("read root-only file as 2000: %v", err)
		}
		return os.WriteFile(filepath.Join(dir, "mine"), nil, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(dir, "mine"))
	if err != nil {
		t.Fatal(err)
	}
	if uid := st.Sys().(*syscall.Stat_t).Uid; uid != 2000 {
		t.Fatalf("file owner %d, want 2000", uid)
	}
	// The calling thread is untouched.
	if os.Geteuid() != 0 {
		t.Fatal("credentials leaked to the caller")
	}
	if _, err := os.ReadFile(secret); err != nil {
		t.Fatalf("root lost access: %v", err)
	}
}
