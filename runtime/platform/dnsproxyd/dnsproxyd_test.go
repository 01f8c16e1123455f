package dnsproxyd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net"
	"net/netip"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// reply builds netd replies for the tests.
type reply struct{ bytes.Buffer }

func (r *reply) be(v ...int) *reply {
	for _, x := range v {
		r.Write(binary.BigEndian.AppendUint32(nil, uint32(int32(x))))
	}
	return r
}
func (r *reply) raw(b ...byte) *reply { r.Write(b); return r }
func (r *reply) str(s string) *reply  { r.WriteString(s); return r }
func (r *reply) cstr(s string) *reply { return r.be(len(s) + 1).str(s).raw(0) }
func sin(a [4]byte, port uint16) []byte {
	b := binary.LittleEndian.AppendUint16(nil, AFInet)
	b = binary.BigEndian.AppendUint16(b, port)
	return append(append(b, a[:]...), make([]byte, 8)...)
}
func sin6(a [16]byte, port uint16, scope uint32) []byte {
	b := binary.LittleEndian.AppendUint16(nil, AFInet6)
	b = binary.BigEndian.AppendUint16(b, port)
	b = append(append(b, 0, 0, 0, 0), a[:]...)
	return binary.LittleEndian.AppendUint32(b, scope)
}

func (r *reply) ai(flags, fam, st, proto int, sa []byte, canon string) *reply {
	r.be(1, flags, fam, st, proto, len(sa)).raw(sa...)
	if canon == "" {
		return r.be(0)
	}
	return r.cstr(canon)
}

func parseAI(b []byte) ([]AddrInfo, error) {
	return ParseAddrInfoReply(bufio.NewReader(bytes.NewReader(b)))
}

