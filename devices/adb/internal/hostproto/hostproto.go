// Package hostproto is a small client for the adb server's smart-socket
// protocol (lab-reference B.4) covering what gadb v0.1.0 lacks (B.8):
// forwards to any remote spec and to "tcp:0", reverse forwards, shell v2
// with exit codes and separate stderr, sync STAT, host:connect and
// host:disconnect, host:devices-l without dropping short lines,
// get-state with every state, and raw device streams as a net.Conn.
//
// Every request opens its own TCP connection to the server, like the adb
// CLI. A context bounds each request: when it is done, the connection's
// deadline is moved to the past, which unblocks any read or write.
package hostproto

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"
)

// MaxRequest is the largest service string the framing can carry (four
// hex digits of length).
const MaxRequest = 0xffff

// ErrProtocol is returned when the server's reply does not follow the
// protocol (bad status word, bad length, truncated reply).
var ErrProtocol = errors.New("adb protocol error")

// Stage says how far a request got before the server answered FAIL.
type Stage string

const (
	// StageHost: a host request (host:..., host-serial:...) was refused.
	StageHost Stage = "host"
	// StageTransport: host:transport:SERIAL was refused: the device is
	// absent, offline or unauthorized.
	StageTransport Stage = "transport"
	// StageService: the device refused the service (or its stream closed
	// before it was bound).
	StageService Stage = "service"
)

// FailError is a FAIL reply from the server or the device.
type FailError struct {
	Stage   Stage
	Request string
	Message string
}

func (e *FailError) Error() string {
	return fmt.Sprintf("adb %s %q: %s", e.Stage, e.Request, e.Message)
}

// Client talks to one adb server.
type Client struct {
	addr   string
	dialer net.Dialer
}

// New returns a client for the adb server at addr ("127.0.0.1:5037").
func New(addr string) *Client {
	return &Client{addr: addr, dialer: net.Dialer{Timeout: 10 * time.Second}}
}

// Addr is the server address.
func (c *Client) Addr() string { return c.addr }

// Conn is one connection to the adb server.
type Conn struct {
	nc   net.Conn
	r    *bufio.Reader
	stop func() bool
}

// dial connects and arranges for ctx to interrupt blocked I/O.
func (c *Client) dial(ctx context.Context) (*Conn, error) {
	nc, err := c.dialer.DialContext(ctx, "tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("dial adb server: %w", err)
	}
	return newConn(ctx, nc), nil
}

func newConn(ctx context.Context, nc net.Conn) *Conn {
	cn := &Conn{nc: nc, r: bufio.NewReaderSize(nc, 64<<10)}
	cn.stop = context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	return cn
}

// Close closes the connection.
func (cn *Conn) Close() error {
	cn.stop()
	return cn.nc.Close()
}

// detach stops ctx from interrupting the connection (for long-lived
// streams handed to a caller after the handshake).
func (cn *Conn) detach() { cn.stop() }

// Read reads stream bytes after the handshake.
func (cn *Conn) Read(p []byte) (int, error) { return cn.r.Read(p) }

// Write writes stream bytes after the handshake.
func (cn *Conn) Write(p []byte) (int, error) { return cn.nc.Write(p) }

// send writes one framed request.
func (cn *Conn) send(req string) error {
	if len(req) > MaxRequest {
		return fmt.Errorf("request of %d bytes: %w", len(req), ErrProtocol)
	}
	if _, err := io.WriteString(cn.nc, fmt.Sprintf("%04x%s", len(req), req)); err != nil {
		return fmt.Errorf("send %q: %w", req, err)
	}
	return nil
}

// status reads OKAY, or FAIL + hex4 message as a *FailError.
func (cn *Conn) status(stage Stage, req string) error {
	return ReadStatus(cn.r, stage, req)
}

// ReadStatus reads a status word: nil for OKAY, *FailError for FAIL with
// its message, ErrProtocol for anything else.
func ReadStatus(r io.Reader, stage Stage, req string) error {
	var word [4]byte
	if _, err := io.ReadFull(r, word[:]); err != nil {
		return fmt.Errorf("read status of %q: %w", req, truncated(err))
	}
	switch string(word[:]) {
	case "OKAY":
		return nil
	case "FAIL":
		msg, err := ReadHex4(r)
		if err != nil {
			return fmt.Errorf("read FAIL message of %q: %w", req, err)
		}
		return &FailError{Stage: stage, Request: req, Message: string(msg)}
	default:
		return fmt.Errorf("status %q for %q: %w", word[:], req, ErrProtocol)
	}
}

