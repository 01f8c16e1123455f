package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/reports"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite golden files")

type result struct {
	stdout, stderr string
	code           int
}

func runCLI(t *testing.T, args ...string) result {
	t.Helper()
	return runCLIWith(t, nil, args...)
}

// runCLIWith runs the command line, letting setup adjust the app first.
func runCLIWith(t *testing.T, setup func(*app), args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	a := &app{ctx: context.Background(), stdin: strings.NewReader(""), stdout: &out, stderr: &errb, lookupEnv: os.LookupEnv}
	if setup != nil {
		setup(a)
	}
	root := newRoot(a)
	if args == nil {
		args = []string{} // nil makes cobra read the test binary's os.Args
	}
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errb)
	cmd, err := root.ExecuteContextC(context.Background())
	code := ExitOK
	if err != nil {
		code = report(&errb, cmd, err)
	}
	return result{out.String(), errb.String(), code}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run with -update if the change is intended):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func TestRootHelp(t *testing.T) {
	r := runCLI(t, "--help")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("code %d, stderr %q", r.code, r.stderr)
	}
	golden(t, "help.golden", r.stdout)
	// The bare command prints the same help.
	if bare := runCLI(t); bare.stdout != r.stdout || bare.code != 0 {
		t.Errorf("agentlab without arguments: code %d\n%s", bare.code, bare.stdout)
	}
}

