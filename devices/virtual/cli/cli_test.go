//go:build linux

package cli

import (
	"bytes"
	"encoding/json"
	"net"
	"os"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/testenv"
)

func TestMain(m *testing.M) {
	// Keepers and device inits are this test binary re-executed.
	virtual.Init()
	os.Exit(m.Run())
}

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := NewCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestStartListStopReset: a device started by the command outlives it
// (it belongs to a keeper), answers adb, is stopped by the serial start
// printed (as "bad name" once answered), and reset by name.
func TestStartListStopReset(t *testing.T) {
	testenv.NeedRoot(t)
	dir := t.TempDir()
	out, err := run(t, "start", "--state-dir", dir, "--name", "cli-one", "--root-method", "kernelsu", "--prop", "debug.lab=1")
	if err != nil {
		t.Fatalf("start: %v\n%s", err, out)
	}
	t.Cleanup(func() { run(t, "stop", "--state-dir", dir, "cli-one") })
	m := regexp.MustCompile(`cli-one running at (127\.0\.0\.1:\d+) \(keeper pid (\d+)\)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("start output %q", out)
	}
	serial := m[1]

	// The device answers the adb handshake.
	c, err := net.DialTimeout("tcp", serial, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	adbwire.WriteMessage(c, &adbwire.Message{Command: adbwire.CmdCNXN, Arg0: adbwire.Version, Arg1: adbwire.MaxPayload, Data: []byte("host::\x00")})
	reply, err := adbwire.ReadMessage(c, adbwire.MaxPayload)
	c.Close()
	if err != nil || reply.Command != adbwire.CmdCNXN || !strings.HasPrefix(string(reply.Data), "device::") {
		t.Fatalf("handshake: %v %s %q", err, reply.Command, reply.Data)
	}

	out, err = run(t, "list", "--state-dir", dir, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var infos []virtual.Info
	if err := json.Unmarshal([]byte(out), &infos); err != nil || len(infos) != 1 {
		t.Fatalf("list --json: %v %q", err, out)
	}
	keeper := infos[0].PID
	if infos[0].State != "running" || infos[0].Serial != serial || keeper <= 0 || keeper == os.Getpid() {
		t.Fatalf("listed %+v", infos[0])
	}
	if out, _ := run(t, "list", "--state-dir", dir); !regexp.MustCompile(`cli-one[\s│]+` + regexp.QuoteMeta(serial) + `[\s│]+running[\s│]+\d+`).MatchString(out) {
		t.Errorf("list table: %q", out)
	}
	if _, err := run(t, "reset", "--state-dir", dir, "cli-one"); err == nil {
		t.Error("reset of a running device succeeded")
	}
	if out, err := run(t, "stop", "--state-dir", dir, serial); err != nil || !strings.Contains(out, "cli-one stopped") {
		t.Fatalf("stop %s: %v %s", serial, err, out)
	}
	if err := syscall.Kill(keeper, 0); err == nil {
		// The keeper is our child until this test exits: reap it.
		var ws syscall.WaitStatus
		syscall.Wait4(keeper, &ws, 0, nil)
	}
	out, _ = run(t, "list", "--state-dir", dir)
	if !regexp.MustCompile(`cli-one[\s│]+-[\s│]+stopped`).MatchString(out) {
		t.Errorf("after stop: %q", out)
	}
	if out, err := run(t, "reset", "--state-dir", dir, "cli-one"); err != nil || !strings.Contains(out, "cli-one reset") {
		t.Errorf("reset: %v %q", err, out)
	}
	if _, err := run(t, "stop", "--state-dir", dir, "nosuch"); err == nil {
		t.Error("stop of a missing device succeeded")
	}
	if _, err := run(t, "stop", "--state-dir", dir, serial); err == nil || !strings.Contains(err.Error(), "no running virtual device has serial") {
		t.Errorf("stop of a stopped device's serial: %v", err)
	}
}

func TestStartRefusesEmulatorPorts(t *testing.T) {
	testenv.NeedRoot(t)
	out, err := run(t, "start", "--state-dir", t.TempDir(), "--port", "5555")
	if err == nil || !strings.Contains(err.Error(), "emulator") {
		t.Fatalf("start on 5555: %v %q", err, out)
	}
}
