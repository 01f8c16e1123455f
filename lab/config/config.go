package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/internal/strictyaml"
)

// Config is a parsed and validated lab.yaml.
type Config struct {
	// StateDir holds the lab's own state: the bundle-signing key, the
	// build cache, the bridge's pairing state. Default
	// $XDG_STATE_HOME/agentlab (~/.local/state/agentlab).
	StateDir string `yaml:"stateDir" json:"stateDir"`
	// Devices are the device sources.
	Devices Devices `yaml:"devices" json:"devices"`
	// Pools group devices by attribute; each pool runs the selected
	// scenarios. None means one pool of every device.
	Pools []Pool `yaml:"pools" json:"pools"`
	// Model is the model the runtimes on the devices talk to.
	Model Model `yaml:"model" json:"model"`
	// Parallelism bounds the scenarios running at once; 0 means one per
	// leased device.
	Parallelism int `yaml:"parallelism" json:"parallelism"`
	// Timeouts bound scenarios, provisioning and health checks.
	Timeouts Timeouts `yaml:"timeouts" json:"timeouts"`
	// Retries are the attempt and re-queue budgets.
	Retries Retries `yaml:"retries" json:"retries"`
	// Tags select scenarios by tag.
	Tags Tags `yaml:"tags" json:"tags"`
	// Shard picks this machine's share of the selected scenarios.
	Shard Shard `yaml:"shard" json:"shard"`
	// Artifacts says what evidence is kept.
	Artifacts Artifacts `yaml:"artifacts" json:"artifacts"`
	// Output is the run's output directory (results.json, reports,
	// artifacts). Relative paths are relative to the working directory.
	Output string `yaml:"output" json:"output"`
	// Scenarios are files or directories of scenario YAML.
	Scenarios []string `yaml:"scenarios" json:"scenarios"`
	// Build configures how the runtime and apps are built.
	Build Build `yaml:"build" json:"build"`
	// Provision configures what provisioning does on each device.
	Provision Provision `yaml:"provision" json:"provision"`

	// Source names where the configuration came from: a path, or
	// DefaultSource for the embedded default.
	Source string `yaml:"-" json:"-"`
	// lines maps field paths ("devices.virtual.count") to where they
	// were written in Source.
	lines map[string]strictyaml.Pos
}

// DefaultSource is Config.Source of the embedded default configuration.
const DefaultSource = "(default lab.yaml)"

// Devices are where the lab's devices come from.
type Devices struct {
	// ADB lists adb servers, local or remote, whose devices the lab may
	// lease.
	ADB []ADBServer `yaml:"adb" json:"adb"`
	// Virtual starts virtual devices for the run; nil starts none.
	Virtual *Virtual `yaml:"virtual" json:"virtual,omitempty"`
	// Emulators start Android emulators for the run.
	Emulators []Emulator `yaml:"emulators" json:"emulators"`
	// Labels are per-device metadata by serial, matched by pools.
	Labels map[string]map[string]string `yaml:"labels" json:"labels,omitempty"`
}

// ADBServer is one adb server and the serials the lab may take from it.
type ADBServer struct {
	// Server is host:port ("127.0.0.1:5037").
	Server string `yaml:"server" json:"server"`
	// Include are glob patterns (path.Match); empty admits every serial.
	Include []string `yaml:"include" json:"include,omitempty"`
	// Exclude are glob patterns; a match is never leased.
	Exclude []string `yaml:"exclude" json:"exclude,omitempty"`
}

// Admits reports whether the lab may use the device with this serial.
func (a ADBServer) Admits(serial string) bool {
	for _, p := range a.Exclude {
		if ok, _ := path.Match(p, serial); ok {
			return false
		}
	}
	if len(a.Include) == 0 {
		return true
	}
	for _, p := range a.Include {
		if ok, _ := path.Match(p, serial); ok {
			return true
		}
	}
	return false
}

