// Package dnsproxyd is a client of Android netd's DNS proxy, the unix
// socket /dev/socket/dnsproxyd through which bionic resolves every name
// (Android has no /etc/resolv.conf, so Go's own resolver finds no server).
//
// The wire is netd's FrameworkListener protocol as bionic's resolver
// client speaks it (DnsProxyListener in AOSP's DnsResolver module): one
// command per connection, space-separated words ending in a NUL byte, no
// sequence number, "^" for a null argument:
//
//	getaddrinfo <host> <service> <ai_flags> <ai_family> <ai_socktype> <ai_protocol> <netid>
//	gethostbyname <netid> <host> <af>
//
// A success starts with the 4 bytes "222\0" (DnsProxyQueryResult). For
// getaddrinfo it is followed by, per address, a big-endian int32 1 and the
// addrinfo as netd's sendaddrinfo writes it: ai_flags, ai_family,
// ai_socktype, ai_protocol (big-endian int32 each), the sockaddr as a
// big-endian length and its bytes (sockaddr_in or sockaddr_in6: family in
// host byte order, port and address in network order), the canonical
// name as a big-endian length (NUL included) and its bytes; a big-endian
// 0 ends the list. For gethostbyname it is the hostent as sendhostent
// writes it: name and aliases as length-prefixed NUL-terminated strings
// (the aliases end with a 0 length), h_addrtype and h_length (big-endian),
// then the addresses, each as a length (16) and 16 bytes, ending with a 0
// length. A failure is "401\0" (DnsProxyOperationFailed), a big-endian
// length and that many bytes: for getaddrinfo the EAI_ code as a native
// (little-endian on every Android ABI) int32; for gethostbyname nothing.
// A refused command is a NUL-terminated text line ("500 …", "501 …").
//
// The socket is mode 0660, group inet (3003): a process without the inet
// group cannot connect (EACCES), as on a phone.
package dnsproxyd

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"
)

// SocketPath is where netd listens on Android.
const SocketPath = "/dev/socket/dnsproxyd"

// Response codes of netd's ResponseCode.
const (
	codeQueryResult     = 222 // DnsProxyQueryResult
	codeOperationFailed = 401 // DnsProxyOperationFailed
)

// Constants of bionic, as they go on the wire.
const (
	AFUnspec = 0
	AFInet   = 2
	AFInet6  = 10

	SockStream = 1
	SockDgram  = 2

	// AIAddrConfig is bionic's AI_ADDRCONFIG: only families the device
	// has an address (a route) for.
	AIAddrConfig = 0x400
	// AICanonName asks for the canonical name.
	AICanonName = 0x2
)

// EAI error codes of bionic's netdb.h.
const (
	EAIAddrFamily = 1
	EAIAgain      = 2
	EAIBadFlags   = 3
	EAIFail       = 4
	EAIFamily     = 5
	EAIMemory     = 6
	EAINoData     = 7
	EAINoName     = 8
	EAIService    = 9
	EAISockType   = 10
	EAISystem     = 11
)

var eaiNames = map[int]string{
	EAIAddrFamily: "EAI_ADDRFAMILY", EAIAgain: "EAI_AGAIN", EAIBadFlags: "EAI_BADFLAGS", EAIFail: "EAI_FAIL",
	EAIFamily: "EAI_FAMILY", EAIMemory: "EAI_MEMORY", EAINoData: "EAI_NODATA", EAINoName: "EAI_NONAME",
	EAIService: "EAI_SERVICE", EAISockType: "EAI_SOCKTYPE", EAISystem: "EAI_SYSTEM",
}

// Limits on what a reply may hold; netd never comes near them.
const (
	maxAddrs    = 256
	maxNameLen  = 1025 // NI_MAXHOST, NUL included
	maxAliases  = 64
	maxSockaddr = 128 // sizeof(struct sockaddr_storage)
)

// ErrMalformed: the reply does not follow the protocol.
var ErrMalformed = errors.New("dnsproxyd: malformed reply")

// Error is netd's answer that the lookup failed: DnsProxyOperationFailed
// with an EAI_ code (getaddrinfo; 0 for gethostbyname, which sends none),
// or a refused command (Code is then the response code, Text its line).
type Error struct {
	// EAI is the getaddrinfo error code; 0 when netd sent none.
	EAI int
	// Code is the response code (401, or 5xx for a refused command).
	Code int
	// Text is a refused command's message.
	Text string
}

