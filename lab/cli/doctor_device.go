package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/lab"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/lab/runner"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/module"
	"github.com/agentoslab/agentlab/runtime/platform"
)

// Paths on a device the doctor reads.
const (
	moduleDir       = "/data/adb/modules/agentos"
	moduleAgentosd  = moduleDir + "/bin/agentosd"
	supervisorState = "/data/agentos/status"
	// defaultProbeURL is what Android itself fetches to see whether it is
	// online (its captive-portal check).
	defaultProbeURL = "https://connectivitycheck.gstatic.com/generate_204"
)

// findDevice finds serial (or a virtual device's name) among the devices
// lab.yaml names, else on the local adb server.
func findDevice(ctx context.Context, a *app, cfg *config.Config, serial string) (devices.Device, func(), error) {
	inv, err := lab.OpenInventory(ctx, cfg, a.labOptions())
	if err != nil {
		return nil, func() {}, err
	}
	for _, d := range inv.Devices {
		if h := d.Handle(); h != nil && (d.Serial == serial || d.Name == serial) {
			return h, func() { inv.Close() }, nil
		}
	}
	inv.Close()
	srv := adb.NewServer("", &adb.Options{Logger: a.logger()})
	entries, err := srv.Devices(ctx)
	if err != nil {
		return nil, func() {}, fmt.Errorf("no device %s among lab.yaml's sources, and the local adb server: %w", serial, err)
	}
	for _, e := range entries {
		if e.Serial == serial {
			return srv.Device(serial), func() {}, nil
		}
	}
	return nil, func() {}, fmt.Errorf("no device %s among lab.yaml's sources or on the local adb server (agentlab devices lists them; adb connect HOST:PORT first)", serial)
}