// ReadHex4 reads a length-prefixed payload: four hex digits, then that
// many bytes.
func ReadHex4(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, fmt.Errorf("read length: %w", truncated(err))
	}
	n, err := strconv.ParseUint(string(hdr[:]), 16, 16)
	if err != nil {
		return nil, fmt.Errorf("length %q: %w", hdr[:], ErrProtocol)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, fmt.Errorf("read %d-byte payload: %w", n, truncated(err))
	}
	return buf, nil
}

// truncated turns an early EOF inside a reply into ErrProtocol while
// keeping timeouts and resets as they are.
func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: truncated reply", ErrProtocol)
	}
	return err
}

// Query sends a host request and returns its hex4 payload.
func (c *Client) Query(ctx context.Context, req string) (string, error) {
	cn, err := c.dial(ctx)
	if err != nil {
		return "", err
	}
	defer cn.Close()
	if err := cn.send(req); err != nil {
		return "", err
	}
	if err := cn.status(StageHost, req); err != nil {
		return "", err
	}
	b, err := ReadHex4(cn.r)
	if err != nil {
		return "", fmt.Errorf("%s: %w", req, err)
	}
	return string(b), nil
}

// Version is host:version: the server's protocol version (41 for every
// server since 2019; the reply is hex, lab-reference B.9).
func (c *Client) Version(ctx context.Context) (int, error) {
	s, err := c.Query(ctx, "host:version")
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 16, 32)
	if err != nil {
		return 0, fmt.Errorf("host:version %q: %w", s, ErrProtocol)
	}
	return int(v), nil
}

// State is host-serial:SERIAL:get-state. A device the server does not
// know is a *FailError at StageHost.
func (c *Client) State(ctx context.Context, serial string) (string, error) {
	s, err := c.Query(ctx, "host-serial:"+serial+":get-state")
	return strings.TrimSpace(s), err
}

// Features is host-serial:SERIAL:features.
func (c *Client) Features(ctx context.Context, serial string) ([]string, error) {
	s, err := c.Query(ctx, "host-serial:"+serial+":features")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range strings.Split(strings.TrimSpace(s), ",") {
		if f != "" {
			out = append(out, f)
		}
	}
	return out, nil
}

// Connect is host:connect:ADDR. The server answers OKAY even when the
// connection failed, so the text decides (lab-reference B.3).
func (c *Client) Connect(ctx context.Context, addr string) (string, error) {
	s, err := c.Query(ctx, "host:connect:"+addr)
	if err != nil {
		return "", err
	}
	s = strings.TrimSpace(s)
	if !connectSucceeded(s) {
		return s, &FailError{Stage: StageHost, Request: "host:connect:" + addr, Message: s}
	}
	return s, nil
}

// connectSucceeded reports whether a host:connect reply text means the
// device is connected.
func connectSucceeded(text string) bool {
	return strings.HasPrefix(text, "connected to ") || strings.HasPrefix(text, "already connected to ")
}

// Disconnect is host:disconnect:ADDR.
func (c *Client) Disconnect(ctx context.Context, addr string) error {
	s, err := c.Query(ctx, "host:disconnect:"+addr)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(s, "disconnected") {
		return &FailError{Stage: StageHost, Request: "host:disconnect:" + addr, Message: strings.TrimSpace(s)}
	}
	return nil
}

// Reconnect kicks the device's transport so the server re-establishes it
// (host-serial:SERIAL:reconnect).
func (c *Client) Reconnect(ctx context.Context, serial string) error {
	_, err := c.Query(ctx, "host-serial:"+serial+":reconnect")
	return err
}

// Entry is one line of host:devices-l.
type Entry struct {
	Serial      string
	State       string
	Product     string
	Model       string
	Device      string
	USB         string
	TransportID int64
}

// Devices is host:devices-l, parsed without dropping short lines.
func (c *Client) Devices(ctx context.Context) ([]Entry, error) {
	s, err := c.Query(ctx, "host:devices-l")
	if err != nil {
		return nil, err
	}
	return ParseDevicesL(s), nil
}