func TestParseAddrInfoReply(t *testing.T) {
	v6 := netip.MustParseAddr("fe80::1")
	for _, tc := range []struct {
		name  string
		in    []byte
		want  []AddrInfo
		eai   int
		code  int
		bad   bool
		inErr string
	}{
		{name: "two addresses", in: new(reply).str("222\x00").
			ai(0x400, AFInet, 1, 6, sin([4]byte{127, 0, 0, 1}, 0), "model.agentlab.test").
			ai(0x400, AFInet6, 1, 6, sin6(v6.As16(), 443, 3), "").be(0).Bytes(),
			want: []AddrInfo{
				{Flags: 0x400, Family: AFInet, SockType: 1, Protocol: 6, Addr: netip.MustParseAddrPort("127.0.0.1:0"), CanonName: "model.agentlab.test"},
				{Flags: 0x400, Family: AFInet6, SockType: 1, Protocol: 6, Addr: netip.AddrPortFrom(v6.WithZone("3"), 443)},
			}},
		{name: "empty list", in: new(reply).str("222\x00").be(0).Bytes()},
		{name: "EAI_NODATA", in: new(reply).str("401\x00").be(4).raw(7, 0, 0, 0).Bytes(), eai: EAINoData, code: 401},
		{name: "failure without a code", in: new(reply).str("401\x00").be(0).Bytes(), code: 401},
		{name: "refused command", in: []byte("500 Command not recognized\x00"), code: 500, inErr: "Command not recognized"},
		{name: "truncated list", in: new(reply).str("222\x00").be(1, 0, AFInet).Bytes(), bad: true},
		{name: "no end marker", in: new(reply).str("222\x00").ai(0, AFInet, 1, 6, sin([4]byte{1, 2, 3, 4}, 0), "").Bytes(), bad: true},
		{name: "bad marker", in: new(reply).str("222\x00").be(2).Bytes(), bad: true},
		{name: "not a code", in: []byte("2x2\x00"), bad: true},
		{name: "negative length", in: new(reply).str("222\x00").be(1, 0, AFInet, 1, 6, -1).Bytes(), bad: true},
		{name: "family disagrees with address", in: new(reply).str("222\x00").ai(0, AFInet6, 1, 6, sin([4]byte{1, 2, 3, 4}, 0), "").be(0).Bytes(), bad: true},
		{name: "sockaddr size", in: new(reply).str("222\x00").ai(0, AFInet, 1, 6, sin([4]byte{1, 2, 3, 4}, 0)[:8], "").be(0).Bytes(), bad: true},
		{name: "name without NUL", in: new(reply).str("222\x00").be(1, 0, AFInet, 1, 6, 16).raw(sin([4]byte{1, 2, 3, 4}, 0)...).be(2).str("ab").be(0).Bytes(), bad: true},
		{name: "failure payload of 3 bytes", in: new(reply).str("401\x00").be(3).raw(1, 2, 3).Bytes(), bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAI(tc.in)
			switch {
			case tc.bad:
				require.ErrorIs(t, err, ErrMalformed)
			case tc.code != 0:
				var pe *Error
				require.ErrorAs(t, err, &pe)
				assert.Equal(t, tc.eai, pe.EAI)
				assert.Equal(t, tc.code, pe.Code)
				assert.Contains(t, pe.Text, tc.inErr)
			default:
				require.NoError(t, err)
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

func TestParseHostEntReply(t *testing.T) {
	var a4 [16]byte
	copy(a4[:], []byte{10, 0, 0, 7, 0xde, 0xad}) // netd sends 16 bytes; the tail is junk
	in := new(reply).str("222\x00").cstr("h.test").cstr("alias.test").be(0, AFInet, 4, 16).raw(a4[:]...).be(0).Bytes()
	got, err := ParseHostEntReply(bufio.NewReader(bytes.NewReader(in)))
	require.NoError(t, err)
	assert.Equal(t, []netip.Addr{netip.MustParseAddr("10.0.0.7")}, got)

	in = new(reply).str("222\x00").cstr("h.test").be(0, AFInet, 16).Bytes()
	_, err = ParseHostEntReply(bufio.NewReader(bytes.NewReader(in)))
	require.ErrorIs(t, err, ErrMalformed, "IPv4 with a length of 16")

	_, err = ParseHostEntReply(bufio.NewReader(bytes.NewReader([]byte("401\x00\x00\x00\x00\x00"))))
	var pe *Error
	require.ErrorAs(t, err, &pe)
	assert.True(t, pe.NotFound())
}

// Host names that netd's argument parser would split or unquote are
// refused before anything is sent.
func TestCommandRefusesNonNames(t *testing.T) {
	c := &Client{Path: filepath.Join(t.TempDir(), "none")}
	for _, host := range []string{"a b", `a"b`, `a\b`, "a\x00b", "", "a\nb"} {
		_, err := c.LookupNetIP(context.Background(), host)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), "connect", host)
	}
	b, err := command("getaddrinfo", "model.agentlab.test", "^", "1024", "0", "1", "0", "0")
	require.NoError(t, err)
	assert.Equal(t, "getaddrinfo model.agentlab.test ^ 1024 0 1 0 0\x00", string(b))
}

// A missing socket is a dial error (the platform then asks its fallback
// servers); a server that never answers ends at the context's deadline.
func TestClientFailures(t *testing.T) {
	dir := t.TempDir()
	_, err := (&Client{Path: filepath.Join(dir, "missing")}).LookupNetIP(context.Background(), "x.test")
	require.Error(t, err)
	var ne *net.OpError
	assert.True(t, errors.As(err, &ne), "%v", err)

	path := filepath.Join(dir, "silent")
	ln, err := net.Listen("unix", path)
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			c.Read(make([]byte, 100))
			time.Sleep(5 * time.Second)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = (&Client{Path: path}).LookupNetIP(ctx, "x.test")
	require.ErrorIs(t, err, context.DeadlineExceeded)
}

// FuzzParseAddrInfoReply: any bytes give addresses, an *Error or
// ErrMalformed — never a panic, never more than maxAddrs, and every
// address agrees with its family.
func FuzzParseAddrInfoReply(f *testing.F) {
	seed, err := hex.DecodeString(strings.Join(strings.Fields(`
		32323200000000010000000200000002 000000010000000600000010020001bb
		7f000001000000000000000000000014 6d6f64656c2e6167656e746c61622e74
		6573740000000001000000020000000a 00000001000000060000001c0a0001bb
		00000000000000000000000000000000 00000001000000000000000000000000`), ""))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte("401\x00\x00\x00\x00\x04\x07\x00\x00\x00"))
	f.Add([]byte("500 Command not recognized\x00"))
	f.Add(new(reply).str("222\x00").ai(0, AFInet6, 1, 6, sin6(netip.IPv6Loopback().As16(), 80, 0), "x").be(0).Bytes())
	f.Fuzz(func(t *testing.T, b []byte) {
		ais, err := parseAI(b)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error of neither kind: %v", err)
			}
			return
		}
		if len(ais) > maxAddrs {
			t.Fatalf("%d addresses", len(ais))
		}
		for _, ai := range ais {
			if !ai.Addr.Addr().IsValid() || (ai.Family == AFInet) != ai.Addr.Addr().Is4() {
				t.Fatalf("bad entry %+v", ai)
			}
		}
	})
}

func FuzzParseHostEntReply(f *testing.F) {
	f.Add(new(reply).str("222\x00").cstr("h").be(0, AFInet6, 16, 16).raw(netip.IPv6Loopback().AsSlice()...).be(0).Bytes())
	f.Add([]byte("401\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		addrs, err := ParseHostEntReply(bufio.NewReader(bytes.NewReader(b)))
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("error of neither kind: %v", err)
			}
			return
		}
		if len(addrs) > maxAddrs {
			t.Fatalf("%d addresses", len(addrs))
		}
	})
}
