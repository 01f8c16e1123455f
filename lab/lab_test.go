package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/adb/adbtest"
	"github.com/agentoslab/agentlab/lab/build"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/runner"
	"github.com/agentoslab/agentlab/lab/testsite"
	"github.com/agentoslab/agentlab/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// labYAML writes a lab.yaml with these extra lines over a state folder, an
// output folder and a one-scenario suite of the test's own.
func labYAML(t *testing.T, extra string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	suite := filepath.Join(dir, "suite")
	require.NoError(t, os.MkdirAll(suite, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(suite, "a.yaml"), []byte("name: area/a\ntags: [smoke]\nsteps: [{sleep: 1s}]\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(suite, "b.yaml"), []byte("name: area/b\ntags: [slow]\nsteps: [{sleep: 1s}]\n"), 0o644))
	body := fmt.Sprintf("stateDir: %s/state\noutput: %s/out\nscenarios: [%s]\n%s", dir, dir, suite, extra)
	cfg, err := config.Parse(strings.NewReader(body), filepath.Join(dir, "lab.yaml"), &config.Options{LookupEnv: func(string) (string, bool) { return "", false }})
	require.NoError(t, err)
	return cfg
}

func deadAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestExitCode pins agentlab run's exit codes for what Run returns.
func TestExitCode(t *testing.T) {
	failed := &reports.Run{Scenarios: []reports.Scenario{{Name: "a", Verdict: reports.VerdictFail}}}
	passed := &reports.Run{Scenarios: []reports.Scenario{{Name: "a", Verdict: reports.VerdictPass}}}
	cases := []struct {
		run  *reports.Run
		err  error
		want int
	}{
		{passed, nil, reports.ExitOK},
		{failed, nil, reports.ExitFailures},
		{nil, &Error{Kind: ErrConfig, Err: errors.New("x")}, reports.ExitUsage},
		{nil, labFault("no device answered"), reports.ExitLabFaults},
		{passed, &Error{Kind: ErrLeaked, Err: errors.New("x")}, reports.ExitFailures},
		{nil, context.Canceled, reports.ExitFailures},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, ExitCode(tc.run, tc.err), "%v", tc.err)
	}
}

// TestPlanErrors: what cannot run is a configuration error before any
// device is touched.
func TestPlanErrors(t *testing.T) {
	cfg := labYAML(t, "")
	cases := map[string]Selection{
		"no scenario named area/c (did you mean area/a, area/b?)":               {Names: []string{"area/c"}},
		"the selection matches no scenario (2 scenarios in the suite)":          {Tags: []string{"nightly"}},
		"--repeat and --until-fail reproduce one scenario; the selection has 2": {},
	}
	for want, sel := range cases {
		_, err := Run(context.Background(), cfg, sel, &Options{Repeat: 3})
		require.ErrorIs(t, err, ErrConfig)
		assert.Contains(t, err.Error(), want)
	}
	live := labYAML(t, "model: {mode: live, provider: openai, model: m, keyEnv: LAB_TEST_KEY}\n")
	_, err := Run(context.Background(), live, Selection{Tags: []string{"smoke"}}, &Options{LookupEnv: func(string) (string, bool) { return "", false }})
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "LAB_TEST_KEY")
}

// TestNoDeviceAnswered: a run whose adb server's include admits none of
// its devices is a lab fault that lists what the server has; one whose
// server does not answer says so.
func TestNoDeviceAnswered(t *testing.T) {
	srv, err := adbtest.NewServer()
	require.NoError(t, err)
	defer srv.Close()
	srv.AddDevice(&adbtest.Device{Serial: "emulator-5554"})
	srv.AddDevice(&adbtest.Device{Serial: "R5CT0001", State: "unauthorized"})
	dead := deadAddr(t)
	cfg := labYAML(t, fmt.Sprintf("devices:\n  adb:\n    - {server: %q, include: [\"R9*\"]}\n    - {server: %q}\n", srv.Addr(), dead))

	var progress bytes.Buffer
	_, err = Run(context.Background(), cfg, Selection{}, &Options{Progress: &progress})
	require.ErrorIs(t, err, ErrLabFault)
	assert.Equal(t, reports.ExitLabFaults, ExitCode(nil, err))
	assert.Contains(t, err.Error(), "no device answered")
	assert.Contains(t, err.Error(), "adb:"+srv.Addr()+": include [R9*] admits none of: R5CT0001 (unauthorized), emulator-5554 (device)")
	assert.Contains(t, err.Error(), "adb:"+dead+": unreachable")

	inv, err := OpenInventory(context.Background(), cfg, nil)
	require.NoError(t, err)
	defer inv.Close()
	var states []string
	for _, d := range inv.Devices {
		states = append(states, d.Source+"|"+d.Serial+"|"+d.State)
	}
	assert.Equal(t, []string{
		"adb:" + srv.Addr() + "||include [R9*] admits none of: R5CT0001 (unauthorized), emulator-5554 (device)",
		"adb:" + dead + "||" + inv.Devices[1].State,
	}, states)
	assert.Empty(t, inv.Usable())
}

// TestInventoryAdmits: the devices an adb server's patterns admit are
// listed with their state, those they do not are left out.
func TestInventoryAdmits(t *testing.T) {
	srv, err := adbtest.NewServer()
	require.NoError(t, err)
	defer srv.Close()
	srv.AddDevice(&adbtest.Device{Serial: "R5CT0001"})
	srv.AddDevice(&adbtest.Device{Serial: "R5CT0002", State: "offline"})
	srv.AddDevice(&adbtest.Device{Serial: "emulator-5554"})
	cfg := labYAML(t, fmt.Sprintf("devices:\n  adb:\n    - {server: %q, include: [\"R5C*\"]}\n  emulators:\n    - avd: {name: pixel}\n", srv.Addr()))
	inv, err := OpenInventory(context.Background(), cfg, nil)
	require.NoError(t, err)
	defer inv.Close()
	var got []string
	for _, d := range inv.Devices {
		got = append(got, d.Source+"|"+d.Serial+d.Name+"|"+d.State)
	}
	assert.Equal(t, []string{
		"adb:" + srv.Addr() + "|R5CT0001|device",
		"adb:" + srv.Addr() + "|R5CT0002|offline",
		"avd|pixel|configured ×1 (agentlab does not start emulators yet: start it and name its adb server)",
	}, got)
	require.Len(t, inv.Usable(), 1)
	assert.Equal(t, "R5CT0001", inv.Usable()[0].Serial)
}

// TestProvisioningMapping: the one mapping from lab.yaml to provisioning,
// whichever command provisions: apps, plugins ("none" is none), desktop,
// the readiness timeout, and the model — a stub token per device, bound
// on the stub, or the live provider with its key from the environment.
func TestProvisioningMapping(t *testing.T) {
	cfg := labYAML(t, "provision: {apps: [notes], plugins: [none], desktop: false}\ntimeouts: {health: 7s}\n")
	p, err := newProvisioning(cfg, (&Options{}).orDefault(), &ProvisionOptions{Desktop: true, Start: "service"})
	require.NoError(t, err)
	defer p.close()
	a, b := &Device{Serial: "a"}, &Device{Serial: "b"}
	oa, ob := p.options(a), p.options(b)
	assert.Equal(t, []string{"notes"}, oa.Apps)
	assert.NotNil(t, oa.Plugins)
	assert.Empty(t, oa.Plugins, `plugins: [none] enables none`)
	assert.True(t, oa.Desktop, "--desktop turns desktop access on")
	assert.EqualValues(t, "service", oa.Start)
	assert.Equal(t, 14*time.Second, oa.ReadyTimeout)
	require.NotNil(t, oa.Model.Stub)
	require.NotNil(t, ob.Model.Stub)
	assert.Nil(t, oa.Model.Live)
	assert.NotEqual(t, oa.Model.Stub.Token, ob.Model.Stub.Token, "each device has a token of its own")
	assert.Equal(t, a.token, oa.Model.Stub.Token, "the device keeps its token for the run")
	assert.Equal(t, p.stub.Port(), oa.Model.Stub.Port)
	assert.Equal(t, oa.Model.Stub.Token, p.options(a).Model.Stub.Token, "asking again keeps the token")
	require.NotNil(t, oa.Site, "every device gets the test site")
	assert.Equal(t, p.site.Port(), oa.Site.Port)
	resp, err := http.Get(p.site.URL() + "/page/a")
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "Alpha is the first page", "the site the devices are given answers")
	assert.Contains(t, labHosts, testsite.DeviceHost, "virtual devices resolve the site by name")

	cfg = labYAML(t, "model: {mode: live, provider: openai, baseUrl: \"https://example.com/v1\", model: m1, keyEnv: LAB_TEST_KEY}\nprovision: {plugins: [notes]}\n")
	env := func(k string) (string, bool) {
		if k == "LAB_TEST_KEY" {
			return "sk-test", true
		}
		return "", false
	}
	p, err = newProvisioning(cfg, (&Options{LookupEnv: env}).orDefault(), nil)
	require.NoError(t, err)
	defer p.close()
	o := p.options(a)
	assert.Nil(t, p.stub, "a live run starts no stub")
	assert.NotNil(t, o.Site, "a live run serves the test site too")
	require.NotNil(t, o.Model.Live)
	assert.Equal(t, "sk-test", o.Model.Live.Key)
	assert.Equal(t, "m1", o.Model.Live.Model)
	assert.Equal(t, "https://example.com/v1", o.Model.Live.BaseURL)
	assert.Equal(t, []string{"notes"}, o.Plugins)
	assert.False(t, o.Desktop)

	_, err = newProvisioning(cfg, (&Options{LookupEnv: func(string) (string, bool) { return "", false }}).orDefault(), nil)
	assert.ErrorIs(t, err, ErrConfig)
}