func (e *Error) Error() string {
	switch {
	case e.Code != codeOperationFailed:
		return fmt.Sprintf("dnsproxyd: command refused: %d %s", e.Code, e.Text)
	case e.EAI == 0:
		return "dnsproxyd: lookup failed"
	}
	name := eaiNames[e.EAI]
	if name == "" {
		name = "EAI_" + strconv.Itoa(e.EAI)
	}
	return "dnsproxyd: " + name
}

// NotFound reports whether the name has no address (as opposed to a
// resolver that could not answer).
func (e *Error) NotFound() bool {
	return e.Code == codeOperationFailed && (e.EAI == EAINoData || e.EAI == EAINoName || e.EAI == 0)
}

// AddrInfo is one entry of a getaddrinfo answer.
type AddrInfo struct {
	Flags, Family, SockType, Protocol int
	Addr                              netip.AddrPort
	CanonName                         string
}

// Hints are getaddrinfo's hints; the zero value is AF_UNSPEC, any socket
// type, no flags.
type Hints struct {
	Flags, Family, SockType, Protocol int
}

// Client asks netd. The zero value dials SocketPath.
type Client struct {
	// Path is the socket; "" means SocketPath.
	Path string
	// NetID is the network (0: the caller's default network).
	NetID uint32
	// Timeout bounds one query when ctx has no deadline; 0 means 10 s.
	Timeout time.Duration
}

func (c *Client) dial(ctx context.Context) (net.Conn, error) {
	path := c.Path
	if path == "" {
		path = SocketPath
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("dnsproxyd: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		t := c.Timeout
		if t <= 0 {
			t = 10 * time.Second
		}
		conn.SetDeadline(time.Now().Add(t))
	}
	// The connection is one query long: cancelling ctx ends it.
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	return &stopConn{Conn: conn, stop: stop}, nil
}

type stopConn struct {
	net.Conn
	stop func() bool
}

func (c *stopConn) Close() error { c.stop(); return c.Conn.Close() }

// command renders a command: words separated by spaces, ending in NUL.
// Words come from the caller's host name: one holding a space, a quote,
// a backslash or a control byte would be split or mangled by netd's
// argument parser, so it is refused instead.
func command(words ...string) ([]byte, error) {
	for _, w := range words {
		if w == "" {
			return nil, fmt.Errorf("dnsproxyd: empty argument")
		}
		for i := 0; i < len(w); i++ {
			if b := w[i]; b <= ' ' || b == '"' || b == '\\' || b == 0x7f {
				return nil, fmt.Errorf("dnsproxyd: argument %q: not a host name", w)
			}
		}
	}
	return append([]byte(strings.Join(words, " ")), 0), nil
}

// GetAddrInfo resolves host (service "" means none) and returns netd's
// answer, in netd's order.
func (c *Client) GetAddrInfo(ctx context.Context, host, service string, h Hints) ([]AddrInfo, error) {
	if service == "" {
		service = "^"
	}
	cmd, err := command("getaddrinfo", host, service, strconv.Itoa(h.Flags), strconv.Itoa(h.Family),
		strconv.Itoa(h.SockType), strconv.Itoa(h.Protocol), strconv.FormatUint(uint64(c.NetID), 10))
	if err != nil {
		return nil, err
	}
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.Write(cmd); err != nil {
		return nil, fmt.Errorf("dnsproxyd: %w", ctxErr(ctx, err))
	}
	ais, err := ParseAddrInfoReply(bufio.NewReader(conn))
	if err != nil && !isProtocol(err) {
		err = ctxErr(ctx, err)
	}
	return ais, err
}

// GetHostByName resolves host for one family (AFInet or AFInet6).
func (c *Client) GetHostByName(ctx context.Context, host string, af int) ([]netip.Addr, error) {
	cmd, err := command("gethostbyname", strconv.FormatUint(uint64(c.NetID), 10), host, strconv.Itoa(af))
	if err != nil {
		return nil, err
	}
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.Write(cmd); err != nil {
		return nil, fmt.Errorf("dnsproxyd: %w", ctxErr(ctx, err))
	}
	addrs, err := ParseHostEntReply(bufio.NewReader(conn))
	if err != nil && !isProtocol(err) {
		err = ctxErr(ctx, err)
	}
	return addrs, err
}

// LookupNetIP resolves host to its addresses (getaddrinfo, AF_UNSPEC,
// SOCK_STREAM, AI_ADDRCONFIG: what a TCP client asks), duplicates
// removed, netd's order kept.
func (c *Client) LookupNetIP(ctx context.Context, host string) ([]netip.Addr, error) {
	ais, err := c.GetAddrInfo(ctx, host, "", Hints{Flags: AIAddrConfig, Family: AFUnspec, SockType: SockStream})
	if err != nil {
		return nil, err
	}
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, ai := range ais {
		a := ai.Addr.Addr()
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out, nil
}

func isProtocol(err error) bool {
	var e *Error
	return errors.As(err, &e) || errors.Is(err, ErrMalformed)
}

// ctxErr prefers the context's error to the deadline it caused.
func ctxErr(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// readCode reads the 4-byte response code ("222\0"). A code that is not
// a query result is answered by readFailure.
func readCode(r *bufio.Reader) (int, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, fmt.Errorf("%w: no response code", ErrMalformed)
		}
		return 0, fmt.Errorf("dnsproxyd: reading the response code: %w", err)
	}
	if b[0] < '0' || b[0] > '9' || b[1] < '0' || b[1] > '9' || b[2] < '0' || b[2] > '9' {
		return 0, fmt.Errorf("%w: response code %q", ErrMalformed, b[:])
	}
	code := int(b[0]-'0')*100 + int(b[1]-'0')*10 + int(b[2]-'0')
	if b[3] != 0 {
		if b[3] != ' ' {
			return 0, fmt.Errorf("%w: response code %q", ErrMalformed, b[:])
		}
		// A text message ("500 Command not recognized\0").
		text, err := r.ReadString(0)
		if err != nil {
			return 0, fmt.Errorf("%w: unterminated message", ErrMalformed)
		}
		return 0, &Error{Code: code, Text: strings.TrimSuffix(text, "\x00")}
	}
	return code, nil
}

// readFailure reads DnsProxyOperationFailed's length and payload.
func readFailure(r *bufio.Reader, code int) error {
	if code != codeOperationFailed {
		return &Error{Code: code}
	}
	n, err := readBE32(r)
	if err != nil {
		return err
	}
	switch n {
	case 0:
		return &Error{Code: code}
	case 4:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return fmt.Errorf("%w: truncated error code", ErrMalformed)
		}
		return &Error{Code: code, EAI: int(int32(binary.LittleEndian.Uint32(b[:])))}
	}
	return fmt.Errorf("%w: failure payload of %d bytes", ErrMalformed, n)
}

