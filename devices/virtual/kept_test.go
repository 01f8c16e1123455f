//go:build linux

package virtual_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/stretchr/testify/require"
)

// TestKeptDeviceOutlivesItsBinary: a kept device whose keeper was started
// from a binary that is then deleted (as rebuilding agentlab does) is
// adopted by listing it and still runs its shell, getprop, su and magisk,
// and reboots: init and the in-device tools run the device's own copy of
// the executable, not the path that started it.
func TestKeptDeviceOutlivesItsBinary(t *testing.T) {
	t.Parallel()
	testenv.NeedRoot(t)
	a := newADB(t)
	bin := filepath.Join(t.TempDir(), "agentlab")
	copyExecutable(t, bin)
	stateDir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	started, err := virtual.StartDetachedFrom(ctx, bin, &virtual.Options{StateDir: stateDir, Name: "kept"})
	if err != nil {
		t.Fatalf("start kept device: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := virtual.StopDetached(ctx, stateDir, "kept"); err != nil {
			t.Errorf("stop kept device: %v", err)
		}
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(started.Root, "init.log")); err == nil {
				t.Logf("init.log:\n%s", b)
			}
		}
	})
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", started.PID)); !strings.HasSuffix(exe, " (deleted)") {
		t.Fatalf("the keeper's executable %q is not deleted: the test proves nothing", exe)
	}

	// Adopt it as agentlab run does: find it running under the state dir.
	in := infoOf(t, stateDir, "kept")
	if in.State != "running" || in.Serial != started.Serial {
		t.Fatalf("kept device listed as %+v, started as %+v", in, started)
	}
	a.connectSerial(in.Serial)
	shell := func(cmd string) (string, int) { return a.run("-s", in.Serial, "shell", cmd) }
	checks := []struct{ cmd, want string }{
		{"echo alive", "alive"},
		{"getprop ro.vdevice.name", "kept"},
		{"getprop sys.boot_completed", "1"},
		{"su -c id -u", "0"},
		{"su 10123 -c id -u", "10123"},
		{"magisk -V", "27000"},
	}
	run := func(when string) {
		t.Helper()
		for _, c := range checks {
			if out, code := shell(c.cmd); code != 0 || strings.TrimSpace(out) != c.want {
				t.Errorf("%s: adb shell %q = exit %d %q, want %q", when, c.cmd, code, out, c.want)
			}
		}
	}
	run("before reboot")
	if out, code := shell("setprop debug.kept.boot first"); code != 0 {
		t.Fatalf("setprop: exit %d %q", code, out)
	}
	a.must("-s", in.Serial, "reboot")
	a.must("-s", in.Serial, "wait-for-device")
	// A non-persistent property is gone only if the device booted again.
	require.Eventually(t, func() bool {
		out, code := shell("getprop debug.kept.boot")
		return code == 0 && strings.TrimSpace(out) == ""
	}, 30*time.Second, 20*time.Millisecond, "waiting for the device to boot again")
	run("after reboot")
	if in := infoOf(t, stateDir, "kept"); in.State != "running" || in.PID != started.PID {
		t.Errorf("after reboot the device is listed as %+v; want running under keeper %d", in, started.PID)
	}
}

// copyExecutable copies this test binary to dst, executable.
func copyExecutable(t testing.TB, dst string) {
	t.Helper()
	src, err := os.Open("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, src); err != nil {
		out.Close()
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
