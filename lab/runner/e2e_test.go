package runner_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/lab/build"
	"github.com/agentoslab/agentlab/reports"
)

// The end-to-end test drives the real agentlab binary, built once here,
// on two real virtual devices behind a real adb server: build, provision,
// the queue, reports.
var e2e struct {
	once   sync.Once
	bin    string
	root   string
	tmp    string
	err    error
	reason string
}

func TestMain(m *testing.M) {
	// The test binary is also the init of the benchmark's virtual device.
	virtual.Init()
	code := m.Run()
	if e2e.tmp != "" {
		os.RemoveAll(e2e.tmp)
	}
	os.Exit(code)
}

// agentlab builds the binary (once) or skips when the host cannot run
// virtual devices.
func agentlab(t *testing.T) (bin, root string) {
	t.Helper()
	testenv.NeedVirtualDevices(t)
	e2e.once.Do(func() {
		e2e.root, e2e.err = build.FindRoot(".")
		if e2e.err != nil {
			return
		}
		e2e.tmp, e2e.err = os.MkdirTemp("", "agentlab-e2e-")
		if e2e.err != nil {
			return
		}
		e2e.bin = filepath.Join(e2e.tmp, "agentlab")
		cmd := exec.Command("go", "build", "-o", e2e.bin, "./lab/cmd/agentlab")
		cmd.Dir = e2e.root
		if out, err := cmd.CombinedOutput(); err != nil {
			e2e.err = fmt.Errorf("go build agentlab: %v\n%s", err, out)
		}
	})
	if e2e.err != nil {
		t.Fatal(e2e.err)
	}
	return e2e.bin, e2e.root
}

const labYAML = `stateDir: %[1]s/state
devices:
  virtual:
    count: 2
model: stub
timeouts: {scenario: 2m, provision: 6m, health: 30s}
retries: {attempts: 2, budget: 5, labFaultRequeues: 3}
artifacts: {policy: on-failure}
output: %[1]s/out
scenarios: [%[2]s]
`

// killer SIGKILLs the init of the first virtual device that shows the
// fixture's marker file, once.
type killer struct {
	stateDir string
	mu       sync.Mutex
	killed   string
}

func (k *killer) poll(ctx context.Context) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		roots, _ := filepath.Glob(filepath.Join(k.stateDir, "vdevices", "*"))
		for _, root := range roots {
			if _, err := os.Stat(filepath.Join(root, "data/local/tmp/agentlab-kill-me")); err != nil {
				continue
			}
			var run struct {
				InitPID int    `json:"init_pid"`
				Serial  string `json:"serial"`
			}
			b, err := os.ReadFile(filepath.Join(root, "run.json"))
			if err != nil || json.Unmarshal(b, &run) != nil || run.InitPID <= 0 {
				continue
			}
			syscall.Kill(run.InitPID, syscall.SIGKILL)
			k.mu.Lock()
			k.killed = run.Serial
			k.mu.Unlock()
			return
		}
	}
}

func (k *killer) serial() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.killed
}

