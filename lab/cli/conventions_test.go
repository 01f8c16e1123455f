package cli

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/lab/runner"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/faults"
)

// TestNoInit: the root wires an explicit list of commands; no file of the
// package registers anything from init.
func TestNoInit(t *testing.T) {
	pkgs, err := parser.ParseDir(token.NewFileSet(), ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	require.NoError(t, err)
	for _, p := range pkgs {
		for name, f := range p.Files {
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "init" {
					t.Errorf("%s has an init function; list the command in newRoot instead", name)
				}
			}
		}
	}
}

// TestCompletion: completion prints a script for each shell, and the
// lab's values complete: scenario names and area globs for --scenario,
// tags for --tags (after a comma too), shells for completion itself.
func TestCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := runCLI(t, "completion", shell)
		require.Equal(t, 0, r.code, "%s: %s", shell, r.stderr)
		assert.Contains(t, r.stdout, "agentlab", shell)
		assert.Contains(t, r.stdout, "__complete", "%s: the script asks agentlab for values", shell)
	}
	if r := runCLI(t, "completion", "tcsh"); r.code != ExitUsage {
		t.Errorf("completion tcsh: exit %d", r.code)
	}
	if r := runCLI(t, "completion"); r.code != ExitUsage {
		t.Errorf("completion without a shell: exit %d", r.code)
	}

	cfg, _ := suiteConfig(t, twoScenarios)
	complete := func(args ...string) []string {
		t.Helper()
		r := runCLI(t, append([]string{"__complete", "--config", cfg}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		var out []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if !strings.HasPrefix(l, ":") {
				out = append(out, strings.Split(l, "\t")[0])
			}
		}
		return out
	}
	assert.Equal(t, []string{"a", "sub/*", "sub/b"}, complete("run", "--scenario", ""))
	assert.Equal(t, []string{"sub/*", "sub/b"}, complete("run", "--scenario", "s"))
	assert.Equal(t, []string{"slow", "smoke"}, complete("run", "--tags", "s"))
	assert.Equal(t, []string{"smoke,slow"}, complete("run", "--exclude-tags", "smoke,sl"))
	assert.Equal(t, []string{"smoke"}, complete("scenarios", "list", "--tags", "sm"))
	assert.Equal(t, []string{"bash", "zsh", "fish"}, complete("completion", ""))
}

// TestCompletionSerials: -s completes the virtual devices on disk.
func TestCompletionSerials(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, "vdevices", "vdev-7")
	require.NoError(t, os.MkdirAll(root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "device.json"), []byte("{}"), 0o644)) // a stopped device
	cfg := filepath.Join(dir, "lab.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("stateDir: "+dir+"\ndevices: {virtual: {count: 1}}\n"), 0o644))
	r := runCLI(t, "__complete", "--config", cfg, "provision", "-s", "vdev")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "vdev-7")
}

// TestConfigErrors: every configuration problem exits 2, a --config that
// does not exist too, whatever the command.
func TestConfigErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.yaml")
	for _, args := range [][]string{{"run"}, {"devices"}, {"provision"}, {"doctor"}, {"scenarios", "list"}, {"build"}} {
		r := runCLI(t, append([]string{"--config", missing}, args...)...)
		assert.Equal(t, ExitUsage, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "missing.yaml", args)
		assert.Contains(t, r.stderr, "Run 'agentlab --help' for usage.", args)
	}
}

// TestJSONEverywhere: every command that prints data prints JSON with
// --json (and nothing else on stdout).
func TestJSONEverywhere(t *testing.T) {
	cfg, out := suiteConfig(t, twoScenarios)
	dir := t.TempDir()
	results := writeRun(t, filepath.Join(dir, "r"), sampleRun(map[string]reports.Verdict{"a": reports.VerdictPass}))
	other := 1 - runner.Shard("a", 2)
	cases := [][]string{
		{"version"},
		{"scenarios", "list"},
		{"scenarios", "validate"},
		{"run", "--dry-run"},
		{"run", "--shard", fmt.Sprintf("%d/2", runner.Shard("a", 2)), "--scenario", "sub/b", "--dry-run"},
		{"run", "--scenario", "a", "--shard", fmt.Sprintf("%d/2", other)}, // an empty shard: a real run that touches no device
		{"devices"},
		{"report", "--from", results, "--format", "console,junit", "--out", filepath.Join(dir, "rendered")},
		{"report", "diff", results, results},
		{"report", "merge", filepath.Join(dir, "merged"), results},
		{"vdevice", "list"},
		{"mutate", "--list"},
	}
	for _, args := range cases {
		r := runCLI(t, append([]string{"--config", cfg, "--json", "--out", out}, args...)...)
		assert.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		var v any
		assert.NoError(t, json.Unmarshal([]byte(r.stdout), &v), "%v printed:\n%s", args, r.stdout)
	}
}

