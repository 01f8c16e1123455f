//go:build linux

package virtual_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/adbserver"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/testenv"
)

func TestMain(m *testing.M) {
	// The test binary is also every device's init and in-device tools.
	virtual.Init()
	if probe := os.Getenv(envProbe); probe != "" {
		// A copy of this binary pushed into a device (android_test.go).
		os.Exit(runProbe(probe, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// startDevice boots a device in a fresh state dir and stops it at the
// end of the test.
func startDevice(t testing.TB, o *virtual.Options) *virtual.Device {
	t.Helper()
	testenv.NeedRoot(t)
	if o == nil {
		o = &virtual.Options{}
	}
	if o.StateDir == "" {
		o.StateDir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := virtual.Start(ctx, o)
	if err != nil {
		t.Fatalf("start device: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		d.Stop(ctx)
		if t.Failed() {
			// The init's log is the device's side of the story.
			if b, err := os.ReadFile(filepath.Join(d.Root(), "init.log")); err == nil {
				t.Logf("%s init.log:\n%s", d.Name(), b)
			}
		}
	})
	return d
}

// adbHarness is a private adb server plus the adb CLI.
type adbHarness struct {
	t   testing.TB
	srv *adbserver.Server
}

func newADB(t testing.TB) *adbHarness {
	t.Helper()
	testenv.NeedADB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := adbserver.Start(ctx, nil)
	if err != nil {
		t.Fatalf("adb server: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return &adbHarness{t: t, srv: srv}
}

// run runs the adb CLI and returns its stdout+stderr and exit code.
func (a *adbHarness) run(args ...string) (string, int) {
	a.t.Helper()
	return a.runInput("", args...)
}

// runInput runs the adb CLI with input on its stdin.
func (a *adbHarness) runInput(input string, args ...string) (string, int) {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var out bytes.Buffer
	cmd := a.srv.Command(ctx, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	if input != "" {
		cmd.Stdin = strings.NewReader(input)
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.String(), 0
	case errors.As(err, &ee):
		return out.String(), ee.ExitCode()
	}
	a.t.Fatalf("adb %s: %v", strings.Join(args, " "), err)
	return "", -1
}

// must runs adb and fails the test on a non-zero exit.
func (a *adbHarness) must(args ...string) string {
	a.t.Helper()
	out, code := a.run(args...)
	if code != 0 {
		a.t.Fatalf("adb %s: exit %d: %s", strings.Join(args, " "), code, out)
	}
	return out
}

// connect adopts the device and waits until it is online.
func (a *adbHarness) connect(d *virtual.Device) {
	a.t.Helper()
	a.connectSerial(d.Serial())
}

// connectSerial adopts the device at serial ("127.0.0.1:<port>").
func (a *adbHarness) connectSerial(serial string) {
	a.t.Helper()
	out := a.must("connect", serial)
	if !strings.HasPrefix(out, "connected to") && !strings.HasPrefix(out, "already connected") {
		a.t.Fatalf("adb connect: %s", out)
	}
	a.must("-s", serial, "wait-for-device")
}

// shell runs "adb -s SERIAL shell CMD" and returns output and exit code.
func (a *adbHarness) shell(d *virtual.Device, cmd string) (string, int) {
	a.t.Helper()
	return a.run("-s", d.Serial(), "shell", cmd)
}

func (a *adbHarness) mustShell(d *virtual.Device, cmd string) string {
	a.t.Helper()
	out, code := a.shell(d, cmd)
	if code != 0 {
		a.t.Fatalf("adb shell %q: exit %d: %s", cmd, code, out)
	}
	return out
}

func writeFile(t testing.TB, dir, name string, b []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func fields(s string) string { return strings.Join(strings.Fields(s), " ") }

var _ = fmt.Sprint