// TestEveryCommandTeaches: every command has a Long description and
// Examples, so --help teaches.
func TestEveryCommandTeaches(t *testing.T) {
	root := newRoot(&app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" {
			return
		}
		if strings.TrimSpace(c.Long) == "" {
			t.Errorf("%s has no Long description", c.CommandPath())
		}
		if strings.TrimSpace(c.Example) == "" {
			t.Errorf("%s has no Examples", c.CommandPath())
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	for _, want := range []string{"doctor", "report", "vdevice", "version"} {
		if c, _, err := root.Find([]string{want}); err != nil || c.Name() != want {
			t.Errorf("no %s command", want)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("devices:\n  virtual:\n    count: -1\n"), 0o644)
	cases := []struct {
		args       []string
		msg, hint  string
		wantStdout bool
	}{
		{[]string{"verison"}, `unknown command "verison" for agentlab (did you mean "version"?)`, "Run 'agentlab version --help' for usage.", false},
		{[]string{"nothing-like-it"}, `unknown command "nothing-like-it" for agentlab`, "Run 'agentlab --help' for usage.", false},
		{[]string{"version", "--bogus"}, "unknown flag: --bogus", "Run 'agentlab version --help' for usage.", false},
		{[]string{"version", "extra"}, `agentlab version takes no arguments, got "extra"`, "Run 'agentlab version --help' for usage.", false},
		{[]string{"report", "diff", "only-one.json"}, "agentlab report diff takes 2 arguments, got 1", "Run 'agentlab report diff --help' for usage.", false},
		{[]string{"report"}, "--from is required", "Run 'agentlab report --help' for usage.", false},
		{[]string{"report", "--from", "x.json", "--format", "pdf"}, `--format: unknown report format "pdf"`, "", false},
		{[]string{"report", "dif"}, `unknown command "dif" for agentlab report (did you mean "diff"?)`, "Run 'agentlab report diff --help' for usage.", false},
		{[]string{"vdevice", "strt"}, `unknown command "strt" for agentlab vdevice (did you mean "start"?)`, "", false},
		{[]string{"--log-level", "loud", "version"}, `--log-level "loud": want debug, info, warn or error`, "", false},
		{[]string{"--config", bad, "doctor"}, bad + ":3:5: devices.virtual.count: must be between 0 and 64, got -1", "", false},
	}
	for _, tc := range cases {
		r := runCLI(t, tc.args...)
		if r.code != ExitUsage {
			t.Errorf("%v: exit %d, want %d (stderr %q)", tc.args, r.code, ExitUsage, r.stderr)
		}
		if !strings.Contains(r.stderr, tc.msg) {
			t.Errorf("%v: stderr %q, want %q", tc.args, r.stderr, tc.msg)
		}
		if !strings.Contains(r.stderr, "Run '") || (tc.hint != "" && !strings.Contains(r.stderr, tc.hint)) {
			t.Errorf("%v: stderr %q lacks the hint %q", tc.args, r.stderr, tc.hint)
		}
		if r.stdout != "" && !tc.wantStdout {
			t.Errorf("%v: stdout %q", tc.args, r.stdout)
		}
	}
}

func TestRunExitCodes(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Run(context.Background(), []string{"version"}, IO{Stdout: &out, Stderr: &errb}); code != 0 || !strings.HasPrefix(out.String(), "agentlab ") {
		t.Errorf("version: %d %q %q", code, out.String(), errb.String())
	}
	if code := Run(context.Background(), []string{"nope"}, IO{Stderr: &errb}); code != ExitUsage {
		t.Errorf("unknown command: %d", code)
	}
	var w bytes.Buffer
	if code := report(&w, nil, exitWith(7, errors.New("boom"))); code != 7 || w.String() != "agentlab: boom\n" {
		t.Errorf("exitWith: %d %q", code, w.String())
	}
	w.Reset()
	if code := report(&w, nil, errors.New("plain")); code != ExitFailed || w.String() != "agentlab: plain\n" {
		t.Errorf("plain error: %d %q", code, w.String())
	}
}

func TestVersionJSON(t *testing.T) {
	r := runCLI(t, "version", "--json")
	var v struct{ Version, Go, OS, Arch string }
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || r.code != 0 || v.Version == "" || v.Go == "" {
		t.Fatalf("version --json: %d %q %v", r.code, r.stdout, err)
	}
}

func sampleRun(verdicts map[string]reports.Verdict) *reports.Run {
	start := time.Date(2026, 9, 1, 2, 0, 0, 0, time.UTC)
	run := &reports.Run{
		SchemaVersion: reports.SchemaVersion, RunID: "run-1", StartedAt: start, FinishedAt: start.Add(time.Minute),
		LabVersion: "test", ConfigDigest: "sha256:00", Host: "lab",
		Model:   reports.Model{Kind: reports.ModelStub},
		Devices: []reports.Device{{Serial: "127.0.0.1:1", Name: "vdev-1", Kind: reports.DeviceVirtual, Model: "v", APILevel: 35, ABI: "x86_64", RootMethod: "magisk", Health: []reports.HealthRecord{}, Timeline: []reports.Event{}}},
	}
	for name, v := range verdicts {
		ok := v == reports.VerdictPass
		att := reports.Attempt{Number: 1, Device: "127.0.0.1:1", Verdict: v, StartedAt: start, FinishedAt: start.Add(time.Second),
			Checks: []reports.Check{{Name: "works", OK: ok}}, Artifacts: []reports.Artifact{}}
		run.Scenarios = append(run.Scenarios, reports.Scenario{Name: name, File: name + ".yaml", Tags: []string{}, Devices: []string{"127.0.0.1:1"},
			Verdict: v, DurationMs: 1000, Attempts: []reports.Attempt{att}, Checks: att.Checks, Artifacts: []reports.Artifact{}})
	}
	return run
}

func writeRun(t *testing.T, dir string, run *reports.Run) string {
	t.Helper()
	if err := reports.Write(dir, run, reports.FormatJSON); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, reports.FormatJSON.FileName())
}

func TestReport(t *testing.T) {
	dir := t.TempDir()
	from := writeRun(t, dir, sampleRun(map[string]reports.Verdict{"a": reports.VerdictPass, "b": reports.VerdictFail}))
	out := filepath.Join(dir, "rendered")
	r := runCLI(t, "report", "--from", from, "--format", "html,junit,md,console", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	for _, f := range []reports.Format{reports.FormatHTML, reports.FormatJUnit, reports.FormatMarkdown} {
		if _, err := os.Stat(filepath.Join(out, f.FileName())); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, reports.FormatConsole.FileName())); err == nil {
		t.Error("console was written as a file; it belongs on stdout")
	}
	if !strings.Contains(r.stdout, "b") || !strings.Contains(r.stdout, "fail") {
		t.Errorf("console output lacks the failing scenario:\n%s", r.stdout)
	}
	// Without --out the files go next to results.json.
	if r := runCLI(t, "report", "--from", from, "--format", "upstream"); r.code != 0 || !fileExists(filepath.Join(dir, reports.FormatUpstream.FileName())) {
		t.Errorf("report next to results.json: %d %s", r.code, r.stderr)
	}
	if r := runCLI(t, "report", "--from", filepath.Join(dir, "missing.json")); r.code != ExitFailed {
		t.Errorf("missing results: exit %d", r.code)
	}
}

// TestReportDiff: report diff lists the changes and exits 1 exactly when
// the new run has new failures — an added scenario that fails included —
// and 0 otherwise.
func TestReportDiff(t *testing.T) {
	dir := t.TempDir()
	old := writeRun(t, filepath.Join(dir, "old"), sampleRun(map[string]reports.Verdict{"a": reports.VerdictPass, "b": reports.VerdictFail, "c": reports.VerdictFail}))
	cur := writeRun(t, filepath.Join(dir, "new"), sampleRun(map[string]reports.Verdict{"a": reports.VerdictFail, "b": reports.VerdictPass, "c": reports.VerdictFail, "d": reports.VerdictFlaky}))
	added := writeRun(t, filepath.Join(dir, "added"), sampleRun(map[string]reports.Verdict{"a": reports.VerdictPass, "b": reports.VerdictFail, "c": reports.VerdictFail, "e": reports.VerdictFail}))
	fixed := writeRun(t, filepath.Join(dir, "fixed"), sampleRun(map[string]reports.Verdict{"a": reports.VerdictPass, "b": reports.VerdictPass, "c": reports.VerdictFail, "f": reports.VerdictPass}))

	r := runCLI(t, "report", "diff", old, cur, "--format", "json")
	require.Equal(t, ExitFailed, r.code, "a new failure exits 1: %s", r.stderr)
	assert.Contains(t, r.stderr, "has 1 new failure")
	var d reports.RunDiff
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d))
	names := func(vs []reports.VerdictChange) (out []string) {
		for _, v := range vs {
			out = append(out, v.Scenario)
		}
		return out
	}
	assert.Equal(t, []string{"a"}, names(d.NewFailures))
	assert.Equal(t, []string{"b"}, names(d.Fixed))
	assert.Equal(t, []string{"c"}, names(d.StillFailing))
	if r := runCLI(t, "report", "diff", old, cur); r.code != ExitFailed || !strings.Contains(r.stdout, "## New failures (1)") {
		t.Errorf("text diff: %d %q", r.code, r.stdout)
	}

	// An added scenario that fails is a new failure.
	r = runCLI(t, "--json", "report", "diff", old, added)
	assert.Equal(t, ExitFailed, r.code)
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &d))
	assert.Equal(t, []string{"e"}, names(d.NewFailures))
	// Fixes and passing additions exit 0; so does a run compared with itself.
	for _, newer := range []string{fixed, old} {
		if r := runCLI(t, "report", "diff", old, newer); r.code != 0 {
			t.Errorf("diff %s: exit %d, want 0: %s", newer, r.code, r.stderr)
		}
	}
	if r := runCLI(t, "report", "diff", old, cur, "--format", "pdf"); r.code != ExitUsage {
		t.Errorf("bad format: exit %d", r.code)
	}
}

