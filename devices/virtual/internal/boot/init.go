//go:build linux

package boot

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
	"github.com/agentoslab/agentlab/devices/virtual/internal/adbd"
	"github.com/agentoslab/agentlab/devices/virtual/internal/modules"
	"github.com/agentoslab/agentlab/devices/virtual/internal/paranoid"
	"github.com/agentoslab/agentlab/devices/virtual/internal/proc"
	"github.com/agentoslab/agentlab/devices/virtual/internal/props"
	"github.com/agentoslab/agentlab/devices/virtual/internal/su"
	"golang.org/x/sys/unix"
)

// Paths inside a device.
const (
	shellPath     = "/system/bin/sh"
	persistFile   = "/data/property/persistent_properties"
	scriptLogFile = "/data/adb/boot_scripts.log"
	busyboxPath   = "/bin/busybox"
	shellPATH     = "/system/bin:/system/xbin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// RemoveModulesProp asks init to remove every module now.
const RemoveModulesProp = "sys.vdevice.remove_modules"

// Tools are the names the multi-call binary answers to inside a device,
// per root method. screencap is deliberately absent: screenshots are not
// supported on a virtual device.
var toolNames = map[string][]string{
	"":             {"getprop", "setprop", "reboot"},
	modules.Magisk: {"su", "magisk", "resetprop"},
	"kernelsu":     {"su", "resetprop"},
	"adb-root":     {"su"},
	"none":         {},
}

// allToolNames lists every name that may be linked, so that links of
// another root method are removed.
var allToolNames = []string{"getprop", "setprop", "reboot", "su", "magisk", "resetprop", "ksud"}

// Env returns the environment of a process started in a device as uid.
func Env(uid int, term string) []string {
	user := "shell"
	if uid == 0 {
		user = "root"
	} else if uid != 2000 {
		user = fmt.Sprintf("u0_a%d", uid%100000-10000)
	}
	env := []string{
		"PATH=" + shellPATH, "HOME=/", "USER=" + user, "LOGNAME=" + user, "SHELL=" + shellPath,
		"HOSTNAME=localhost", "ANDROID_ROOT=/system", "ANDROID_DATA=/data", "ANDROID_STORAGE=/storage",
		"EXTERNAL_STORAGE=/sdcard", "TMPDIR=/data/local/tmp",
	}
	if term != "" {
		env = append(env, "TERM="+term)
	}
	return env
}

// ServiceEnv is the environment of what init starts itself (the module
// scripts, and so the services they start): Android init's exported
// variables, without the adb shell's TMPDIR — a service started from
// service.sh on a phone has none.
func ServiceEnv() []string {
	var env []string
	for _, kv := range Env(0, "") {
		if !strings.HasPrefix(kv, "TMPDIR=") {
			env = append(env, kv)
		}
	}
	return append(env, "ANDROID_TZDATA_ROOT=/apex/com.android.tzdata")
}

type device struct {
	cfg     *Config
	log     *slog.Logger
	reaper  *proc.Reaper
	store   *props.Store
	adbRoot atomic.Bool
	// power receives "reboot" or "shutdown" once.
	power chan string
}

func (d *device) requestPower(what string) {
	select {
	case d.power <- what:
	default:
	}
}

// onProp reacts to property changes: sys.powerctl is how reboot and
// shutdown are asked for, as on Android.
func (d *device) onProp(name, value string) {
	if name == RemoveModulesProp && value == "1" {
		// magisk --remove-modules from the shell user: init is root.
		if d.cfg.RootMethod == modules.Magisk || d.cfg.RootMethod == modules.KernelSU {
			if err := d.moduleManager(false).RemoveAll(context.Background()); err != nil {
				d.log.Warn("remove modules", "err", err)
			}
		}
		d.store.Reset(RemoveModulesProp, "0")
		return
	}
	if name != "sys.powerctl" {
		return
	}
	switch {
	case strings.HasPrefix(value, "reboot"):
		d.requestPower("reboot")
	case strings.HasPrefix(value, "shutdown"):
		d.requestPower("shutdown")
	}
}

// Main runs a device's init and returns its exit status: 0 after a
// shutdown, ExitReboot when the host should boot the device again, 1 when
// booting failed (reported on the ready pipe).
func Main() int {
	ready := os.NewFile(ReadyFD, "ready")
	fail := func(err error) int {
		fmt.Fprintf(ready, "error: %v\n", err)
		ready.Close()
		fmt.Fprintf(os.Stderr, "vdevice init: %v\n", err)
		return 1
	}
	b, err := os.ReadFile(os.Getenv(EnvInit))
	if err != nil {
		return fail(fmt.Errorf("read config: %w", err))
	}
	var cfg Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return fail(fmt.Errorf("read config: %w", err))
	}
	level := slog.LevelInfo
	if cfg.Debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})).With("device", cfg.Name)
	if os.Getpid() != 1 {
		return fail(fmt.Errorf("init must be pid 1 of a new pid namespace (is %d)", os.Getpid()))
	}
	lnFile := os.NewFile(ListenerFD, "adb-listener")
	ln, err := net.FileListener(lnFile)
	lnFile.Close()
	if err != nil {
		return fail(fmt.Errorf("adb listener: %w", err))
	}
	// Signals first: until now a SIGTERM from the host killed us outright.
	sigc := make(chan os.Signal, 4)
	signal.Notify(sigc, unix.SIGTERM, unix.SIGHUP, unix.SIGINT, unix.SIGUSR1, unix.SIGUSR2)

	os.Clearenv()
	for _, e := range Env(0, "") {
		k, v, _ := strings.Cut(e, "=")
		os.Setenv(k, v)
	}
	if err := unix.Sethostname([]byte("localhost")); err != nil {
		return fail(fmt.Errorf("hostname: %w", err))
	}
	if err := setupRoot(&cfg); err != nil {
		return fail(err)
	}
	if err := loUp(); err != nil {
		return fail(err)
	}
	// From here on socket(2) for AF_INET/AF_INET6 in the device follows
	// Android's inet-group rule (package paranoid); init's own sockets
	// pass as root.
	paranoidNet := "1"
	if enf, err := paranoid.Install(log); err != nil {
		log.Warn("the device cannot enforce the inet group", "err", err)
		paranoidNet = "0"
	} else {
		go enf.Serve()
	}
	if err := layout(); err != nil {
		log.Warn("device layout", "err", err)
	}
	if err := androidFiles(&cfg); err != nil {
		log.Warn("device files", "err", err)
	}
	d := &device{cfg: &cfg, log: log, reaper: proc.NewReaper(true), power: make(chan string, 1)}
	d.store = props.NewStore(persistFile, d.onProp)
	// Persistent properties of the configuration are applied after the
	// saved ones are loaded: the configuration wins (the lab sets the
	// device's zone), and setting them before would rewrite the saved
	// file with only them.
	for k, v := range cfg.Props {
		if strings.HasPrefix(k, "persist.") {
			continue
		}
		if err := d.store.Reset(k, v); err != nil {
			log.Warn("bad property", "name", k, "err", err)
		}
	}
	d.store.Reset(ParanoidNetworkProp, paranoidNet)
	if err := d.store.LoadPersistent(); err != nil {
		log.Warn("persistent properties", "err", err)
	}
	for k, v := range cfg.Props {
		if !strings.HasPrefix(k, "persist.") {
			continue
		}
		if err := d.store.Reset(k, v); err != nil {
			log.Warn("bad property", "name", k, "err", err)
		}
	}
	propSrv, err := props.Serve(d.store, log)
	if err != nil {
		return fail(err)
	}
	defer propSrv.Close()
	if err := d.linkTools(); err != nil {
		return fail(err)
	}
	if _, ok := toolNames[cfg.RootMethod]; ok && cfg.RootMethod != "none" {
		sud, err := su.Serve(d.reaper, shellPath, log)
		if err != nil {
			return fail(err)
		}
		defer sud.Close()
	}
	d.store.Set("init.svc.adbd", "running")
	bootCtx, cancelBoot := context.WithCancel(context.Background())
	defer cancelBoot()
	var mods *modules.Manager
	if cfg.RootMethod == modules.Magisk || cfg.RootMethod == modules.KernelSU {
		mods = d.moduleManager(true)
		mods.Activate(bootCtx)
		for _, p := range mods.SystemProps() {
			d.store.LoadFile(p)
		}
		timeout := 40 * time.Second
		if cfg.RootMethod == modules.KernelSU {
			timeout = 10 * time.Second
		}
		mods.PostFsData(bootCtx, timeout)
		mods.StartStage("service")
	}
	d.store.Set("sys.boot_completed", "1")
	d.store.Set("dev.bootcomplete", "1")

	srv := adbd.NewServer(&adbd.Config{Banner: d.banner(), Logger: log, Hooks: adbd.Hooks{
		Reaper: d.reaper, Shell: shellPath, Env: Env,
		UID: func() int {
			if d.adbRoot.Load() {
				return 0
			}
			return 2000
		},
		Root:   d.root,
		Reboot: func(string) { d.requestPower("reboot") },
	}})
	serveDone := make(chan struct{})
	go func() {
		defer close(serveDone)
		srv.Serve(ln)
	}()
	fmt.Fprintln(ready, "ready")
	ready.Close()
	log.Info("boot completed")
	if mods != nil && cfg.RootMethod == modules.KernelSU {
		mods.StartStage("boot-completed")
	}

	var what string
	select {
	case what = <-d.power:
	case sig := <-sigc:
		what = "shutdown"
		if sig == unix.SIGHUP {
			what = "reboot"
		}
	}
	log.Info("going down", "for", what)
	ln.Close()
	srv.DropAll()
	d.killAll()
	if what == "reboot" {
		return ExitReboot
	}
	return 0
}