// ParseDevicesL parses a host:devices-l listing. Lines it cannot make
// sense of (no serial) are skipped; a line with only a serial and a state
// (offline TCP transports) is kept.
func ParseDevicesL(s string) []Entry {
	var out []Entry
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(strings.TrimRight(line, "\r"))
		if len(f) < 2 {
			continue
		}
		e := Entry{Serial: f[0]}
		i := 1
		// The state is one word except "no permissions (...); see [...]":
		// it runs until the first key:value attribute.
		var state []string
		for ; i < len(f) && !isAttr(f[i]); i++ {
			state = append(state, f[i])
		}
		e.State = strings.Join(state, " ")
		for ; i < len(f); i++ {
			k, v, ok := strings.Cut(f[i], ":")
			if !ok {
				continue
			}
			switch k {
			case "product":
				e.Product = v
			case "model":
				e.Model = v
			case "device":
				e.Device = v
			case "usb":
				e.USB = v
			case "transport_id":
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					e.TransportID = n
				}
			}
		}
		if e.State == "" {
			continue
		}
		out = append(out, e)
	}
	return out
}

func isAttr(field string) bool {
	for _, p := range []string{"usb:", "product:", "model:", "device:", "transport_id:"} {
		if strings.HasPrefix(field, p) {
			return true
		}
	}
	return false
}

// Open connects to the device's transport and opens a device service
// (shell:..., sync:, localabstract:NAME, tcp:N, root:, ...). The returned
// Conn carries the service's raw stream; ctx keeps bounding it until it
// is closed.
func (c *Client) Open(ctx context.Context, serial, service string) (*Conn, error) {
	cn, err := c.dial(ctx)
	if err != nil {
		return nil, err
	}
	treq := "host:transport:" + serial
	if err := cn.send(treq); err != nil {
		cn.Close()
		return nil, err
	}
	if err := cn.status(StageTransport, treq); err != nil {
		cn.Close()
		return nil, err
	}
	if err := cn.send(service); err != nil {
		cn.Close()
		return nil, err
	}
	if err := cn.status(StageService, service); err != nil {
		cn.Close()
		return nil, err
	}
	return cn, nil
}

// Dial opens a device service and returns it as a net.Conn that outlives
// ctx (ctx bounds only the handshake).
func (c *Client) Dial(ctx context.Context, serial, service string) (net.Conn, error) {
	cn, err := c.Open(ctx, serial, service)
	if err != nil {
		return nil, err
	}
	cn.detach()
	_ = cn.nc.SetDeadline(time.Time{})
	return &streamConn{Conn: cn.nc, r: cn.r}, nil
}

// streamConn is a net.Conn whose reads first drain the handshake buffer.
type streamConn struct {
	net.Conn
	r *bufio.Reader
}

func (s *streamConn) Read(p []byte) (int, error) { return s.r.Read(p) }

// Exec opens a device service and reads its whole output (at most max
// bytes; more is ErrTooLong).
func (c *Client) Exec(ctx context.Context, serial, service string, max int64) ([]byte, error) {
	cn, err := c.Open(ctx, serial, service)
	if err != nil {
		return nil, err
	}
	defer cn.Close()
	b, err := io.ReadAll(io.LimitReader(cn.r, max+1))
	if err != nil {
		return b, fmt.Errorf("%s: %w", service, err)
	}
	if int64(len(b)) > max {
		return b[:max], fmt.Errorf("%s: %w", service, ErrTooLong)
	}
	return b, nil
}

// ErrTooLong: a reply exceeded the caller's bound.
var ErrTooLong = errors.New("reply too long")

// Forward is host-serial:SERIAL:forward:LOCAL;REMOTE. It returns the
// host port: the one the server chose for "tcp:0", else LOCAL's own.
// The server answers two OKAYs (connect, then status; B.4), so a bind
// failure after the first one is still seen.
func (c *Client) Forward(ctx context.Context, serial, local, remote string, noRebind bool) (int, error) {
	req := "host-serial:" + serial + ":forward:"
	if noRebind {
		req += "norebind:"
	}
	req += local + ";" + remote
	return c.forwardLike(ctx, nil, req, local, StageHost)
}

// KillForward is host-serial:SERIAL:killforward:LOCAL.
func (c *Client) KillForward(ctx context.Context, serial, local string) error {
	req := "host-serial:" + serial + ":killforward:" + local
	cn, err := c.dial(ctx)
	if err != nil {
		return err
	}
	defer cn.Close()
	if err := cn.send(req); err != nil {
		return err
	}
	if err := cn.status(StageHost, req); err != nil {
		return err
	}
	return cn.status(StageHost, req)
}

