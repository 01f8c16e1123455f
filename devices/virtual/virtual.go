package virtual

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"time"
	// Options.TimeZone is checked against Go's own zone list: the host
	// may have no /usr/share/zoneinfo (the FROM scratch device image).
	_ "time/tzdata"
)

// DefaultTimeZone is a device's zone unless told otherwise: not UTC, so
// that a binary that ignores the device's zone is caught.
const DefaultTimeZone = "Asia/Shanghai"

// Root methods.
const (
	RootMagisk   = "magisk"
	RootKernelSU = "kernelsu"
	RootADB      = "adb-root"
	RootNone     = "none"
)

// Options configure a device. The zero value works.
type Options struct {
	// Name is [a-z0-9-]{1,32}; default "vdev-<n>", the first n not in use.
	Name string
	// StateDir is the parent of every device's persistent root; default
	// $XDG_STATE_HOME/agentlab/vdevices (~/.local/state/agentlab/vdevices).
	StateDir string
	// Port is the adb port on 127.0.0.1; 0 picks a free port outside
	// 5555–5585 (where the adb server would adopt it as an emulator).
	Port int
	// SDK is ro.build.version.sdk; default 35.
	SDK int
	// ABI is ro.product.cpu.abi; default from runtime.GOARCH.
	ABI string
	// RootMethod is "magisk" (default), "kernelsu", "adb-root" or "none".
	RootMethod string
	// Props are extra or overriding properties.
	Props map[string]string
	// TimeZone is the device's zone, persist.sys.timezone (an IANA name);
	// default DefaultTimeZone. It is set at every boot.
	TimeZone string
	// Hosts are the names the device's netd answers itself, before the
	// host's resolver (the lab publishes its model stub this way); nil
	// is none. SetHosts changes them on a running device.
	Hosts map[string][]netip.Addr
	// Logger receives lifecycle events; nil discards them.
	Logger *slog.Logger
}

// Info describes a device on disk, running or not.
type Info struct {
	Name   string `json:"name"`
	Root   string `json:"root"`
	Serial string `json:"serial,omitempty"`
	Port   int    `json:"port,omitempty"`
	// State is "running" or "stopped".
	State string `json:"state"`
	// PID is the process that owns the running device (the test, agentlab
	// run, or the vdevice keeper).
	PID int `json:"pid,omitempty"`
}

// Errors; match with errors.Is.
var (
	// ErrUnsupported: the host can not run virtual devices (not Linux, or
	// no CAP_SYS_ADMIN).
	ErrUnsupported = errors.New("virtual devices unsupported on this host")
	// ErrRunning: the device is running (Start of a running device, Reset).
	ErrRunning = errors.New("virtual device is running")
	// ErrNotFound: no such device under the state dir.
	ErrNotFound = errors.New("no such virtual device")
)

