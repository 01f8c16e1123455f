package platform

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentoslab/agentlab/runtime/platform/dnsproxyd"
)

// Android properties the platform reads.
const (
	// PropTimeZone is the device's time zone (an IANA name).
	PropTimeZone = "persist.sys.timezone"
	// PropFallbackDNS is the runtime's setting of DNS servers asked when
	// netd cannot answer: IP or IP:port, comma-separated.
	PropFallbackDNS = "persist.agentos.fallback_dns"
)

// Android paths.
const (
	getpropPath = "/system/bin/getprop"
	buildProp   = "/system/build.prop"
	hostsPath   = "/system/etc/hosts"
	// sharedTemp is Android's shell-writable temp folder, the last resort.
	sharedTemp = "/data/local/tmp"
)

// caDirs are Android's CA stores, newest first.
var caDirs = []string{"/apex/com.android.conscrypt/cacerts", "/system/etc/security/cacerts"}

// Options configure Setup. The zero value is what a main passes.
type Options struct {
	// DataDir parents the temp folder on Android (DataDir/tmp); "" means
	// $HOME, else /data/local/tmp.
	DataDir string
	// FallbackDNS are DNS servers (IP or IP:port) asked when netd cannot
	// answer; nil reads the property persist.agentos.fallback_dns.
	FallbackDNS []string

	sys *system // nil: the real system (tests give one)
}

// system is how Setup sees the machine.
type system struct {
	root    string // prefixed to every absolute path; "" is "/"
	getenv  func(string) string
	setenv  func(k, v string) error
	getprop func(name string) string
	// dnsproxyd is the netd socket's path.
	dnsproxyd string
}

func realSystem() *system {
	return &system{getenv: os.Getenv, setenv: os.Setenv, getprop: getprop, dnsproxyd: dnsproxyd.SocketPath}
}

func (s *system) path(p string) string {
	if s.root == "" {
		return p
	}
	return filepath.Join(s.root, p)
}

func (s *system) exists(p string) bool {
	_, err := os.Stat(s.path(p))
	return err == nil
}

// getprop asks /system/bin/getprop (the property area's format is
// private to bionic).
func getprop(name string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, getpropPath, name).Output()
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(out))
}

// Info is what Setup found, for status output and the lab's doctor.
type Info struct {
	// Android says the binary runs on Android (a phone, an emulator or a
	// virtual device).
	Android bool `json:"android"`
	// TimeZone is time.Local's name ("Asia/Shanghai", "UTC", "Local").
	TimeZone string `json:"timeZone"`
	// TimeZoneSource is where it came from: "TZ", "persist.sys.timezone",
	// or "system" (Go's own choice, off Android).
	TimeZoneSource string `json:"timeZoneSource"`
	// TZData is the zone data used: an Android tzdata file with its
	// version, "embedded", or "system".
	TZData string `json:"tzdata"`
	// TempDir is os.TempDir() after Setup.
	TempDir string `json:"tempDir"`
	// Resolver is "dnsproxyd" on Android, "go" otherwise.
	Resolver string `json:"resolver"`
	// FallbackDNS are the servers asked when netd cannot answer.
	FallbackDNS []string `json:"fallbackDns,omitempty"`
	// Problems are what Setup could not do (a zone it could not load, a
	// temp folder it could not make); empty when all went well.
	Problems []string `json:"problems,omitempty"`
}

// Platform is the system as Setup found it. Safe for concurrent use.
type Platform struct {
	info     Info
	location *time.Location
	resolver *resolver // nil off Android
}

// plain is the platform off Android, and before Setup.
var plain = &Platform{info: Info{Resolver: "go", TimeZoneSource: "system", TZData: "system"}}

var current atomic.Pointer[Platform]

// Current is the platform Setup made; before Setup (tests, tools that
// never call it) it is plain Linux: nothing differs.
func Current() *Platform {
	if p := current.Load(); p != nil {
		return p
	}
	return plain
}

