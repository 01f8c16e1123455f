//go:build linux

package netd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"flag"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/agentoslab/agentlab/runtime/platform/dnsproxyd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// start serves a table on a socket under a fresh folder; lookup answers
// what the table lacks (nil: nothing is found).
func start(t *testing.T, table map[string][]netip.Addr, lookup func(context.Context, string) ([]netip.Addr, error)) (*Server, string) {
	t.Helper()
	dir := t.TempDir()
	tablePath := filepath.Join(dir, "hosts")
	require.NoError(t, os.WriteFile(tablePath, FormatTable(table), 0o644))
	if lookup == nil {
		lookup = func(context.Context, string) ([]netip.Addr, error) {
			return nil, &net.DNSError{Err: "no such host", IsNotFound: true}
		}
	}
	path := filepath.Join(dir, "dnsproxyd")
	s, err := Listen(path, &Options{Table: tablePath, Lookup: lookup})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s, path
}

var (
	loop4   = netip.MustParseAddr("127.0.0.1")
	pub4    = netip.MustParseAddr("203.0.113.7")
	pub6    = netip.MustParseAddr("2001:db8::7")
	labName = "model.agentlab.test"
)

// The runtime's dnsproxyd client resolves through the virtual netd: the
// lab's table first, then the host's resolver, in netd's order.
func TestClientAgainstVirtualNetd(t *testing.T) {
	hostAsked := map[string]int{}
	_, path := start(t, map[string][]netip.Addr{labName: {loop4}}, func(_ context.Context, host string) ([]netip.Addr, error) {
		hostAsked[host]++
		if host == "mirror.example.com" {
			return []netip.Addr{pub6, pub4}, nil
		}
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	})
	c := &dnsproxyd.Client{Path: path}
	ctx := context.Background()

	for _, tc := range []struct {
		name, host string
		want       []netip.Addr
	}{
		{"table", labName, []netip.Addr{loop4}},
		{"table ignores case and the root dot", "Model.AgentLab.Test.", []netip.Addr{loop4}},
		{"host resolver, order kept", "mirror.example.com", []netip.Addr{pub6, pub4}},
		{"literal", "198.51.100.1", []netip.Addr{netip.MustParseAddr("198.51.100.1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := c.LookupNetIP(ctx, tc.host)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	assert.Zero(t, hostAsked[labName], "a table name never reaches the host's resolver")

	_, err := c.LookupNetIP(ctx, "nowhere.example")
	assert.Zero(t, hostAsked["nowhere.example"], "a special-use name never reaches the host's resolver")
	var pe *dnsproxyd.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, dnsproxyd.EAINoData, pe.EAI)
	assert.True(t, pe.NotFound())
	assert.Equal(t, "dnsproxyd: EAI_NODATA", err.Error())
}

// getaddrinfo's hints: family, socket type, service port and canonical
// name are answered as bionic's getaddrinfo would.
func TestGetAddrInfoHints(t *testing.T) {
	_, path := start(t, map[string][]netip.Addr{"dual.test": {pub4, pub6}}, nil)
	c := &dnsproxyd.Client{Path: path}
	ctx := context.Background()

	ais, err := c.GetAddrInfo(ctx, "dual.test", "443", dnsproxyd.Hints{Family: dnsproxyd.AFInet6, SockType: dnsproxyd.SockStream, Flags: dnsproxyd.AICanonName})
	require.NoError(t, err)
	require.Len(t, ais, 1)
	assert.Equal(t, netip.AddrPortFrom(pub6, 443), ais[0].Addr)
	assert.Equal(t, dnsproxyd.AFInet6, ais[0].Family)
	assert.Equal(t, 6, ais[0].Protocol)
	assert.Equal(t, "dual.test", ais[0].CanonName)

	// No socket type: one entry per type, in bionic's explore order.
	ais, err = c.GetAddrInfo(ctx, "dual.test", "", dnsproxyd.Hints{Family: dnsproxyd.AFInet})
	require.NoError(t, err)
	var types []int
	for _, ai := range ais {
		types = append(types, ai.SockType)
		assert.Equal(t, pub4, ai.Addr.Addr())
	}
	assert.Equal(t, []int{dnsproxyd.SockDgram, dnsproxyd.SockStream, 3}, types)

	_, err = c.GetAddrInfo(ctx, "dual.test", "https", dnsproxyd.Hints{})
	var pe *dnsproxyd.Error
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, dnsproxyd.EAIService, pe.EAI, "no services database: a named service is EAI_SERVICE")
	_, err = c.GetAddrInfo(ctx, "dual.test", "", dnsproxyd.Hints{Family: 1})
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, dnsproxyd.EAIFamily, pe.EAI)
}

func TestGetHostByName(t *testing.T) {
	_, path := start(t, map[string][]netip.Addr{"dual.test": {pub4, pub6}}, nil)
	c := &dnsproxyd.Client{Path: path}
	got, err := c.GetHostByName(context.Background(), "dual.test", dnsproxyd.AFInet)
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{pub4}, got)
	got, err = c.GetHostByName(context.Background(), "dual.test", dnsproxyd.AFInet6)
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{pub6}, got)
	_, err = c.GetHostByName(context.Background(), "nowhere.test", dnsproxyd.AFInet)
	var pe *dnsproxyd.Error
	require.ErrorAs(t, err, &pe)
	assert.True(t, pe.NotFound())
}