// Virtual configures the virtual devices a run starts.
type Virtual struct {
	// Count is how many; 0 starts none.
	Count int `yaml:"count" json:"count"`
	// SDK is the API level the devices report; default 35.
	SDK int `yaml:"sdk" json:"sdk"`
	// RootMethod is magisk (default), kernelsu, adb-root or none.
	RootMethod string `yaml:"rootMethod" json:"rootMethod"`
	// StateDir is the parent of the device roots; default
	// <stateDir>/vdevices.
	StateDir string `yaml:"stateDir" json:"stateDir,omitempty"`
	// TimeZone is the devices' zone (persist.sys.timezone, an IANA name,
	// set at every boot); default Asia/Shanghai, a zone that is not UTC,
	// so that a binary ignoring the device's zone is caught.
	TimeZone string `yaml:"timezone" json:"timezone,omitempty"`
}

// Emulator is one emulator source: exactly one of AVD and Container.
type Emulator struct {
	AVD       *AVD       `yaml:"avd" json:"avd,omitempty"`
	Container *Container `yaml:"container" json:"container,omitempty"`
}

// AVD runs emulators from the local Android SDK.
type AVD struct {
	// Name is the AVD's name (created when missing).
	Name string `yaml:"name" json:"name"`
	// Image is the system image's SDK id
	// ("system-images;android-35;google_apis;x86_64"); needed to create
	// the AVD.
	Image string `yaml:"image" json:"image,omitempty"`
	// Count is how many instances; default 1.
	Count int `yaml:"count" json:"count"`
}

// Container runs emulators (or the virtual-device image) in containers.
type Container struct {
	Image string `yaml:"image" json:"image"`
	// Count is how many containers; default 1.
	Count int `yaml:"count" json:"count"`
}

// Pool selects devices by attribute.
type Pool struct {
	// Name is [a-z0-9-]{1,32}, unique.
	Name string `yaml:"name" json:"name"`
	// ABI is the primary ABI (x86_64, arm64-v8a); empty matches any.
	ABI string `yaml:"abi" json:"abi,omitempty"`
	// API bounds the API level.
	API APIRange `yaml:"api" json:"api"`
	// RootMethods are the accepted root methods; empty accepts any.
	RootMethods []string `yaml:"rootMethods" json:"rootMethods,omitempty"`
	// Labels must all be set on a device, with these values.
	Labels map[string]string `yaml:"labels" json:"labels,omitempty"`
}

// APIRange bounds an API level; 0 is unbounded.
type APIRange struct {
	Min int `yaml:"min" json:"min"`
	Max int `yaml:"max" json:"max"`
}

// Selector is the pool's device selector.
func (p Pool) Selector() pool.Selector {
	s := pool.Selector{ABI: p.ABI, MinAPI: p.API.Min, MaxAPI: p.API.Max}
	for _, r := range p.RootMethods {
		s.Root = append(s.Root, devices.RootMethod(r))
	}
	if len(p.Labels) > 0 {
		s.Labels = make(map[string]string, len(p.Labels))
		for k, v := range p.Labels {
			s.Labels[k] = v
		}
	}
	return s
}

// Model modes and providers.
const (
	ModelStub = "stub"
	ModelLive = "live"
	// ModelRecord runs like live (the live provider settings) but through
	// the lab's stub, which forwards every request and records the
	// answers as a model script per attempt (agentlab replay).
	ModelRecord = "record"
	// ModelChaos runs on the stub, whose chaos model answers every
	// scenario that has no script of its own with tool calls generated
	// from the seed (agentlab chaos).
	ModelChaos = "chaos"

	ProviderOpenAI    = "openai"
	ProviderAnthropic = "anthropic"
)

// Model is the model the runtimes talk to: the lab's stub (default), a
// live provider, or a live provider recorded through the stub. A lab.yaml
// may write "model: stub" or "model: live" as a shorthand for the mode.
type Model struct {
	// Mode is stub, live, record (live through the stub, which records
	// every answer; the live settings below apply) or chaos (the stub's
	// chaos model, drawn from seed).
	Mode string `yaml:"mode" json:"mode"`
	// Seed is the chaos model's seed; chaos only.
	Seed int64 `yaml:"seed" json:"seed,omitempty"`
	// Provider is openai (any OpenAI-compatible Chat Completions
	// endpoint) or anthropic; live and record only.
	Provider string `yaml:"provider" json:"provider,omitempty"`
	// BaseURL is the provider's endpoint; empty means the provider's
	// public one. Live only.
	BaseURL string `yaml:"baseUrl" json:"baseUrl,omitempty"`
	// Name is the model id; live only.
	Name string `yaml:"model" json:"model,omitempty"`
	// KeyEnv names the environment variable that holds the key; live
	// only. The key itself is never in lab.yaml.
	KeyEnv string `yaml:"keyEnv" json:"keyEnv,omitempty"`
}

