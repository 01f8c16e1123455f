package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func env(m map[string]string) *Options {
	return &Options{LookupEnv: func(k string) (string, bool) { v, ok := m[k]; return v, ok }}
}

func parseString(t *testing.T, doc string, vars map[string]string) (*Config, error) {
	t.Helper()
	return Parse(strings.NewReader(doc), "lab.yaml", env(vars))
}

func TestDefault(t *testing.T) {
	c := Default()
	if c.Source != DefaultSource {
		t.Errorf("Source = %q", c.Source)
	}
	if c.Devices.Virtual == nil || c.Devices.Virtual.Count != 2 || c.Devices.Virtual.RootMethod != "magisk" || c.Devices.Virtual.SDK != 35 {
		t.Errorf("virtual = %+v, want two magisk devices at API 35", c.Devices.Virtual)
	}
	if c.Model.Mode != ModelStub {
		t.Errorf("model = %+v, want the stub", c.Model)
	}
	if !slices.Equal(c.Scenarios, []string{"scenarios"}) || c.Tags.Expr != "" || len(c.Tags.Include) != 0 {
		t.Errorf("selection = %v %+v, want the whole suite", c.Scenarios, c.Tags)
	}
	if c.Timeouts.Scenario.D() != 5*time.Minute || c.Retries.Attempts != 2 || c.Shard.Count != 1 || c.Output != "out" {
		t.Errorf("defaults: %+v %+v %+v %q", c.Timeouts, c.Retries, c.Shard, c.Output)
	}
	if c.StateDir == "" || c.SigningKeyPath() != filepath.Join(c.StateDir, "signing.key") {
		t.Errorf("state dir %q, key %q", c.StateDir, c.SigningKeyPath())
	}
	// An empty document is the default.
	e, err := parseString(t, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Digest() == "" || e.Devices.Virtual.Count != 2 {
		t.Errorf("empty document: %+v", e.Devices)
	}
}

func TestExamples(t *testing.T) {
	vars := map[string]string{"SHARD_INDEX": "2", "SHARD_COUNT": "4"}
	files, err := filepath.Glob("testdata/examples/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Parse(strings.NewReader(string(b)), f, env(vars))
			if err != nil {
				t.Fatalf("%v", err)
			}
			if c.Source != f {
				t.Errorf("Source = %q", c.Source)
			}
		})
	}

	b, _ := os.ReadFile("testdata/examples/nightly.yaml")
	c, err := Parse(strings.NewReader(string(b)), "nightly.yaml", env(vars))
	if err != nil {
		t.Fatal(err)
	}
	if c.StateDir != "/var/lib/agentlab" {
		t.Errorf("stateDir default interpolation: %q", c.StateDir)
	}
	if c.Shard != (Shard{Index: 2, Count: 4}) {
		t.Errorf("shard = %+v, want interpolated integers", c.Shard)
	}
	if len(c.Devices.ADB) != 2 || !c.Devices.ADB[0].Admits("R5C999") || c.Devices.ADB[0].Admits("R5CT12345") || c.Devices.ADB[0].Admits("ZZ1") {
		t.Errorf("adb include/exclude: %+v", c.Devices.ADB)
	}
	if c.Devices.Emulators[0].AVD.Count != 2 || c.Devices.Emulators[1].Container.Count != 1 {
		t.Errorf("emulators: %+v %+v", c.Devices.Emulators[0].AVD, c.Devices.Emulators[1].Container)
	}
	sel := c.Pools[0].Selector()
	if sel.ABI != "arm64-v8a" || sel.MinAPI != 35 || sel.MaxAPI != 37 || !slices.Equal(sel.Root, []devices.RootMethod{devices.RootMagisk, devices.RootKernelSU}) || sel.Labels["rack"] != "2" {
		t.Errorf("selector = %+v", sel)
	}
	if c.Model.Mode != ModelLive || c.Model.Provider != "openai" || c.Model.KeyEnv != "NIGHTLY_OPENAI_KEY" {
		t.Errorf("model = %+v", c.Model)
	}
	if !c.Tags.Match([]string{"nightly"}) || c.Tags.Match([]string{"nightly", "slow"}) || c.Tags.Match([]string{"nightly", "manual"}) || c.Tags.Match([]string{"smoke"}) {
		t.Errorf("tags do not select as written: %+v", c.Tags)
	}
	if !c.Artifacts.Keep(false) || c.Artifacts.Screenshot {
		t.Errorf("artifacts = %+v", c.Artifacts)
	}
	if c.Line("model.keyEnv") == 0 || c.Pos("pools[1].abi") != "nightly.yaml:35:5" {
		t.Errorf("lines: keyEnv %d, pools[1].abi %s", c.Line("model.keyEnv"), c.Pos("pools[1].abi"))
	}
}

