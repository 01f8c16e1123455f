//go:build linux

package adbd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
)

// Limits of what one adb server can make the daemon hold.
const (
	// writeTimeout bounds one message write to the host; a host that
	// stops reading for that long loses the connection.
	writeTimeout = 60 * time.Second
	// maxStreams bounds the open streams of a connection; further OPENs
	// are refused (CLSE), as a busy adbd refuses them.
	maxStreams = 1024
	// maxConns bounds concurrent connections (adb servers).
	maxConns = 64
	// maxReverses bounds the reverse listeners of a connection.
	maxReverses = 128
)

// errStreamClosed is returned by stream reads and writes after either side
// closed the stream.
var errStreamClosed = errors.New("adb stream closed")

// conn is one connection from an adb server: one adb transport.
type conn struct {
	s  *Server
	nc net.Conn
	id int

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // service and reverse goroutines

	wmu sync.Mutex // serialises message writes

	// mu guards the fields that follow.
	mu       sync.Mutex
	online   bool
	maxData  uint32 // max payload towards the host, set by the host's CNXN
	nextID   uint32
	streams  map[uint32]*stream // by our (local) id
	reverses map[string]*reverse
}

func newConn(s *Server, nc net.Conn, id int) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	return &conn{s: s, nc: nc, id: id, ctx: ctx, cancel: cancel,
		maxData: adbwire.MaxPayloadV1, streams: map[uint32]*stream{}, reverses: map[string]*reverse{}}
}

// serve reads messages until the connection ends, then closes every stream
// and waits for the services it started.
func (c *conn) serve() error {
	defer func() {
		c.cancel()
		c.nc.Close()
		c.mu.Lock()
		streams := make([]*stream, 0, len(c.streams))
		for _, st := range c.streams {
			streams = append(streams, st)
		}
		revs := c.reverses
		c.reverses = map[string]*reverse{}
		c.mu.Unlock()
		for _, st := range streams {
			st.remoteClosed()
		}
		for _, r := range revs {
			r.ln.Close()
		}
		c.wg.Wait()
	}()
	// Payloads larger than the buffer are read past it, straight into
	// their own buffers; it only gathers headers and small messages.
	br := bufio.NewReaderSize(c.nc, readBuffer)
	var h [adbwire.HeaderSize]byte
	var scratch []byte // payloads of messages other than WRTE, reused
	for {
		m, n, err := adbwire.ReadHeader(br, &h, adbwire.MaxPayload)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("read message: %w", err)
		}
		if m.Command == adbwire.CmdWRTE {
			if err := c.wrte(br, &m, n); err != nil {
				return fmt.Errorf("read message: %w", err)
			}
			continue
		}
		if uint32(cap(scratch)) < n {
			scratch = make([]byte, n)
		}
		m.Data = scratch[:n]
		if err := adbwire.ReadPayload(br, m.Command, m.Data); err != nil {
			return fmt.Errorf("read message: %w", err)
		}
		if err := c.handle(&m); err != nil {
			return err
		}
	}
}

// readBuffer is the size of a connection's read buffer.
const readBuffer = 64 << 10

// wrte takes a WRTE off the wire. The stream's queue slot is taken, and
// the WRTE acknowledged if another one fits, as soon as the header is
// in: the host then sends its next WRTE while this payload is still being
// read. The payload goes into a buffer of its own, which the stream's
// reader gives back (payloads).
func (c *conn) wrte(br *bufio.Reader, m *adbwire.Message, n uint32) error {
	c.mu.Lock()
	online := c.online
	st := c.streams[m.Arg1]
	c.mu.Unlock()
	if !online || st == nil || st.remoteID() != m.Arg0 {
		_, err := br.Discard(int(n))
		if err != nil {
			return fmt.Errorf("read WRTE payload: %w", noEOF(err))
		}
		return nil
	}
	ok := st.reserve()
	b := getPayload(n)
	if err := adbwire.ReadPayload(br, m.Command, b); err != nil {
		putPayload(b)
		return err
	}
	if !ok {
		// A second WRTE before our OKAY breaks flow control.
		putPayload(b)
		c.s.log.Debug("WRTE before OKAY: closing the stream", "conn", c.id, "stream", st.local)
		st.Close()
		return nil
	}
	st.put(b)
	return nil
}