// TestProvisioningRecord: a record run starts a recording stub holding
// the key, and points every runtime at it in the provider's dialect with
// the live model id — never with the key.
func TestProvisioningRecord(t *testing.T) {
	cfg := labYAML(t, "model: {mode: record, provider: anthropic, model: m2, keyEnv: LAB_TEST_KEY}\n")
	env := func(k string) (string, bool) { return "sk-rec-test", k == "LAB_TEST_KEY" }
	p, err := newProvisioning(cfg, (&Options{LookupEnv: env}).orDefault(), nil)
	require.NoError(t, err)
	defer p.close()
	o := p.options(&Device{Serial: "a"})
	require.NotNil(t, p.stub)
	assert.Nil(t, o.Model.Live, "the runtime never gets the live key")
	require.NotNil(t, o.Model.Stub)
	assert.Equal(t, "anthropic", o.Model.Stub.Provider)
	assert.Equal(t, "m2", o.Model.Stub.Model)
	_, _, err = p.stub.Recording(context.Background(), o.Model.Stub.Token)
	assert.NoError(t, err, "the stub records the bound token")
}

// TestPrebuiltNextToExecutable: outside the source tree, a released
// agentlab finds the artifacts.json beside it; inside the tree it builds;
// --prebuilt wins everywhere.
func TestPrebuiltNextToExecutable(t *testing.T) {
	release := t.TempDir()
	exe := filepath.Join(release, "agentlab")
	require.NoError(t, os.WriteFile(exe, nil, 0o755))
	old := executable
	executable = func() (string, error) { return exe, nil }
	t.Cleanup(func() { executable = old })

	tree, err := build.FindSource(".")
	require.NoError(t, err, "the test runs in the source tree")
	t.Chdir(t.TempDir()) // outside it

	got, err := prebuiltDir("")
	require.NoError(t, err)
	assert.Empty(t, got, "no artifacts.json beside agentlab: nothing prebuilt")
	require.NoError(t, os.WriteFile(filepath.Join(release, build.ManifestFile), []byte("{}"), 0o644))
	got, err = prebuiltDir("")
	require.NoError(t, err)
	assert.Equal(t, release, got)
	got, _ = prebuiltDir("/elsewhere")
	assert.Equal(t, "/elsewhere", got)

	t.Chdir(tree)
	got, err = prebuiltDir("")
	require.NoError(t, err)
	assert.Empty(t, got, "in the source tree the lab builds")
}