// TestReportMerge: report merge writes every format of the merged run,
// copies each shard's artifacts, exits with the merged run's code, and
// refuses shards that do not make one run.
func TestReportMerge(t *testing.T) {
	dir := t.TempDir()
	shard := func(i int, verdicts map[string]reports.Verdict) string {
		run := sampleRun(verdicts)
		run.RunID = fmt.Sprintf("run-%d", i)
		run.Selection.ShardIndex, run.Selection.ShardCount = i, 2
		sd := filepath.Join(dir, fmt.Sprintf("shard-%d", i))
		for j := range run.Scenarios {
			s := &run.Scenarios[j]
			path := "artifacts/" + s.Name + "/attempt-1/runtime.log"
			require.NoError(t, os.MkdirAll(filepath.Join(sd, filepath.Dir(path)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(sd, path), []byte("log of "+s.Name), 0o644))
			s.Artifacts = []reports.Artifact{{Path: path, Kind: reports.ArtifactLog, Size: int64(len("log of " + s.Name)), SHA256: strings.Repeat("0", 64)}}
		}
		return writeRun(t, sd, run)
	}
	s0 := shard(0, map[string]reports.Verdict{"a": reports.VerdictPass, "b": reports.VerdictFail})
	s1 := shard(1, map[string]reports.Verdict{"c": reports.VerdictPass})
	out := filepath.Join(dir, "merged")

	r := runCLI(t, "report", "merge", out, s0, s1)
	assert.Equal(t, reports.ExitFailures, r.code, "b failed: %s", r.stderr)
	merged, err := reports.Load(filepath.Join(out, "results.json"))
	require.NoError(t, err)
	got := map[string]reports.Verdict{}
	for _, s := range merged.Scenarios {
		got[s.Name] = s.Verdict
	}
	assert.Equal(t, map[string]reports.Verdict{"a": reports.VerdictPass, "b": reports.VerdictFail, "c": reports.VerdictPass}, got)
	for _, f := range reports.Formats() {
		assert.FileExists(t, filepath.Join(out, f.FileName()))
	}
	b, err := os.ReadFile(filepath.Join(out, "artifacts/c/attempt-1/runtime.log"))
	require.NoError(t, err, "shard 1's artifact copied")
	assert.Equal(t, "log of c", string(b))
	assert.Contains(t, r.stdout, "b")

	r = runCLI(t, "--json", "report", "merge", filepath.Join(dir, "merged-json"), s0, s1)
	var js struct {
		RunID   string
		Summary reports.Summary
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &js), r.stdout)
	assert.Equal(t, "run-0+run-1", js.RunID)
	assert.Equal(t, 3, js.Summary.Total)

	// One shard of two is not a run.
	r = runCLI(t, "report", "merge", filepath.Join(dir, "half"), s0)
	assert.Equal(t, ExitUsage, r.code)
	assert.Contains(t, r.stderr, "shard 1/2 missing")
	r = runCLI(t, "report", "merge", out)
	assert.Equal(t, ExitUsage, r.code)
	assert.Contains(t, r.stderr, "takes OUT and at least one results.json")
}