// runLab runs agentlab with args in dir (the source tree, unless a test
// runs it from elsewhere) and returns its exit code and output.
func runLab(t *testing.T, bin, root string, timeout time.Duration, args ...string) (int, string, string) {
	t.Helper()
	// Stop agentlab before the test binary's own deadline, so a hang ends
	// with agentlab's goroutine dump (SIGQUIT) in the failure, not with
	// the test binary killed and nothing to read.
	if dl, ok := t.Deadline(); ok && time.Until(dl)-30*time.Second < timeout {
		timeout = time.Until(dl) - 30*time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 10 * time.Second
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("agentlab %s did not finish within %s; its output and goroutines:\n%s\n%s",
			strings.Join(args, " "), timeout.Round(time.Second), stdout.String(), stderr.String())
	}
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("agentlab %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return code, stdout.String(), stderr.String()
}

func scenarioOf(t *testing.T, r *reports.Run, name string) reports.Scenario {
	t.Helper()
	for _, s := range r.Scenarios {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no scenario %s in the results", name)
	return reports.Scenario{}
}

// TestEndToEnd: agentlab run on two virtual devices runs the fixture
// suite and writes every report. The scenario that fails on purpose is a
// product failure with its evidence; the device killed mid-scenario is a
// lab fault whose attempt is re-queued on the other device, and so is the
// attempt under which a device rebooted; junit.xml satisfies both stock
// JUnit schemas (Jenkins xUnit, Ant); a second real run, by a copy of
// agentlab outside the source tree that finds the first run's build next
// to itself (a released agentlab), is compared with report diff.
func TestEndToEnd(t *testing.T) {
	bin, root := agentlab(t)
	dir := t.TempDir()
	fixtures, err := filepath.Abs("testdata/e2e")
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "lab.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, labYAML, dir, fixtures), 0o644); err != nil {
		t.Fatal(err)
	}
	k := &killer{stateDir: filepath.Join(dir, "state")}
	kctx, stopKiller := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { k.poll(kctx) })
	code, stdout, stderr := runLab(t, bin, root, 15*time.Minute, "run", "--config", cfg, "-v")
	stopKiller()
	wg.Wait()
	out := filepath.Join(dir, "out")
	if t.Failed() || code != reports.ExitFailures {
		t.Logf("stdout:\n%s\nstderr:\n%s", stdout, tail(stderr, 12000))
	}
	if code != reports.ExitFailures {
		t.Fatalf("exit code %d, want %d (the fixture that fails on purpose)", code, reports.ExitFailures)
	}
	for _, f := range reports.Formats() {
		if fi, err := os.Stat(filepath.Join(out, f.FileName())); err != nil || fi.Size() == 0 {
			t.Errorf("report %s: %v", f.FileName(), err)
		}
	}
	run, err := reports.Load(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Devices) != 2 {
		t.Errorf("%d devices in the results, want 2", len(run.Devices))
	}

	fail := scenarioOf(t, run, "e2e/fails-on-purpose")
	if fail.Verdict != reports.VerdictFail || len(fail.Checks) != 1 || fail.Checks[0].OK ||
		!strings.Contains(fail.Checks[0].Detail, "want 999") || fail.Checks[0].Evidence == "" {
		t.Errorf("fails-on-purpose: %s %+v", fail.Verdict, fail.Checks)
	}
	if len(fail.Attempts) != 1 || fail.Attempts[0].LabFault {
		t.Errorf("fails-on-purpose attempts: %+v", fail.Attempts)
	}
	dumped := false
	for _, a := range fail.Artifacts {
		dumped = dumped || strings.HasSuffix(a.Path, "dump-notes.json")
		if _, err := os.Stat(filepath.Join(out, a.Path)); err != nil {
			t.Errorf("artifact %s: %v", a.Path, err)
		}
	}
	if !dumped {
		t.Errorf("the failed attempt kept no app dump: %+v", fail.Artifacts)
	}

	dies := scenarioOf(t, run, "e2e/device-dies")
	killed := k.serial()
	if killed == "" {
		t.Fatal("the test never saw the marker, so no device was killed")
	}
	if dies.Verdict == reports.VerdictFail || len(dies.Attempts) < 2 {
		t.Fatalf("device-dies: %s, attempts %+v", dies.Verdict, dies.Attempts)
	}
	first, last := dies.Attempts[0], dies.Attempts[len(dies.Attempts)-1]
	if !first.LabFault || first.Verdict != reports.VerdictError || first.Device != killed {
		t.Errorf("the attempt on the killed device %s: %+v", killed, first)
	}
	if last.Device == killed || last.Verdict != reports.VerdictPass || dies.Verdict != reports.VerdictPass {
		t.Errorf("re-queued attempt: %+v, verdict %s", last, dies.Verdict)
	}
	if run.Summary.LabFaultAttempts < 1 {
		t.Errorf("summary counts %d lab-fault attempts", run.Summary.LabFaultAttempts)
	}

	// A device that reboots under a running attempt (not the lab's reboot
	// step): the attempt is a lab fault, re-queued, and the scenario
	// passes on its next attempt.
	reboots := scenarioOf(t, run, "e2e/device-reboots")
	if reboots.Verdict != reports.VerdictPass || len(reboots.Attempts) < 2 {
		t.Errorf("device-reboots: %s, attempts %+v", reboots.Verdict, reboots.Attempts)
	} else if a := reboots.Attempts[0]; !a.LabFault || a.Verdict != reports.VerdictError {
		t.Errorf("device-reboots: the rebooted attempt is %+v, want a lab fault (error)", a)
	}

	for _, name := range []string{"e2e/echo-prompt", "e2e/notes-crud", "e2e/step-kinds"} {
		if s := scenarioOf(t, run, name); s.Verdict != reports.VerdictPass {
			t.Errorf("%s: %s: %s", name, s.Verdict, s.Reason)
		}
	}
	if html, _ := os.ReadFile(filepath.Join(out, "report.html")); !bytes.Contains(html, []byte(killed)) {
		t.Error("report.html does not show the killed device")
	}
	if xmllint, err := exec.LookPath("xmllint"); err == nil {
		for _, schema := range []string{"junit-jenkins.xsd", "junit-ant.xsd"} {
			cmd := exec.Command(xmllint, "--noout", "--schema", filepath.Join(root, "reports/testdata/schema", schema), filepath.Join(out, "junit.xml"))
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("junit.xml of a run with a failing scenario does not satisfy %s: %v\n%s", schema, err, b)
			}
		}
	}

	// A second real run of two scenarios by agentlab released the way
	// README says: its build (artifacts.json and the files it lists) with
	// the binary beside it, run from outside the source tree. Then report
	// diff between the two runs.
	release := filepath.Join(dir, "release")
	if err := os.Rename(filepath.Join(out, "build"), release); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(bin); err != nil || os.WriteFile(filepath.Join(release, "agentlab"), b, 0o755) != nil {
		t.Fatalf("copy agentlab next to the build: %v", err)
	}
	out2 := filepath.Join(dir, "out2")
	code, stdout, stderr = runLab(t, filepath.Join(release, "agentlab"), t.TempDir(), 10*time.Minute, "run", "--config", cfg, "--out", out2,
		"--scenario", "e2e/notes-crud", "--scenario", "e2e/fails-on-purpose")
	if !strings.Contains(stderr, "using the prebuilt") {
		t.Errorf("the released agentlab did not use the artifacts next to it:\n%s", tail(stderr, 3000))
	}
	if code != reports.ExitFailures {
		t.Fatalf("second run: exit %d\n%s\n%s", code, stdout, tail(stderr, 6000))
	}
	code, stdout, stderr = runLab(t, bin, root, time.Minute, "report", "diff", filepath.Join(out, "results.json"), filepath.Join(out2, "results.json"), "--format", "json")
	if code != 0 {
		t.Fatalf("report diff: exit %d (no new failures: fails-on-purpose failed both times)\n%s", code, stderr)
	}
	var diff reports.RunDiff
	if err := json.Unmarshal([]byte(stdout), &diff); err != nil {
		t.Fatalf("report diff --format json: %v\n%s", err, stdout)
	}
	var removed []string
	for _, r := range diff.Removed {
		removed = append(removed, r.Scenario)
	}
	if strings.Join(removed, ",") != "e2e/device-dies,e2e/device-reboots,e2e/echo-prompt,e2e/step-kinds" || len(diff.StillFailing) != 1 || diff.StillFailing[0].Scenario != "e2e/fails-on-purpose" {
		t.Errorf("diff: removed %v, still failing %+v", removed, diff.StillFailing)
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}
