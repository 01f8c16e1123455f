package timedwait_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/scenarios/internal/labtest"

	"github.com/agentoslab/agentlab/reports"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// timedWaitScenario waits SPAN with wait: {for} and checks the step's
// evidence. Its timeout of 2 minutes is less than the virtual run's 5
// minutes: a lab that really waited there fails the scenario.
const timedWaitScenario = `name: lab/timed-wait
timeout: 2m
steps:
  - name: pass-time
    wait: {for: %[1]s}
    save: w
checks:
  - {name: waitedTheSpan, saved: w, path: .waitedMs, eq: %[2]d}
  - {name: evidence, saved: w, path: .evidence, matches: '%[3]s'}
`

// The acceptance of virtual time: a scenario that waits 5 minutes of
// virtual time finishes in seconds on a virtual device with the lab's
// runtime (its 2-minute timeout would end it otherwise), and the same
// scenario, with a span this test can afford, run against the release
// runtime (build.releaseOnVirtual) really waits and says so.
func TestTimedWaitVirtualAndRelease(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	agentlab, repo, _ := labtest.Agentlab(t, ctx, "runs a scenario on a virtual device with each runtime")
	tmp := filepath.Dir(agentlab)

	for _, tc := range []struct {
		name, build, span string
		d                 time.Duration
		evidence          string
	}{
		{name: "virtual", span: "5m", d: 5 * time.Minute, evidence: `^advanced virtual time 5m0s$`},
		{name: "release", build: "build: {releaseOnVirtual: true}\n", span: "3s", d: 3 * time.Second,
			evidence: `^waited 3(\.[0-9]+)?s in real time$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(tmp, tc.name)
			suite := filepath.Join(dir, "suite")
			require.NoError(t, os.MkdirAll(suite, 0o755))
			doc := fmt.Sprintf(timedWaitScenario, tc.span, tc.d.Milliseconds(), tc.evidence)
			require.NoError(t, os.WriteFile(filepath.Join(suite, "timed-wait.yaml"), []byte(doc), 0o644))
			cfg := filepath.Join(dir, "lab.yaml")
			out := filepath.Join(dir, "out")
			lab := fmt.Sprintf("stateDir: %s/state\ndevices: {virtual: {count: 1}}\nmodel: stub\n%sscenarios: [%s]\noutput: %s\nretries: {attempts: 1}\nartifacts: {policy: always}\n",
				dir, tc.build, suite, out)
			require.NoError(t, os.WriteFile(cfg, []byte(lab), 0o644))

			cmd := exec.CommandContext(ctx, agentlab, "run", "--config", cfg)
			cmd.Dir = repo
			b, err := cmd.CombinedOutput()
			require.NoError(t, err, "agentlab run\n%s", labtest.TailLines(string(b), 40))
			run, err := reports.Load(filepath.Join(out, "results.json"))
			require.NoError(t, err)
			require.Len(t, run.Scenarios, 1)
			sc := run.Scenarios[0]
			require.Equal(t, "lab/timed-wait", sc.Name)
			require.Equal(t, reports.Verdict("pass"), sc.Verdict, "%s", labtest.TailLines(string(b), 40))

			// The step's own record: how long it took in the lab's time.
			step := waitStep(t, out)
			assert.Regexp(t, tc.evidence, step.Detail)
			if tc.name == "release" {
				assert.GreaterOrEqual(t, step.End.Sub(step.Start), tc.d, "a release runtime's wait is real")
			}
		})
	}
}

// stepRecord is one step of an attempt's steps.json.
type stepRecord struct {
	Name   string    `json:"name"`
	Detail string    `json:"detail"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
}

// waitStep is the pass-time step of the run's one attempt, from its
// artifacts.
func waitStep(t *testing.T, out string) stepRecord {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(out, "artifacts", "lab_timed-wait", "attempt-1", "steps.json"))
	require.NoError(t, err)
	var steps []stepRecord
	require.NoError(t, json.Unmarshal(b, &steps))
	for _, st := range steps {
		if st.Name == "pass-time" {
			return st
		}
	}
	t.Fatalf("no pass-time step in steps.json:\n%s", b)
	return stepRecord{}
}
