// Package provision makes a device ready for scenarios: the AgentOS
// module installed and active, the runtime answering, the app bundles
// installed, the model set, the plugins enabled and, when asked, desktop
// access on. It works on any devices.Device (phone, emulator, virtual
// device) and is idempotent: every step checks first and changes only what
// differs, so a second Provision of a ready device changes nothing.
//
// # Steps
//
//	probe    root method and ABI (a device without root cannot run the module)
//	module   the module zip for the device's ABI, installed with the device's
//	         root method (Magisk: magisk --install-module; KernelSU: ksud module
//	         install; adb-root: copied into /data/adb/modules_update/agentos),
//	         skipped when module.prop's versionCode already matches and the
//	         module is active
//	runtime  the module started, then `agentosd ctl status` polled with
//	         backoff until it answers with the built version
//	apps     every bundle pushed and installed (`agentosd ctl app install`),
//	         skipped when installed with the same content and signer; a
//	         refused downgrade is uninstalled and installed again
//	model    the stub (adb reverse tcp:P tcp:P to the lab's stub, base URL
//	         http://127.0.0.1:P/t/<token>/v1 — or model.agentlab.test:P where
//	         the device resolves that name — its fake key) or a live provider;
//	         the key always through ctl's stdin, never a command line
//	site     the lab's test site on the device's port testsite.DevicePort
//	         (adb reverse to the site's port on the lab host), when served
//	plugins  the plugins of the installed apps (or those asked for) enabled
//	desktop  desktop access turned on, when asked
//
// # Starting the runtime
//
// A freshly installed Magisk or KernelSU module becomes active at the next
// boot, which also runs its service.sh (the supervisor): Provision reboots
// the device (StartReboot; a virtual device reboots in well under a
// second). On adb-root devices nothing activates modules at boot, so
// Provision moves the staged module into /data/adb/modules itself, stops a
// running supervisor and runs service.sh as root (StartService); it does
// so on every Provision where the runtime is not answering, since such
// devices forget it at each boot. StartService can be asked for on any
// device. A current module whose runtime is not answering is started the
// same way without a reboot (an idle runtime that died is kicked with
// SIGUSR1).
//
// Device-side reverses are lost when a device reboots: after a reboot the
// model step sets the reverse again; so must anyone who reboots a device
// after provisioning.
package provision

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/lab/build"
	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/agentoslab/agentlab/lab/testsite"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/module"
)

// StartMode says how a new module is started.
type StartMode string

const (
	// StartAuto: reboot for Magisk and KernelSU, service for adb-root.
	StartAuto StartMode = ""
	// StartReboot reboots the device (the module manager activates the
	// module and runs service.sh).
	StartReboot StartMode = "reboot"
	// StartService activates the module by hand and runs service.sh as
	// root, without a reboot.
	StartService StartMode = "service"
)

// Paths on the device.
const (
	ModulesDir     = "/data/adb/modules"
	ModulesStaging = "/data/adb/modules_update"
	// TempDir receives bundles on their way to the installer.
	TempDir = "/data/local/tmp"
)

// StubModel points the runtime at the lab's model stub.
type StubModel struct {
	// Port is the stub's port on the lab host; the device reaches it
	// through adb reverse on the same port number.
	Port int
	// Token selects the script the stub answers with (modelstub.Bind).
	Token string
	// Host names the stub in the runtime's base URL: modelstub.DeviceHost
	// on a device whose resolver answers it (the lab's virtual devices),
	// "" for 127.0.0.1.
	Host string
	// Provider and Model, when set, are the live provider's API and model
	// id the runtime asks for: a recording stub passes requests through
	// unchanged. Empty: openai and StubModelID.
	Provider, Model string
}

// LiveModel points the runtime at a live provider.
type LiveModel struct {
	// Provider is openai or anthropic.
	Provider string
	BaseURL  string
	Model    string
	// Key is handed to ctl's stdin; it is never logged or put on a
	// command line.
	Key string
}

// Model is the model to set: at most one of Stub and Live. Neither
// leaves the runtime's model as it is.
type Model struct {
	Stub *StubModel
	Live *LiveModel
}

// StubModelID is the model id the runtime asks the stub for.
const StubModelID = "agentlab-stub"

