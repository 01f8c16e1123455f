package config

import (
	"fmt"
	"github.com/agentoslab/agentlab/internal/strictyaml"
	"net"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Per-field defaults applied after decoding.
const (
	DefaultSDK              = 35
	DefaultRootMethod       = "magisk"
	DefaultTimeZone         = "Asia/Shanghai"
	DefaultScenarioTimeout  = 5 * time.Minute
	DefaultProvisionTimeout = 3 * time.Minute
	DefaultHealthTimeout    = 30 * time.Second
	DefaultAttempts         = 2
	DefaultRetryBudget      = 20
	DefaultLabFaultRequeues = 10
	DefaultOutput           = "out"
	DefaultScenarioDir      = "scenarios"
)

// Limits checked by validation.
const (
	MaxVirtualDevices = 64
	MaxEmulators      = 16
	MaxParallelism    = 256
	MaxAttempts       = 10
)

// Known values.
var (
	RootMethods = []string{"magisk", "kernelsu", "adb-root", "none"}
	ABIs        = []string{"x86_64", "arm64-v8a"}
)

// fill sets the per-field defaults of fields left empty.
func (c *Config) fill() {
	if c.StateDir == "" {
		c.StateDir = DefaultStateDir()
	}
	if v := c.Devices.Virtual; v != nil {
		if v.SDK == 0 {
			v.SDK = DefaultSDK
		}
		if v.RootMethod == "" {
			v.RootMethod = DefaultRootMethod
		}
		if v.TimeZone == "" {
			v.TimeZone = DefaultTimeZone
		}
	}
	for _, e := range c.Devices.Emulators {
		if e.AVD != nil && e.AVD.Count == 0 {
			e.AVD.Count = 1
		}
		if e.Container != nil && e.Container.Count == 0 {
			e.Container.Count = 1
		}
	}
	if c.Model.Mode == "" {
		c.Model.Mode = ModelStub
	}
	if c.Timeouts.Scenario == 0 {
		c.Timeouts.Scenario = Duration(DefaultScenarioTimeout)
	}
	if c.Timeouts.Provision == 0 {
		c.Timeouts.Provision = Duration(DefaultProvisionTimeout)
	}
	if c.Timeouts.Health == 0 {
		c.Timeouts.Health = Duration(DefaultHealthTimeout)
	}
	if c.Retries.Attempts == 0 {
		c.Retries.Attempts = DefaultAttempts
	}
	if c.Shard.Count == 0 {
		c.Shard.Count = 1
	}
	if c.Artifacts.Policy == "" {
		c.Artifacts.Policy = ArtifactsOnFailure
	}
	if c.Output == "" {
		c.Output = DefaultOutput
	}
	if len(c.Scenarios) == 0 {
		c.Scenarios = []string{DefaultScenarioDir}
	}
}

var (
	poolName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)
	avdName  = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)
	tagName  = regexp.MustCompile(`^[A-Za-z0-9_.:/-]{1,64}$`)
	nameWord = regexp.MustCompile(`^[A-Za-z0-9._-]{1,96}$`)
	// buildTagRE is a Go build tag.
	buildTagRE = regexp.MustCompile(`^[A-Za-z0-9_.]{1,64}$`)
)

func oneOf(v string, set []string) bool {
	for _, s := range set {
		if v == s {
			return true
		}
	}
	return false
}