// noEOF turns a clean EOF inside a message into io.ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// handle acts on a message other than WRTE (see wrte); m.Data is reused
// once it returns.
func (c *conn) handle(m *adbwire.Message) error {
	c.mu.Lock()
	online := c.online
	c.mu.Unlock()
	if !online {
		// Everything before the host's CNXN is ignored (B.9 #2); AUTH and
		// STLS are never started by this device.
		if m.Command != adbwire.CmdCNXN {
			return nil
		}
		c.mu.Lock()
		c.online = true
		c.maxData = min(m.Arg1, adbwire.MaxPayload)
		if c.maxData < adbwire.MaxPayloadV1 {
			c.maxData = adbwire.MaxPayloadV1
		}
		c.mu.Unlock()
		return c.send(adbwire.CmdCNXN, adbwire.Version, adbwire.MaxPayload, []byte(c.s.cfg.Banner))
	}
	switch m.Command {
	case adbwire.CmdCNXN:
		// Exactly one CNXN per connection: a second one would make the host
		// drop every stream.
		c.s.log.Debug("ignoring repeated CNXN", "conn", c.id)
	case adbwire.CmdOPEN:
		if m.Arg0 == 0 {
			return nil
		}
		c.open(m.Arg0, adbwire.OpenDestination(m.Data))
	case adbwire.CmdOKAY:
		if st := c.lookup(m.Arg1); st != nil {
			st.okay(m.Arg0)
		}
	case adbwire.CmdCLSE:
		if st := c.lookup(m.Arg1); st != nil && (st.remoteID() == m.Arg0 || st.remoteID() == 0) {
			st.remoteClosed()
		}
	}
	return nil
}

func (c *conn) lookup(id uint32) *stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[id]
}

// send writes one message.
func (c *conn) send(cmd adbwire.Command, a0, a1 uint32, data []byte) error {
	m := adbwire.Message{Command: cmd, Arg0: a0, Arg1: a1, Data: data}
	h := m.Header()
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	bufs := net.Buffers{h[:], data}
	if _, err := bufs.WriteTo(c.nc); err != nil {
		c.nc.Close()
		return fmt.Errorf("write %s: %w", cmd, err)
	}
	return nil
}

// newStream registers a stream with a fresh local id; nil once the
// connection is closing.
func (c *conn) newStream(remote uint32) *stream {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctx.Err() != nil {
		return nil
	}
	for {
		c.nextID++
		if c.nextID == 0 {
			c.nextID = 1
		}
		if _, busy := c.streams[c.nextID]; !busy {
			break
		}
	}
	st := &stream{c: c, local: c.nextID, remote: remote, maxData: c.maxData,
		in: make(chan []byte, inQueue), ack: make(chan struct{}, 1), bound: make(chan struct{}), done: make(chan struct{})}
	st.rd.take = st.take
	if remote != 0 {
		close(st.bound)
	}
	c.streams[st.local] = st
	return st
}

func (c *conn) forget(st *stream) {
	c.mu.Lock()
	if c.streams[st.local] == st {
		delete(c.streams, st.local)
	}
	c.mu.Unlock()
}

// open answers a host OPEN: the service is set up first, so that a
// service that can not start (unknown name, refused connection) is
// rejected with CLSE(0, id) instead of being accepted and closed. Setup
// (a socket dial) may block, so it runs off the reading goroutine: the
// host sends nothing on a stream before our OKAY.
func (c *conn) open(remote uint32, dest string) {
	c.mu.Lock()
	full := len(c.streams) >= maxStreams
	c.mu.Unlock()
	if full {
		c.s.log.Debug("open refused: too many streams", "conn", c.id)
		c.send(adbwire.CmdCLSE, 0, remote, nil)
		return
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		run, cleanup, err := c.s.service(c, dest)
		if err != nil {
			c.s.log.Debug("open refused", "conn", c.id, "service", serviceKind(dest), "err", err)
			c.send(adbwire.CmdCLSE, 0, remote, nil)
			return
		}
		st := c.newStream(remote)
		if st == nil {
			cleanup()
			return
		}
		defer st.Close()
		if err := c.send(adbwire.CmdOKAY, st.local, remote, nil); err != nil {
			cleanup()
			return
		}
		run(c.ctx, st)
	}()
}