// A rewritten table is answered at the next query: the lab changes a
// running device's names without restarting it.
func TestTableIsReadAtEachQuery(t *testing.T) {
	s, path := start(t, map[string][]netip.Addr{labName: {loop4}}, nil)
	c := &dnsproxyd.Client{Path: path}
	other := netip.MustParseAddr("127.0.0.2")
	require.NoError(t, os.WriteFile(s.o.Table, FormatTable(map[string][]netip.Addr{labName: {other}}), 0o644))
	got, err := c.LookupNetIP(context.Background(), labName)
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{other}, got)
}

// The socket is netd.rc's: 0660, root, group inet. A device process
// without the inet group gets EACCES from connect, as on a phone.
func TestSocketIsInetOnly(t *testing.T) {
	_, path := start(t, nil, nil)
	fi, err := os.Stat(path)
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	assert.Equal(t, os.ModeSocket|0o660, fi.Mode()&(os.ModeSocket|os.ModePerm))
	assert.EqualValues(t, 0, st.Uid)
	assert.EqualValues(t, InetGID, st.Gid)
}

// A device folder deep in the host's tree still gets its socket (sun_path
// holds 108 bytes).
func TestLongSocketPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), strings.Repeat("d", 60), strings.Repeat("e", 60))
	path := filepath.Join(dir, "dnsproxyd")
	require.Greater(t, len(path), 108)
	s, err := Listen(path, &Options{Lookup: func(context.Context, string) ([]netip.Addr, error) { return []netip.Addr{pub4}, nil }})
	require.NoError(t, err)
	defer s.Close()
	// Clients reach it by a short name, as the device's bind mount gives.
	d, err := os.Open(dir)
	require.NoError(t, err)
	defer d.Close()
	short := "/proc/self/fd/" + strconv.Itoa(int(d.Fd())) + "/dnsproxyd"
	got, err := (&dnsproxyd.Client{Path: short}).LookupNetIP(context.Background(), "x.example.org")
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{pub4}, got)
}

// Commands netd refuses are answered with its text line; the connection
// carries further commands.
func TestRefusedCommands(t *testing.T) {
	_, path := start(t, map[string][]netip.Addr{labName: {loop4}}, nil)
	conn, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer conn.Close()
	r := bufio.NewReader(conn)
	for _, tc := range []struct{ cmd, want string }{
		{"resolve model.agentlab.test", "500 Command not recognized\x00"},
		{"getaddrinfo model.agentlab.test ^ 0 0", "501 GetAddrInfoCmd::runCommand: invalid number of arguments: 5\x00"},
	} {
		_, err := conn.Write(append([]byte(tc.cmd), 0))
		require.NoError(t, err)
		line, err := r.ReadString(0)
		require.NoError(t, err)
		assert.Equal(t, tc.want, line)
	}
	_, err = conn.Write([]byte("getaddrinfo model.agentlab.test ^ 1024 0 1 0 0\x00"))
	require.NoError(t, err)
	ais, err := dnsproxyd.ParseAddrInfoReply(r)
	require.NoError(t, err)
	require.Len(t, ais, 1)
	assert.Equal(t, loop4, ais[0].Addr.Addr())
}

// The bytes of one answer, as AOSP's DnsProxyListener writes them (see
// the golden file's header): any drift in the server's encoding shows.
func TestGoldenReply(t *testing.T) {
	s, _ := start(t, map[string][]netip.Addr{labName: {loop4, netip.IPv6Loopback()}}, nil)
	cases := []struct{ file, cmd string }{
		{"getaddrinfo.hex", "getaddrinfo model.agentlab.test 443 2 0 1 0 0"},
		{"getaddrinfo-fail.hex", "getaddrinfo nowhere.test ^ 1024 0 1 0 0"},
		{"gethostbyname.hex", "gethostbyname 0 model.agentlab.test 2"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			got := s.answer(tc.cmd)
			path := filepath.Join("testdata", tc.file)
			if *update {
				writeGolden(t, path, tc.cmd, got)
			}
			want := readGolden(t, path)
			assert.Equal(t, hex.EncodeToString(want), hex.EncodeToString(got))
		})
	}
}

// Golden files: '#' lines say what the bytes are, the rest is hex.
func readGolden(t *testing.T, path string) []byte {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var h strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		h.WriteString(strings.Join(strings.Fields(line), ""))
	}
	out, err := hex.DecodeString(h.String())
	require.NoError(t, err)
	return out
}

func writeGolden(t *testing.T, path, cmd string, b []byte) {
	old, _ := os.ReadFile(path)
	var header bytes.Buffer
	for _, line := range strings.Split(string(old), "\n") {
		if strings.HasPrefix(line, "#") {
			header.WriteString(line + "\n")
		}
	}
	if header.Len() == 0 {
		header.WriteString("# reply to: " + cmd + "\n")
	}
	enc := hex.EncodeToString(b)
	for i := 0; i < len(enc); i += 32 {
		header.WriteString(enc[i:min(i+32, len(enc))] + "\n")
	}
	require.NoError(t, os.WriteFile(path, header.Bytes(), 0o644))
}

func TestParseTable(t *testing.T) {
	got := ParseTable([]byte("# comment\n127.0.0.1 Model.Test other.test # trailing\nbad line\n::1 model.test\n"))
	assert.Equal(t, map[string][]netip.Addr{
		"model.test": {loop4, netip.IPv6Loopback()},
		"other.test": {loop4},
	}, got)
	assert.Equal(t, got, ParseTable(FormatTable(got)))
}

// Close ends open connections and waits for them.
func TestCloseEndsConnections(t *testing.T) {
	s, path := start(t, nil, nil)
	conn, err := net.Dial("unix", path)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, s.Close())
	_, err = conn.Read(make([]byte, 1))
	assert.True(t, errors.Is(err, net.ErrClosed) || err != nil)
}
