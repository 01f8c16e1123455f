//go:build !agentos_noplatform

package platform

import (
	"bufio"
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/dns/dnsmessage"
)

// fakeSystem is an Android-shaped root in a temp folder (android: with
// build.prop and getprop), properties and an environment in maps.
type fakeSystem struct {
	*system
	props map[string]string
	env   map[string]string
}

func newSystem(t *testing.T, android bool) *fakeSystem {
	t.Helper()
	root := t.TempDir()
	fs := &fakeSystem{props: map[string]string{}, env: map[string]string{}}
	fs.system = &system{root: root, dnsproxyd: "/dev/socket/dnsproxyd",
		getenv:  func(k string) string { return fs.env[k] },
		setenv:  func(k, v string) error { fs.env[k] = v; return nil },
		getprop: func(k string) string { return fs.props[k] }}
	if android {
		fs.write(t, buildProp, "ro.build.version.sdk=35\n")
		fs.write(t, getpropPath, "")
		require.NoError(t, os.MkdirAll(fs.path(sharedTemp), 0o777))
		fs.props[PropTimeZone] = "Asia/Shanghai"
	}
	return fs
}

func (fs *fakeSystem) write(t *testing.T, p, content string) string {
	t.Helper()
	full := fs.path(p)
	require.NoError(t, os.MkdirAll(filepath.Dir(full), 0o755))
	require.NoError(t, os.WriteFile(full, []byte(content), 0o644))
	return full
}

// keepLocal restores time.Local, which detect sets on Android.
func keepLocal(t *testing.T) {
	old := time.Local
	t.Cleanup(func() { time.Local = old })
}

func copyFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o755))
	require.NoError(t, os.WriteFile(to, b, 0o644))
}

// Off Android nothing changes: the zone, the temp folder and name
// resolution are Go's own.
func TestPlainLinuxChangesNothing(t *testing.T) {
	keepLocal(t)
	before := time.Local
	fs := newSystem(t, false)
	fs.props[PropTimeZone] = "Asia/Shanghai"
	p := detect(&Options{sys: fs.system})
	assert.False(t, p.Android())
	assert.Same(t, before, time.Local)
	assert.Empty(t, fs.env)
	in := p.Info()
	assert.Equal(t, "go", in.Resolver)
	assert.Equal(t, os.TempDir(), in.TempDir)
	assert.Nil(t, p.resolver)

	// getprop alone (no ANDROID_ROOT) is not Android: a Linux box may
	// have a tool of that name.
	fs.write(t, getpropPath, "")
	assert.False(t, detect(&Options{sys: fs.system}).Android())
	fs.env["ANDROID_ROOT"] = "/system"
	assert.True(t, detect(&Options{sys: fs.system}).Android())
}

// The time-zone source on Android: $TZ, else persist.sys.timezone; the
// device's tzdata file, else the embedded copy.
func TestTimeZoneSource(t *testing.T) {
	at := time.Date(2030, 1, 15, 23, 0, 0, 0, time.UTC) // 07:00 next day in Shanghai
	for _, tc := range []struct {
		name           string
		tz, prop       string
		deviceTZData   bool
		wantZone       string
		wantSource     string
		wantData       string
		wantLocal      string
		wantProblem    string
		localUntouched bool
	}{
		{name: "property with the device's tzdata", prop: "Asia/Shanghai", deviceTZData: true,
			wantZone: "Asia/Shanghai", wantSource: PropTimeZone, wantData: "/apex/com.android.tzdata/etc/tz/tzdata (2025b)", wantLocal: "2030-01-16T07:00"},
		{name: "property, embedded tzdata", prop: "Asia/Shanghai",
			wantZone: "Asia/Shanghai", wantSource: PropTimeZone, wantData: "embedded", wantLocal: "2030-01-16T07:00"},
		{name: "a zone the device file lacks comes from the embedded copy", prop: "Europe/Berlin", deviceTZData: true,
			wantZone: "Europe/Berlin", wantSource: PropTimeZone, wantData: "embedded", wantLocal: "2030-01-16T00:00"},
		{name: "TZ wins, as in bionic", tz: "America/New_York", prop: "Asia/Shanghai", deviceTZData: true,
			wantZone: "America/New_York", wantSource: "TZ", wantData: "/apex/com.android.tzdata/etc/tz/tzdata (2025b)", wantLocal: "2030-01-15T18:00"},
		{name: "no property: UTC", wantZone: "UTC", wantSource: "none", wantData: "none", wantLocal: "2030-01-15T23:00",
			wantProblem: "persist.sys.timezone is not set"},
		{name: "unknown zone", prop: "Mars/Olympus", wantSource: PropTimeZone, wantData: "none", wantProblem: `time zone "Mars/Olympus"`, localUntouched: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			keepLocal(t)
			before := time.Local
			fs := newSystem(t, true)
			fs.props[PropTimeZone] = tc.prop
			if tc.tz != "" {
				fs.env["TZ"] = tc.tz
			}
			if tc.deviceTZData {
				copyFile(t, "tzdata/testdata/tzdata", fs.path("/apex/com.android.tzdata/etc/tz/tzdata"))
			}
			p := detect(&Options{sys: fs.system})
			in := p.Info()
			assert.Equal(t, tc.wantSource, in.TimeZoneSource)
			assert.Equal(t, tc.wantData, in.TZData)
			if tc.wantProblem != "" {
				require.NotEmpty(t, in.Problems)
				assert.Contains(t, in.Problems[0], tc.wantProblem)
			} else {
				assert.Empty(t, in.Problems)
			}
			if tc.localUntouched {
				assert.Same(t, before, time.Local)
				return
			}
			assert.Equal(t, tc.wantZone, in.TimeZone)
			assert.Equal(t, tc.wantZone, time.Local.String())
			assert.Same(t, time.Local, p.Location())
			assert.Equal(t, tc.wantLocal, at.In(time.Local).Format("2006-01-02T15:04"))
		})
	}
}

