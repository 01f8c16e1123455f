//go:build linux

package virtual

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"

	"github.com/agentoslab/agentlab/devices/virtual/internal/netd"
	"github.com/agentoslab/agentlab/devices/virtual/internal/tzdata"
)

// Files of a device's host folder that make it Android-shaped.
const (
	netdDir   = "netd"
	netdSock  = "dnsproxyd"
	hostsName = "hosts" // the lab's table, hosts format
)

func netdSocket(root string) string { return filepath.Join(root, netdDir, netdSock) }
func hostsTable(root string) string { return filepath.Join(root, netdDir, hostsName) }

// tzdataFile is where Android keeps its zones for this API level: the
// tzdata APEX from Android 10, /system before.
func tzdataFile(root string, sdk int) string {
	if sdk >= 29 {
		return filepath.Join(root, "apex", "com.android.tzdata", "etc", "tz", "tzdata")
	}
	return filepath.Join(root, "system", "usr", "share", "zoneinfo", "tzdata")
}

// hiddenHostDirs are the host's zone folders, which no phone has: every
// place Go's time package (and glibc) look for zones, under the host
// folders a device sees, and the Go root's zoneinfo.zip a binary built
// without -trimpath would find.
func hiddenHostDirs() []string {
	dirs := []string{tzdata.HostZoneinfo, "/usr/share/lib/zoneinfo", "/usr/lib/locale/TZ"}
	if g := runtime.GOROOT(); g != "" {
		dirs = append(dirs, filepath.Join(g, "lib", "time"))
	}
	return dirs
}

// android prepares what the device's boot binds in: the lab's name table
// and the netd serving it, and the zones in Android's format.
func (d *Device) android(o *Options) error {
	if err := writeHosts(d.root, o.Hosts); err != nil {
		return err
	}
	srv, err := netd.Listen(netdSocket(d.root), &netd.Options{Table: hostsTable(d.root), Logger: d.log})
	if err != nil {
		return err
	}
	d.netd = srv
	if _, err := tzdata.WriteFromHost(tzdataFile(d.root, o.SDK)); errors.Is(err, tzdata.ErrNoSource) {
		// Binaries with the platform layer use their embedded zones.
		d.log.Warn("virtual device: the host has no zoneinfo; the device gets no tzdata file")
	} else if err != nil {
		return fmt.Errorf("tzdata: %w", err)
	}
	return nil
}

func writeHosts(root string, hosts map[string][]netip.Addr) error {
	path := hostsTable(root)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, netd.FormatTable(hosts), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// ErrNoNetd: a running device has no netd stand-in (an older build
// started it), so names cannot be published in it.
var ErrNoNetd = errors.New("virtual device has no netd")

// SetHosts replaces the names the device's netd answers itself (see
// Options.Hosts); a running device answers from them at its next query.
func SetHosts(stateDir, name string, hosts map[string][]netip.Addr) error {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	if !nameRE.MatchString(name) {
		return fmt.Errorf("virtual device %q: bad name", name)
	}
	for h, addrs := range hosts {
		if !hostNameRE.MatchString(h) || len(addrs) == 0 {
			return fmt.Errorf("virtual device host %q: want a host name with at least one address", h)
		}
	}
	root := filepath.Join(stateDir, name)
	if _, err := os.Stat(root); err != nil {
		return fmt.Errorf("virtual device %s: %w", name, ErrNotFound)
	}
	if running(root) {
		if fi, err := os.Stat(netdSocket(root)); err != nil || fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("virtual device %s has no netd (started by an older agentlab: stop and start it again): %w", name, ErrNoNetd)
		}
	}
	return writeHosts(root, hosts)
}

// Hosts returns the names the device's netd answers itself.
func Hosts(stateDir, name string) (map[string][]netip.Addr, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	b, err := os.ReadFile(hostsTable(filepath.Join(stateDir, name)))
	if err != nil {
		return nil, err
	}
	return netd.ParseTable(b), nil
}
