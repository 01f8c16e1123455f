//go:build linux

package virtual_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/runtime/platform"
	"github.com/agentoslab/agentlab/runtime/platform/dnsproxyd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// envProbe makes the test binary, pushed into a device, a probe: it
// prints what a GOOS=linux binary finds there, with and without the
// runtime's platform layer.
const envProbe = "AGENTLAB_VDEVICE_PROBE"

func runProbe(what string, args []string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch what {
	case "raw-dns":
		// Go's own resolver, as a binary without the platform layer has it.
		addrs, err := net.DefaultResolver.LookupHost(ctx, args[0])
		fmt.Println(addrs, err)
	case "dns":
		p := platform.Setup(nil)
		addrs, err := p.LookupNetIP(ctx, "ip", args[0])
		fmt.Println(addrs, err)
	case "netd":
		addrs, err := (&dnsproxyd.Client{}).LookupNetIP(ctx, args[0])
		fmt.Println(addrs, err)
	case "raw-zone":
		fmt.Println(time.Local, time.Date(2030, 1, 15, 23, 0, 0, 0, time.UTC).Local().Format("15:04"), os.TempDir())
	case "zone":
		p := platform.Setup(nil)
		in := p.Info()
		fmt.Println(time.Local, time.Date(2030, 1, 15, 23, 0, 0, 0, time.UTC).Local().Format("15:04"), in.TZData, in.TempDir)
	case "socket":
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		if err == nil {
			ln.Close()
			fmt.Println("socket ok")
		} else {
			fmt.Println(err)
		}
	}
	return 0
}

// TestAndroidShape: a device is Android where it matters to our static
// binaries — no /tmp, no /etc/resolv.conf, no host zoneinfo, no
// /etc/passwd; persist.sys.timezone and Android's tzdata; netd's socket;
// the inet group enforced.
func TestAndroidShape(t *testing.T) {
	t.Parallel()
	d := startDevice(t, &virtual.Options{SDK: 35, Hosts: map[string][]netip.Addr{"model.agentlab.test": {netip.MustParseAddr("127.0.0.1")}}})
	a := newADB(t)
	a.connect(d)
	for _, tc := range []struct{ name, cmd, want string }{
		{"no /tmp", "test -e /tmp; echo $?", "1"},
		{"no resolv.conf", "test -e /etc/resolv.conf; echo $?", "1"},
		{"no passwd", "test -e /etc/passwd; echo $?", "1"},
		{"no localtime", "test -e /etc/localtime; echo $?", "1"},
		{"/etc is /system/etc", "readlink /etc", "/system/etc"},
		{"Android's hosts file", "cat /etc/hosts", "127.0.0.1       localhost\n::1             ip6-localhost"},
		{"build.prop", "grep -c ro.build.version.sdk=35 /system/build.prop", "1"},
		{"no host zoneinfo", "ls /usr/share/zoneinfo | wc -l", "0"},
		{"the zone property", "getprop persist.sys.timezone", "Asia/Shanghai"},
		{"tzdata where Android keeps it", "head -c 6 /apex/com.android.tzdata/etc/tz/tzdata", "tzdata"},
		{"netd's socket", "stat -c '%A %u %g' /dev/socket/dnsproxyd", "srw-rw---- 0 3003"},
		{"the shell has inet", "id -G | tr ' ' '\\n' | grep -c '^3003$'", "1"},
		{"inet enforced", "getprop ro.vdevice.paranoid_network", "1"},
		{"no TMPDIR for services, but adb's shell has it", "echo $TMPDIR", "/data/local/tmp"},
	} {
		out, _ := a.shell(d, tc.cmd)
		assert.Equal(t, tc.want, strings.TrimSpace(out), tc.name)
	}

	// A copy of this binary inside the device, run as the shell (inet) and
	// as an app uid without the group.
	self, err := testbin.Self()
	require.NoError(t, err)
	dst := filepath.Join(d.Root(), "data", "local", "tmp", "probe")
	require.NoError(t, testbin.Copy(dst, self))
	require.NoError(t, os.Chmod(dst, 0o755))
	probe := func(asApp bool, what string, args ...string) string {
		cmd := "env " + envProbe + "=" + what + " /data/local/tmp/probe " + strings.Join(args, " ")
		if what == "raw-zone" || what == "zone" {
			// As service.sh starts a process: no TMPDIR.
			cmd = "env -u TMPDIR HOME=/data/local/tmp/home " + envProbe + "=" + what + " /data/local/tmp/probe"
		}
		if asApp {
			cmd = "su 10123 -c '" + cmd + "'"
		}
		out, code := a.shell(d, cmd)
		require.Zero(t, code, out)
		return strings.TrimSpace(out)
	}

	// What failed on phones: Go's resolver finds no server …
	raw := probe(false, "raw-dns", "model.agentlab.test")
	assert.Contains(t, raw, "lookup model.agentlab.test on [::1]:53", "a binary without the platform layer asks a server that is not there")
	assert.Contains(t, raw, "connection refused")
	// … and the platform layer resolves through netd.
	assert.Equal(t, "[127.0.0.1] <nil>", probe(false, "dns", "model.agentlab.test"))
	assert.Equal(t, "[127.0.0.1] <nil>", probe(false, "dns", "localhost"), "the hosts file")
	assert.Contains(t, probe(false, "dns", "nowhere.invalid"), "EAI_NODATA")

	// A GOOS=linux binary started without TMPDIR (as from service.sh) runs
	// in UTC with a /tmp that does not exist; the platform layer takes the
	// device's zone from Android's tzdata and a temp folder under HOME.
	a.mustShell(d, "mkdir -p /data/local/tmp/home")
	assert.Equal(t, "UTC 23:00 /tmp", probe(false, "raw-zone"))
	assert.Equal(t, "Asia/Shanghai 07:00 /apex/com.android.tzdata/etc/tz/tzdata ("+tzVersion(t)+") /data/local/tmp/home/tmp", probe(false, "zone"))

	// The inet group: the shell has it; an app uid without it can open no
	// AF_INET socket, and cannot reach netd's socket (0660 root:inet).
	assert.Equal(t, "socket ok", probe(false, "socket"))
	assert.Contains(t, probe(true, "socket"), "socket: permission denied")
	assert.Contains(t, probe(true, "netd", "model.agentlab.test"), "connect: permission denied")

	// The lab changes the table of a running device.
	require.NoError(t, virtual.SetHosts(filepath.Dir(d.Root()), d.Name(), map[string][]netip.Addr{"model.agentlab.test": {netip.MustParseAddr("127.0.0.9")}}))
	assert.Equal(t, "[127.0.0.9] <nil>", probe(false, "dns", "model.agentlab.test"))

	// A reboot keeps it all.
	a.must("-s", d.Serial(), "reboot")
	a.must("-s", d.Serial(), "wait-for-device")
	require.Eventually(t, func() bool {
		out, _ := a.shell(d, "getprop sys.boot_completed")
		return strings.TrimSpace(out) == "1"
	}, 30*time.Second, 20*time.Millisecond, "waiting for boot")
	assert.Equal(t, "[127.0.0.9] <nil>", probe(false, "dns", "model.agentlab.test"))
	assert.Equal(t, "Asia/Shanghai", strings.TrimSpace(a.mustShell(d, "getprop persist.sys.timezone")))
}

