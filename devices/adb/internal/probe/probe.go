// Package probe parses what Android shell commands print when the lab
// probes a device: property dumps, su/magisk version strings
// (lab-reference C.3), dumpsys battery and df.
package probe

import (
	"bufio"
	"errors"
	"strconv"
	"strings"

	"github.com/agentoslab/agentlab/devices"
)

// PropKeys are the properties Info needs, in the order InfoScript prints
// them.
var PropKeys = []string{
	"ro.product.model", "ro.product.name", "ro.product.device",
	"ro.build.version.sdk", "ro.product.cpu.abi", "ro.build.type",
	"ro.debuggable", "sys.boot_completed",
}

// InfoScript prints "key=value" for each of PropKeys, then "su=" with the
// output of su -v (empty without su), "magisk=" with magisk -v, and
// "uid=" with the shell's uid: one round trip for the whole probe.
func InfoScript() string {
	var b strings.Builder
	b.WriteString("for p in")
	for _, k := range PropKeys {
		b.WriteString(" " + k)
	}
	b.WriteString(`; do echo "$p=$(getprop $p)"; done; `)
	b.WriteString(`echo "su=$(su -v 2>/dev/null)"; echo "magisk=$(magisk -v 2>/dev/null)"; echo "uid=$(id -u)"`)
	return b.String()
}

// ParseKV parses "key=value" lines; later keys win; lines without "=" are
// skipped. Values are trimmed of surrounding space and CR.
func ParseKV(out string) map[string]string {
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok || strings.TrimSpace(k) == "" {
			continue
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return m
}

// RootFromVersion classifies a root tool's version output (su -v, or
// magisk -v): "27.0:MAGISKSU" and "27.0:MAGISK:R" are Magisk,
// "v1.0.1:KernelSU" is KernelSU. Anything else is RootNone.
func RootFromVersion(su, magisk string) devices.RootMethod {
	su = strings.TrimSpace(su)
	switch {
	case strings.HasSuffix(su, ":KernelSU"):
		return devices.RootKernelSU
	case strings.HasSuffix(su, ":MAGISKSU"):
		return devices.RootMagisk
	case strings.Contains(strings.TrimSpace(magisk), ":MAGISK"):
		return devices.RootMagisk
	}
	return devices.RootNone
}

// Info builds devices.Info from the output of InfoScript. Root is
// decided in the order of C.3: su's suffix, then magisk, then adb root
// (a debuggable build, or a shell that already runs as uid 0).
func Info(out string) devices.Info {
	kv := ParseKV(out)
	api, _ := strconv.Atoi(kv["ro.build.version.sdk"])
	in := devices.Info{
		Model:      kv["ro.product.model"],
		Product:    kv["ro.product.name"],
		Device:     kv["ro.product.device"],
		APILevel:   api,
		ABI:        kv["ro.product.cpu.abi"],
		BuildType:  kv["ro.build.type"],
		Debuggable: kv["ro.debuggable"] == "1",
	}
	in.Root = RootFromVersion(kv["su"], kv["magisk"])
	switch {
	case in.Root == devices.RootMagisk && kv["su"] == "":
		in.RootVersion = kv["magisk"]
	case in.Root != devices.RootNone:
		in.RootVersion = kv["su"]
	case in.Debuggable || kv["uid"] == "0":
		in.Root = devices.RootADB
	}
	return in
}

// ErrNoBattery: the output describes no battery.
var ErrNoBattery = errors.New("no battery")

// Battery parses dumpsys battery ("  present: true", "  level: 85",
// "  AC powered: false", "  USB powered: true", "  status: 2").
func Battery(out string) (devices.Battery, error) {
	var b devices.Battery
	seenPresent, seenLevel := false, false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "present":
			b.Present, seenPresent = v == "true", true
		case "level":
			n, err := strconv.Atoi(v)
			if err == nil && n >= 0 && n <= 100 {
				b.Level, seenLevel = n, true
			}
		case "AC powered", "USB powered", "Wireless powered", "Dock powered":
			if v == "true" {
				b.Charging = true
			}
		}
	}
	if !seenPresent || (b.Present && !seenLevel) {
		return devices.Battery{}, ErrNoBattery
	}
	if !b.Present {
		return devices.Battery{}, nil
	}
	return b, nil
}

// SysfsBattery parses "capacity\npresent" read from
// /sys/class/power_supply/battery (present is optional).
func SysfsBattery(out string) (devices.Battery, error) {
	f := strings.Fields(out)
	if len(f) == 0 {
		return devices.Battery{}, ErrNoBattery
	}
	n, err := strconv.Atoi(f[0])
	if err != nil || n < 0 || n > 100 {
		return devices.Battery{}, ErrNoBattery
	}
	if len(f) > 1 && f[1] == "0" {
		return devices.Battery{}, nil
	}
	return devices.Battery{Present: true, Level: n}, nil
}

// ErrDF: df output could not be parsed.
var ErrDF = errors.New("unparsable df output")

// DFAvailable parses POSIX "df -Pk PATH" output and returns the available
// bytes of the last data line (toybox, busybox and coreutils agree on
// "Filesystem 1024-blocks Used Available Capacity Mounted-on").
func DFAvailable(out string) (int64, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 {
		return 0, ErrDF
	}
	f := strings.Fields(lines[len(lines)-1])
	if len(f) < 6 {
		return 0, ErrDF
	}
	// Count from the right: a filesystem name may contain spaces.
	avail, err := strconv.ParseInt(f[len(f)-3], 10, 64)
	if err != nil || avail < 0 || avail > 1<<52 {
		return 0, ErrDF
	}
	return avail * 1024, nil
}
