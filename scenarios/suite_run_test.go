package scenarios

import (
	"context"
	"errors"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/scenarios/internal/labtest"

	"github.com/agentoslab/agentlab/reports"
)

// suiteYAML is the built-in default configuration (lab/config/default.yaml:
// two virtual devices, the stub model, its timeouts and retry budgets, the
// whole suite) with a state directory and an output of the test's own, so
// the run touches nothing outside it.
const suiteYAML = `stateDir: %[1]s/state
` + labtest.TwoVirtualDevices + `retries: {attempts: 2, budget: 20, labFaultRequeues: 10}
output: %[1]s/out
scenarios: [%[2]s]
`

// TestWholeSuite is the suite's acceptance as a test: agentlab run with
// the default configuration runs every scenario on two virtual devices
// with the stub model, and every one passes (a scenario that needs a live
// model is skipped, and says so); report.html shows each scenario's named
// checks. The wall time is logged (the target is under 90 s on two cores:
// scenarios that wait out runtime timers advance the virtual devices'
// clocks instead).
func TestWholeSuite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Minute)
	defer cancel()
	agentlab, repo, _ := labtest.Agentlab(t, ctx, "runs the whole suite on two virtual devices")
	tmp := filepath.Dir(agentlab)
	cfg := filepath.Join(tmp, "lab.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, suiteYAML, tmp, filepath.Join(repo, "scenarios")), 0o644); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	cmd := exec.CommandContext(ctx, agentlab, "run", "--config", cfg)
	cmd.Dir = repo
	b, err := cmd.CombinedOutput()
	wall := time.Since(start)
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("agentlab run: %v\n%s", err, b)
	}
	if err != nil {
		t.Errorf("agentlab run exited %d, want 0\n%s", ee.ExitCode(), labtest.TailLines(string(b), 60))
	}
	t.Logf("whole suite on two virtual devices: %s", wall.Round(time.Second))

	out := filepath.Join(tmp, "out")
	run, err := reports.Load(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, s := range loadSuite(t) {
		want[s.Name] = true
	}
	page, err := os.ReadFile(filepath.Join(out, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range run.Scenarios {
		delete(want, s.Name)
		switch s.Verdict {
		case reports.VerdictPass, reports.VerdictFlaky:
		case reports.VerdictSkipped:
			if !strings.Contains(s.Reason, "live model") {
				t.Errorf("%s skipped: %s", s.Name, s.Reason)
			}
			continue
		default:
			var failed []string
			for _, c := range s.Checks {
				if !c.OK {
					failed = append(failed, c.Name+": "+c.Detail)
				}
			}
			t.Errorf("%s: %s (%s) %v", s.Name, s.Verdict, s.Reason, failed)
		}
		if s.Verdict == reports.VerdictFlaky {
			t.Logf("%s was flaky", s.Name)
		}
		if len(s.Checks) == 0 {
			t.Errorf("%s has no named checks in the results", s.Name)
		}
		for _, c := range s.Checks {
			if !strings.Contains(string(page), html.EscapeString(c.Name)) {
				t.Errorf("report.html does not show %s's check %q", s.Name, c.Name)
			}
		}
	}
	for name := range want {
		t.Errorf("%s is in the suite but not in the results", name)
	}
}
