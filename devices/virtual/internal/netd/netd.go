//go:build linux

package netd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// InetGID is Android's inet group (AID_INET), which owns the socket.
const InetGID = 3003

// Response codes and constants as on the wire (netd's ResponseCode and
// bionic's netdb.h, sys/socket.h).
const (
	codeQueryResult     = 222
	codeOperationFailed = 401
	codeSyntaxError     = 500
	codeParameterError  = 501

	afUnspec = 0
	afInet   = 2
	afInet6  = 10

	sockStream = 1
	sockDgram  = 2
	sockRaw    = 3

	ipprotoTCP = 6
	ipprotoUDP = 17

	aiCanonName = 0x2

	eaiAgain   = 2
	eaiFail    = 4
	eaiFamily  = 5
	eaiNoData  = 7
	eaiService = 9
	eaiSock    = 10
)

const (
	// maxCommand is FrameworkListener's command buffer.
	maxCommand = 4096
	// queryTimeout bounds one host lookup.
	queryTimeout = 10 * time.Second
	// idleTimeout closes a connection that sends nothing.
	idleTimeout = 30 * time.Second
	maxConns    = 64
)

// Options configure a Server.
type Options struct {
	// Table is the lab's hosts-format file, read at each query; "" or a
	// missing file is an empty table.
	Table string
	// Lookup resolves names the table lacks; nil means the host's
	// resolver (net.DefaultResolver).
	Lookup func(ctx context.Context, host string) ([]netip.Addr, error)
	// Logger gets one line per failed lookup (names only); nil discards.
	Logger *slog.Logger
}

// Server serves the protocol on one socket.
type Server struct {
	o     Options
	ln    *net.UnixListener
	dir   *os.File // the socket's folder, kept open for the bind path
	log   *slog.Logger
	slots chan struct{}

	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{} // guarded by mu
	closed bool                  // guarded by mu
}

// Listen creates the socket at path (replacing a stale one), mode 0660,
// owner root, group inet, and starts serving.
func Listen(path string, opts *Options) (*Server, error) {
	s := &Server{conns: map[net.Conn]struct{}{}, slots: make(chan struct{}, maxConns)}
	if opts != nil {
		s.o = *opts
	}
	s.log = s.o.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.o.Lookup == nil {
		s.o.Lookup = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("netd: %w", err)
	}
	dir, err := os.Open(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("netd: %w", err)
	}
	// A device folder's path can exceed sun_path's 108 bytes: bind
	// through the folder's descriptor, whose /proc path is short.
	short := fmt.Sprintf("/proc/self/fd/%d/%s", dir.Fd(), filepath.Base(path))
	os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: short, Net: "unix"})
	if err != nil {
		dir.Close()
		return nil, fmt.Errorf("netd: listen %s: %w", path, err)
	}
	ln.SetUnlinkOnClose(false)
	if err := os.Chown(path, 0, InetGID); err == nil {
		err = os.Chmod(path, 0o660)
	}
	if err != nil {
		ln.Close()
		dir.Close()
		return nil, fmt.Errorf("netd: %w", err)
	}
	s.ln, s.dir = ln, dir
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

// Close stops the server and waits for its goroutines. Idempotent.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	s.dir.Close()
	return err
}

func (s *Server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.AcceptUnix()
		if err != nil {
			return
		}
		select {
		case s.slots <- struct{}{}:
		default:
			c.Close() // a flood; netd's limiter refuses too
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			<-s.slots
			return
		}
		s.conns[c] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			defer func() { <-s.slots }()
			s.serve(c)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
			c.Close()
		}()
	}
}

// serve answers commands until the client closes (bionic sends one per
// connection; FrameworkListener takes any number).
func (s *Server) serve(c *net.UnixConn) {
	r := bufio.NewReaderSize(c, maxCommand)
	for {
		c.SetReadDeadline(time.Now().Add(idleTimeout))
		cmd, err := r.ReadSlice(0)
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				c.Write(textReply(codeSyntaxError, "Command too long"))
			}
			return
		}
		c.SetReadDeadline(time.Time{})
		reply := s.answer(string(cmd[:len(cmd)-1]))
		c.SetWriteDeadline(time.Now().Add(idleTimeout))
		if _, err := c.Write(reply); err != nil {
			return
		}
	}
}

// textReply is a FrameworkListener message: "<code> <text>\0".
func textReply(code int, text string) []byte {
	return append([]byte(strconv.Itoa(code)+" "+text), 0)
}

// failed is DnsProxyOperationFailed with an EAI_ code: the code, a
// big-endian length 4, the code in host order (sendBinaryMsg of an int).
func failed(eai int32) []byte {
	b := []byte("401\x00")
	b = binary.BigEndian.AppendUint32(b, 4)
	return binary.NativeEndian.AppendUint32(b, uint32(eai))
}