func readBE32(r io.Reader) (int32, error) {
	var b [4]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, fmt.Errorf("%w: truncated", ErrMalformed)
		}
		return 0, fmt.Errorf("dnsproxyd: %w", err)
	}
	return int32(binary.BigEndian.Uint32(b[:])), nil
}

// readBytes reads a big-endian length and that many bytes (at most max).
func readBytes(r io.Reader, max int) ([]byte, error) {
	n, err := readBE32(r)
	if err != nil {
		return nil, err
	}
	if n < 0 || int(n) > max {
		return nil, fmt.Errorf("%w: length %d", ErrMalformed, n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("%w: truncated", ErrMalformed)
	}
	return b, nil
}

// readString reads a length-prefixed string whose last byte is NUL (a
// zero length is the empty string).
func readString(r io.Reader) (string, error) {
	b, err := readBytes(r, maxNameLen)
	if err != nil || len(b) == 0 {
		return "", err
	}
	if b[len(b)-1] != 0 {
		return "", fmt.Errorf("%w: string not NUL-terminated", ErrMalformed)
	}
	return string(b[:len(b)-1]), nil
}

// ParseAddrInfoReply reads a getaddrinfo reply: the addresses, or an
// *Error (netd's failure), or an error wrapping ErrMalformed.
func ParseAddrInfoReply(r *bufio.Reader) ([]AddrInfo, error) {
	code, err := readCode(r)
	if err != nil {
		return nil, err
	}
	if code != codeQueryResult {
		return nil, readFailure(r, code)
	}
	var out []AddrInfo
	for {
		more, err := readBE32(r)
		if err != nil {
			return nil, err
		}
		if more == 0 {
			return out, nil
		}
		if more != 1 {
			return nil, fmt.Errorf("%w: list marker %d", ErrMalformed, more)
		}
		if len(out) == maxAddrs {
			return nil, fmt.Errorf("%w: more than %d addresses", ErrMalformed, maxAddrs)
		}
		var ai AddrInfo
		for _, f := range []*int{&ai.Flags, &ai.Family, &ai.SockType, &ai.Protocol} {
			v, err := readBE32(r)
			if err != nil {
				return nil, err
			}
			*f = int(v)
		}
		sa, err := readBytes(r, maxSockaddr)
		if err != nil {
			return nil, err
		}
		if ai.Addr, err = parseSockaddr(sa); err != nil {
			return nil, err
		}
		if ai.Family != AFInet && ai.Family != AFInet6 {
			return nil, fmt.Errorf("%w: family %d", ErrMalformed, ai.Family)
		}
		if (ai.Family == AFInet) != ai.Addr.Addr().Is4() {
			return nil, fmt.Errorf("%w: family %d with address %s", ErrMalformed, ai.Family, ai.Addr.Addr())
		}
		if ai.CanonName, err = readString(r); err != nil {
			return nil, err
		}
		out = append(out, ai)
	}
}

// parseSockaddr decodes a sockaddr_in (16 bytes) or sockaddr_in6 (28).
// sa_family is in host byte order: little-endian on every Android ABI.
func parseSockaddr(b []byte) (netip.AddrPort, error) {
	if len(b) < 4 {
		return netip.AddrPort{}, fmt.Errorf("%w: sockaddr of %d bytes", ErrMalformed, len(b))
	}
	port := binary.BigEndian.Uint16(b[2:4])
	switch fam := binary.LittleEndian.Uint16(b); {
	case fam == AFInet && len(b) == 16:
		return netip.AddrPortFrom(netip.AddrFrom4([4]byte(b[4:8])), port), nil
	case fam == AFInet6 && len(b) == 28:
		a := netip.AddrFrom16([16]byte(b[8:24]))
		if scope := binary.LittleEndian.Uint32(b[24:28]); scope != 0 {
			a = a.WithZone(strconv.FormatUint(uint64(scope), 10))
		}
		return netip.AddrPortFrom(a, port), nil
	default:
		return netip.AddrPort{}, fmt.Errorf("%w: sockaddr family %d of %d bytes", ErrMalformed, fam, len(b))
	}
}

// ParseHostEntReply reads a gethostbyname reply: the addresses, an
// *Error, or an error wrapping ErrMalformed.
func ParseHostEntReply(r *bufio.Reader) ([]netip.Addr, error) {
	code, err := readCode(r)
	if err != nil {
		return nil, err
	}
	if code != codeQueryResult {
		return nil, readFailure(r, code)
	}
	if _, err := readString(r); err != nil { // h_name
		return nil, err
	}
	for i := 0; ; i++ {
		if i > maxAliases {
			return nil, fmt.Errorf("%w: more than %d aliases", ErrMalformed, maxAliases)
		}
		b, err := readBytes(r, maxNameLen)
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			break
		}
	}
	af, err := readBE32(r)
	if err != nil {
		return nil, err
	}
	length, err := readBE32(r)
	if err != nil {
		return nil, err
	}
	if !(af == AFInet && length == 4) && !(af == AFInet6 && length == 16) {
		return nil, fmt.Errorf("%w: address type %d of length %d", ErrMalformed, af, length)
	}
	var out []netip.Addr
	for {
		// netd sends 16 bytes per address whatever h_length says: an
		// IPv4 address is the first 4.
		b, err := readBytes(r, 16)
		if err != nil {
			return nil, err
		}
		if len(b) == 0 {
			return out, nil
		}
		if len(b) != 16 {
			return nil, fmt.Errorf("%w: address of %d bytes", ErrMalformed, len(b))
		}
		if len(out) == maxAddrs {
			return nil, fmt.Errorf("%w: more than %d addresses", ErrMalformed, maxAddrs)
		}
		if af == AFInet {
			out = append(out, netip.AddrFrom4([4]byte(b[:4])))
		} else {
			out = append(out, netip.AddrFrom16([16]byte(b)))
		}
	}
}