// Site is the lab's test site on the lab host.
type Site struct {
	// Port is the site's port on the lab host; the device reaches it on
	// testsite.DevicePort through adb reverse.
	Port int
}

// Options configure Provision. The zero value provisions module, runtime
// and every app, and enables their plugins.
type Options struct {
	Model Model
	// Site, when set, is reversed onto the device (the site step).
	Site *Site
	// Apps restricts the bundles installed to these apps (short names or
	// packages); nil installs every bundle of the artifacts.
	Apps []string
	// Plugins are the plugins to enable (names or ids); nil enables the
	// plugins of the installed bundles, an empty non-nil slice none.
	Plugins []string
	// Desktop turns desktop access on.
	Desktop bool
	// Start says how a new module is started.
	Start StartMode
	// ReadyTimeout bounds the wait for the runtime (and its plugins);
	// default 60 s.
	ReadyTimeout time.Duration
	// BootTimeout bounds a reboot; default 3 min.
	BootTimeout time.Duration
	// Ctl configures the runtime client (socket prefix, …). Its Agentosd
	// default is the module's binary.
	Ctl runtimectl.Options
	// Reporter is told about each step; nil reports nothing.
	Reporter Reporter
	// Logger receives debug lines (never keys); nil discards.
	Logger *slog.Logger
}

// Step is one provisioning step's outcome.
type Step struct {
	Name string `json:"name"`
	// Changed says the step changed the device.
	Changed  bool          `json:"changed"`
	Detail   string        `json:"detail,omitempty"`
	Duration time.Duration `json:"durationNs"`
	Err      string        `json:"error,omitempty"`
}

// Result is what Provision did to one device.
type Result struct {
	Serial string             `json:"serial"`
	Root   devices.RootMethod `json:"rootMethod"`
	ABI    string             `json:"abi"`
	// RuntimeVersion is what `ctl status` reports.
	RuntimeVersion string `json:"runtimeVersion"`
	// ModelBaseURL is the base URL the runtime was given (stub or live).
	ModelBaseURL string `json:"modelBaseUrl,omitempty"`
	Steps        []Step `json:"steps"`
	// Changed is true when any step changed the device.
	Changed bool `json:"changed"`
}

// Step returns the named step's outcome.
func (r *Result) Step(name string) (Step, bool) {
	for _, s := range r.Steps {
		if s.Name == name {
			return s, true
		}
	}
	return Step{}, false
}

// Reporter is told when each step begins and ends, to show progress.
// Calls for one device come from one goroutine; several devices may
// report at once.
type Reporter interface {
	Begin(serial, step string)
	End(serial string, s Step)
}

// Errors; match with errors.Is.
var (
	// ErrNotReady: the runtime did not answer (with the built version)
	// before the deadline.
	ErrNotReady = errors.New("runtime not ready")
	// ErrPlugin: a plugin to enable is missing or not ready.
	ErrPlugin = errors.New("plugin not ready")
)

// provisioner is one Provision call.
type provisioner struct {
	dev  devices.Device
	arts *build.Artifacts
	o    Options
	ctl  *runtimectl.Client
	log  *slog.Logger
	res  *Result
	info devices.Info
}