var (
	nameRE     = regexp.MustCompile(`^[a-z0-9-]{1,32}$`)
	hostNameRE = regexp.MustCompile(`^(?i)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)
)

// DefaultStateDir returns the default parent of device roots.
func DefaultStateDir() string {
	if d := os.Getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "agentlab", "vdevices")
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "agentlab-vdevices")
	}
	return filepath.Join(home, ".local", "state", "agentlab", "vdevices")
}

// abiFor maps a GOARCH to an Android ABI.
func abiFor(goarch string) string {
	switch goarch {
	case "amd64":
		return "x86_64"
	case "arm64":
		return "arm64-v8a"
	case "386":
		return "x86"
	case "arm":
		return "armeabi-v7a"
	}
	return goarch
}

// releaseFor maps an API level to ro.build.version.release.
func releaseFor(sdk int) string {
	switch {
	case sdk >= 33:
		return strconv.Itoa(sdk - 20)
	case sdk >= 31:
		return "12"
	case sdk >= 29:
		return strconv.Itoa(sdk - 19)
	case sdk == 28:
		return "9"
	case sdk == 27:
		return "8.1.0"
	case sdk == 26:
		return "8.0.0"
	}
	return strconv.Itoa(sdk)
}

// normalize validates o and fills defaults (the name is chosen at start).
func (o *Options) normalize() error {
	if o.StateDir == "" {
		o.StateDir = DefaultStateDir()
	}
	if o.Name != "" && !nameRE.MatchString(o.Name) {
		return fmt.Errorf("virtual device name %q: want [a-z0-9-]{1,32}", o.Name)
	}
	if o.SDK == 0 {
		o.SDK = 35
	}
	if o.SDK < 1 || o.SDK > 1000 {
		return fmt.Errorf("virtual device sdk %d: out of range", o.SDK)
	}
	if o.ABI == "" {
		o.ABI = abiFor(runtime.GOARCH)
	}
	switch o.RootMethod {
	case "":
		o.RootMethod = RootMagisk
	case RootMagisk, RootKernelSU, RootADB, RootNone:
	default:
		return fmt.Errorf("virtual device root method %q: want magisk, kernelsu, adb-root or none", o.RootMethod)
	}
	if o.TimeZone == "" {
		o.TimeZone = DefaultTimeZone
	}
	if _, err := time.LoadLocation(o.TimeZone); err != nil || o.TimeZone == "Local" {
		return fmt.Errorf("virtual device time zone %q: not an IANA zone name", o.TimeZone)
	}
	for name, addrs := range o.Hosts {
		if !hostNameRE.MatchString(name) || len(addrs) == 0 {
			return fmt.Errorf("virtual device host %q: want a host name with at least one address", name)
		}
	}
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("virtual device port %d: out of range", o.Port)
	}
	if o.Port >= 5555 && o.Port <= 5585 {
		return fmt.Errorf("virtual device port %d: 5555-5585 are emulator ports the adb server adopts on its own", o.Port)
	}
	return nil
}

// properties returns the device's initial properties.
func (o *Options) properties(name string) map[string]string {
	debuggable, buildType, tags := "1", "userdebug", "test-keys"
	if o.RootMethod == RootNone {
		debuggable, buildType, tags = "0", "user", "release-keys"
	}
	release := releaseFor(o.SDK)
	p := map[string]string{
		"ro.product.name":          "agentlab_vdev",
		"ro.product.model":         "AgentLab Virtual Device",
		"ro.product.device":        "vdev",
		"ro.product.brand":         "agentlab",
		"ro.product.manufacturer":  "AgentOS Lab",
		"ro.product.cpu.abi":       o.ABI,
		"ro.product.cpu.abilist":   o.ABI,
		"ro.build.version.sdk":     strconv.Itoa(o.SDK),
		"ro.build.version.release": release,
		"ro.build.type":            buildType,
		"ro.build.tags":            tags,
		"ro.build.fingerprint":     "agentlab/agentlab_vdev/vdev:" + release + "/VDEV/1:" + buildType + "/" + tags,
		"ro.debuggable":            debuggable,
		"ro.secure":                "1",
		"ro.adb.secure":            "0",
		"ro.hardware":              "vdevice",
		"ro.serialno":              name,
		"ro.boot.serialno":         name,
		"ro.vdevice.name":          name,
		"ro.vdevice.root_method":   o.RootMethod,
		"service.adb.root":         "0",
		"persist.sys.timezone":     o.TimeZone,
	}
	for k, v := range o.Props {
		p[k] = v
	}
	return p
}

// Resolve turns a device's name or its serial ("127.0.0.1:PORT", as
// vdevice start prints it) into its name under stateDir ("" = the
// default). A serial names a running device only.
func Resolve(stateDir, nameOrSerial string) (string, error) {
	if nameRE.MatchString(nameOrSerial) {
		return nameOrSerial, nil
	}
	host, port, ok := strings.Cut(nameOrSerial, ":")
	if !ok || (host != "127.0.0.1" && host != "localhost") {
		return "", fmt.Errorf("%q: want a device name ([a-z0-9-]{1,32}) or its serial 127.0.0.1:PORT", nameOrSerial)
	}
	if _, err := strconv.Atoi(port); err != nil {
		return "", fmt.Errorf("%q: want a device name ([a-z0-9-]{1,32}) or its serial 127.0.0.1:PORT", nameOrSerial)
	}
	infos, err := List(stateDir)
	if err != nil {
		return "", err
	}
	for _, in := range infos {
		if in.State == "running" && in.Serial == "127.0.0.1:"+port {
			return in.Name, nil
		}
	}
	return "", fmt.Errorf("no running virtual device has serial %s: %w", nameOrSerial, ErrNotFound)
}