// TestBuildOutsideTheTree: without a source tree and without prebuilt
// artifacts, Build is a configuration error that says what to give.
func TestBuildOutsideTheTree(t *testing.T) {
	old := executable
	executable = func() (string, error) { return filepath.Join(t.TempDir(), "agentlab"), nil }
	t.Cleanup(func() { executable = old })
	t.Chdir(t.TempDir())
	cfg := labYAML(t, "build: {abis: [x86_64]}\ndevices: {virtual: {count: 2}}\n")
	_, err := Build(context.Background(), cfg, nil, nil)
	require.ErrorIs(t, err, ErrConfig)
	assert.Contains(t, err.Error(), "--prebuilt DIR")
	// A run says so before it starts a device.
	_, err = Run(context.Background(), cfg, Selection{Tags: []string{"smoke"}}, nil)
	require.ErrorIs(t, err, ErrConfig)
	assert.Equal(t, reports.ExitUsage, ExitCode(nil, err))
	infos, _ := os.ReadDir(cfg.VirtualStateDir())
	assert.Empty(t, infos, "no virtual device was started")
}

// TestRecordKeyScanned: a record run's key is a secret of the run, so a
// recording that held it would fail the run's leak scan.
func TestRecordKeyScanned(t *testing.T) {
	dir := t.TempDir()
	cfg := labYAML(t, "model: {mode: record, provider: openai, model: m, keyEnv: LAB_TEST_KEY}\n")
	cfg.Output = dir
	const key = "sk-record-0123456789"
	r := &run{cfg: cfg, o: (&Options{LookupEnv: func(k string) (string, bool) { return key, k == "LAB_TEST_KEY" }}).orDefault(),
		plan: &Plan{}, out: dir, id: "run-test", started: time.Now()}
	require.NoError(t, r.modelKeySecret())
	art := filepath.Join(dir, "artifacts", "s", "attempt-1", "model-script.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(art), 0o755))
	require.NoError(t, os.WriteFile(art, []byte("steps:\n  - text: "+key+"\n"), 0o644))
	out, err := r.report(&runner.Result{})
	require.NoError(t, err)
	require.NotEmpty(t, out.Scenarios)
	leak := out.Scenarios[len(out.Scenarios)-1]
	assert.Equal(t, LeakScenario, leak.Name)
	assert.Contains(t, leak.Reason, "model-script.yaml")

	r.o.LookupEnv = func(string) (string, bool) { return "", false }
	assert.ErrorIs(t, r.modelKeySecret(), ErrConfig, "a record run needs the key")
}

// TestReportLeak: a secret found in an artifact fails the run with a
// lab-level scenario naming the file and the secret, never its value; the
// reports themselves stay clean.
func TestReportLeak(t *testing.T) {
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Output = dir
	cfg.StateDir = filepath.Join(dir, "state")
	var progress bytes.Buffer
	r := &run{cfg: cfg, o: (&Options{Progress: &progress}).orDefault(), plan: &Plan{}, out: dir, id: "run-test", started: time.Now()}
	// The signing key counts as a secret, as PEM and as its base64 body.
	pemKey := "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIOk0dPq1jWZQq5Wbq1aHc0e2pM7x3n0xLQ9H7pQy8f0a\n-----END PRIVATE KEY-----\n"
	require.NoError(t, os.MkdirAll(filepath.Dir(cfg.SigningKeyPath()), 0o700))
	require.NoError(t, os.WriteFile(cfg.SigningKeyPath(), []byte(pemKey), 0o600))
	r.signingKeySecrets()
	const token = "tok-0123456789abcdefghijklmnopqrstuvwxyzABCD"
	r.secret(reports.Secret{Name: "pairing token", Value: []byte(token)})
	require.Len(t, r.secretList(), 3, "token, key PEM, key body")
	art := filepath.Join(dir, "artifacts", "s", "attempt-1", "runtime.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(art), 0o755))
	require.NoError(t, os.WriteFile(art, []byte("paired with "+token+" twice: "+token+"\n"), 0o644))
	res := &runner.Result{Scenarios: []reports.Scenario{{Name: "s", Tags: []string{}, Devices: []string{}, Verdict: reports.VerdictPass,
		Attempts: []reports.Attempt{}, Checks: []reports.Check{}, Artifacts: []reports.Artifact{}}}}
	out, err := r.report(res)
	require.NoError(t, err, "the leak is in an artifact, not in the reports")
	assert.Equal(t, reports.ExitFailures, ExitCode(out, err))
	loaded, err := reports.Load(filepath.Join(dir, "results.json"))
	require.NoError(t, err)
	var leak reports.Scenario
	for _, sc := range loaded.Scenarios {
		if sc.Name == LeakScenario {
			leak = sc
		}
	}
	require.Equal(t, LeakScenario, leak.Name)
	assert.Equal(t, reports.VerdictFail, leak.Verdict)
	require.Len(t, leak.Checks, 1)
	assert.Equal(t, "no pairing token in artifacts/s/attempt-1/runtime.log", leak.Checks[0].Name)
	assert.Contains(t, leak.Checks[0].Detail, "2 times")
	for _, f := range reports.Formats() {
		b, _ := os.ReadFile(filepath.Join(dir, f.FileName()))
		assert.NotContains(t, string(b), "tok-0123", "%s holds the token", f.FileName())
	}
	assert.NotContains(t, progress.String(), "tok-0123")
}

func TestBuildVersion(t *testing.T) {
	assert.Equal(t, "1.2.3-beta-x", BuildVersion("1.2.3 beta/x"))
	assert.Len(t, BuildVersion(strings.Repeat("a", 40)), 32)
}