// Android has no /tmp: TMPDIR goes under the data folder unless it is
// already usable.
func TestTempDir(t *testing.T) {
	keepLocal(t)
	t.Run("HOME", func(t *testing.T) {
		fs := newSystem(t, true)
		home := t.TempDir()
		fs.env["HOME"] = home
		p := detect(&Options{sys: fs.system})
		want := filepath.Join(home, "tmp")
		assert.Equal(t, want, fs.env["TMPDIR"])
		assert.Equal(t, want, p.Info().TempDir)
		fi, err := os.Stat(want)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	})
	t.Run("DataDir over HOME", func(t *testing.T) {
		fs := newSystem(t, true)
		fs.env["HOME"] = t.TempDir()
		data := t.TempDir()
		detect(&Options{sys: fs.system, DataDir: data})
		assert.Equal(t, filepath.Join(data, "tmp"), fs.env["TMPDIR"])
	})
	t.Run("a usable TMPDIR is kept", func(t *testing.T) {
		fs := newSystem(t, true)
		keep := t.TempDir()
		fs.env["TMPDIR"], fs.env["HOME"] = keep, t.TempDir()
		detect(&Options{sys: fs.system})
		assert.Equal(t, keep, fs.env["TMPDIR"])
	})
	t.Run("a TMPDIR that does not exist is replaced", func(t *testing.T) {
		fs := newSystem(t, true)
		home := t.TempDir()
		fs.env["TMPDIR"], fs.env["HOME"] = "/tmp-does-not-exist", home
		detect(&Options{sys: fs.system})
		assert.Equal(t, filepath.Join(home, "tmp"), fs.env["TMPDIR"])
	})
	t.Run("no HOME: Android's shared temp", func(t *testing.T) {
		fs := newSystem(t, true)
		fs.env["HOME"] = "/"
		detect(&Options{sys: fs.system})
		assert.Equal(t, fs.path(sharedTemp), fs.env["TMPDIR"])
	})
}

// netdAnswering serves getaddrinfo for one name with one address, the
// way netd does, at the fake root's /dev/socket/dnsproxyd.
func netdAnswering(t *testing.T, fs *fakeSystem, name string, addr netip.Addr) *int {
	t.Helper()
	path := fs.path(fs.dnsproxyd)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	asked := new(int)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			cmd, _ := bufio.NewReader(c).ReadString(0)
			*asked++
			be := func(b []byte, v ...int) []byte {
				for _, x := range v {
					b = binary.BigEndian.AppendUint32(b, uint32(int32(x)))
				}
				return b
			}
			var out []byte
			if f := strings.Fields(strings.TrimSuffix(cmd, "\x00")); len(f) == 8 && f[1] == name {
				sa := binary.LittleEndian.AppendUint16(nil, 2)
				sa = append(append(sa, 0, 0), addr.AsSlice()...)
				sa = append(sa, make([]byte, 8)...)
				out = be([]byte("222\x00"), 1, 0x400, 2, 1, 6, len(sa))
				out = be(append(out, sa...), 0, 0)
			} else {
				out = be([]byte("401\x00"), 4)
				out = append(out, 7, 0, 0, 0)
			}
			c.Write(out)
			c.Close()
		}
	}()
	return asked
}

