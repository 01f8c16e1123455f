package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/lab/config"
)

// TestDoctorOnThisMachine runs the real checks. Go is here (the test runs
// under it); the exit code must follow whether a required check failed.
func TestDoctorOnThisMachine(t *testing.T) {
	r := runCLI(t, "doctor", "--json")
	var checks []check
	if err := json.Unmarshal([]byte(r.stdout), &checks); err != nil {
		t.Fatalf("doctor --json: %v\n%s", err, r.stdout)
	}
	byName := map[string]check{}
	wantCode := 0
	for _, c := range checks {
		byName[c.Name] = c
		if !c.OK && c.Fix == "" {
			t.Errorf("%s is not ok and has no fix", c.Name)
		}
		if c.Required && !c.OK {
			wantCode = ExitFailed
		}
	}
	if r.code != wantCode {
		t.Errorf("exit %d, want %d: %s", r.code, wantCode, r.stderr)
	}
	if !byName["go"].OK {
		t.Errorf("go check failed while running under go: %+v", byName["go"])
	}
	for _, name := range []string{"go", "adb", "root", "namespaces", "busybox", "docker", "android-sdk", "node", "chromium"} {
		if _, ok := byName[name]; !ok {
			t.Errorf("no %s check", name)
		}
	}
	if os.Geteuid() == 0 && !byName["root"].OK {
		t.Error("root check failed as root")
	}
	if !byName["root"].Required || !byName["namespaces"].Required || byName["docker"].Required {
		t.Error("the default run (virtual devices) requires root and namespaces, not docker")
	}
	text := runCLI(t, "doctor")
	if !strings.Contains(text.stdout, "CHECK") || text.code != r.code {
		t.Errorf("text doctor: %d\n%s", text.code, text.stdout)
	}
}

func fakeEnv(have map[string]bool) *doctorEnv {
	return &doctorEnv{
		lookPath: func(n string) (string, error) {
			if have[n] {
				return "/usr/bin/" + n, nil
			}
			return "", errors.New("not found")
		},
		output: func(ctx context.Context, name string, args ...string) (string, error) {
			switch name {
			case "go":
				if have["old-go"] {
					return "go1.21.0\n", nil
				}
				return "go1.26.8\n", nil
			case "adb":
				return "Android Debug Bridge version 1.0.41\nVersion 29.0.6-debian\n", nil
			case "node":
				return "v20.1.0\n", nil
			case "docker":
				return "", errors.New("exit 1")
			}
			return "", errors.New("unexpected")
		},
		euid: func() int {
			if have["root"] {
				return 0
			}
			return 1000
		},
		getenv:    func(string) string { return "" },
		lookupEnv: func(k string) (string, bool) { return "", false },
		stat:      func(string) error { return os.ErrNotExist },
		namespaces: func() error {
			if have["root"] {
				return nil
			}
			return errors.New("operation not permitted")
		},
	}
}

func TestDoctorMissing(t *testing.T) {
	env := fakeEnv(map[string]bool{"go": true, "docker": true})
	r := runCLIWith(t, func(a *app) { a.doctor = env }, "doctor")
	if r.code != ExitFailed {
		t.Errorf("exit %d, want 1", r.code)
	}
	for _, want := range []string{
		"│ adb " + pad("adb") + "│ MISSING ", "apt-get install -y adb",
		"│ root " + pad("root") + "│ MISSING ", "sudo -E agentlab",
		"│ namespaces " + pad("namespaces") + "│ MISSING ", "docker run --privileged",
		"│ busybox " + pad("busybox") + "│ optional ", "apt-get install -y busybox-static",
		"│ docker " + pad("docker") + "│ optional ", "engine not reachable",
		"│ node " + pad("node") + "│ optional ", "apt-get install -y nodejs npm",
		"│ chromium " + pad("chromium") + "│ optional ", "apt-get install -y chromium",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(r.stderr, "missing: adb, root, namespaces") {
		t.Errorf("stderr %q", r.stderr)
	}

	old := fakeEnv(map[string]bool{"go": true, "old-go": true, "adb": true, "root": true})
	if c := diagnose(context.Background(), *old, config.Default()); c[0].OK || !strings.Contains(c[0].Found, "older than go1.26") {
		t.Errorf("old go: %+v", c[0])
	}
}

// TestDoctorFollowsConfig: what is required depends on lab.yaml.
func TestDoctorFollowsConfig(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "lab.yaml")
	os.WriteFile(cfgPath, []byte(`devices:
  adb:
    - server: 127.0.0.1:5037
  emulators:
    - container: {image: x}
model:
  mode: live
  provider: openai
  model: m
  keyEnv: DOCTOR_TEST_KEY
`), 0o644)
	env := fakeEnv(map[string]bool{"go": true, "adb": true, "docker": true})
	r := runCLIWith(t, func(a *app) { a.doctor = env }, "--config", cfgPath, "doctor", "--json")
	var checks []check
	if err := json.Unmarshal([]byte(r.stdout), &checks); err != nil {
		t.Fatal(err)
	}
	req := map[string]bool{}
	for _, c := range checks {
		req[c.Name] = c.Required
	}
	if req["root"] || req["namespaces"] || !req["docker"] || !req["model-key"] {
		t.Errorf("required = %v: want docker and the model key, not root", req)
	}
	if r.code != ExitFailed {
		t.Errorf("docker unreachable and key unset: exit %d", r.code)
	}
	text := runCLIWith(t, func(a *app) { a.doctor = env }, "--config", cfgPath, "doctor")
	if !strings.Contains(text.stdout, "export DOCTOR_TEST_KEY=<your key>") {
		t.Errorf("no key fix:\n%s", text.stdout)
	}
}

func TestVersionAtLeast(t *testing.T) {
	for _, tc := range []struct {
		have, want string
		ok         bool
	}{{"1.26", "1.26", true}, {"1.27", "1.26", true}, {"2.0", "1.26", true}, {"1.25", "1.26", false}, {"20.1.0", "20", true}, {"18.2.0", "20", false}} {
		if versionAtLeast(tc.have, tc.want) != tc.ok {
			t.Errorf("versionAtLeast(%s, %s) != %v", tc.have, tc.want, tc.ok)
		}
	}
}

// pad fills a doctor table's first column to its width (android-sdk, the
// longest check name).
func pad(name string) string { return strings.Repeat(" ", len("android-sdk")-len(name)) }
