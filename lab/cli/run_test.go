package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/runner"
	"github.com/agentoslab/agentlab/reports"
)

// suiteConfig writes a lab.yaml running the scenarios docs (file name →
// document) and returns its path and the output directory.
func suiteConfig(t *testing.T, docs map[string]string) (cfg, out string) {
	t.Helper()
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite")
	for name, doc := range docs {
		p := filepath.Join(suite, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out = filepath.Join(dir, "out")
	cfg = filepath.Join(dir, "lab.yaml")
	body := fmt.Sprintf("stateDir: %s/state\ndevices: {virtual: {count: 2}}\noutput: %s\nscenarios: [%s]\n", dir, out, suite)
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, out
}

var twoScenarios = map[string]string{
	"a.yaml":     "name: a\ntags: [smoke]\nsteps: [{sleep: 1s}]\n",
	"sub/b.yaml": "name: sub/b\ntags: [slow]\ndevices: [x, y]\nneeds: {apps: [notes]}\nsteps: [{sleep: 1s}]\nchecks: [{name: c, of: status, exists: true}]\n",
}

// TestRunUsageErrors: what cannot run exits 2 before touching a device.
func TestRunUsageErrors(t *testing.T) {
	cfg, _ := suiteConfig(t, twoScenarios)
	badCfg, _ := suiteConfig(t, map[string]string{"bad.yaml": "name: bad\nsteps:\n  - sleep: soon\n"})
	cases := []struct {
		args []string
		msg  string
	}{
		{[]string{"run", "--config", cfg, "--shard", "2/2"}, "--shard: want i/n with 0 <= i < n"},
		{[]string{"run", "--config", cfg, "--shard", "x"}, "--shard: want i/n"},
		{[]string{"run", "--config", cfg, "--repeat", "-1"}, "must not be negative"},
		{[]string{"run", "--config", cfg, "--scenario", "nope"}, "no scenario named nope"},
		{[]string{"run", "--config", cfg, "--tags", "nothing"}, "the selection matches no scenario (2 in the suite"},
		{[]string{"run", "--config", cfg, "--repeat", "3"}, "reproduce one scenario; the selection has 2"},
		{[]string{"run", "--config", badCfg}, "bad.yaml:3:12: steps[0].sleep: want a duration"},
		{[]string{"run", "--config", cfg, "extra"}, `takes no arguments`},
	}
	for _, tc := range cases {
		r := runCLI(t, tc.args...)
		if r.code != ExitUsage || !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, r.code, r.stderr, tc.msg)
		}
	}
}

// TestRunEmptyShard: a shard that owns none of the selected scenarios
// writes empty reports and exits 0 without starting a device.
func TestRunEmptyShard(t *testing.T) {
	cfg, out := suiteConfig(t, map[string]string{"a.yaml": "name: a\nsteps: [{sleep: 1s}]\n"})
	other := 1 - runner.Shard("a", 2)
	r := runCLI(t, "run", "--config", cfg, "--shard", fmt.Sprintf("%d/2", other))
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	run, err := reports.Load(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Scenarios) != 0 || run.Selection.ShardCount != 2 || run.Selection.ShardIndex != other {
		t.Errorf("results: %d scenarios, selection %+v", len(run.Scenarios), run.Selection)
	}
	for _, f := range reports.Formats() {
		if _, err := os.Stat(filepath.Join(out, f.FileName())); err != nil {
			t.Errorf("%s: %v", f.FileName(), err)
		}
	}
}