// On Android, names resolve through the hosts file and netd, and
// DialContext reaches the address netd gave.
func TestResolveThroughNetd(t *testing.T) {
	keepLocal(t)
	fs := newSystem(t, true)
	fs.write(t, hostsPath, "127.0.0.1 localhost\n::1 ip6-localhost\n")
	srv, err := net.Listen("tcp4", "127.0.0.1:0")
	require.NoError(t, err)
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			c.Write([]byte("hello"))
			c.Close()
		}
	}()
	asked := netdAnswering(t, fs, "model.agentlab.test", netip.MustParseAddr("127.0.0.1"))
	p := detect(&Options{sys: fs.system})
	require.True(t, p.Android())
	ctx := context.Background()

	got, err := p.LookupNetIP(ctx, "ip", "localhost")
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, got)
	assert.Zero(t, *asked, "the hosts file answers before netd")

	got, err = p.LookupNetIP(ctx, "ip", "model.agentlab.test")
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("127.0.0.1")}, got)
	_, err = p.LookupNetIP(ctx, "ip6", "model.agentlab.test")
	require.Error(t, err, "no IPv6 address")

	port := srv.Addr().(*net.TCPAddr).Port
	c, err := p.DialContext(&net.Dialer{Timeout: 5 * time.Second})(ctx, "tcp", net.JoinHostPort("model.agentlab.test", strconv.Itoa(port)))
	require.NoError(t, err)
	b := make([]byte, 5)
	_, err = c.Read(b)
	c.Close()
	require.NoError(t, err)
	assert.Equal(t, "hello", string(b))

	_, err = p.LookupNetIP(ctx, "ip", "nowhere.test")
	var de *net.DNSError
	require.ErrorAs(t, err, &de)
	assert.True(t, de.IsNotFound)
	assert.Equal(t, "dnsproxyd", de.Server)
	assert.Contains(t, de.Error(), "EAI_NODATA")
}

// Without netd (no socket, or no inet group to reach it) a lookup fails
// saying so, or asks the fallback servers of the runtime's setting.
func TestFallbackDNS(t *testing.T) {
	keepLocal(t)
	fs := newSystem(t, true)
	p := detect(&Options{sys: fs.system})
	_, err := p.LookupNetIP(context.Background(), "ip", "model.example")
	var de *net.DNSError
	require.ErrorAs(t, err, &de)
	assert.Contains(t, de.Error(), "dnsproxyd")
	assert.Empty(t, p.Info().FallbackDNS)

	server := dnsServer(t, "model.example.", netip.MustParseAddr("203.0.113.9"))
	fs.props[PropFallbackDNS] = server.String() + ", not-an-ip"
	p = detect(&Options{sys: fs.system})
	assert.Equal(t, []string{server.String()}, p.Info().FallbackDNS)
	require.NotEmpty(t, p.Info().Problems)
	assert.Contains(t, p.Info().Problems[0], "not-an-ip")
	got, err := p.LookupNetIP(context.Background(), "ip4", "model.example")
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("203.0.113.9")}, got)

	// Options win over the property.
	p = detect(&Options{sys: fs.system, FallbackDNS: []string{"192.0.2.53"}})
	assert.Equal(t, []string{"192.0.2.53:53"}, p.Info().FallbackDNS)
}

// dnsServer answers A queries for name over UDP on loopback.
func dnsServer(t *testing.T, name string, a netip.Addr) netip.AddrPort {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { pc.Close() })
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var m dnsmessage.Message
			if m.Unpack(buf[:n]) != nil || len(m.Questions) != 1 {
				continue
			}
			q := m.Questions[0]
			m.Header.Response, m.Header.Authoritative = true, true
			if q.Name.String() != name {
				m.Header.RCode = dnsmessage.RCodeNameError
			} else if q.Type == dnsmessage.TypeA {
				m.Answers = []dnsmessage.Resource{{Header: dnsmessage.ResourceHeader{Name: q.Name, Type: q.Type, Class: q.Class, TTL: 60},
					Body: &dnsmessage.AResource{A: a.As4()}}}
			}
			out, err := m.Pack()
			if err == nil {
				pc.WriteTo(out, from)
			}
		}
	}()
	return netip.MustParseAddrPort(pc.LocalAddr().String())
}

// Setup makes the platform Current.
func TestSetupIsCurrent(t *testing.T) {
	keepLocal(t)
	defer current.Store(nil)
	assert.Same(t, plain, Current(), "before Setup")
	p := Setup(nil)
	assert.Same(t, p, Current())
}
