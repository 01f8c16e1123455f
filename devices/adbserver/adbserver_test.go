package adbserver

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
)

// TestTwoServers: two private servers run side by side; killing one does
// not touch the other, and Close leaves no process behind.
func TestTwoServers(t *testing.T) {
	testenv.NeedADB(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a, err := Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if a.Port() == b.Port() || a.Port() == 5037 {
		t.Fatalf("ports %d and %d", a.Port(), b.Port())
	}
	if !strings.HasSuffix(a.Addr(), ":"+itoa(a.Port())) {
		t.Errorf("Addr %q", a.Addr())
	}
	out, err := a.Command(ctx, "devices").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "List of devices attached") {
		t.Fatalf("adb devices: %v %s", err, out)
	}
	// Env points plain adb (without -P) at the private server.
	cmd := exec.CommandContext(ctx, "adb", "get-state")
	cmd.Env = a.Env()
	if out, _ := cmd.CombinedOutput(); strings.Contains(string(out), "daemon not running") {
		t.Errorf("adb with Env started its own server: %s", out)
	}
	pid := a.cmd.Process.Pid
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Done():
	default:
		t.Fatal("Done open after Close")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server process %d still exists after Close: %v", pid, err)
	}
	if err := b.ping(); err != nil {
		t.Errorf("the other server died with the first: %v", err)
	}
	a.Close() // idempotent
}

func TestMissingADB(t *testing.T) {
	t.Parallel()
	_, err := Start(context.Background(), &Options{ADB: "/nonexistent/adb"})
	if !errors.Is(err, ErrNoADB) {
		t.Fatalf("err = %v, want ErrNoADB", err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