// killAll ends every other process of the device: SIGTERM, a short grace
// period, then SIGKILL. As PID 1, kill(-1) reaches exactly the device.
func (d *device) killAll() {
	unix.Kill(-1, unix.SIGTERM)
	deadline := time.Now().Add(time.Second)
	for time.Now().Before(deadline) && othersAlive() {
		time.Sleep(10 * time.Millisecond)
	}
	unix.Kill(-1, unix.SIGKILL)
}

// othersAlive reports whether /proc lists a process other than init.
func othersAlive() bool {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range entries {
		if n := e.Name(); n[0] >= '0' && n[0] <= '9' && n != "1" {
			return true
		}
	}
	return false
}

func (d *device) banner() string {
	get := func(k string) string { v, _ := d.store.Get(k); return v }
	return adbwire.Banner{
		Product: get("ro.product.name"), Model: get("ro.product.model"), Device: get("ro.product.device"),
		Features: adbd.Features,
	}.String()
}

// root handles adb root / adb unroot like adbd: only debuggable builds
// restart as root; a restart drops the connection, and the adb server
// reconnects to the same listener.
func (d *device) root(enable bool) (string, bool) {
	if enable {
		if d.adbRoot.Load() {
			return "adbd is already running as root\n", false
		}
		if v, _ := d.store.Get("ro.debuggable"); v != "1" {
			return "adbd cannot run as root in production builds\n", false
		}
		d.adbRoot.Store(true)
		d.store.Reset("service.adb.root", "1")
		return "restarting adbd as root\n", true
	}
	if !d.adbRoot.Load() {
		return "adbd not running as root\n", false
	}
	d.adbRoot.Store(false)
	d.store.Reset("service.adb.root", "0")
	return "restarting adbd as non root\n", true
}

