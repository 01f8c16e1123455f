// Package chaos_test is the device test of agentlab chaos: on a runtime
// built with the agentos_faultinject tag, the chaos sequences break an
// invariant under each fault below within the test's budget (2 minutes a
// fault; about 40 seconds each in practice), and the shrinker cuts each
// violation to a scenario of at most 10 steps that is valid and, run
// again with the same fault, fails on the same invariant.
package chaos_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/lab"
	"github.com/agentoslab/agentlab/lab/chaos"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/runtime/faults"
	"github.com/agentoslab/agentlab/scenarios/internal/labtest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// found are the faults chaos must find, each with the invariant that
// breaks under it.
var found = map[string]string{
	"scope_widen":             "scopeNeverWidens",
	"revoke_keeps_tasks":      "revokedHasNoTask",
	"revoke_leaves_connected": "revokedHasNoTask",
	"consent_timeout_allows":  "consentAnswered",
	"unoffered_answer_allows": "consentAnswered",
	"busy_quota_ignored":      "onePromptAtATime",
	"model_key_logged":        "keyInNoArtifact",
	"cross_app_session_load":  "noCrossAppData",
	// The desktop actor: a root client pairing as a computer would.
	"pairing_attempts_unlimited": "pairingHolds",
	"pairing_code_reusable":      "pairingHolds",
}

// labYAML: two virtual devices; chaos brings its own scenarios, so the
// suite is an empty folder.
const labYAML = `stateDir: %[1]s/state
` + labtest.TwoVirtualDevices + `retries: {attempts: 1, labFaultRequeues: 10}
output: %[1]s/out
scenarios: [%[1]s/suite]
`

func TestChaosFindsAndShrinksFaults(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	agentlab, repo, _ := labtest.Agentlab(t, ctx, "runs agentlab chaos on two virtual devices against ten faults (about 6 minutes)")
	tmp := filepath.Dir(agentlab)
	require.NoError(t, os.MkdirAll(filepath.Join(tmp, "suite"), 0o755))
	cfg := filepath.Join(tmp, "lab.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, labYAML, tmp), 0o644))
	var names []string
	for f := range found {
		_, ok := faults.Lookup(f)
		require.True(t, ok, "%s is in the catalog", f)
		names = append(names, f)
	}

	start := time.Now()
	cmd := exec.CommandContext(ctx, agentlab, "--config", cfg, "--json", "chaos", "--seed", "1", "--steps", "6",
		"--budget", "2m", "--fault", strings.Join(names, ","))
	cmd.Dir = repo
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	var ee *exec.ExitError
	if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 1) {
		t.Fatalf("agentlab chaos: %v\n%s", err, labtest.TailLines(stderr.String(), 60))
	}
	t.Logf("agentlab chaos --fault (%d faults): %s", len(names), time.Since(start).Round(time.Second))
	var res lab.ChaosResult
	require.NoError(t, json.Unmarshal(stdout, &res), "chaos --json prints the result\n%s", labtest.TailLines(stderr.String(), 40))

	byFault := map[string]lab.ChaosViolation{}
	for _, v := range res.Violations {
		byFault[v.Fault] = v
	}
	for f, inv := range found {
		v, ok := byFault[f]
		if !assert.True(t, ok, "chaos did not find %s\n%s", f, labtest.TailLines(stderr.String(), 30)) {
			continue
		}
		assert.Equal(t, inv, v.Invariant, "%s breaks %s", f, inv)
		assert.LessOrEqual(t, len(v.Shrunk), 10, "%s shrunk to %v", f, v.Shrunk)
		assert.LessOrEqual(t, len(v.Shrunk), len(v.Found))
		doc, err := os.ReadFile(filepath.Join(tmp, "out", filepath.FromSlash(v.File)))
		if !assert.NoError(t, err) {
			continue
		}
		s, err := scenario.Parse(doc, v.File, nil)
		if assert.NoError(t, err, "the shrunk scenario is valid") {
			assert.Equal(t, int64(v.Seed), s.Model.Chaos.Seed, "it carries the chaos model's seed")
		}
		t.Logf("%s: %s, %d → %d steps in %d runs: %v", f, v.Invariant, len(v.Found), len(v.Shrunk), v.Runs, v.Shrunk)
	}
	for _, inv := range chaos.Invariants {
		t.Logf("%-18s checked %d times", inv.Name, res.Exercised[inv.Name])
	}
	t.Logf("%d sequences, %d steps, %d lab faults, %d step failures", res.Sequences, res.Steps, res.LabFaults, len(res.StepFailures))
	rerun(t, ctx, agentlab, repo, tmp, byFault)
}

// rerunYAML runs the saved scenarios on the fault-injection build; each
// writes its own fault into the fault file first.
const rerunYAML = `stateDir: %[1]s/state
` + labtest.TwoVirtualDevices + `build: {tags: [` + lab.FaultTag + `]}
retries: {attempts: 1}
output: %[1]s/rerun
scenarios: [%[1]s/saved]
`

// rerun runs every saved scenario with agentlab run on the faulted build:
// each must fail, on a check of its invariant.
func rerun(t *testing.T, ctx context.Context, agentlab, repo, tmp string, byFault map[string]lab.ChaosViolation) {
	saved := filepath.Join(tmp, "saved", "chaos")
	require.NoError(t, os.MkdirAll(saved, 0o755))
	want := map[string]string{} // scenario → invariant
	for _, v := range byFault {
		doc, err := os.ReadFile(filepath.Join(tmp, "out", filepath.FromSlash(v.File)))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(saved, filepath.Base(v.File)), doc, 0o644))
		want["chaos/"+strings.TrimSuffix(filepath.Base(v.File), ".yaml")] = v.Invariant
	}
	if len(want) == 0 {
		return
	}
	cfg := filepath.Join(tmp, "rerun.yaml")
	require.NoError(t, os.WriteFile(cfg, fmt.Appendf(nil, rerunYAML, tmp), 0o644))
	validate := exec.CommandContext(ctx, agentlab, "--config", cfg, "scenarios", "validate")
	validate.Dir = repo
	b, err := validate.CombinedOutput()
	require.NoError(t, err, "agentlab scenarios validate: %s", b)
	run := exec.CommandContext(ctx, agentlab, "--config", cfg, "run")
	run.Dir = repo
	b, err = run.CombinedOutput()
	var ee *exec.ExitError
	require.True(t, errors.As(err, &ee) && ee.ExitCode() == 1, "the saved scenarios fail: %v\n%s", err, labtest.TailLines(string(b), 40))
	results, err := labtest.ReadResults(filepath.Join(tmp, "rerun", "results.json"))
	require.NoError(t, err)
	for name, inv := range want {
		r, ok := results[name]
		if !assert.True(t, ok, "%s ran", name) {
			continue
		}
		assert.Equal(t, "fail", r.Verdict, "%s fails again on the faulted build", name)
		broke := false
		for _, c := range r.Failed {
			if got, _ := chaos.InvariantOf(c); got == inv {
				broke = true
			}
		}
		assert.True(t, broke, "%s fails on %s (failed: %v)", name, inv, r.Failed)
	}
}
