package scenarios

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
)

// The acceptance: breaking a rule in the runtime on purpose makes
// the scenarios that guard it fail. TestFaultInjection builds agentlab,
// boots a virtual device, lets agentlab run provision it with a runtime
// built with the agentos_faultinject tag, and runs a handful of scenarios
// through the real agentlab run: first with no fault (all pass on the
// tagged runtime), then with each fault selected in the runtime's fault
// file. The scenarios guarding the broken rule must fail on the named
// checks; the others must still pass.

// faultCase is one fault: the scenarios whose named checks must fail, and
// scenarios that must still pass.
type faultCase struct {
	fault string
	fail  map[string][]string // scenario → checks that must fail
	pass  []string
}

// The faults of runtime/internal/faultinject (internal to the runtime, so
// named here again) and its fault file under the supervisor's root.
const (
	faultScopeWiden        = "scope_widen"
	faultAppAnswersConsent = "app_answers_consent"
	faultRevokeKeepsTasks  = "revoke_keeps_tasks"
	faultFile              = "/data/agentos/faultinject"
)

var faultCases = []faultCase{
	{fault: faultScopeWiden,
		fail: map[string][]string{
			"security/compromised-scope": {"onlyEchoOffered", "outOfScopeNotInCatalog"},
			"third-party/catalog-tools":  {"scopeWithoutEchoBlocksIt"},
		},
		pass: []string{"third-party/unauthorized-pending"}},
	{fault: faultAppAnswersConsent,
		fail: map[string][]string{
			"security/self-consent": {"adminSocketClosedUnread", "stillPending"},
		},
		pass: []string{"third-party/unauthorized-pending"}},
	{fault: faultRevokeKeepsTasks,
		fail: map[string][]string{
			"third-party/revoke-closes":       {"tasksCancelled"},
			"third-party/revoke-after-detach": {"tasksCancelled"},
		},
		pass: []string{"third-party/usable-no-scope"}},
}