// Stubbed reports whether the lab's stub answers from a script or the
// chaos model (no live provider): mode stub or chaos.
func (m Model) Stubbed() bool { return m.Mode == ModelStub || m.Mode == ModelChaos }

// Live reports whether a live provider answers: mode live or record.
func (m Model) Live() bool { return m.Mode == ModelLive || m.Mode == ModelRecord }

// ErrNoKey reports that the variable named by model.keyEnv is unset or
// empty.
var ErrNoKey = errors.New("model key not set")

// Key reads the live model's key from the environment variable named by
// KeyEnv (getenv nil means os.LookupEnv). The error names the variable,
// never a value.
func (m Model) Key(getenv func(string) (string, bool)) (string, error) {
	if !m.Live() {
		return "", fmt.Errorf("model key: mode is %s, not live", m.Mode)
	}
	if getenv == nil {
		getenv = os.LookupEnv
	}
	v, _ := getenv(m.KeyEnv)
	if v == "" {
		return "", fmt.Errorf("model key: $%s: %w (export it before the run)", m.KeyEnv, ErrNoKey)
	}
	return v, nil
}

// Timeouts bound the lab's waits.
type Timeouts struct {
	// Scenario is the default per-scenario timeout; default 5m.
	Scenario Duration `yaml:"scenario" json:"scenario"`
	// Provision bounds provisioning one device; default 3m.
	Provision Duration `yaml:"provision" json:"provision"`
	// Health bounds a device's health gate; default 30s.
	Health Duration `yaml:"health" json:"health"`
}

// Retries are the attempt and re-queue budgets.
type Retries struct {
	// Attempts is the most attempts of one scenario (1 = no retry);
	// default 2.
	Attempts int `yaml:"attempts" json:"attempts"`
	// Budget bounds the retries of product failures across the run;
	// default 20.
	Budget int `yaml:"budget" json:"budget"`
	// LabFaultRequeues bounds the re-queues of attempts lost to the lab
	// (a device died) across the run; default 10.
	LabFaultRequeues int `yaml:"labFaultRequeues" json:"labFaultRequeues"`
}

// Tags select scenarios. A scenario runs when it has one of Include (or
// Include is empty), none of Exclude, and satisfies Expr (if set).
type Tags struct {
	Include []string `yaml:"include" json:"include,omitempty"`
	Exclude []string `yaml:"exclude" json:"exclude,omitempty"`
	// Expr is a tag expression: tags joined with &&, || and !, with
	// parentheses ("nightly && !slow").
	Expr string `yaml:"expr" json:"expr,omitempty"`

	expr TagExpr
}