func TestSectionsReplaceDefaults(t *testing.T) {
	c, err := parseString(t, "devices:\n  adb:\n    - server: 10.0.0.2:5037\ntimeouts:\n  scenario: 90s\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Devices.Virtual != nil {
		t.Errorf("a devices section must replace the default's virtual devices, got %+v", c.Devices.Virtual)
	}
	if c.Timeouts.Scenario.D() != 90*time.Second || c.Timeouts.Provision.D() != DefaultProvisionTimeout {
		t.Errorf("timeouts = %+v, want scenario from the file and the rest defaulted", c.Timeouts)
	}
	if c.Model.Mode != ModelStub || c.Retries.Attempts != 2 {
		t.Errorf("sections not named keep the defaults: %+v %+v", c.Model, c.Retries)
	}
	v, err := parseString(t, "devices:\n  virtual: {count: 3}\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	if *v.Devices.Virtual != (Virtual{Count: 3, SDK: 35, RootMethod: "magisk", TimeZone: "Asia/Shanghai"}) {
		t.Errorf("virtual = %+v", *v.Devices.Virtual)
	}
}

// TestBadFields: every rule, with the message naming file, line and field.
func TestBadFields(t *testing.T) {
	cases := []struct {
		name, doc string
		want      string
	}{
		{"unknown top-level key", "devcies:\n  virtual: {count: 1}\n", `lab.yaml:1:1: devcies: unknown key (did you mean "devices"?)`},
		{"unknown nested key", "devices:\n  virtual:\n    count: 1\n    rootmethod: magisk\n", `lab.yaml:4:5: devices.virtual.rootmethod: unknown key (did you mean "rootMethod"?)`},
		{"unknown key far from any", "output: x\nzzzzzzzz: 1\n", `lab.yaml:2:1: zzzzzzzz: unknown key (known: `},
		{"repeated key", "output: a\noutput: b\n", `lab.yaml:2:1: output: repeated key (first at line 1)`},
		{"key in model", "model:\n  mode: live\n  apiKey: sk-123\n", `lab.yaml:3:3: model.apiKey: lab.yaml never holds a key`},
		{"yaml syntax", "devices:\n  virtual: [\n", `lab.yaml:`},
		{"not a mapping", "- a\n- b\n", `lab.yaml:1:1: want a mapping, got a list`},
		{"count not integer", "devices:\n  virtual:\n    count: two\n", `lab.yaml:3:12: devices.virtual.count: want an integer, got "two"`},
		{"count quoted", "devices:\n  virtual:\n    count: \"2\"\n", `lab.yaml:3:12: devices.virtual.count: want an integer, got "2"`},
		{"count negative", "devices:\n  virtual:\n    count: -1\n", `lab.yaml:3:5: devices.virtual.count: must be between 0 and 64, got -1`},
		{"count huge", "devices:\n  virtual:\n    count: 1000\n", `lab.yaml:3:5: devices.virtual.count: must be between 0 and 64`},
		{"sdk", "devices:\n  virtual:\n    count: 1\n    sdk: 7\n", `lab.yaml:4:5: devices.virtual.sdk: must be an API level between 21 and 99, got 7`},
		{"root method", "devices:\n  virtual:\n    count: 1\n    rootMethod: supersu\n", `lab.yaml:4:5: devices.virtual.rootMethod: must be one of magisk, kernelsu, adb-root, none, got "supersu"`},
		{"time zone", "devices:\n  virtual:\n    count: 1\n    timezone: Mars/Olympus\n", `lab.yaml:4:5: devices.virtual.timezone: must be an IANA time zone (Asia/Shanghai, Europe/Berlin, UTC), got "Mars/Olympus"`},
		{"no source", "devices:\n  virtual:\n    count: 0\n", `lab.yaml:1:1: devices: no device source`},
		{"adb server missing", "devices:\n  adb:\n    - include: [x]\n", `lab.yaml:3:7: devices.adb[0]: server is required`},
		{"adb server bad", "devices:\n  adb:\n    - server: localhost\n", `lab.yaml:3:7: devices.adb[0].server: want host:port, got "localhost"`},
		{"adb port bad", "devices:\n  adb:\n    - server: h:99999\n", `lab.yaml:3:7: devices.adb[0].server: port must be 1-65535`},
		{"adb glob bad", "devices:\n  adb:\n    - server: h:5037\n      include: [\"[\"]\n", `lab.yaml:4:17: devices.adb[0].include[0]: bad glob "["`},
		{"adb not a list", "devices:\n  adb:\n    server: h:1\n", `lab.yaml:3:5: devices.adb: want a list, got a mapping`},
		{"emulator both", "devices:\n  emulators:\n    - avd: {name: a}\n      container: {image: b}\n", `lab.yaml:3:7: devices.emulators[0]: give either avd or container, not both`},
		{"emulator none", "devices:\n  emulators:\n    - {}\n", `lab.yaml:3:7: devices.emulators[0]: give avd:`},
		{"avd name", "devices:\n  emulators:\n    - avd: {name: \"a b\"}\n", `lab.yaml:3:13: devices.emulators[0].avd.name: must be`},
		{"avd image", "devices:\n  emulators:\n    - avd:\n        name: a\n        image: android-35\n", `lab.yaml:5:9: devices.emulators[0].avd.image: want an SDK id`},
		{"avd count", "devices:\n  emulators:\n    - avd:\n        name: a\n        count: 99\n", `lab.yaml:5:9: devices.emulators[0].avd.count: must be between 1 and 16`},
		{"container image", "devices:\n  emulators:\n    - container:\n        count: 1\n", `lab.yaml:3:7: devices.emulators[0].container.image: is required`},
		{"pool name", "pools:\n  - name: Big Pool\n", `lab.yaml:2:5: pools[0].name: must be [a-z0-9-]{1,32}`},
		{"pool duplicate", "pools:\n  - name: a\n  - name: a\n", `lab.yaml:3:5: pools[1].name: "a" is also the name of pools[0]`},
		{"pool abi", "pools:\n  - name: a\n    abi: mips\n", `lab.yaml:3:5: pools[0].abi: must be one of x86_64, arm64-v8a, got "mips"`},
		{"pool api range", "pools:\n  - name: a\n    api: {min: 36, max: 35}\n", `lab.yaml:3:5: pools[0].api: min 36 is above max 35`},
		{"pool root", "pools:\n  - name: a\n    rootMethods: [magisk, apatch]\n", `lab.yaml:3:27: pools[0].rootMethods[1]: must be one of`},
		{"model mode", "model: remote\n", `lab.yaml:1:1: model.mode: must be stub, live, record or chaos, got "remote"`},
		{"model stub with seed", "model:\n  mode: stub\n  seed: 3\n", `lab.yaml:3:3: model.seed: only for mode chaos`},
		{"model chaos with provider", "model:\n  mode: chaos\n  provider: openai\n", `lab.yaml:3:3: model.provider: only for mode live`},
		{"model stub with provider", "model:\n  mode: stub\n  provider: openai\n", `lab.yaml:3:3: model.provider: only for mode live`},
		{"model record provider", "model:\n  mode: record\n  model: m\n  keyEnv: K\n", `lab.yaml:1:1: model.provider: must be openai or anthropic`},
		{"model live provider", "model:\n  mode: live\n  provider: gemini\n  model: m\n  keyEnv: K\n", `lab.yaml:3:3: model.provider: must be openai or anthropic, got "gemini"`},
		{"model live name", "model:\n  mode: live\n  provider: openai\n  keyEnv: K\n", `lab.yaml:1:1: model.model: is required`},
		{"model live keyEnv", "model:\n  mode: live\n  provider: openai\n  model: m\n  keyEnv: sk-abc\n", `lab.yaml:5:3: model.keyEnv: must name the environment variable`},
		{"model live no keyEnv", "model:\n  mode: live\n  provider: openai\n  model: m\n", `lab.yaml:1:1: model.keyEnv: must name the environment variable`},
		{"model baseUrl", "model:\n  mode: live\n  provider: openai\n  model: m\n  keyEnv: K\n  baseUrl: ftp://x\n", `lab.yaml:6:3: model.baseUrl: want an http(s) URL`},
		{"model baseUrl creds", "model:\n  mode: live\n  provider: openai\n  model: m\n  keyEnv: K\n  baseUrl: https://u:p@x\n", `lab.yaml:6:3: model.baseUrl: must not carry credentials`},
		{"parallelism", "parallelism: -2\n", `lab.yaml:1:1: parallelism: must be between 0`},
		{"timeout text", "timeouts:\n  scenario: soon\n", `lab.yaml:2:13: timeouts.scenario: want a duration such as 30s or 5m, got "soon"`},
		{"timeout number", "timeouts:\n  health: 30\n", `lab.yaml:2:11: timeouts.health: want a duration such as 30s or 5m, got "30"`},
		{"timeout negative", "timeouts:\n  provision: -5s\n", `lab.yaml:2:14: timeouts.provision: must be positive`},
		{"attempts", "retries:\n  attempts: 11\n", `lab.yaml:2:3: retries.attempts: must be between 1 and 10, got 11`},
		{"budget", "retries:\n  budget: -1\n", `lab.yaml:2:3: retries.budget: cannot be negative`},
		{"requeues", "retries:\n  labFaultRequeues: -1\n", `lab.yaml:2:3: retries.labFaultRequeues: cannot be negative`},
		{"tag include", "tags:\n  include: [\"a b\"]\n", `lab.yaml:2:13: tags.include[0]: bad tag "a b"`},
		{"tag exclude", "tags:\n  exclude: [\"\"]\n", `lab.yaml:2:13: tags.exclude[0]: bad tag ""`},
		{"tag expr", "tags:\n  expr: \"nightly && (slow\"\n", `lab.yaml:2:3: tags.expr: tag expression "nightly && (slow", column 17: missing )`},
		{"shard count", "shard:\n  count: -1\n", `lab.yaml:2:3: shard.count: must be at least 1`},
		{"shard index", "shard:\n  index: 3\n  count: 3\n", `lab.yaml:2:3: shard.index: must be between 0 and 2 (count - 1), got 3`},
		{"artifacts policy", "artifacts:\n  policy: sometimes\n", `lab.yaml:2:3: artifacts.policy: must be always, on-failure or never`},
		{"artifacts bool", "artifacts:\n  logcat: maybe\n", `lab.yaml:2:11: artifacts.logcat: want true or false, got "maybe"`},
		{"output empty", "output: \" \"\n", `lab.yaml:1:1: output: cannot be empty`},
		{"scenarios empty", "scenarios: [\"\"]\n", `lab.yaml:1:13: scenarios[0]: cannot be empty`},
		{"scenarios scalar", "scenarios: all\n", `lab.yaml:1:12: scenarios: want a list, got "all"`},
		{"build abi", "build:\n  abis: [armeabi]\n", `lab.yaml:2:10: build.abis[0]: must be one of x86_64, arm64-v8a`},
		{"build tag", "build:\n  tags: [\"a b\"]\n", `lab.yaml:2:10: build.tags[0]: want a Go build tag (letters, digits, _ and .), got "a b"`},
		{"provision app", "provision:\n  apps: [\"no tes\"]\n", `lab.yaml:2:10: provision.apps[0]: bad app name`},
		{"provision plugin", "provision:\n  plugins: [\"$$x\"]\n", `lab.yaml:2:13: provision.plugins[0]: bad plugin name "$x"`},
		{"text wanted", "output:\n  dir: x\n", `lab.yaml:2:3: output: want a string, got a mapping`},
		{"unset variable", "output: ${AGENTLAB_TEST_UNSET}\n", `lab.yaml:1:9: ${AGENTLAB_TEST_UNSET}: environment variable not set (export it, or give a default: ${AGENTLAB_TEST_UNSET:-value})`},
		{"bad variable", "output: ${1X}\n", `lab.yaml:1:9: ${1X}: "1X" is not a variable name`},
		{"unterminated variable", "output: ${X\n", `lab.yaml:1:9: unterminated ${`},
		{"labels", "devices:\n  virtual: {count: 1}\n  labels:\n    s1: {\"bad label\": x}\n", `devices.labels.s1.bad label: label names are`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseString(t, tc.doc, nil)
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.doc)
			}
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("error %v does not wrap ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tc.want)
			}
		})
	}
}