// openToHost originates an OPEN for a configured reverse forward and waits
// for the host to accept it.
func (c *conn) openToHost(ctx context.Context, dest string) (*stream, error) {
	st := c.newStream(0)
	if st == nil {
		return nil, fmt.Errorf("open %s on host: connection closed", serviceKind(dest))
	}
	if err := c.send(adbwire.CmdOPEN, st.local, 0, append([]byte(dest), 0)); err != nil {
		c.forget(st)
		return nil, err
	}
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-st.bound:
		return st, nil
	case <-st.done:
		return nil, fmt.Errorf("open %s on host: refused", serviceKind(dest))
	case <-t.C:
	case <-ctx.Done():
	}
	st.Close()
	return nil, fmt.Errorf("open %s on host: no answer", serviceKind(dest))
}

// inQueue is how many WRTE payloads a stream holds for its service. A
// WRTE is acknowledged as soon as its header arrives if the queue has room
// for the next one, so the host sends the next WRTE while this one and
// the service's work go on (as adbd acknowledges queued data); when the
// queue is full the OKAY waits until the service takes a payload. A
// stream holds at most inQueue+1 payloads of at most 1 MiB: inQueue
// queued, one being read by the service. Four lets a push ride out a
// service that waits some 10 ms for a CPU on a loaded machine; with two,
// the host stalls behind it.
const inQueue = 4

// stream is one adb stream, used by a service as an io.ReadWriteCloser.
// Writes send one WRTE at a time and wait for the host's OKAY.
type stream struct {
	c       *conn
	local   uint32
	maxData uint32

	rmu    sync.Mutex    // serialises the service's reads (Read, WriteTo)
	rd     payloadReader // used under rmu
	in     chan []byte   // WRTE payloads not yet taken by the service
	wmu    sync.Mutex    // serialises Write
	ack    chan struct{} // the host's OKAY for our WRTE
	bound  chan struct{} // closed once the host's id is known
	done   chan struct{} // closed when the stream is closed by either side
	closed sync.Once

	// idmu guards the fields that follow.
	idmu       sync.Mutex
	remote     uint32
	held       int  // payloads accepted (queued or being read off the wire), not yet taken
	pendingAck bool // a WRTE filled the queue: its OKAY waits for a take
}

func (st *stream) remoteID() uint32 {
	st.idmu.Lock()
	defer st.idmu.Unlock()
	return st.remote
}

func (st *stream) okay(remote uint32) {
	st.idmu.Lock()
	if st.remote == 0 {
		st.remote = remote
		st.idmu.Unlock()
		close(st.bound)
		return
	}
	st.idmu.Unlock()
	select {
	case st.ack <- struct{}{}:
	default:
	}
}

// reserve accounts for a WRTE whose header has arrived, before its
// payload is read: it takes a queue slot and sends the OKAY at once if
// there is a slot for the host's next WRTE too. It reports false when the
// host broke flow control (a WRTE while the previous one's OKAY is held
// back). A closed stream accepts and drops everything.
func (st *stream) reserve() bool {
	select {
	case <-st.done:
		return true
	default:
	}
	st.idmu.Lock()
	if st.pendingAck || st.held >= inQueue {
		st.idmu.Unlock()
		return false
	}
	st.held++
	ackNow := st.held < inQueue
	st.pendingAck = !ackNow
	remote := st.remote
	st.idmu.Unlock()
	if ackNow {
		st.c.send(adbwire.CmdOKAY, st.local, remote, nil)
	}
	return true
}

// put queues the payload of a reserved WRTE.
func (st *stream) put(b []byte) {
	select {
	case <-st.done:
		putPayload(b)
		return
	default:
	}
	select {
	case st.in <- b:
	default:
		// Unreachable while reserve keeps held <= cap(in): never block
		// the connection's reader on one stream.
		putPayload(b)
		st.Close()
	}
}

// take returns the next payload, waiting for it; io.EOF once the stream
// is closed and every delivered payload has been taken. The caller owns
// the payload (putPayload when done).
func (st *stream) take() ([]byte, error) {
	var b []byte
	select {
	case b = <-st.in:
	default:
		select {
		case b = <-st.in:
		case <-st.done:
			select {
			case b = <-st.in:
			default:
				return nil, io.EOF
			}
		}
	}
	st.taken()
	return b, nil
}

// Read implements io.Reader. It returns io.EOF once the stream is closed
// and every delivered byte has been read.
func (st *stream) Read(p []byte) (int, error) {
	st.rmu.Lock()
	defer st.rmu.Unlock()
	return st.rd.Read(p)
}