// publishedNames are the names a virtual device's netd answers from the
// lab's table (nil for other devices).
func publishedNames(cfg *config.Config, serial string) []string {
	name, err := virtual.Resolve(cfg.VirtualStateDir(), serial)
	if err != nil {
		return nil
	}
	hosts, err := virtual.Hosts(cfg.VirtualStateDir(), name)
	if err != nil {
		return nil
	}
	var out []string
	for h := range hosts {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

// diagnoseDevice runs the checks for running AgentOS on dev: what the
// phone (or emulator, or virtual device) must offer and what the
// runtime's uid finds there. published are the names a virtual device's
// netd answers itself.
func diagnoseDevice(ctx context.Context, dev devices.Device, probeURL string, published []string) []check {
	var out []check
	add := func(c check) { out = append(out, c) }
	shell := func(cmd string) (string, int, error) {
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		r, err := dev.Shell(sctx, cmd)
		if err != nil {
			return "", -1, err
		}
		return strings.TrimSpace(string(r.Stdout)), r.ExitCode, nil
	}
	su := func(cmd string) (string, int, error) {
		sctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		r, err := dev.Su(sctx, cmd)
		if err != nil {
			return "", -1, err
		}
		return strings.TrimSpace(string(r.Stdout)), r.ExitCode, nil
	}

	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	info, err := dev.Info(ictx)
	cancel()
	c := check{Name: "device", Required: true, Needed: "everything", Fix: "adb devices; authorize this computer on the phone (USB debugging), or adb connect HOST:PORT"}
	if err != nil {
		c.Found = err.Error()
		return append(out, c)
	}
	c.OK, c.Found = true, fmt.Sprintf("%s %s, %s", info.Model, dev.Serial(), info.ABI)
	add(c)
	isVirtual := runner.KindOf(info, dev.Serial()) == reports.DeviceVirtual

	c = check{Name: "api-level", Required: true, Needed: "the module installs on API levels it was built for",
		Fix: fmt.Sprintf("use a device with API %d–%d (Android 15–17)", module.DefaultMinAPI, module.DefaultMaxAPI)}
	c.Found = "API " + strconv.Itoa(info.APILevel)
	c.OK = info.APILevel >= module.DefaultMinAPI && info.APILevel <= module.DefaultMaxAPI
	add(c)

	c = check{Name: "root", Required: true, Needed: "installing the module and running the supervisor as root",
		Fix: fmt.Sprintf("install Magisk (version code ≥ %d) or KernelSU, and grant root to the shell in its app (the first su asks)", module.DefaultMagiskMin)}
	switch info.Root {
	case devices.RootMagisk:
		v, _, _ := su("magisk -V")
		code, _ := strconv.Atoi(v)
		c.Found = "Magisk " + info.RootVersion + " (" + v + ")"
		c.OK = code >= module.DefaultMagiskMin
		if !c.OK {
			c.Fix = fmt.Sprintf("update Magisk: version code %s is older than %d", v, module.DefaultMagiskMin)
		}
	case devices.RootKernelSU:
		c.OK, c.Found = true, "KernelSU "+info.RootVersion
	case devices.RootADB:
		c.OK, c.Found = true, "adb root (debuggable build: the module is started by hand after each boot)"
	default:
		c.Found = "no root: su is missing or denied the shell"
	}
	add(c)
	// su works (an old Magisk fails the check above, but answers).
	rooted := info.Root == devices.RootMagisk || info.Root == devices.RootKernelSU || info.Root == devices.RootADB

	c = check{Name: "selinux", Needed: "the module's processes run in the root manager's domain", Fix: "nothing to do: Enforcing and Permissive both work with Magisk and KernelSU"}
	if mode, code, err := shell("getenforce"); err == nil && code == 0 && mode != "" {
		c.OK, c.Found = true, mode
	} else if isVirtual {
		c.OK, c.Found = true, "not applicable: a virtual device has no SELinux"
	} else {
		c.Found = "getenforce did not answer"
	}
	add(c)

	c = check{Name: "data-free", Required: true, Needed: fmt.Sprintf("the module's installer wants %d MB free on /data", module.DefaultMinFreeMB),
		Fix: fmt.Sprintf("free at least %d MB on the phone's storage", module.DefaultMinFreeMB)}
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	free, err := dev.FreeStorage(fctx, "/data")
	cancel()
	if err != nil {
		c.Found = err.Error()
	} else {
		c.Found = fmt.Sprintf("%d MB free", free>>20)
		c.OK = free>>20 >= module.DefaultMinFreeMB
	}
	add(c)

	c = check{Name: "module", Required: true, Needed: "the runtime (the AgentOS module, started by its service.sh)",
		Fix: "agentlab provision -s " + dev.Serial()}
	prop, code, _ := su("cat " + moduleDir + "/module.prop 2>/dev/null; ls " + moduleDir + " 2>/dev/null")
	status, _, _ := su("cat " + supervisorState + " 2>/dev/null")
	installed := code == 0 && strings.Contains(prop, "id=agentos")
	switch {
	case !rooted:
		c.Found = "not checked without root"
	case !installed:
		c.Found = "not installed"
	case strings.Contains("\n"+prop+"\n", "\ndisable\n"):
		c.Found, c.Fix = "installed but disabled", "enable AgentOS in the Magisk/KernelSU app (or rm "+moduleDir+"/disable) and reboot"
	case strings.Contains("\n"+prop+"\n", "\nremove\n"):
		c.Found, c.Fix = "marked for removal", "reinstall: agentlab provision -s "+dev.Serial()
	default:
		state := kv(status, "state")
		c.Found = "version " + kv(prop, "version") + ", supervisor " + dash(state)
		c.OK = state == "ok"
		if !c.OK {
			c.Fix = "see /data/agentos/supervisor/supervisor.log on the device; agentlab provision -s " + dev.Serial() + " starts it again"
		}
	}
	add(c)

	// What the runtime's uid finds: the platform layer, DNS, HTTPS.
	host, fetch := hostOf(probeURL), probeURL
	if isVirtual {
		// No HTTPS from a virtual device; its netd answers the lab's
		// names itself and others from the host's resolver.
		fetch = ""
		if slices.Contains(published, modelstub.DeviceHost) {
			host = modelstub.DeviceHost
		}
	}
	var probe *platform.Probe
	probeErr := "the module is not installed"
	if !rooted {
		probeErr = "not checked without root"
	}
	if rooted && installed {
		raw, code, err := su(moduleAgentosd + " platform --as-runtime --lookup " + quoteArg(host) + " --fetch " + quoteArg(fetch))
		var p platform.Probe
		switch {
		case err != nil:
			probeErr = err.Error()
		case code != 0 || json.Unmarshal([]byte(raw), &p) != nil:
			probeErr = "agentosd platform failed (an older module?): " + firstLine(raw)
		default:
			probe = &p
		}
	}

	c = check{Name: "network-permission", Required: true, Needed: "the runtime opens sockets only with the inet group (3003)",
		Fix: "update the module: agentlab provision -s " + dev.Serial()}
	if probe == nil {
		c.Found = probeErr
	} else {
		c.Found = fmt.Sprintf("uid %d, groups %v", probe.UID, probe.Groups)
		c.OK = slices.Contains(probe.Groups, apps.InetGID)
	}
	add(c)

	c = check{Name: "dns", Required: true, Needed: "the runtime reaches model providers and MCP servers by name (through netd's dnsproxyd)",
		Fix: "give the phone a network (Wi-Fi or mobile data); if netd still cannot resolve, set a fallback as root: setprop " + platform.PropFallbackDNS + " 223.5.5.5"}
	switch {
	case probe == nil:
		c.Found = probeErr
	case probe.Lookup == nil || probe.Lookup.Error != "":
		c.Found = "lookup " + host + " as the runtime: " + probe.Lookup.Error
	default:
		c.OK, c.Found = true, host+" → "+strings.Join(probe.Lookup.Addrs, ", ")+" via "+probe.Platform.Resolver
	}
	add(c)

	c = check{Name: "https", Required: !isVirtual, Needed: "a live model over HTTPS from the runtime's uid",
		Fix: "check the phone's network and date; behind a proxy or captive portal, sign in first (try it in the phone's browser)"}
	switch {
	case isVirtual:
		c.OK, c.Found = true, "not applicable: a virtual device's network is loopback only (the host is reached through adb reverse)"
	case probe == nil:
		c.Found = probeErr
	case probe.Fetch == nil || probe.Fetch.Error != "":
		c.Found = "GET " + fetch + ": " + probe.Fetch.Error
	default:
		c.Found = fmt.Sprintf("GET %s: %d", fetch, probe.Fetch.Status)
		c.OK = probe.Fetch.Status < 400
	}
	add(c)

	c = check{Name: "time-zone", Required: true, Needed: "alarms and events land at the user's wall-clock time",
		Fix: "set the zone in Settings → System → Date & time (or as root: setprop persist.sys.timezone Asia/Shanghai), then reboot"}
	zone, _, _ := shell("getprop persist.sys.timezone")
	switch {
	case zone == "":
		c.Found = "persist.sys.timezone is not set: the device runs in UTC"
	case probe == nil:
		c.Found = "persist.sys.timezone " + zone + "; the runtime's: " + probeErr
	case probe.Platform.TimeZone != zone:
		c.Found = fmt.Sprintf("persist.sys.timezone %s, but the runtime's uid runs in %s", zone, probe.Platform.TimeZone)
		c.Fix = "update the module (its platform layer reads persist.sys.timezone): agentlab provision -s " + dev.Serial()
	default:
		c.OK, c.Found = true, zone+" ("+probe.Platform.TZData+")"
	}
	add(c)
	return out
}

// kv reads key=value from lines.
func kv(text, key string) string {
	for _, line := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), key+"="); ok {
			return v
		}
	}
	return ""
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	return u.Hostname()
}

// quoteArg quotes s for the device's sh (” for empty).
func quoteArg(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