// validate checks every rule and records each problem with its line.
func (c *Config) validate(dec *strictyaml.Decoder) {
	bad := func(field, format string, args ...any) {
		dec.Errorf(field, format, args...)
	}

	d := c.Devices
	sources := 0
	for i, a := range d.ADB {
		f := fmt.Sprintf("devices.adb[%d]", i)
		sources++
		if a.Server == "" {
			bad(f, "server is required (host:port, e.g. 127.0.0.1:5037)")
		} else if err := checkHostPort(a.Server); err != nil {
			bad(f+".server", "%v", err)
		}
		for j, g := range a.Include {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				bad(fmt.Sprintf("%s.include[%d]", f, j), "bad glob %q", g)
			}
		}
		for j, g := range a.Exclude {
			if _, err := path.Match(g, ""); err != nil || g == "" {
				bad(fmt.Sprintf("%s.exclude[%d]", f, j), "bad glob %q", g)
			}
		}
	}
	if v := d.Virtual; v != nil {
		if v.Count < 0 || v.Count > MaxVirtualDevices {
			bad("devices.virtual.count", "must be between 0 and %d, got %d", MaxVirtualDevices, v.Count)
		}
		if v.Count > 0 {
			sources++
		}
		if v.SDK < 21 || v.SDK > 99 {
			bad("devices.virtual.sdk", "must be an API level between 21 and 99, got %d", v.SDK)
		}
		if !oneOf(v.RootMethod, RootMethods) {
			bad("devices.virtual.rootMethod", "must be one of %s, got %q", strings.Join(RootMethods, ", "), v.RootMethod)
		}
		if !validZone(v.TimeZone) {
			bad("devices.virtual.timezone", "must be an IANA time zone (Asia/Shanghai, Europe/Berlin, UTC), got %q", v.TimeZone)
		}
	}
	for i, e := range d.Emulators {
		f := fmt.Sprintf("devices.emulators[%d]", i)
		switch {
		case e.AVD != nil && e.Container != nil:
			bad(f, "give either avd or container, not both")
		case e.AVD != nil:
			sources++
			if !avdName.MatchString(e.AVD.Name) {
				bad(f+".avd.name", "must be [A-Za-z0-9._-]{1,64}, got %q", e.AVD.Name)
			}
			if e.AVD.Image != "" && !strings.HasPrefix(e.AVD.Image, "system-images;") {
				bad(f+".avd.image", "want an SDK id like system-images;android-35;google_apis;x86_64, got %q", e.AVD.Image)
			}
			if e.AVD.Count < 1 || e.AVD.Count > MaxEmulators {
				bad(f+".avd.count", "must be between 1 and %d, got %d", MaxEmulators, e.AVD.Count)
			}
		case e.Container != nil:
			sources++
			if strings.TrimSpace(e.Container.Image) == "" {
				bad(f+".container.image", "is required (an image reference)")
			}
			if e.Container.Count < 1 || e.Container.Count > MaxEmulators {
				bad(f+".container.count", "must be between 1 and %d, got %d", MaxEmulators, e.Container.Count)
			}
		default:
			bad(f, "give avd: {name, image, count} or container: {image, count}")
		}
	}
	if sources == 0 {
		bad("devices", "no device source: add devices.virtual (count > 0), devices.adb or devices.emulators")
	}
	for serial, labels := range d.Labels {
		for k := range labels {
			if !nameWord.MatchString(k) {
				bad("devices.labels."+serial+"."+k, "label names are [A-Za-z0-9._-]{1,96}")
			}
		}
	}

	seen := map[string]int{}
	for i, pl := range c.Pools {
		f := fmt.Sprintf("pools[%d]", i)
		if !poolName.MatchString(pl.Name) {
			bad(f+".name", "must be [a-z0-9-]{1,32}, got %q", pl.Name)
		} else if j, dup := seen[pl.Name]; dup {
			bad(f+".name", "%q is also the name of pools[%d]", pl.Name, j)
		}
		seen[pl.Name] = i
		if pl.ABI != "" && !oneOf(pl.ABI, ABIs) {
			bad(f+".abi", "must be one of %s, got %q", strings.Join(ABIs, ", "), pl.ABI)
		}
		if pl.API.Min < 0 || pl.API.Max < 0 {
			bad(f+".api", "API levels cannot be negative")
		} else if pl.API.Max != 0 && pl.API.Min > pl.API.Max {
			bad(f+".api", "min %d is above max %d", pl.API.Min, pl.API.Max)
		}
		for j, r := range pl.RootMethods {
			if !oneOf(r, RootMethods) {
				bad(fmt.Sprintf("%s.rootMethods[%d]", f, j), "must be one of %s, got %q", strings.Join(RootMethods, ", "), r)
			}
		}
	}

	m := c.Model
	switch m.Mode {
	case ModelStub, ModelChaos:
		for field, v := range map[string]string{"provider": m.Provider, "baseUrl": m.BaseURL, "model": m.Name, "keyEnv": m.KeyEnv} {
			if v != "" {
				bad("model."+field, "only for mode live or record (the stub needs no %s)", field)
			}
		}
		if m.Mode == ModelStub && m.Seed != 0 {
			bad("model.seed", "only for mode chaos")
		}
	case ModelLive, ModelRecord:
		if m.Seed != 0 {
			bad("model.seed", "only for mode chaos")
		}
		if m.Provider != ProviderOpenAI && m.Provider != ProviderAnthropic {
			bad("model.provider", "must be openai or anthropic, got %q", m.Provider)
		}
		if m.Name == "" {
			bad("model.model", "is required for a live model (the provider's model id)")
		}
		if !envName.MatchString(m.KeyEnv) {
			bad("model.keyEnv", "must name the environment variable holding the key, got %q", m.KeyEnv)
		}
		if m.BaseURL != "" {
			if u, err := url.Parse(m.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				bad("model.baseUrl", "want an http(s) URL, got %q", m.BaseURL)
			} else if u.User != nil {
				bad("model.baseUrl", "must not carry credentials")
			}
		}
	default:
		bad("model.mode", "must be stub, live, record or chaos, got %q", m.Mode)
	}

	if c.Parallelism < 0 || c.Parallelism > MaxParallelism {
		bad("parallelism", "must be between 0 (one per device) and %d, got %d", MaxParallelism, c.Parallelism)
	}
	if c.Retries.Attempts < 1 || c.Retries.Attempts > MaxAttempts {
		bad("retries.attempts", "must be between 1 and %d, got %d", MaxAttempts, c.Retries.Attempts)
	}
	if c.Retries.Budget < 0 {
		bad("retries.budget", "cannot be negative, got %d", c.Retries.Budget)
	}
	if c.Retries.LabFaultRequeues < 0 {
		bad("retries.labFaultRequeues", "cannot be negative, got %d", c.Retries.LabFaultRequeues)
	}

	for i, t := range c.Tags.Include {
		if !tagName.MatchString(t) {
			bad(fmt.Sprintf("tags.include[%d]", i), "bad tag %q", t)
		}
	}
	for i, t := range c.Tags.Exclude {
		if !tagName.MatchString(t) {
			bad(fmt.Sprintf("tags.exclude[%d]", i), "bad tag %q", t)
		}
	}
	if c.Tags.Expr != "" {
		e, err := ParseTagExpr(c.Tags.Expr)
		if err != nil {
			bad("tags.expr", "%v", err)
		}
		c.Tags.expr = e
	}

	if c.Shard.Count < 1 {
		bad("shard.count", "must be at least 1, got %d", c.Shard.Count)
	} else if c.Shard.Index < 0 || c.Shard.Index >= c.Shard.Count {
		bad("shard.index", "must be between 0 and %d (count - 1), got %d", c.Shard.Count-1, c.Shard.Index)
	}

	switch c.Artifacts.Policy {
	case ArtifactsAlways, ArtifactsOnFailure, ArtifactsNever:
	default:
		bad("artifacts.policy", "must be always, on-failure or never, got %q", c.Artifacts.Policy)
	}
	if strings.TrimSpace(c.Output) == "" {
		bad("output", "cannot be empty")
	}
	for i, s := range c.Scenarios {
		if strings.TrimSpace(s) == "" {
			bad(fmt.Sprintf("scenarios[%d]", i), "cannot be empty")
		}
	}
	for i, tag := range c.Build.Tags {
		if !buildTagRE.MatchString(tag) {
			bad(fmt.Sprintf("build.tags[%d]", i), "want a Go build tag (letters, digits, _ and .), got %q", tag)
		}
	}
	for i, a := range c.Build.ABIs {
		if !oneOf(a, ABIs) {
			bad(fmt.Sprintf("build.abis[%d]", i), "must be one of %s, got %q", strings.Join(ABIs, ", "), a)
		}
	}
	for i, a := range c.Provision.Apps {
		if !nameWord.MatchString(a) {
			bad(fmt.Sprintf("provision.apps[%d]", i), "bad app name %q", a)
		}
	}
	for i, pl := range c.Provision.Plugins {
		if !nameWord.MatchString(pl) {
			bad(fmt.Sprintf("provision.plugins[%d]", i), "bad plugin name %q", pl)
		}
	}
}

func checkHostPort(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("want host:port, got %q", s)
	}
	if host == "" {
		return fmt.Errorf("want host:port with a host, got %q", s)
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port must be 1-65535, got %q", port)
	}
	return nil
}

// validZone reports whether z names an IANA zone.
func validZone(z string) bool {
	if z == "" || z == "Local" {
		return false
	}
	_, err := time.LoadLocation(z)
	return err == nil
}
