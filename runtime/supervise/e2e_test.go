package supervise

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"

	"github.com/agentoslab/agentlab/runtime/apps/apptest"
)

// goBuild builds pkg into dir/name.
func goBuild(t *testing.T, dir, name, pkg string) string {
	t.Helper()
	out := filepath.Join(dir, name)
	if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, b)
	}
	return out
}

type cmdResult struct {
	code           int
	stdout, stderr string
}

func runAs(t *testing.T, uid int, bin string, args ...string) cmdResult {
	t.Helper()
	var cmd *exec.Cmd
	if uid == 0 {
		cmd = exec.Command(bin, args...)
	} else {
		cmd = apptest.Command(uid, bin, args)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := cmdResult{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %v: %v", bin, args, err)
	}
	return r
}

// TestAgentosdEndToEnd drives the real binaries as on a device: `agentosd
// supervise` (root) starts `agentosd serve` as the runtime's uid; the
// owner packs, installs, runs, upgrades and uninstalls an app with
// `agentosd app …` and `agentosd ctl …`; other uids are refused.
func TestAgentosdEndToEnd(t *testing.T) {
	testenv.NeedRoot(t)
	if testing.Short() {
		t.Skip("builds agentosd; skipped with -short")
	}
	open := apptest.OpenDir(t)
	agentosd := goBuild(t, open, "agentosd", "github.com/agentoslab/agentlab/runtime/cmd/agentosd")
	testapp := goBuild(t, open, "testapp", "github.com/agentoslab/agentlab/runtime/apps/internal/testapp")
	root := filepath.Join(open, "root")
	prefix := fmt.Sprintf("e%d-", os.Getpid())
	const runtimeUID = 10089
	ctl := func(uid int, args ...string) cmdResult {
		t.Helper()
		return runAs(t, uid, agentosd, append([]string{"ctl", "--socket-prefix", prefix}, args...)...)
	}

	sup := exec.Command(agentosd, "supervise", "--root", root, "--getprop", "-", "--runtime-uid", strconv.Itoa(runtimeUID),
		"--socket-prefix", prefix, "--uid-range", "10700-10799", "--poll-idle", "100ms")
	var supErr bytes.Buffer
	sup.Stderr = &supErr
	if err := sup.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- sup.Wait() }()
	defer func() {
		sup.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			sup.Process.Kill()
		}
	}()

	// The runtime comes up under its own uid and answers the owner.
	deadline := time.Now().Add(60 * time.Second)
	var st cmdResult
	for {
		st = ctl(0, "status", "--json")
		if st.code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runtime never answered: %+v\nsupervisor: %s", st, supErr.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("supervisor exited: %v\n%s", err, supErr.String())
		case <-time.After(100 * time.Millisecond):
		}
	}
	var status struct {
		UID        int
		Supervisor map[string]any
		Apps       map[string]any
	}
	if err := json.Unmarshal([]byte(st.stdout), &status); err != nil {
		t.Fatalf("status %q: %v", st.stdout, err)
	}
	if status.UID != runtimeUID || status.Supervisor["state"] != "ok" || status.Apps["installed"] != float64(0) {
		t.Fatalf("status %s", st.stdout)
	}

	// A second supervisor refuses to start.
	if r := runAs(t, 0, agentosd, "supervise", "--root", root, "--getprop", "-"); r.code != ExitAlreadyRunning || !strings.Contains(r.stderr, "another supervisor is running") {
		t.Fatalf("second supervisor: %+v", r)
	}

	// Pack an app with the CLI.
	appDir := filepath.Join(open, "app")
	os.MkdirAll(filepath.Join(appDir, "bin", "x86_64"), 0o755)
	bin, _ := os.ReadFile(testapp)
	os.WriteFile(filepath.Join(appDir, "bin", "x86_64", "testapp"), bin, 0o755)
	appJSON := func(v int) {
		os.WriteFile(filepath.Join(appDir, "app.json"), []byte(fmt.Sprintf(`{"package":"org.agentos.test.e2e","label":"E2E","versionCode":%d,"binary":"testapp","services":[{"name":"M","kind":"mcp","server":"main"}],"commands":["id"]}`, v)), 0o644)
	}
	key1, key2 := filepath.Join(open, "k1.pem"), filepath.Join(open, "k2.pem")
	for _, k := range []string{key1, key2} {
		if r := runAs(t, 0, agentosd, "app", "keygen", "--out", k); r.code != 0 {
			t.Fatal(r)
		}
	}
	pack := func(v int, key string) string {
		t.Helper()
		appJSON(v)
		out := filepath.Join(open, fmt.Sprintf("e2e-%d-%s.agentapp", v, filepath.Base(key)))
		if r := runAs(t, 0, agentosd, "app", "pack", "--dir", appDir, "--key", key, "--out", out); r.code != 0 {
			t.Fatal(r)
		}
		if r := runAs(t, 0, agentosd, "app", "verify", out); r.code != 0 {
			t.Fatal(r)
		}
		os.Chmod(out, 0o644)
		return out
	}
	v1 := pack(1, key1)

	// Only root installs.
	if r := ctl(2000, "app", "install", v1); r.code != 1 || !strings.Contains(r.stderr, "forbidden") {
		t.Fatalf("shell install: %+v", r)
	}
	if r := ctl(0, "app", "install", v1); r.code != 0 || !strings.HasPrefix(r.stdout, "installed org.agentos.test.e2e") {
		t.Fatalf("install: %+v\n%s", r, supErr.String())
	}
	r := ctl(0, "app", "list", "--json")
	var list []struct{ UID int }
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &list) != nil || len(list) != 1 || list[0].UID != 10700 {
		t.Fatalf("list: %+v", r)
	}
	// The debug command runs as the app's uid: `id -u` says so.
	if r := ctl(2000, "app", "run", "org.agentos.test.e2e", "--", "id"); r.code != 0 || strings.TrimSpace(r.stdout) != "10700" {
		t.Fatalf("run id: %+v", r)
	}
	// An app uid cannot open the admin socket: closed without a byte.
	if r := ctl(10700, "status"); r.code != 1 || !strings.Contains(r.stderr, "closed the connection without answering") {
		t.Fatalf("app uid on the admin socket: %+v", r)
	}
	// Upgrade, signature change, downgrade.
	if r := ctl(0, "app", "install", pack(2, key1)); r.code != 0 || !strings.HasPrefix(r.stdout, "updated") {
		t.Fatalf("upgrade: %+v", r)
	}
	if r := ctl(0, "app", "install", pack(3, key2)); r.code != 0 || !strings.Contains(r.stdout, "SIGNATURE CHANGED") || !strings.Contains(r.stdout, "uid 10700") {
		t.Fatalf("re-signed upgrade: %+v", r)
	}
	if r := ctl(0, "app", "install", pack(2, key2)); r.code != 1 || !strings.Contains(r.stderr, "downgrade refused") {
		t.Fatalf("downgrade: %+v", r)
	}
	if r := ctl(0, "app", "uninstall", "org.agentos.test.e2e"); r.code != 0 {
		t.Fatalf("uninstall: %+v", r)
	}
	if r := ctl(0, "app", "list"); r.code != 0 || r.stdout != "no apps installed\n" {
		t.Fatalf("list after uninstall: %+v", r)
	}

	// SIGTERM: the supervisor stops the runtime and exits 0.
	sup.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("supervisor exit: %v\n%s", err, supErr.String())
		}
		exited <- nil
	case <-time.After(30 * time.Second):
		t.Fatal("supervisor did not stop on SIGTERM")
	}
	final, err := ReadStatus(Paths{Root: root}.Status())
	if err != nil || final.State != StateStopped || final.Reason != ReasonSupervisorExited {
		t.Fatalf("final status %+v %v", final, err)
	}
	if hb, err := ReadHeartbeat(Paths{Root: root}.Heartbeat()); err != nil || hb.State != "stopping" {
		t.Fatalf("runtime heartbeat %+v %v", hb, err)
	}
	if r := ctl(0, "status"); r.code != 3 {
		t.Fatalf("ctl after stop: %+v", r)
	}
}