func TestFaultInjection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	agentlab, repo, adb := labBinary(t, ctx, "builds a runtime and runs scenarios on a virtual device")
	tmp := filepath.Dir(agentlab)

	// One virtual device on its own adb server, so nothing of this test
	// reaches another test's devices.
	stateDir := filepath.Join(tmp, "vdevices")
	name := fmt.Sprintf("fi-%d", os.Getpid())
	devPort, adbPort := freePort(t), freePort(t)
	mustRun(t, ctx, repo, agentlab, "vdevice", "start", "--name", name, "--port", strconv.Itoa(devPort), "--state-dir", stateDir)
	t.Cleanup(func() {
		exec.Command(agentlab, "vdevice", "stop", name, "--state-dir", stateDir).Run()
	})
	serial := "127.0.0.1:" + strconv.Itoa(devPort)
	adbArgs := func(args ...string) []string { return append([]string{"-P", strconv.Itoa(adbPort)}, args...) }
	mustRun(t, ctx, repo, adb, adbArgs("connect", serial)...)
	t.Cleanup(func() { exec.Command(adb, adbArgs("kill-server")...).Run() })

	cfg := filepath.Join(tmp, "lab.yaml")
	out := filepath.Join(tmp, "out")
	labYAML := fmt.Sprintf("devices:\n  adb:\n    - server: 127.0.0.1:%d\nmodel: stub\nbuild:\n  tags: [agentos_faultinject]\nscenarios:\n  - %s\noutput: %s\nretries:\n  attempts: 1\n",
		adbPort, filepath.Join(repo, "scenarios"), out)
	if err := os.WriteFile(cfg, []byte(labYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	setFault := func(fault string) {
		t.Helper()
		cmd := "rm -f " + faultFile
		if fault != "" {
			cmd = "echo " + fault + " > " + faultFile + " && chmod 0644 " + faultFile
		}
		mustRun(t, ctx, repo, adb, adbArgs("-s", serial, "shell", "su -c '"+cmd+"'")...)
	}
	run := func(label string, names []string) map[string]scenarioResult {
		t.Helper()
		args := []string{"run", "--config", cfg, "--out", filepath.Join(out, label)}
		for _, n := range names {
			args = append(args, "--scenario", n)
		}
		cmd := exec.CommandContext(ctx, agentlab, args...)
		cmd.Dir = repo
		b, err := cmd.CombinedOutput()
		// Exit 1 is product failures, which the faults are for.
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
			t.Fatalf("agentlab run (%s): %v\n%s", label, err, b)
		}
		res, err := readResults(filepath.Join(out, label, "results.json"))
		if err != nil {
			t.Fatalf("%s: %v\n%s", label, err, b)
		}
		return res
	}

	// Every scenario of the cases, with no fault: the tagged runtime
	// behaves like the product (this run also provisions the device).
	var all []string
	for _, fc := range faultCases {
		for s := range fc.fail {
			all = append(all, s)
		}
		all = append(all, fc.pass...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	for name, r := range run("baseline", all) {
		if r.Verdict != "pass" {
			t.Errorf("baseline: %s is %s without a fault (failed checks %v)", name, r.Verdict, r.Failed)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	for _, fc := range faultCases {
		t.Run(fc.fault, func(t *testing.T) {
			setFault(fc.fault)
			defer setFault("")
			var names []string
			for s := range fc.fail {
				names = append(names, s)
			}
			names = append(names, fc.pass...)
			res := run(fc.fault, names)
			for s, checks := range fc.fail {
				r, ok := res[s]
				switch {
				case !ok:
					t.Errorf("%s did not run", s)
				case r.Verdict != "fail":
					t.Errorf("with %s, %s is %s; want fail", fc.fault, s, r.Verdict)
				default:
					for _, c := range checks {
						if !slices.Contains(r.Failed, c) {
							t.Errorf("with %s, %s failed on %v but not on %s", fc.fault, s, r.Failed, c)
						}
					}
					t.Logf("with %s, %s fails: %s", fc.fault, s, strings.Join(r.Failed, ", "))
				}
			}
			for _, s := range fc.pass {
				if r := res[s]; r.Verdict != "pass" {
					t.Errorf("with %s, the unrelated %s is %q (failed %v); want pass", fc.fault, s, r.Verdict, r.Failed)
				}
			}
		})
	}
}

// scenarioResult is a scenario's verdict in results.json and the names
// of its failed checks.
type scenarioResult struct {
	Verdict string
	Failed  []string
}

func readResults(path string) (map[string]scenarioResult, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Scenarios []struct {
			Name     string `json:"name"`
			Verdict  string `json:"verdict"`
			Attempts []struct {
				Checks []struct {
					Name string `json:"name"`
					OK   bool   `json:"ok"`
				} `json:"checks"`
			} `json:"attempts"`
		} `json:"scenarios"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	out := map[string]scenarioResult{}
	for _, s := range doc.Scenarios {
		r := scenarioResult{Verdict: s.Verdict}
		if n := len(s.Attempts); n > 0 {
			for _, c := range s.Attempts[n-1].Checks {
				if !c.OK {
					r.Failed = append(r.Failed, c.Name)
				}
			}
		}
		out[s.Name] = r
	}
	return out, nil
}

// labBinary skips unless this machine can run virtual devices (root,
// adb) and the test is not -short (what names why it is long), and
// builds agentlab into a temporary directory of its own. It returns the
// binary, the repository root and adb's path.
func labBinary(t *testing.T, ctx context.Context, what string) (agentlab, repo, adb string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + "; skipped with -short")
	}
	testenv.NeedRoot(t)
	adb = testenv.NeedADB(t)
	var err error
	if repo, err = filepath.Abs(".."); err != nil {
		t.Fatal(err)
	}
	agentlab = filepath.Join(t.TempDir(), "agentlab")
	mustRun(t, ctx, repo, "go", "build", "-o", agentlab, "./lab/cmd/agentlab")
	return agentlab, repo, adb
}

func mustRun(t *testing.T, ctx context.Context, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
}

// freePort returns a TCP port nothing listens on right now.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