// WriteTo implements io.WriterTo, so that io.Copy from a stream (into a
// forwarded socket) writes the payloads themselves, without a copy.
func (st *stream) WriteTo(w io.Writer) (int64, error) {
	st.rmu.Lock()
	defer st.rmu.Unlock()
	return st.rd.WriteTo(w)
}

// taken runs after the service took a payload off the queue: its slot is
// free, and a WRTE whose OKAY was held back is acknowledged now if there
// is room for the next one.
func (st *stream) taken() {
	st.idmu.Lock()
	st.held--
	ack := st.pendingAck && st.held < inQueue
	if ack {
		st.pendingAck = false
	}
	remote := st.remote
	st.idmu.Unlock()
	if ack {
		select {
		case <-st.done:
		default:
			st.c.send(adbwire.CmdOKAY, st.local, remote, nil)
		}
	}
}

// Write implements io.Writer.
func (st *stream) Write(p []byte) (int, error) {
	st.wmu.Lock()
	defer st.wmu.Unlock()
	select {
	case <-st.bound:
	case <-st.done:
		return 0, errStreamClosed
	}
	n := 0
	for n < len(p) {
		chunk := p[n:]
		if uint32(len(chunk)) > st.maxData {
			chunk = chunk[:st.maxData]
		}
		select {
		case <-st.done:
			return n, errStreamClosed
		default:
		}
		if err := st.c.send(adbwire.CmdWRTE, st.local, st.remoteID(), chunk); err != nil {
			return n, err
		}
		select {
		case <-st.ack:
		case <-st.done:
			return n, errStreamClosed
		}
		n += len(chunk)
	}
	return n, nil
}

// Close closes the stream from our side (CLSE). Idempotent.
func (st *stream) Close() error {
	st.closed.Do(func() {
		close(st.done)
		st.c.forget(st)
		if r := st.remoteID(); r != 0 {
			st.c.send(adbwire.CmdCLSE, st.local, r, nil)
		}
	})
	return nil
}

// remoteClosed handles the host's CLSE (or the connection's end): no CLSE
// is sent back.
func (st *stream) remoteClosed() {
	st.closed.Do(func() {
		close(st.done)
		st.c.forget(st)
	})
}

// Done is closed when the stream is closed by either side.
func (st *stream) Done() <-chan struct{} { return st.done }

// serviceKind is the part of a service name that is safe to log: shell
// commands and paths may carry secrets.
func serviceKind(dest string) string {
	for i, c := range dest {
		if c == ':' || c == ',' {
			return dest[:i]
		}
	}
	return dest
}

// Config configures a Server.
type Config struct {
	// Banner is the identity sent in CNXN (adbwire.Banner.String()).
	Banner string
	Logger *slog.Logger
	// Hooks is the device the daemon runs in.
	Hooks Hooks
}

// Server serves adb connections.
type Server struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	conns  map[*conn]struct{}
	nextID int
	closed bool
	wg     sync.WaitGroup
}

// NewServer returns a server; Serve or ServeConn start it.
func NewServer(cfg *Config) *Server {
	s := &Server{cfg: *cfg, log: cfg.Logger, conns: map[*conn]struct{}{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s
}

// Serve accepts connections until ln is closed or Close is called.
func (s *Server) Serve(ln net.Listener) error {
	for {
		nc, err := ln.Accept()
		if err != nil {
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		if tc, ok := nc.(*net.TCPConn); ok {
			tc.SetNoDelay(true)
		}
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.ServeConn(nc)
		}()
	}
}

// ServeConn serves one connection until it ends.
func (s *Server) ServeConn(nc net.Conn) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		nc.Close()
		return net.ErrClosed
	}
	if len(s.conns) >= maxConns {
		s.mu.Unlock()
		nc.Close()
		return errors.New("too many adb connections")
	}
	s.nextID++
	c := newConn(s, nc, s.nextID)
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	err := c.serve()
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	if err != nil {
		s.log.Debug("adb connection ended", "conn", c.id, "err", err)
	}
	return err
}

// DropAll closes every connection, as adbd does when it restarts: the adb
// server sees the device go away and reconnects.
func (s *Server) DropAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		c.nc.Close()
	}
}

// Close drops every connection and waits for them. The listener given to
// Serve is the caller's to close.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.DropAll()
	s.wg.Wait()
}