// The zone is the lab's, per device; a persistent property set on the
// device survives the zone being applied at boot.
func TestTimeZoneOption(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d := startDevice(t, &virtual.Options{StateDir: dir, TimeZone: "America/New_York"})
	a := newADB(t)
	a.connect(d)
	assert.Equal(t, "America/New_York", strings.TrimSpace(a.mustShell(d, "getprop persist.sys.timezone")))
	a.mustShell(d, "su -c 'setprop persist.agentos.fallback_dns 192.0.2.53'")
	a.must("-s", d.Serial(), "reboot")
	a.must("-s", d.Serial(), "wait-for-device")
	require.Eventually(t, func() bool {
		out, _ := a.shell(d, "getprop sys.boot_completed")
		return strings.TrimSpace(out) == "1"
	}, 30*time.Second, 20*time.Millisecond, "waiting for boot")
	assert.Equal(t, "192.0.2.53", strings.TrimSpace(a.mustShell(d, "getprop persist.agentos.fallback_dns")))
	assert.Equal(t, "America/New_York", strings.TrimSpace(a.mustShell(d, "getprop persist.sys.timezone")))

	_, err := virtual.Start(context.Background(), &virtual.Options{StateDir: t.TempDir(), TimeZone: "Mars/Olympus"})
	require.ErrorContains(t, err, "not an IANA zone name")
}

func tzVersion(t *testing.T) string {
	b, err := os.ReadFile("/usr/share/zoneinfo/tzdata.zi")
	require.NoError(t, err)
	first, _, _ := strings.Cut(string(b), "\n")
	return strings.TrimPrefix(first, "# version ")
}

// A running device without netd (one an older build started) cannot get
// the lab's names, and says so: the lab then gives its runtime the stub's
// address instead of a name it could not resolve.
func TestSetHostsNeedsNetd(t *testing.T) {
	t.Parallel()
	d := startDevice(t, nil)
	stateDir := filepath.Dir(d.Root())
	require.NoError(t, virtual.SetHosts(stateDir, d.Name(), map[string][]netip.Addr{"a.test": {netip.MustParseAddr("127.0.0.1")}}))
	require.NoError(t, os.Remove(filepath.Join(d.Root(), "netd", "dnsproxyd")))
	err := virtual.SetHosts(stateDir, d.Name(), nil)
	require.ErrorIs(t, err, virtual.ErrNoNetd)
	require.ErrorContains(t, err, "stop and start it again")
	_, err = virtual.Hosts(stateDir, d.Name())
	require.NoError(t, err)
	require.ErrorIs(t, virtual.SetHosts(stateDir, "no-such-device", nil), virtual.ErrNotFound)
}