// Provision makes dev ready; see the package doc. It returns the outcome
// of every step run, also on error.
func Provision(ctx context.Context, dev devices.Device, arts *build.Artifacts, opts *Options) (*Result, error) {
	p := &provisioner{dev: dev, arts: arts, res: &Result{Serial: dev.Serial()}}
	if opts != nil {
		p.o = *opts
	}
	if p.o.ReadyTimeout <= 0 {
		p.o.ReadyTimeout = 60 * time.Second
	}
	if p.o.BootTimeout <= 0 {
		p.o.BootTimeout = 3 * time.Minute
	}
	p.log = p.o.Logger
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	p.log = p.log.With("serial", dev.Serial())
	if p.o.Model.Stub != nil && p.o.Model.Live != nil {
		return p.res, errors.New("provision: give a stub or a live model, not both")
	}
	co := p.o.Ctl
	if co.Logger == nil {
		co.Logger = p.log
	}
	p.ctl = runtimectl.New(dev, &co)
	defer p.ctl.Close()

	var moduleChanged bool
	steps := []struct {
		name string
		run  func(context.Context) (bool, string, error)
	}{
		{"probe", p.probe},
		{"module", func(ctx context.Context) (bool, string, error) {
			changed, detail, err := p.module(ctx)
			moduleChanged = changed
			return changed, detail, err
		}},
		{"runtime", func(ctx context.Context) (bool, string, error) { return p.runtime(ctx, moduleChanged) }},
		{"apps", p.apps},
		{"model", p.model},
		{"site", p.site},
		{"plugins", p.plugins},
		{"desktop", p.desktop},
	}
	for _, s := range steps {
		if s.name == "desktop" && !p.o.Desktop || s.name == "site" && p.o.Site == nil {
			continue
		}
		if p.o.Reporter != nil {
			p.o.Reporter.Begin(dev.Serial(), s.name)
		}
		start := time.Now()
		changed, detail, err := s.run(ctx)
		st := Step{Name: s.name, Changed: changed, Detail: detail, Duration: time.Since(start)}
		if err != nil {
			st.Err = err.Error()
		}
		p.res.Steps = append(p.res.Steps, st)
		p.res.Changed = p.res.Changed || changed
		if p.o.Reporter != nil {
			p.o.Reporter.End(dev.Serial(), st)
		}
		p.log.Debug("provision step", "step", s.name, "changed", changed, "duration", st.Duration, "err", err)
		if err != nil {
			return p.res, fmt.Errorf("provision %s: %s: %w", dev.Serial(), s.name, err)
		}
	}
	return p.res, nil
}

func (p *provisioner) probe(ctx context.Context) (bool, string, error) {
	info, err := p.dev.Info(ctx)
	if err != nil {
		return false, "", err
	}
	p.info = info
	p.res.Root, p.res.ABI = info.Root, info.ABI
	if info.Root == devices.RootNone || info.Root == "" {
		return false, "", fmt.Errorf("%w: the AgentOS module needs Magisk, KernelSU or an adb-root (userdebug) build", devices.ErrNoRoot)
	}
	if _, err := p.arts.Module(info.ABI); err != nil {
		return false, "", fmt.Errorf("device ABI %s: %w (build with --abi %s)", info.ABI, err, info.ABI)
	}
	return false, fmt.Sprintf("%s, API %d, %s", info.ABI, info.APILevel, info.Root), nil
}

// moduleState is what the device has of the module.
type moduleState struct {
	active, staged int64 // versionCodes; 0 when absent
	flags          []string
}

func (p *provisioner) moduleState(ctx context.Context) (moduleState, error) {
	d, u := ModulesDir+"/"+module.ID, ModulesStaging+"/"+module.ID
	script := `vc() { sed -n 's/^versionCode=//p' "$1/module.prop" 2>/dev/null | head -n 1; }
echo "active=$(vc ` + d + `)"
echo "staged=$(vc ` + u + `)"
for f in disable remove update; do [ -e ` + d + `/$f ] && echo "flag=$f"; done
true`
	res, err := p.dev.Su(ctx, script)
	if err != nil {
		return moduleState{}, err
	}
	if res.ExitCode != 0 {
		return moduleState{}, fmt.Errorf("reading the module state: exit %d: %s", res.ExitCode, strings.TrimSpace(string(res.Stderr)))
	}
	var st moduleState
	for _, line := range strings.Split(string(res.Stdout), "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(line), "=")
		switch k {
		case "active":
			st.active, _ = strconv.ParseInt(v, 10, 64)
		case "staged":
			st.staged, _ = strconv.ParseInt(v, 10, 64)
		case "flag":
			st.flags = append(st.flags, v)
		}
	}
	return st, nil
}

func (p *provisioner) module(ctx context.Context) (bool, string, error) {
	want := p.arts.ModuleVersionCode
	st, err := p.moduleState(ctx)
	if err != nil {
		return false, "", err
	}
	if st.active == want && len(st.flags) == 0 && st.staged == 0 {
		return false, fmt.Sprintf("%s %d already active", module.ID, want), nil
	}
	if st.staged == want {
		// Installed by an earlier run that did not get to start it.
		return true, fmt.Sprintf("%s %d already staged", module.ID, want), nil
	}
	zip, _ := p.arts.Module(p.info.ABI)
	if err := p.dev.InstallModule(ctx, zip); err != nil {
		return false, "", err
	}
	if st.active != 0 {
		return true, fmt.Sprintf("upgraded %s %d → %d", module.ID, st.active, want), nil
	}
	return true, fmt.Sprintf("installed %s %d", module.ID, want), nil
}