// linkTools makes /system/bin hold exactly this root method's tools.
func (d *device) linkTools() error {
	want := map[string]bool{}
	for _, n := range toolNames[""] {
		want[n] = true
	}
	for _, n := range toolNames[d.cfg.RootMethod] {
		want[n] = true
	}
	for _, n := range allToolNames {
		p := filepath.Join("/system/bin", n)
		target, err := os.Readlink(p)
		if err == nil && target == filepath.Base(ToolPath) && !want[n] {
			os.Remove(p)
		}
		if want[n] && target != filepath.Base(ToolPath) {
			os.Remove(p)
			if err := os.Symlink(filepath.Base(ToolPath), p); err != nil {
				return fmt.Errorf("link %s: %w", n, err)
			}
		}
	}
	if t, _ := os.Readlink(filepath.Join("/system/bin", "sh")); t != "/bin/sh" {
		os.Remove("/system/bin/sh")
		if err := os.Symlink("/bin/sh", "/system/bin/sh"); err != nil {
			return fmt.Errorf("link sh: %w", err)
		}
	}
	os.Remove("/system/bin/screencap")
	// Root-only homes of the root solutions' own binaries.
	os.Remove("/data/adb/ksud")
	os.RemoveAll("/data/adb/magisk")
	os.RemoveAll("/data/adb/ksu")
	switch d.cfg.RootMethod {
	case modules.KernelSU:
		if err := os.Symlink(ToolPath, "/data/adb/ksud"); err != nil {
			return fmt.Errorf("link ksud: %w", err)
		}
		linkBusybox("/data/adb/ksu/bin")
	case modules.Magisk:
		linkBusybox("/data/adb/magisk")
	}
	return nil
}

func linkBusybox(dir string) {
	if _, err := os.Stat(busyboxPath); err != nil {
		return
	}
	os.MkdirAll(dir, 0o755)
	os.Symlink(busyboxPath, filepath.Join(dir, "busybox"))
}

// moduleManager returns the device's module manager; a boot truncates
// the script log, later uses append to it.
func (d *device) moduleManager(boot bool) *modules.Manager {
	shell := []string{shellPath}
	if _, err := os.Stat(busyboxPath); err == nil {
		shell = []string{busyboxPath, "sh"}
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if boot {
		flags |= os.O_TRUNC
	}
	logf, err := os.OpenFile(scriptLogFile, flags, 0o600)
	if err != nil {
		logf = nil
	}
	return &modules.Manager{Base: "/data/adb", Method: d.cfg.RootMethod, Reaper: d.reaper, Shell: shell,
		Env: ServiceEnv(), API: d.cfg.SDK, ABI: d.cfg.ABI, Log: d.log, ScriptLog: logf}
}