// answer runs one command.
func (s *Server) answer(cmd string) []byte {
	args := strings.Split(cmd, " ")
	switch args[0] {
	case "getaddrinfo":
		if len(args) != 8 {
			return textReply(codeParameterError, "GetAddrInfoCmd::runCommand: invalid number of arguments: "+strconv.Itoa(len(args)))
		}
		var n [4]int
		for i := range n {
			v, err := strconv.Atoi(args[3+i])
			if err != nil {
				return textReply(codeParameterError, "GetAddrInfoCmd::runCommand: "+args[3+i])
			}
			n[i] = v
		}
		if _, err := strconv.ParseUint(args[7], 10, 32); err != nil {
			return textReply(codeParameterError, "GetAddrInfoCmd::runCommand: "+args[7])
		}
		return s.getaddrinfo(args[1], args[2], n[0], n[1], n[2], n[3])
	case "gethostbyname":
		if len(args) != 4 {
			return textReply(codeParameterError, "GetHostByNameCmd::runCommand: invalid number of arguments: "+strconv.Itoa(len(args)))
		}
		af, err := strconv.Atoi(args[3])
		if _, err2 := strconv.ParseUint(args[1], 10, 32); err != nil || err2 != nil {
			return textReply(codeParameterError, "GetHostByNameCmd::runCommand: bad argument")
		}
		return s.gethostbyname(args[2], af)
	}
	return textReply(codeSyntaxError, "Command not recognized")
}

// reservedTLDs are the special-use names (RFC 2606, RFC 6761) no public
// resolver answers: the table alone answers them, so a scenario's
// made-up names never wait on the host's DNS.
var reservedTLDs = []string{"test", "example", "invalid", "localhost"}

func reserved(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	for _, tld := range reservedTLDs {
		if h == tld || strings.HasSuffix(h, "."+tld) {
			return true
		}
	}
	return false
}

// lookup answers from the table, then (for other than reserved names)
// the host.
func (s *Server) lookup(host string) ([]netip.Addr, int32) {
	if addrs := tableLookup(s.o.Table, host); len(addrs) > 0 {
		return addrs, 0
	}
	if reserved(host) {
		return nil, eaiNoData
	}
	ctx, cancel := context.WithTimeout(context.Background(), queryTimeout)
	defer cancel()
	addrs, err := s.o.Lookup(ctx, host)
	if err != nil {
		s.log.Debug("netd: lookup failed", "host", host, "err", err)
		var de *net.DNSError
		if errors.As(err, &de) && (de.IsTimeout || de.IsTemporary) {
			return nil, eaiAgain
		}
		return nil, eaiNoData
	}
	if len(addrs) == 0 {
		return nil, eaiNoData
	}
	return addrs, 0
}

func wantFamily(af int, a netip.Addr) bool {
	switch af {
	case afInet:
		return a.Unmap().Is4()
	case afInet6:
		return !a.Unmap().Is4()
	}
	return true
}

func (s *Server) getaddrinfo(host, service string, flags, family, socktype, protocol int) []byte {
	if family == -1 {
		family = afUnspec
	}
	if family != afUnspec && family != afInet && family != afInet6 {
		return failed(eaiFamily)
	}
	type kind struct{ socktype, protocol int }
	var kinds []kind
	switch max(socktype, 0) {
	case 0:
		// bionic's explore order for an unspecified socket type.
		kinds = []kind{{sockDgram, ipprotoUDP}, {sockStream, ipprotoTCP}, {sockRaw, 0}}
	case sockStream:
		kinds = []kind{{sockStream, ipprotoTCP}}
	case sockDgram:
		kinds = []kind{{sockDgram, ipprotoUDP}}
	case sockRaw:
		kinds = []kind{{sockRaw, 0}}
	default:
		return failed(eaiSock)
	}
	if protocol > 0 {
		kinds = kinds[:0:0]
		switch {
		case protocol == ipprotoTCP && socktype != sockDgram:
			kinds = append(kinds, kind{sockStream, ipprotoTCP})
		case protocol == ipprotoUDP && socktype != sockStream:
			kinds = append(kinds, kind{sockDgram, ipprotoUDP})
		default:
			return failed(eaiSock)
		}
	}
	port := 0
	if service != "^" {
		p, err := strconv.ParseUint(service, 10, 16)
		if err != nil {
			return failed(eaiService) // no services database here
		}
		port = int(p)
	}
	var addrs []netip.Addr
	if host == "^" {
		addrs = []netip.Addr{netip.IPv6Loopback(), netip.AddrFrom4([4]byte{127, 0, 0, 1})}
	} else if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		var eai int32
		if addrs, eai = s.lookup(host); eai != 0 {
			return failed(eai)
		}
	}
	var out bytes.Buffer
	out.WriteString("222\x00")
	be := func(v int) { out.Write(binary.BigEndian.AppendUint32(nil, uint32(int32(v)))) }
	first := true
	for _, a := range addrs {
		if !wantFamily(family, a) {
			continue
		}
		a = a.Unmap()
		sa := sockaddr(a, port)
		fam := afInet6
		if a.Is4() {
			fam = afInet
		}
		for _, k := range kinds {
			be(1)
			be(max(flags, 0))
			be(fam)
			be(k.socktype)
			be(k.protocol)
			be(len(sa))
			out.Write(sa)
			if first && flags&aiCanonName != 0 && host != "^" {
				be(len(host) + 1)
				out.WriteString(host)
				out.WriteByte(0)
			} else {
				be(0)
			}
			first = false
		}
	}
	if first {
		return failed(eaiNoData)
	}
	be(0)
	return out.Bytes()
}