func TestScenariosList(t *testing.T) {
	cfg, _ := suiteConfig(t, twoScenarios)
	r := runCLI(t, "--config", cfg, "scenarios", "list")
	if r.code != 0 || !strings.Contains(r.stdout, "sub/b") || !strings.Contains(r.stdout, "x,y") || !strings.Contains(r.stdout, "2 of 2 scenarios") {
		t.Errorf("list: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "--config", cfg, "--json", "scenarios", "list", "--tags", "slow")
	var rows []scenarioRow
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil || r.code != 0 {
		t.Fatalf("list --json: %d %v\n%s", r.code, err, r.stdout)
	}
	if len(rows) != 1 || rows[0].Name != "sub/b" || rows[0].Checks != 1 || strings.Join(rows[0].Devices, ",") != "x,y" || rows[0].Model != "stub" {
		t.Errorf("rows %+v", rows)
	}
	r = runCLI(t, "--config", cfg, "scenarios", "list", "--expr", "smoke && !slow")
	if r.code != 0 || !strings.Contains(r.stdout, "1 of 2 scenarios") {
		t.Errorf("--expr: %d %s", r.code, r.stdout)
	}
	if r := runCLI(t, "--config", cfg, "scenarios", "list", "--expr", "a &&"); r.code != ExitUsage {
		t.Errorf("bad --expr: exit %d", r.code)
	}
}

func TestScenariosValidate(t *testing.T) {
	cfg, _ := suiteConfig(t, twoScenarios)
	if r := runCLI(t, "--config", cfg, "scenarios", "validate"); r.code != 0 || !strings.Contains(r.stdout, "2 scenario(s) valid") {
		t.Errorf("valid suite: %d %q %q", r.code, r.stdout, r.stderr)
	}
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("name: bad\nsteps:\n  - wait: {until: {of: nothing}}\n  - await: x\n"), 0o644)
	r := runCLI(t, "scenarios", "validate", bad)
	if r.code != ExitUsage {
		t.Errorf("exit %d, want 2", r.code)
	}
	for _, want := range []string{bad + ":3:20: steps[0].wait.until.of: want one of", bad + ":4:5: steps[1].await: no earlier background step"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout %q lacks %q", r.stdout, want)
		}
	}
	if !strings.Contains(r.stderr, "2 problem(s)") {
		t.Errorf("stderr %q", r.stderr)
	}
	if r := runCLI(t, "scenarios", "validate", filepath.Join(dir, "missing")); r.code != ExitUsage {
		t.Errorf("missing path: exit %d", r.code)
	}
}

// TestReportLeak: a secret found in an artifact fails the run with a
// lab-level scenario naming the file and the secret, never its value; the
// reports themselves stay clean.
func TestReportLeak(t *testing.T) {
	dir := t.TempDir()
	var stdout, stderr strings.Builder
	a := &app{stdout: &stdout, stderr: &stderr, lookupEnv: func(string) (string, bool) { return "", false }}
	cfg := config.Default()
	cfg.Output = dir
	cfg.StateDir = filepath.Join(dir, "state")
	l := &labRun{a: a, cfg: cfg, f: &runFlags{}, out: dir, runID: "run-test", started: time.Now()}
	// The signing key counts as a secret, as PEM and as its base64 body.
	pemKey := "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIOk0dPq1jWZQq5Wbq1aHc0e2pM7x3n0xLQ9H7pQy8f0a\n-----END PRIVATE KEY-----\n"
	os.MkdirAll(filepath.Dir(cfg.SigningKeyPath()), 0o700)
	os.WriteFile(cfg.SigningKeyPath(), []byte(pemKey), 0o600)
	l.signingKeySecrets()
	l.secret(reports.Secret{Name: "pairing token", Value: []byte("tok-0123456789abcdefghijklmnopqrstuvwxyzABCD")})
	if len(l.secretList()) != 3 {
		t.Fatalf("%d secrets, want 3 (token, key PEM, key body)", len(l.secretList()))
	}
	art := filepath.Join(dir, "artifacts", "s", "attempt-1", "runtime.log")
	os.MkdirAll(filepath.Dir(art), 0o755)
	os.WriteFile(art, []byte("paired with tok-0123456789abcdefghijklmnopqrstuvwxyzABCD twice: tok-0123456789abcdefghijklmnopqrstuvwxyzABCD\n"), 0o644)
	res := &runner.Result{Scenarios: []reports.Scenario{{Name: "s", Tags: []string{}, Devices: []string{}, Verdict: reports.VerdictPass,
		Attempts: []reports.Attempt{}, Checks: []reports.Check{}, Artifacts: []reports.Artifact{}}}}
	err := l.report(res)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != reports.ExitFailures {
		t.Fatalf("report: %v, want exit %d", err, reports.ExitFailures)
	}
	run, err := reports.Load(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var leak reports.Scenario
	for _, sc := range run.Scenarios {
		if sc.Name == "lab/leak-scan" {
			leak = sc
		}
	}
	if leak.Name != "lab/leak-scan" || leak.Verdict != reports.VerdictFail || len(leak.Checks) != 1 ||
		leak.Checks[0].Name != "no pairing token in artifacts/s/attempt-1/runtime.log" || !strings.Contains(leak.Checks[0].Detail, "2 time(s)") {
		t.Errorf("leak scenario %+v", leak)
	}
	for _, f := range reports.Formats() {
		b, _ := os.ReadFile(filepath.Join(dir, f.FileName()))
		if strings.Contains(string(b), "tok-0123") {
			t.Errorf("%s holds the token", f.FileName())
		}
	}
	if strings.Contains(stdout.String()+stderr.String(), "tok-0123") {
		t.Error("the token was printed")
	}
}