// startMode is how to start a module on this device.
func (p *provisioner) startMode() StartMode {
	if p.o.Start != StartAuto {
		return p.o.Start
	}
	if p.info.Root == devices.RootADB {
		return StartService
	}
	return StartReboot
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// serviceScript activates a staged module (if any), stops a running
// supervisor and starts service.sh, as the module manager would at boot.
func serviceScript() string {
	d, u := ModulesDir+"/"+module.ID, ModulesStaging+"/"+module.ID
	pid := module.DefaultRoot + "/supervisor/supervisor.pid"
	return `set -e
if [ -f ` + u + `/module.prop ]; then mkdir -p ` + ModulesDir + `; rm -rf ` + d + `; mv ` + u + ` ` + d + `; rm -f ` + d + `/update; fi
if [ -f ` + pid + ` ]; then
  p=$(cat ` + pid + `)
  if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then
    kill "$p"
    i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
  fi
fi
sh ` + d + `/service.sh`
}

// kickScript starts the supervisor when it is not running, and kicks it
// (SIGUSR1 restarts an idle runtime that died) when it is.
func kickScript() string {
	pid := module.DefaultRoot + "/supervisor/supervisor.pid"
	return `p=$(cat ` + pid + ` 2>/dev/null)
if [ -n "$p" ] && kill -0 "$p" 2>/dev/null; then kill -USR1 "$p"; echo kicked; else sh ` + ModulesDir + "/" + module.ID + `/service.sh; echo started; fi`
}

func (p *provisioner) runtime(ctx context.Context, moduleChanged bool) (bool, string, error) {
	changed := false
	detail := ""
	if moduleChanged {
		changed = true
		switch p.startMode() {
		case StartReboot:
			start := time.Now()
			if err := p.reboot(ctx); err != nil {
				return false, "", err
			}
			detail = fmt.Sprintf("rebooted in %s", time.Since(start).Round(time.Millisecond))
		default:
			if err := p.su(ctx, serviceScript()); err != nil {
				return false, "", fmt.Errorf("start the module's service.sh: %w", err)
			}
			detail = "started service.sh"
		}
	}
	st, err := p.waitReady(ctx, !moduleChanged)
	if err != nil {
		return changed, detail, err
	}
	if st.kicked != "" {
		changed = true
		detail = st.kicked
	}
	p.res.RuntimeVersion = st.Version
	if detail == "" {
		detail = "runtime " + st.Version + " answering"
	} else {
		detail += "; runtime " + st.Version + " answering"
	}
	return changed, detail, nil
}

// su runs a root command and turns a non-zero exit into an error.
func (p *provisioner) su(ctx context.Context, cmd string) error {
	res, err := p.dev.Su(ctx, cmd)
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		out := strings.TrimSpace(string(res.Stderr) + " " + string(res.Stdout))
		if len(out) > 512 {
			out = out[:512]
		}
		return fmt.Errorf("exit %d: %s", res.ExitCode, out)
	}
	return nil
}

func (p *provisioner) reboot(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.o.BootTimeout)
	defer cancel()
	if err := p.dev.Reboot(ctx); err != nil {
		return fmt.Errorf("reboot: %w", err)
	}
	if err := p.dev.WaitBoot(ctx); err != nil {
		return fmt.Errorf("reboot: %w", err)
	}
	return nil
}

type readyStatus struct {
	*runtimectl.Status
	kicked string
}

// waitReady polls `ctl status` with backoff until the runtime answers
// with the built version. With mayKick, a runtime that does not answer is
// started (or kicked) once.
func (p *provisioner) waitReady(ctx context.Context, mayKick bool) (readyStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, p.o.ReadyTimeout)
	defer cancel()
	wait := 25 * time.Millisecond
	var last error
	kicked := ""
	for {
		st, err := p.ctl.Status(ctx)
		switch {
		case err == nil && st.Version == p.arts.Version:
			return readyStatus{Status: st, kicked: kicked}, nil
		case err == nil:
			last = fmt.Errorf("runtime answers with version %s, want %s (an old supervisor still running?)", st.Version, p.arts.Version)
		case errors.Is(err, runtimectl.ErrUnreachable) || errors.Is(err, runtimectl.ErrNotInstalled):
			last = err
			if mayKick && kicked == "" {
				res, kerr := p.dev.Su(ctx, kickScript())
				if kerr != nil {
					return readyStatus{}, kerr
				}
				kicked = "runtime was not answering: supervisor " + strings.TrimSpace(string(res.Stdout))
				continue
			}
		default:
			return readyStatus{}, err
		}
		select {
		case <-ctx.Done():
			return readyStatus{}, fmt.Errorf("%w within %s: %w", ErrNotReady, p.o.ReadyTimeout, last)
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Second)
	}
}