// Match reports whether a scenario with these tags is selected.
func (t Tags) Match(tags []string) bool {
	has := make(map[string]bool, len(tags))
	for _, x := range tags {
		has[x] = true
	}
	for _, x := range t.Exclude {
		if has[x] {
			return false
		}
	}
	if len(t.Include) > 0 {
		found := false
		for _, x := range t.Include {
			if has[x] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	if t.expr != nil {
		return t.expr.Eval(has)
	}
	if t.Expr != "" {
		e, err := ParseTagExpr(t.Expr)
		return err == nil && e.Eval(has)
	}
	return true
}

// Shard picks this machine's share of the scenarios when a run is spread
// over several CI machines: scenario i (in the run's deterministic order)
// belongs to shard i mod Count.
type Shard struct {
	// Index is zero-based, below Count.
	Index int `yaml:"index" json:"index"`
	// Count is the number of shards; 1 (default) means not sharded.
	Count int `yaml:"count" json:"count"`
}

// Owns reports whether the scenario at position i belongs to this shard.
func (s Shard) Owns(i int) bool {
	if s.Count <= 1 {
		return true
	}
	return i%s.Count == s.Index
}

// Artifact policies.
const (
	ArtifactsAlways    = "always"
	ArtifactsOnFailure = "on-failure"
	ArtifactsNever     = "never"
)

// Artifacts says what evidence a scenario attempt keeps.
type Artifacts struct {
	// Policy is always, on-failure (default) or never.
	Policy string `yaml:"policy" json:"policy"`
	// Logcat keeps the device log slice of the attempt; default true.
	Logcat bool `yaml:"logcat" json:"logcat"`
	// Screenshot keeps a screenshot where the device has a screen;
	// default true.
	Screenshot bool `yaml:"screenshot" json:"screenshot"`
}

// Keep reports whether an attempt's artifacts are kept.
func (a Artifacts) Keep(failed bool) bool {
	switch a.Policy {
	case ArtifactsAlways:
		return true
	case ArtifactsNever:
		return false
	}
	return failed
}

// Build configures the build of the runtime and the apps.
type Build struct {
	// SigningKey is the bundle-signing key (PEM, mode 0600). Empty means
	// <stateDir>/signing.key, generated on first use.
	SigningKey string `yaml:"signingKey" json:"signingKey,omitempty"`
	// ABIs to build; empty means the ABIs of the leased devices (the
	// host's ABI when the lab builds before leasing).
	ABIs []string `yaml:"abis" json:"abis,omitempty"`
	// Tags are Go build tags for the runtime and the apps, such as
	// agentos_faultinject (a runtime that breaks rules on purpose, for
	// the lab's own fault-injection test); empty builds the product.
	Tags []string `yaml:"tags" json:"tags,omitempty"`
	// ReleaseOnVirtual gives virtual devices the release runtime too.
	// By default they get agentosd built with the lab's clock tag
	// (agentos_labclock), whose clock scenarios advance instead of
	// waiting; phones and emulators always get the release runtime.
	ReleaseOnVirtual bool `yaml:"releaseOnVirtual" json:"releaseOnVirtual,omitempty"`
}

// Provision configures provisioning.
type Provision struct {
	// Apps are the sample apps to install (by short name: notes, sms,
	// …); empty installs every app the build produced.
	Apps []string `yaml:"apps" json:"apps,omitempty"`
	// Plugins are the plugins to enable; empty enables the plugin of
	// every installed app, ["none"] enables none.
	Plugins []string `yaml:"plugins" json:"plugins,omitempty"`
	// Desktop turns desktop access (the ACP bridge) on.
	Desktop bool `yaml:"desktop" json:"desktop"`
}

// Duration is a time.Duration written as a Go duration string ("90s",
// "5m").
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes the duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// Line returns the line of the field at path ("devices.virtual.count",
// "pools[1].name") in Source, or 0 when the field came from the defaults.
func (c *Config) Line(path string) int { return c.lines[path].Line }

// Pos is "file:line:col" for the field at path, or just the file.
func (c *Config) Pos(path string) string { return c.lines[path].String(c.Source) }

// Digest identifies the configuration ("sha256:<hex>" of its canonical
// JSON form), for reports.Run.ConfigDigest. It holds no secret: the
// configuration never does.
func (c *Config) Digest() string {
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// VirtualStateDir is where virtual device roots live.
func (c *Config) VirtualStateDir() string {
	if c.Devices.Virtual != nil && c.Devices.Virtual.StateDir != "" {
		return c.Devices.Virtual.StateDir
	}
	return filepath.Join(c.StateDir, "vdevices")
}

// SigningKeyPath is the bundle-signing key's path.
func (c *Config) SigningKeyPath() string {
	if c.Build.SigningKey != "" {
		return c.Build.SigningKey
	}
	return filepath.Join(c.StateDir, "signing.key")
}

// DefaultStateDir is $XDG_STATE_HOME/agentlab, else
// ~/.local/state/agentlab.
func DefaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agentlab")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "agentlab-state")
	}
	return filepath.Join(home, ".local", "state", "agentlab")
}