func TestBridgeExitCodes(t *testing.T) {
	state := filepath.Join(t.TempDir(), "bridge.json")
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cases := []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"bridge", "--state", state, "--connect", addr}, 3, "agentlab bridge: not paired with tcp:" + addr},
		{[]string{"bridge", "--state", state, "--connect", addr, "pair", "123456"}, 5, "agentlab bridge: the phone is not listening"},
		{[]string{"bridge", "--state", state, "--connect", addr, "pair"}, 2, "takes 1 argument,"},
		{[]string{"bridge", "--state", state, "--connect", "nonsense", "pair", "1"}, 2, "want host:port or unix:<path>"},
		{[]string{"bridge", "--state", state, "--connect", addr, "unpair", "-q"}, 0, ""},
		{[]string{"bridge", "--state", state, "--connect", addr, "code", "--pair"}, 2, "agentlab bridge: code takes the code over adb"},
	}
	for _, tc := range cases {
		r := runCLIWith(t, func(a *app) { a.lookupEnv = func(string) (string, bool) { return "", false } }, tc.args...)
		if r.code != tc.code || !strings.Contains(r.stderr, tc.msg) || r.stdout != "" {
			t.Errorf("%v: exit %d stderr %q stdout %q; want %d %q", tc.args, r.code, r.stderr, r.stdout, tc.code, tc.msg)
		}
	}
}

func TestDevicesWithoutDevices(t *testing.T) {
	dir := t.TempDir()
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(dir, "lab.yaml")
	os.WriteFile(cfg, []byte("stateDir: "+dir+"\ndevices:\n  adb:\n    - server: "+dead+"\n  virtual: {count: 2}\n  emulators:\n    - avd: {name: pixel}\n"), 0o644)
	r := runCLI(t, "--config", cfg, "devices", "--json")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	var rows []struct{ Source, Name, State, Runtime string }
	if err := json.Unmarshal([]byte(r.stdout), &rows); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, row := range rows {
		state := row.State
		if strings.HasPrefix(state, "unreachable: ") {
			state = "unreachable: …"
		}
		got = append(got, row.Source+"|"+row.Name+"|"+state)
	}
	want := []string{"adb:" + dead + "||unreachable: …", "virtual|vdev-1|not created (agentlab run starts it)",
		"virtual|vdev-2|not created (agentlab run starts it)", "avd|pixel|configured ×1 (agentlab does not start emulators yet: start it and name its adb server)"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	text := runCLI(t, "--config", cfg, "devices")
	if text.code != 0 || !strings.Contains(text.stdout, "SOURCE") || !strings.Contains(text.stdout, "vdev-2") {
		t.Errorf("table: %d\n%s", text.code, text.stdout)
	}
	// Nothing to provision is a failure that says where to look.
	p := runCLI(t, "--config", cfg, "provision")
	if p.code != ExitFailed || !strings.Contains(p.stderr, "no device to provision") {
		t.Errorf("provision without devices: %d %q", p.code, p.stderr)
	}
	if p := runCLI(t, "--config", cfg, "provision", "--start", "sideways"); p.code != ExitUsage {
		t.Errorf("bad --start: %d", p.code)
	}
}

func TestBuildVersion(t *testing.T) {
	old := version
	defer func() { version = old }()
	version = "1.2.3 beta/x"
	if v := buildVersion(); v != "1.2.3-beta-x" {
		t.Errorf("buildVersion = %q", v)
	}
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