// wanted reports whether bundle b is to be installed.
func (p *provisioner) wanted(b build.Bundle) bool {
	return p.o.Apps == nil || slices.Contains(p.o.Apps, b.App) || slices.Contains(p.o.Apps, b.Package)
}

func (p *provisioner) apps(ctx context.Context) (bool, string, error) {
	installed, err := p.ctl.AppList(ctx)
	if err != nil {
		return false, "", err
	}
	have := map[string]apps.Package{}
	for _, pk := range installed {
		have[pk.Name] = pk
	}
	var did, same []string
	for _, b := range p.arts.Bundles {
		if !p.wanted(b) {
			continue
		}
		if pk, ok := have[b.Package]; ok && pk.SigningDigest == p.arts.SigningDigest && pk.ContentDigest == b.ContentDigest {
			same = append(same, b.App)
			continue
		}
		if err := p.installBundle(ctx, b); err != nil {
			return len(did) > 0, strings.Join(did, ", "), fmt.Errorf("%s: %w", b.App, err)
		}
		did = append(did, b.App)
	}
	if len(did) == 0 {
		return false, fmt.Sprintf("%d apps already installed", len(same)), nil
	}
	detail := "installed " + strings.Join(did, ", ")
	if len(same) > 0 {
		detail += fmt.Sprintf("; %d unchanged", len(same))
	}
	return true, detail, nil
}

func (p *provisioner) installBundle(ctx context.Context, b build.Bundle) error {
	f, err := os.Open(b.Path)
	if err != nil {
		return err
	}
	defer f.Close()
	remote := TempDir + "/agentlab-" + filepath.Base(b.Path)
	if err := p.dev.Push(ctx, f, remote, 0o644); err != nil {
		return fmt.Errorf("push: %w", err)
	}
	defer p.dev.Shell(context.WithoutCancel(ctx), "rm -f "+quote(remote))
	_, err = p.ctl.AppInstall(ctx, remote)
	if launcher.Reason(err) == "downgrade" {
		// The device has a newer build of this app than the lab's
		// cache gave (an older tree was built since): a lab device
		// takes the lab's build.
		p.log.Info("provision: replacing a newer build", "app", b.App)
		if _, err := p.ctl.AppUninstall(ctx, b.Package); err != nil {
			return fmt.Errorf("uninstall before reinstalling an older build: %w", err)
		}
		_, err = p.ctl.AppInstall(ctx, remote)
	}
	return err
}

func (p *provisioner) model(ctx context.Context) (bool, string, error) {
	var cfg runtimectl.ModelConfig
	var key string
	switch {
	case p.o.Model.Stub != nil:
		s := p.o.Model.Stub
		spec := "tcp:" + strconv.Itoa(s.Port)
		if _, err := p.dev.Reverse(ctx, spec, spec); err != nil {
			return false, "", fmt.Errorf("adb reverse %s %s: %w", spec, spec, err)
		}
		cfg = runtimectl.ModelConfig{Provider: "openai", BaseURL: modelstub.DeviceBaseURL(s.Host, s.Port, s.Token), Model: StubModelID}
		if s.Provider != "" {
			cfg.Provider, cfg.Model = s.Provider, s.Model
		}
		key = modelstub.FakeKey
	case p.o.Model.Live != nil:
		l := p.o.Model.Live
		cfg = runtimectl.ModelConfig{Provider: l.Provider, BaseURL: l.BaseURL, Model: l.Model}
		key = l.Key
	default:
		return false, "left as it is", nil
	}
	p.res.ModelBaseURL = cfg.BaseURL
	cur, err := p.ctl.ModelShow(ctx)
	if err != nil {
		return false, "", err
	}
	if cur.Matches(cfg) && cur.KeySet {
		return false, cfg.Provider + " " + cfg.Model + " already set", nil
	}
	if _, err := p.ctl.ModelSet(ctx, cfg, key); err != nil {
		return false, "", err
	}
	return true, "set " + cfg.Provider + " " + cfg.Model + " at " + cfg.BaseURL, nil
}

