// Package soak_test is the device test of agentlab run --soak: a short
// soak on one virtual device passes on the product build and fails on a
// runtime that leaks a goroutine and a descriptor per prompt (the
// soak_leak fault).
package soak_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/lab"
	"github.com/agentoslab/agentlab/lab/soak"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/faults"
	"github.com/agentoslab/agentlab/scenarios/internal/labtest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// promptsScenario prompts four times over desktop ACP (the stub echoes);
// %s is a first step, the fault file or nothing.
const promptsScenario = `name: lab/soak-prompts
needs: {desktop: true}
timeout: 2m
steps:
%s  - prompt: {text: one}
    save: p1
  - prompt: {text: two}
    save: p2
  - prompt: {text: three}
    save: p3
  - prompt: {text: four}
    save: p4
checks:
  - {name: answered, events: p4, path: .stopReason, eq: end_turn}
`

const labYAML = `stateDir: %[1]s/state
devices: {virtual: {count: 1}}
model: stub
%[2]sscenarios: [%[1]s/suite]
output: %[1]s/out
retries: {attempts: 1}
timeouts: {scenario: 3m}
`

func TestSoakCatchesALeak(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	agentlab, repo, _ := labtest.Agentlab(t, ctx, "soaks a virtual device twice (about 6 minutes)")
	tmp := filepath.Dir(agentlab)
	_, known := faults.Lookup("soak_leak")
	require.True(t, known)

	for _, tc := range []struct {
		name, build, first string
		fails              bool
	}{
		{name: "clean"},
		{name: "leaking", build: "build: {tags: [" + lab.FaultTag + "]}\n",
			first: "  - run: {shell: \"echo soak_leak > " + lab.FaultFile + "\", su: true}\n", fails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(tmp, tc.name)
			require.NoError(t, os.MkdirAll(filepath.Join(dir, "suite"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "suite", "prompts.yaml"), fmt.Appendf(nil, promptsScenario, tc.first), 0o644))
			cfg := filepath.Join(dir, "lab.yaml")
			require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, labYAML, dir, tc.build), 0o644))

			cmd := exec.CommandContext(ctx, agentlab, "run", "--config", cfg, "--soak", "40s")
			cmd.Dir = repo
			b, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if tc.fails {
				require.True(t, errors.As(err, &ee) && ee.ExitCode() == 1, "agentlab run --soak exits 1 on a leak: %v\n%s", err, labtest.TailLines(string(b), 40))
			} else {
				require.NoError(t, err, "agentlab run --soak\n%s", labtest.TailLines(string(b), 40))
			}
			run, err := reports.Load(filepath.Join(dir, "out", "results.json"))
			require.NoError(t, err)
			require.NotNil(t, run.Soak, "results.json carries the samples")
			require.GreaterOrEqual(t, run.Soak.Iterations, soak.MinSamples, "%s", labtest.TailLines(string(b), 40))
			grew := map[string]bool{}
			for _, sr := range run.Soak.Series {
				assert.Len(t, sr.Samples, run.Soak.Iterations, "%s %s: a sample per iteration", sr.Device, sr.Metric)
				grew[sr.Metric] = grew[sr.Metric] || sr.Grew
				var vs []string
				for _, s := range sr.Samples {
					vs = append(vs, reports.FormatFigure(sr.Unit, s.Value))
				}
				t.Logf("%s %s: %s (growth %s, bound %s)", sr.Device, sr.Metric, strings.Join(vs, " "),
					reports.FormatFigure(sr.Unit, sr.Growth), reports.FormatFigure(sr.Unit, sr.Bound))
			}
			for _, m := range []string{soak.MetricRuntimeRSS, soak.MetricRuntimeFDs, soak.MetricRuntimeGoroutines,
				soak.MetricRuntimeStore, soak.MetricADBRSS, soak.MetricADBFDs} {
				_, sampled := grew[m]
				assert.True(t, sampled, "%s is sampled", m)
			}
			var verdict reports.Verdict
			for _, sc := range run.Scenarios {
				if sc.Name == lab.SoakScenario {
					verdict = sc.Verdict
				} else {
					assert.Equal(t, reports.VerdictPass, sc.Verdict, "%s: %s", sc.Name, sc.Reason)
				}
			}
			page, err := os.ReadFile(filepath.Join(dir, "out", "report.html"))
			require.NoError(t, err)
			assert.Contains(t, string(page), `<svg class="chart"`)
			if tc.fails {
				assert.Equal(t, reports.VerdictFail, verdict)
				assert.True(t, grew[soak.MetricRuntimeFDs], "the leaked descriptors are caught")
				assert.True(t, grew[soak.MetricRuntimeGoroutines], "the leaked goroutines are caught")
			} else {
				assert.Equal(t, reports.VerdictPass, verdict)
				assert.Empty(t, grew[soak.MetricRuntimeFDs] || grew[soak.MetricRuntimeGoroutines])
			}
		})
	}
}