// Reverse opens reverse:forward:REMOTE;LOCAL on the device's transport.
// The server answers OKAY once the device bound the stream; the device's
// reverse service then answers OKAY (plus the chosen device port for
// "tcp:0") or FAIL.
func (c *Client) Reverse(ctx context.Context, serial, remote, local string, noRebind bool) (int, error) {
	svc := "reverse:forward:"
	if noRebind {
		svc += "norebind:"
	}
	svc += remote + ";" + local
	cn, err := c.Open(ctx, serial, svc)
	if err != nil {
		return 0, err
	}
	return c.forwardLike(ctx, cn, svc, remote, StageService)
}

// KillReverse opens reverse:killforward:REMOTE on the device's transport.
func (c *Client) KillReverse(ctx context.Context, serial, remote string) error {
	svc := "reverse:killforward:" + remote
	cn, err := c.Open(ctx, serial, svc)
	if err != nil {
		return err
	}
	defer cn.Close()
	return cn.status(StageService, svc)
}

// forwardLike finishes a forward or reverse request: the status words
// and, for "tcp:0", the hex4 decimal port. With cn == nil it dials and
// sends req as a host request first (two OKAYs); with cn it reads the one
// status the device's reverse service sends.
func (c *Client) forwardLike(ctx context.Context, cn *Conn, req, spec string, stage Stage) (int, error) {
	if cn == nil {
		var err error
		if cn, err = c.dial(ctx); err != nil {
			return 0, err
		}
		if err := cn.send(req); err != nil {
			cn.Close()
			return 0, err
		}
		if err := cn.status(stage, req); err != nil {
			cn.Close()
			return 0, err
		}
	}
	defer cn.Close()
	if err := cn.status(stage, req); err != nil {
		return 0, err
	}
	if spec == "tcp:0" {
		b, err := ReadHex4(cn.r)
		if err != nil {
			return 0, fmt.Errorf("read chosen port: %w", err)
		}
		p, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil || p <= 0 || p > 65535 {
			return 0, fmt.Errorf("chosen port %q: %w", b, ErrProtocol)
		}
		return p, nil
	}
	if p, ok := strings.CutPrefix(spec, "tcp:"); ok {
		if n, err := strconv.Atoi(p); err == nil {
			return n, nil
		}
	}
	return 0, nil
}

// Stat is sync STAT (v1) of one path. Mode 0 means "does not exist"
// (lab-reference B.7).
type Stat struct {
	Mode  uint32
	Size  uint32
	MTime uint32
}

// StatPath runs sync: STAT for path, then QUIT.
func (c *Client) StatPath(ctx context.Context, serial, path string) (Stat, error) {
	if len(path) > 1024 {
		return Stat{}, fmt.Errorf("stat: path of %d bytes exceeds 1024", len(path))
	}
	cn, err := c.Open(ctx, serial, "sync:")
	if err != nil {
		return Stat{}, err
	}
	defer cn.Close()
	if err := writeSync(cn.nc, "STAT", []byte(path)); err != nil {
		return Stat{}, err
	}
	var reply [16]byte
	if _, err := io.ReadFull(cn.r, reply[:]); err != nil {
		return Stat{}, fmt.Errorf("stat %s: %w", path, truncated(err))
	}
	if string(reply[:4]) != "STAT" {
		return Stat{}, fmt.Errorf("stat reply %q: %w", reply[:4], ErrProtocol)
	}
	st := Stat{
		Mode:  binary.LittleEndian.Uint32(reply[4:]),
		Size:  binary.LittleEndian.Uint32(reply[8:]),
		MTime: binary.LittleEndian.Uint32(reply[12:]),
	}
	_ = writeSync(cn.nc, "QUIT", nil)
	return st, nil
}

func writeSync(w io.Writer, id string, data []byte) error {
	buf := make([]byte, 8+len(data))
	copy(buf, id)
	binary.LittleEndian.PutUint32(buf[4:], uint32(len(data)))
	copy(buf[8:], data)
	if _, err := w.Write(buf); err != nil {
		return fmt.Errorf("sync %s: %w", id, err)
	}
	return nil
}