// site puts the lab's test site on the device's port (a reverse is
// cheap and idempotent, so it is set every time: a reboot loses it).
func (p *provisioner) site(ctx context.Context) (bool, string, error) {
	remote := "tcp:" + strconv.Itoa(testsite.DevicePort)
	if _, err := p.dev.Reverse(ctx, remote, "tcp:"+strconv.Itoa(p.o.Site.Port)); err != nil {
		return false, "", fmt.Errorf("adb reverse %s: %w", remote, err)
	}
	return true, fmt.Sprintf("device port %d to the lab's port %d", testsite.DevicePort, p.o.Site.Port), nil
}

// wantedPlugins are the plugin names (or ids) to enable.
func (p *provisioner) wantedPlugins() []string {
	if p.o.Plugins != nil {
		return p.o.Plugins
	}
	var out []string
	for _, b := range p.arts.Bundles {
		if p.wanted(b) && b.Plugin != "" {
			out = append(out, b.Plugin)
		}
	}
	return out
}

func (p *provisioner) plugins(ctx context.Context) (bool, string, error) {
	want := p.wantedPlugins()
	if len(want) == 0 {
		return false, "none to enable", nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.o.ReadyTimeout)
	defer cancel()
	var enabled, already []string
	wait := 25 * time.Millisecond
	rescanned := false
	for {
		list, err := p.ctl.PluginsList(ctx)
		if errors.Is(err, errcode.Busy) {
			// The runtime answers before its extension host is up (right
			// after a start or a reboot): busy says try again.
			select {
			case <-ctx.Done():
				return len(enabled) > 0, "", fmt.Errorf("%w: the extension host did not start within %s: %w", ErrPlugin, p.o.ReadyTimeout, err)
			case <-time.After(wait):
			}
			wait = min(wait*2, time.Second)
			continue
		}
		if err != nil {
			return len(enabled) > 0, "", err
		}
		var missing []string
		for _, name := range want {
			pl, ok := findPlugin(list, name)
			switch {
			case !ok:
				missing = append(missing, name)
			case pl.Enabled:
				if !slices.Contains(enabled, name) && !slices.Contains(already, name) {
					already = append(already, name)
				}
			default:
				if err := p.ctl.PluginsEnable(ctx, pl.ID); err != nil {
					return len(enabled) > 0, "", fmt.Errorf("%w: enable %s (status %s %s): %w", ErrPlugin, name, pl.Status, pl.Reason, err)
				}
				enabled = append(enabled, name)
			}
		}
		if len(missing) == 0 {
			break
		}
		// Discovery follows the package table; ask once for a rescan,
		// then wait for it.
		if !rescanned {
			rescanned = true
			if err := p.ctl.PluginsRescan(ctx); err != nil {
				p.log.Debug("plugins rescan", "err", err)
			}
			continue
		}
		select {
		case <-ctx.Done():
			return len(enabled) > 0, "", fmt.Errorf("%w: %s not discovered within %s", ErrPlugin, strings.Join(missing, ", "), p.o.ReadyTimeout)
		case <-time.After(wait):
		}
		wait = min(wait*2, time.Second)
	}
	if len(enabled) == 0 {
		return false, fmt.Sprintf("%d plugins already enabled", len(already)), nil
	}
	return true, "enabled " + strings.Join(enabled, ", "), nil
}

func findPlugin(list []runtimectl.Plugin, name string) (runtimectl.Plugin, bool) {
	for _, pl := range list {
		if pl.ID == name || pl.Name == name {
			return pl, true
		}
	}
	return runtimectl.Plugin{}, false
}

func (p *provisioner) desktop(ctx context.Context) (bool, string, error) {
	st, err := p.ctl.DesktopStatus(ctx)
	if err != nil {
		return false, "", err
	}
	if st.Enabled {
		return false, "desktop access already on", nil
	}
	// The pairing code it returns is the owner's; it is not kept.
	if _, err := p.ctl.DesktopEnable(ctx); err != nil {
		return false, "", err
	}
	return true, "desktop access turned on", nil
}