func TestEveryProblemReported(t *testing.T) {
	_, err := parseString(t, "retries:\n  attempts: 0\n  budget: -1\nshard:\n  count: 0\n  index: 1\nartifacts:\n  policy: x\n", nil)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v", err, err)
	}
	// attempts 0 means the default; count 0 means 1, so index 1 is out of range.
	var fields []string
	for _, p := range e.Problems {
		fields = append(fields, p.Path)
	}
	want := []string{"retries.budget", "shard.index", "artifacts.policy"}
	if !slices.Equal(fields, want) {
		t.Errorf("problems on %v, want %v:\n%v", fields, want, err)
	}
}

func TestInterpolate(t *testing.T) {
	vars := map[string]string{"A": "alpha", "EMPTY": "", "N": "3"}
	lookup := func(k string) (string, bool) { v, ok := vars[k]; return v, ok }
	cases := []struct{ in, want, err string }{
		{"plain", "plain", ""},
		{"${A}", "alpha", ""},
		{"x-${A}-y", "x-alpha-y", ""},
		{"${A}${N}", "alpha3", ""},
		{"${MISSING:-def}", "def", ""},
		{"${EMPTY:-def}", "def", ""},
		{"${EMPTY}", "", ""},
		{"${A:-def}", "alpha", ""},
		{"${MISSING:-}", "", ""},
		{"${MISSING:-a:-b}", "a:-b", ""},
		{"$$", "$", ""},
		{"$${A}", "${A}", ""},
		{"cost $5", "cost $5", ""},
		{"trailing $", "trailing $", ""},
		{"${MISSING}", "", "${MISSING}: environment variable not set"},
		{"${}", "", `"" is not a variable name`},
		{"${A", "", "unterminated"},
		{"${A B}", "", "is not a variable name"},
	}
	for _, tc := range cases {
		got, err := Interpolate(tc.in, lookup)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("Interpolate(%q) error = %v, want %q", tc.in, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Interpolate(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	_, err := Interpolate("${MISSING}", lookup)
	if !errors.Is(err, ErrUnsetVariable) {
		t.Errorf("error %v does not wrap ErrUnsetVariable", err)
	}
}

func TestInterpolationTypes(t *testing.T) {
	doc := "devices:\n  virtual:\n    count: ${N:-2}\n    stateDir: \"${D}\"\nartifacts:\n  logcat: ${LOGCAT:-false}\noutput: '${N:-7}'\n"
	c, err := parseString(t, doc, map[string]string{"D": "/srv/vd", "N": "5"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Devices.Virtual.Count != 5 || c.Devices.Virtual.StateDir != "/srv/vd" || c.Artifacts.Logcat || c.Output != "5" {
		t.Errorf("got %+v logcat=%v output=%q", c.Devices.Virtual, c.Artifacts.Logcat, c.Output)
	}
	// A variable's value is data, never YAML: it cannot add keys.
	c, err = parseString(t, "output: ${V}\n", map[string]string{"V": "x\nmodel: live"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Output != "x\nmodel: live" || c.Model.Mode != ModelStub {
		t.Errorf("interpolated text was parsed as YAML: %q %+v", c.Output, c.Model)
	}
}

func TestModelKey(t *testing.T) {
	c, err := parseString(t, "model:\n  mode: live\n  provider: anthropic\n  model: m\n  keyEnv: LAB_KEY\n", nil)
	if err != nil {
		t.Fatal(err)
	}
	k, err := c.Model.Key(func(n string) (string, bool) { return map[string]string{"LAB_KEY": "sk-secret"}[n], n == "LAB_KEY" })
	if err != nil || k != "sk-secret" {
		t.Errorf("Key = %q, %v", k, err)
	}
	_, err = c.Model.Key(func(string) (string, bool) { return "", false })
	if !errors.Is(err, ErrNoKey) || !strings.Contains(err.Error(), "$LAB_KEY") {
		t.Errorf("unset key: %v", err)
	}
	if _, err := Default().Model.Key(nil); err == nil {
		t.Error("the stub has no key")
	}
	if strings.Contains(c.Digest(), "sk-") {
		t.Error("digest")
	}
}

// TestModelRecord: record takes the live settings and the live key; a
// Key that only accepted "live" would leave record runs without a key.
func TestModelRecord(t *testing.T) {
	c, err := parseString(t, "model:\n  mode: record\n  provider: openai\n  model: m\n  keyEnv: LAB_KEY\n", nil)
	require.NoError(t, err)
	assert.True(t, c.Model.Live())
	assert.False(t, Default().Model.Live())
	k, err := c.Model.Key(func(n string) (string, bool) { return "sk-rec", n == "LAB_KEY" })
	require.NoError(t, err)
	assert.Equal(t, "sk-rec", k)
}

func TestModelChaos(t *testing.T) {
	c, err := parseString(t, "model: {mode: chaos, seed: 42}\n", nil)
	require.NoError(t, err)
	assert.Equal(t, Model{Mode: ModelChaos, Seed: 42}, c.Model)
	assert.True(t, c.Model.Stubbed())
	assert.False(t, c.Model.Live())
	c, err = parseString(t, "model: chaos\n", nil)
	require.NoError(t, err)
	assert.Equal(t, ModelChaos, c.Model.Mode, "the shorthand, seed 0")
}

func TestModelShorthand(t *testing.T) {
	c, err := parseString(t, "model: live\n", nil)
	if err == nil {
		t.Fatalf("live without provider accepted: %+v", c.Model)
	}
	if !strings.Contains(err.Error(), "lab.yaml:1:1: model.provider") {
		t.Errorf("error %v", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	c, err := Load("", nil)
	if err != nil || c.Source != DefaultSource {
		t.Fatalf("no lab.yaml: %v %v", c, err)
	}
	if err := os.WriteFile("lab.yaml", []byte("output: here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err = Load("", nil)
	if err != nil || c.Source != "lab.yaml" || c.Output != "here" {
		t.Fatalf("lab.yaml in cwd: %+v %v", c, err)
	}
	other := filepath.Join(dir, "other.yaml")
	os.WriteFile(other, []byte("output: [\n"), 0o644)
	_, err = Load(other, nil)
	if err == nil || !strings.HasPrefix(err.Error(), other+":") {
		t.Fatalf("explicit file: %v", err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	big := strings.Repeat("# filler\n", MaxFileSize/9+1)
	if _, err := Parse(strings.NewReader(big), "big.yaml", nil); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("oversized: %v", err)
	}
}

func TestDigestStable(t *testing.T) {
	a, b := Default(), Default()
	if a.Digest() != b.Digest() {
		t.Error("digest differs between equal configurations")
	}
	c, _ := parseString(t, "output: elsewhere\n", nil)
	if c.Digest() == a.Digest() {
		t.Error("digest ignores a change")
	}
}

func TestShardOwns(t *testing.T) {
	s := Shard{Index: 1, Count: 3}
	var got []int
	for i := range 7 {
		if s.Owns(i) {
			got = append(got, i)
		}
	}
	if !slices.Equal(got, []int{1, 4}) {
		t.Errorf("Owns = %v", got)
	}
	if !(Shard{}).Owns(5) {
		t.Error("unsharded owns everything")
	}
}

func TestAdmits(t *testing.T) {
	a := ADBServer{Include: []string{"emulator-*", "R5C?"}, Exclude: []string{"emulator-5556"}}
	for serial, want := range map[string]bool{"emulator-5554": true, "emulator-5556": false, "R5C1": true, "R5C12": false, "x": false} {
		if a.Admits(serial) != want {
			t.Errorf("Admits(%q) = %v", serial, !want)
		}
	}
	if !(ADBServer{}).Admits("anything") {
		t.Error("no include admits everything")
	}
}

// TestFieldsHaveYAMLNames: every exported field of the configuration
// types has a yaml and a json name, so strictness and the schema see it.
func TestFieldsHaveYAMLNames(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(t0 reflect.Type) {
		for t0.Kind() == reflect.Pointer || t0.Kind() == reflect.Slice || t0.Kind() == reflect.Map {
			t0 = t0.Elem()
		}
		if t0.Kind() != reflect.Struct || seen[t0] || t0.PkgPath() != configType.PkgPath() {
			return
		}
		seen[t0] = true
		for i := range t0.NumField() {
			f := t0.Field(i)
			if !f.IsExported() || f.Name == "Source" {
				continue
			}
			if n, _, _ := strings.Cut(f.Tag.Get("yaml"), ","); n == "" || n == "-" || f.Tag.Get("json") == "" {
				t.Errorf("%s.%s has no yaml or json name", t0.Name(), f.Name)
			}
			walk(f.Type)
		}
	}
	walk(configType)
}
