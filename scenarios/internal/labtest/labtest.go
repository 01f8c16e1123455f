// Package labtest is what the scenario suite's device tests share: the
// agentlab binary they drive, and reading what a run wrote. Each long test
// lives in a package of its own under scenarios/, so each gets go test's
// per-package time limit and the packages run side by side.
package labtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/reports"
)

// Agentlab skips unless this machine can run virtual devices (root, adb)
// and the test is not -short (what names why it is long), and builds
// agentlab into a temporary directory of its own. It returns the binary,
// the repository root and adb's path.
func Agentlab(t *testing.T, ctx context.Context, what string) (agentlab, repo, adb string) {
	t.Helper()
	if testing.Short() {
		t.Skip(what + "; skipped with -short")
	}
	testenv.NeedRoot(t)
	adb = testenv.NeedADB(t)
	repo = Root(t)
	agentlab = filepath.Join(t.TempDir(), "agentlab")
	build := exec.CommandContext(ctx, "go", "build", "-o", agentlab, "./lab/cmd/agentlab")
	build.Dir = repo
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return agentlab, repo, adb
}

// Root is the repository's root: the nearest folder up from the test's
// own holding go.mod.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's folder")
		}
		dir = parent
	}
}

// MustRun runs name with args in dir and fails t with its output when it
// does not exit 0.
func MustRun(t *testing.T, ctx context.Context, dir, name string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
	}
}

// TailLines returns the last n lines of s.
func TailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// Result is a scenario's verdict in results.json and the names of the
// checks its last attempt failed.
type Result struct {
	Verdict string
	Failed  []string
}

// ReadResults reads a run's results.json, by scenario name.
func ReadResults(path string) (map[string]Result, error) {
	run, err := reports.Load(path)
	if err != nil {
		return nil, err
	}
	out := map[string]Result{}
	for _, s := range run.Scenarios {
		r := Result{Verdict: string(s.Verdict)}
		if n := len(s.Attempts); n > 0 {
			for _, c := range s.Attempts[n-1].Checks {
				if c.Failed() {
					r.Failed = append(r.Failed, c.Name)
				}
			}
		}
		out[s.Name] = r
	}
	return out, nil
}

// TwoVirtualDevices is the device and model part of the long tests'
// lab.yaml: the default configuration's two virtual devices (API 35,
// Magisk) and the stub, with its timeouts and artifacts policy. Each test
// adds its state directory, output, scenarios and retries.
const TwoVirtualDevices = `devices:
  virtual:
    count: 2
    sdk: 35
    rootMethod: magisk
model: stub
timeouts: {scenario: 5m, provision: 3m, health: 30s}
artifacts: {policy: on-failure}
`