// Setup detects the system and, on Android, sets time.Local, $TMPDIR and
// $SSL_CERT_DIR for this process (and what it starts); Current returns
// the result from then on. Call it first thing in main, before anything
// reads the clock's zone, the temp folder or the CA pool. Problems are in
// Info().Problems; Setup itself never fails.
func Setup(o *Options) *Platform {
	p := detect(o)
	current.Store(p)
	return p
}

func detect(o *Options) *Platform {
	var opts Options
	if o != nil {
		opts = *o
	}
	sys := opts.sys
	if sys == nil {
		sys = realSystem()
	}
	if !layerBuilt || !isAndroid(sys) {
		p := *plain
		p.info.TimeZone = time.Local.String()
		p.info.TempDir = os.TempDir()
		return &p
	}
	p := &Platform{info: Info{Android: true, Resolver: "dnsproxyd"}}
	p.setupZone(sys)
	p.setupTemp(sys, opts.DataDir)
	if sys.getenv("SSL_CERT_DIR") == "" {
		var dirs []string
		for _, d := range caDirs {
			if sys.exists(d) {
				dirs = append(dirs, sys.path(d))
			}
		}
		if len(dirs) > 0 {
			sys.setenv("SSL_CERT_DIR", strings.Join(dirs, ":"))
		}
	}
	fallback := opts.FallbackDNS
	if fallback == nil {
		if v := sys.getprop(PropFallbackDNS); v != "" {
			fallback = strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })
		}
	}
	servers, err := parseServers(fallback)
	if err != nil {
		p.info.Problems = append(p.info.Problems, err.Error())
	}
	for _, s := range servers {
		p.info.FallbackDNS = append(p.info.FallbackDNS, s.String())
	}
	p.resolver = &resolver{hosts: sys.path(hostsPath), netd: &dnsproxyd.Client{Path: sys.path(sys.dnsproxyd)}, fallback: servers}
	return p
}

// isAndroid: build.prop is on every Android image; getprop with
// ANDROID_ROOT (init exports it to every service) covers a system whose
// build.prop is elsewhere.
func isAndroid(sys *system) bool {
	return sys.exists(buildProp) || (sys.exists(getpropPath) && sys.getenv("ANDROID_ROOT") != "")
}

// Info says what Setup found.
func (p *Platform) Info() Info {
	in := p.info
	in.FallbackDNS = append([]string(nil), in.FallbackDNS...)
	in.Problems = append([]string(nil), in.Problems...)
	return in
}

// Android reports whether the process runs on Android.
func (p *Platform) Android() bool { return p.info.Android }

// Location is the device's time zone: time.Local after Setup.
func (p *Platform) Location() *time.Location {
	if p.location != nil {
		return p.location
	}
	return time.Local
}

// setupTemp points $TMPDIR at a writable folder.
func (p *Platform) setupTemp(sys *system, dataDir string) {
	defer func() { p.info.TempDir = sys.getenv("TMPDIR") }()
	if t := sys.getenv("TMPDIR"); t != "" && writableDir(t) {
		return
	}
	if dataDir == "" {
		if h := sys.getenv("HOME"); h != "" && h != "/" {
			dataDir = h
		}
	}
	var errs []error
	if dataDir != "" {
		dir := filepath.Join(dataDir, "tmp")
		err := os.Mkdir(dir, 0o700)
		if err == nil || errors.Is(err, os.ErrExist) {
			if writableDir(dir) {
				sys.setenv("TMPDIR", dir)
				return
			}
			err = errors.New("not writable")
		}
		errs = append(errs, err)
	}
	if shared := sys.path(sharedTemp); writableDir(shared) {
		sys.setenv("TMPDIR", shared)
		return
	}
	msg := "no writable temp folder (no data folder, and " + sharedTemp + " is not writable)"
	if err := errors.Join(errs...); err != nil {
		msg = "no writable temp folder: " + err.Error()
	}
	p.info.Problems = append(p.info.Problems, msg)
}

// writableDir reports whether dir is a folder this process can create
// files in.
func writableDir(dir string) bool {
	f, err := os.CreateTemp(dir, ".agentos-probe-*")
	if err != nil {
		return false
	}
	f.Close()
	os.Remove(f.Name())
	return true
}
