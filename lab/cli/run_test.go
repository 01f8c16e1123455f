package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
		{[]string{"run", "--config", cfg, "--tags", "nothing"}, "the selection matches no scenario (2 scenarios in the suite"},
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
	if r := runCLI(t, "--config", cfg, "scenarios", "validate"); r.code != 0 || !strings.Contains(r.stdout, "2 scenarios valid") {
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
	if !strings.Contains(r.stderr, "2 problems") {
		t.Errorf("stderr %q", r.stderr)
	}
	if r := runCLI(t, "scenarios", "validate", filepath.Join(dir, "missing")); r.code != ExitUsage {
		t.Errorf("missing path: exit %d", r.code)
	}
}