// TestRunJSON: run --json prints the run's summary, and the exit code
// matches it.
func TestRunJSON(t *testing.T) {
	cfg, out := suiteConfig(t, map[string]string{"a.yaml": "name: a\nsteps: [{sleep: 1s}]\n"})
	other := 1 - runner.Shard("a", 2)
	r := runCLI(t, "run", "--config", cfg, "--json", "--shard", fmt.Sprintf("%d/2", other))
	require.Equal(t, 0, r.code, r.stderr)
	var s runSummary
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &s), r.stdout)
	assert.NotEmpty(t, s.RunID)
	assert.Equal(t, out, s.Output)
	assert.Equal(t, 0, s.ExitCode)
	assert.Equal(t, 0, s.Summary.Total)
	assert.Empty(t, s.NotPass)
}

// TestDryRun: --dry-run shows what the selection runs (globs included)
// and touches no device.
func TestDryRun(t *testing.T) {
	cfg, out := suiteConfig(t, twoScenarios)
	r := runCLI(t, "run", "--config", cfg, "--scenario", "sub/*", "--dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "sub/b")
	assert.NotContains(t, r.stdout, "│ a ")
	assert.Contains(t, r.stdout, "1 scenario of 2 would run")
	_, err := os.Stat(filepath.Join(out, "results.json"))
	assert.True(t, os.IsNotExist(err), "a dry run writes no reports")
	r = runCLI(t, "run", "--config", cfg, "--scenario", "sub/c", "--dry-run")
	assert.Equal(t, ExitUsage, r.code)
	assert.Contains(t, r.stderr, "no scenario named sub/c (did you mean sub/b?)")
}

// TestVdeviceStartJSON: vdevice start --json prints the device it started.
func TestVdeviceStartJSON(t *testing.T) {
	testenv.NeedRoot(t)
	dir := t.TempDir()
	r := runCLI(t, "--json", "vdevice", "--state-dir", dir, "start", "--name", "jsontest")
	require.Equal(t, 0, r.code, r.stderr)
	t.Cleanup(func() { runCLI(t, "vdevice", "--state-dir", dir, "stop", "jsontest") })
	var in struct{ Name, Serial, State string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &in), r.stdout)
	assert.Equal(t, "jsontest", in.Name)
	assert.Equal(t, "running", in.State)
	assert.NotEmpty(t, in.Serial)
}

// TestMutateUsage: a fault that is not in the catalog is a usage error
// (exit 2) named before any device starts, and --list names every fault.
func TestMutateUsage(t *testing.T) {
	cfg, out := suiteConfig(t, twoScenarios)
	r := runCLI(t, "--config", cfg, "--out", out, "mutate", "--fault", "scope_widen,no_such_fault")
	assert.Equal(t, 2, r.code, r.stderr)
	assert.Contains(t, r.stderr, `"no_such_fault" is no fault`)

	r = runCLI(t, "--json", "mutate", "--list")
	require.Equal(t, 0, r.code, r.stderr)
	var list []struct{ Name string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &list))
	assert.Len(t, list, len(faults.All))
}

// TestChaosUsage: a bad budget, action or fault is a usage error (exit 2)
// named before any device starts.
func TestChaosUsage(t *testing.T) {
	cfg, out := suiteConfig(t, twoScenarios)
	for args, want := range map[string]string{
		"--budget=0":            "--budget must be positive",
		"--action=prompt,dance": `"dance" is no chaos action`,
		"--fault=no_such_fault": `"no_such_fault" is no fault`,
	} {
		r := runCLI(t, "--config", cfg, "--out", out, "chaos", args)
		assert.Equal(t, 2, r.code, "%s: %s", args, r.stderr)
		assert.Contains(t, r.stderr, want, args)
	}
	r := runCLI(t, "chaos", "--help")
	require.Equal(t, 0, r.code, r.stderr)
	for _, inv := range []string{"consentAnswered", "scopeNeverWidens", "committedSurvives", "keyInNoArtifact"} {
		assert.Contains(t, r.stdout, inv, "--help names every invariant")
	}
}