// sockaddr is a sockaddr_in or sockaddr_in6: family in host order, port
// and address in network order.
func sockaddr(a netip.Addr, port int) []byte {
	if a.Is4() {
		b := binary.NativeEndian.AppendUint16(nil, afInet)
		b = binary.BigEndian.AppendUint16(b, uint16(port))
		a4 := a.As4()
		b = append(b, a4[:]...)
		return append(b, make([]byte, 8)...)
	}
	b := binary.NativeEndian.AppendUint16(nil, afInet6)
	b = binary.BigEndian.AppendUint16(b, uint16(port))
	b = append(b, 0, 0, 0, 0) // flowinfo
	a16 := a.As16()
	b = append(b, a16[:]...)
	return append(b, 0, 0, 0, 0) // scope id
}

func (s *Server) gethostbyname(host string, af int) []byte {
	// netd's failure for gethostbyname carries no code.
	fail := append([]byte("401\x00"), 0, 0, 0, 0)
	if af != afInet && af != afInet6 {
		return fail
	}
	var addrs []netip.Addr
	if a, err := netip.ParseAddr(host); err == nil {
		addrs = []netip.Addr{a}
	} else {
		var eai int32
		if addrs, eai = s.lookup(host); eai != 0 {
			return fail
		}
	}
	var out bytes.Buffer
	out.WriteString("222\x00")
	be := func(v int) { out.Write(binary.BigEndian.AppendUint32(nil, uint32(int32(v)))) }
	be(len(host) + 1)
	out.WriteString(host)
	out.WriteByte(0)
	be(0) // no aliases
	be(af)
	n := 0
	for _, a := range addrs {
		if wantFamily(af, a) {
			n++
		}
	}
	if n == 0 {
		return fail
	}
	if af == afInet {
		be(4)
	} else {
		be(16)
	}
	for _, a := range addrs {
		if !wantFamily(af, a) {
			continue
		}
		// netd sends 16 bytes per address whatever h_length is.
		var b [16]byte
		if af == afInet {
			a4 := a.Unmap().As4()
			copy(b[:], a4[:])
		} else {
			b = a.As16()
		}
		be(16)
		out.Write(b[:])
	}
	be(0)
	return out.Bytes()
}

// tableLookup reads the lab's table (hosts format) for host.
func tableLookup(path, host string) []netip.Addr {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return ParseTable(b)[strings.ToLower(strings.TrimSuffix(host, "."))]
}

// ParseTable reads a hosts-format table: name (lower case) → addresses.
func ParseTable(b []byte) map[string][]netip.Addr {
	out := map[string][]netip.Addr{}
	for _, line := range strings.Split(string(b), "\n") {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		a, err := netip.ParseAddr(f[0])
		if err != nil {
			continue
		}
		for _, name := range f[1:] {
			name = strings.ToLower(strings.TrimSuffix(name, "."))
			out[name] = append(out[name], a)
		}
	}
	return out
}

// FormatTable writes a table in hosts format, names sorted.
func FormatTable(t map[string][]netip.Addr) []byte {
	names := make([]string, 0, len(t))
	for n := range t {
		names = append(names, n)
	}
	slices.Sort(names)
	var b bytes.Buffer
	b.WriteString("# The lab's names for this virtual device's netd (dnsproxyd); hosts format.\n")
	for _, n := range names {
		for _, a := range t[n] {
			fmt.Fprintf(&b, "%s %s\n", a, n)
		}
	}
	return b.Bytes()
}
