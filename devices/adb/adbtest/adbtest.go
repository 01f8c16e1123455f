// Package adbtest is a fake adb server for tests: it speaks the
// smart-socket protocol (lab-reference B.4) to clients such as gadb and
// devices/adb, and answers device services from in-memory fake devices.
//
// It is for unit tests of code that talks to an adb server. It is not a
// replacement for a real adb server with a virtual device, which the
// integration tests use.
package adbtest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Device is a fake device. Set its fields before adding it to a Server;
// afterwards change it only through Server methods.
type Device struct {
	Serial  string
	State   string // "device" when empty
	Product string
	Model   string
	Name    string // ro.product.device
	// Features are the adb features the device advertises ("shell_v2").
	Features []string
	// Shell answers shell commands (v1 and v2). Nil: every command exits
	// 127 with "sh: not found".
	Shell func(cmd string) (stdout, stderr string, code int)
	// Service answers any other device service (localabstract:NAME,
	// tcp:N, root:, reboot:, exec:...) on the raw stream. Returning false
	// refuses the service before it is bound (the client sees FAIL).
	// The handler owns conn only until it returns.
	Service func(service string, conn net.Conn) bool

	mu       sync.Mutex
	files    map[string]*File
	reverses map[string]string
}

// File is a file in a fake device's sync namespace.
type File struct {
	Data  []byte
	Mode  uint32 // full st_mode; 0100644 for a regular file
	MTime time.Time
}

// Server is a fake adb server listening on 127.0.0.1.
type Server struct {
	ln net.Listener
	wg sync.WaitGroup

	// OnConnect answers host:connect:ADDR; nil answers "connected to ADDR".
	OnConnect func(addr string) string

	mu       sync.Mutex
	devices  map[string]*Device
	forwards map[string]*forward // by local spec
	requests []string
	conns    map[net.Conn]struct{}
	closed   bool
}

type forward struct {
	serial, local, remote string
	ln                    net.Listener
}

// NewServer starts a fake server. Close it when done.
func NewServer() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		ln:       ln,
		devices:  map[string]*Device{},
		forwards: map[string]*forward{},
		conns:    map[net.Conn]struct{}{},
	}
	s.wg.Add(1)
	go s.acceptLoop()
	return s, nil
}

// Addr is "127.0.0.1:PORT".
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, closes every connection and forward, and waits
// for its goroutines.
func (s *Server) Close() error {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		c.Close()
	}
	for _, f := range s.forwards {
		f.ln.Close()
	}
	s.mu.Unlock()
	err := s.ln.Close()
	s.wg.Wait()
	return err
}

// AddDevice adds (or replaces) a device.
func (s *Server) AddDevice(d *Device) {
	if d.State == "" {
		d.State = "device"
	}
	d.mu.Lock()
	if d.files == nil {
		d.files = map[string]*File{}
	}
	if d.reverses == nil {
		d.reverses = map[string]string{}
	}
	d.mu.Unlock()
	s.mu.Lock()
	s.devices[d.Serial] = d
	s.mu.Unlock()
}

// RemoveDevice removes a device.
func (s *Server) RemoveDevice(serial string) {
	s.mu.Lock()
	delete(s.devices, serial)
	s.mu.Unlock()
}

// SetState changes a device's transport state ("offline", ...).
func (s *Server) SetState(serial, state string) {
	s.mu.Lock()
	if d := s.devices[serial]; d != nil {
		d.State = state
	}
	s.mu.Unlock()
}

// Requests returns every request received so far, in order (host requests
// and device services).
func (s *Server) Requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.requests...)
}

// WriteFile puts a file on a device.
func (d *Device) WriteFile(path string, f File) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.files == nil {
		d.files = map[string]*File{}
	}
	c := f
	c.Data = append([]byte(nil), f.Data...)
	d.files[path] = &c
}

// ReadFile returns a copy of a device file.
func (d *Device) ReadFile(path string) (File, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	f, ok := d.files[path]
	if !ok {
		return File{}, false
	}
	c := *f
	c.Data = append([]byte(nil), f.Data...)
	return c, true
}

// Reverses returns the device's reverse forwards (remote → local).
func (d *Device) Reverses() map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	m := map[string]string{}
	for k, v := range d.reverses {
		m[k] = v
	}
	return m
}

func (s *Server) acceptLoop() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer func() {
				s.mu.Lock()
				delete(s.conns, c)
				s.mu.Unlock()
				c.Close()
			}()
			s.serve(c)
		}()
	}
}

func readRequest(r *bufio.Reader) (string, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return "", err
	}
	n, err := strconv.ParseUint(string(hdr[:]), 16, 16)
	if err != nil {
		return "", err
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return "", err
	}
	return string(b), nil
}

func okay(w io.Writer)             { io.WriteString(w, "OKAY") }
func hex4(w io.Writer, s string)   { fmt.Fprintf(w, "%04x%s", len(s), s) }
func fail(w io.Writer, msg string) { io.WriteString(w, "FAIL"); hex4(w, msg) }

func (s *Server) record(req string) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	s.mu.Unlock()
}

func (s *Server) device(serial string) (*Device, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.devices[serial]
	if d == nil {
		return nil, ""
	}
	return d, d.State
}

func (s *Server) serve(c net.Conn) {
	r := bufio.NewReader(c)
	req, err := readRequest(r)
	if err != nil {
		return
	}
	s.record(req)
	switch {
	case req == "host:version":
		okay(c)
		hex4(c, "0029")
	case req == "host:devices-l" || req == "host:devices":
		okay(c)
		hex4(c, s.listing(req == "host:devices-l"))
	case strings.HasPrefix(req, "host:connect:"):
		addr := strings.TrimPrefix(req, "host:connect:")
		text := "connected to " + addr
		if s.OnConnect != nil {
			text = s.OnConnect(addr)
		}
		okay(c)
		hex4(c, text)
	case strings.HasPrefix(req, "host:disconnect:"):
		addr := strings.TrimPrefix(req, "host:disconnect:")
		okay(c)
		hex4(c, "disconnected "+addr)
	case strings.HasPrefix(req, "host-serial:"):
		s.hostSerial(c, strings.TrimPrefix(req, "host-serial:"))
	case strings.HasPrefix(req, "host:transport:"):
		serial := strings.TrimPrefix(req, "host:transport:")
		d, state := s.device(serial)
		switch {
		case d == nil:
			fail(c, "device '"+serial+"' not found")
			return
		case state != "device":
			fail(c, "device "+state)
			return
		}
		okay(c)
		svc, err := readRequest(r)
		if err != nil {
			return
		}
		s.record(svc)
		s.deviceService(d, c, r, svc)
	default:
		fail(c, "unknown host service")
	}
}

func (s *Server) listing(long bool) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	serials := make([]string, 0, len(s.devices))
	for k := range s.devices {
		serials = append(serials, k)
	}
	sort.Strings(serials)
	var b strings.Builder
	for i, k := range serials {
		d := s.devices[k]
		if !long {
			fmt.Fprintf(&b, "%s\t%s\n", d.Serial, d.State)
			continue
		}
		fmt.Fprintf(&b, "%-22s %s", d.Serial, d.State)
		if d.State == "device" {
			for _, kv := range [][2]string{{"product", d.Product}, {"model", d.Model}, {"device", d.Name}} {
				if kv[1] != "" {
					fmt.Fprintf(&b, " %s:%s", kv[0], kv[1])
				}
			}
		}
		fmt.Fprintf(&b, " transport_id:%d\n", i+1)
	}
	return b.String()
}

// splitSerial splits "SERIAL:CMD" where SERIAL may be "host:port".
func splitSerial(rest string) (serial, cmd string) {
	first, after, _ := strings.Cut(rest, ":")
	if p, tail, ok := strings.Cut(after, ":"); ok && p != "" && strings.Trim(p, "0123456789") == "" {
		return first + ":" + p, tail
	}
	return first, after
}

func (s *Server) hostSerial(c net.Conn, rest string) {
	serial, cmd := splitSerial(rest)
	d, state := s.device(serial)
	if d == nil {
		fail(c, "device '"+serial+"' not found")
		return
	}
	switch {
	case cmd == "get-state":
		okay(c)
		hex4(c, state)
	case cmd == "features":
		okay(c)
		hex4(c, strings.Join(d.Features, ","))
	case cmd == "reconnect":
		okay(c)
		hex4(c, "reconnecting "+serial+" ["+state+"]\n")
	case strings.HasPrefix(cmd, "forward:"):
		if state != "device" {
			fail(c, "device "+state)
			return
		}
		s.forward(c, d, strings.TrimPrefix(cmd, "forward:"))
	case strings.HasPrefix(cmd, "killforward:"):
		local := strings.TrimPrefix(cmd, "killforward:")
		s.mu.Lock()
		f := s.forwards[local]
		delete(s.forwards, local)
		s.mu.Unlock()
		if f == nil {
			fail(c, "listener '"+local+"' not found")
			return
		}
		f.ln.Close()
		okay(c)
		okay(c)
	default:
		fail(c, "unknown host service")
	}
}

func (s *Server) forward(c net.Conn, d *Device, spec string) {
	spec = strings.TrimPrefix(spec, "norebind:")
	local, remote, ok := strings.Cut(spec, ";")
	if !ok || !strings.HasPrefix(local, "tcp:") {
		fail(c, "bad forward")
		return
	}
	okay(c)
	ln, err := net.Listen("tcp", "127.0.0.1:"+strings.TrimPrefix(local, "tcp:"))
	if err != nil {
		fail(c, "cannot bind listener: "+err.Error())
		return
	}
	port := ln.Addr().(*net.TCPAddr).Port
	key := fmt.Sprintf("tcp:%d", port)
	s.mu.Lock()
	s.forwards[key] = &forward{serial: d.Serial, local: key, remote: remote, ln: ln}
	s.mu.Unlock()
	okay(c)
	if local == "tcp:0" {
		hex4(c, strconv.Itoa(port))
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			fc, err := ln.Accept()
			if err != nil {
				return
			}
			s.wg.Add(1)
			go func() {
				defer s.wg.Done()
				defer fc.Close()
				if d.Service != nil {
					d.Service(remote, fc)
				}
			}()
		}
	}()
}

func (s *Server) deviceService(d *Device, c net.Conn, r *bufio.Reader, svc string) {
	switch {
	case strings.HasPrefix(svc, "shell,v2"), strings.HasPrefix(svc, "shell:"):
		_, cmd, _ := strings.Cut(svc, ":")
		stdout, stderr, code := "", "sh: not found", 127
		if d.Shell != nil {
			stdout, stderr, code = d.Shell(cmd)
		}
		okay(c)
		if strings.HasPrefix(svc, "shell:") {
			io.WriteString(c, stdout+stderr)
			return
		}
		var b bytes.Buffer
		for _, p := range []struct {
			id   byte
			data string
		}{{1, stdout}, {2, stderr}} {
			if p.data == "" {
				continue
			}
			b.WriteByte(p.id)
			binary.Write(&b, binary.LittleEndian, uint32(len(p.data)))
			b.WriteString(p.data)
		}
		b.Write([]byte{3, 1, 0, 0, 0, byte(code)})
		c.Write(b.Bytes())
	case svc == "sync:":
		okay(c)
		d.sync(c, r)
	case strings.HasPrefix(svc, "reverse:forward:"):
		spec := strings.TrimPrefix(strings.TrimPrefix(svc, "reverse:forward:"), "norebind:")
		remote, local, _ := strings.Cut(spec, ";")
		okay(c)
		chosen := remote == "tcp:0"
		d.mu.Lock()
		if chosen {
			remote = "tcp:" + strconv.Itoa(20000+len(d.reverses))
		}
		d.reverses[remote] = local
		d.mu.Unlock()
		okay(c)
		if chosen {
			hex4(c, strings.TrimPrefix(remote, "tcp:"))
		}
	case strings.HasPrefix(svc, "reverse:killforward:"):
		remote := strings.TrimPrefix(svc, "reverse:killforward:")
		okay(c)
		d.mu.Lock()
		_, ok := d.reverses[remote]
		delete(d.reverses, remote)
		d.mu.Unlock()
		if !ok {
			fail(c, "listener '"+remote+"' not found")
			return
		}
		okay(c)
	default:
		if d.Service == nil {
			fail(c, "closed")
			return
		}
		// The handler decides before the stream is bound.
		bound := make(chan bool, 1)
		ok := d.Service(svc, &lateOkay{Conn: c, r: r, bound: bound})
		if !ok {
			select {
			case <-bound:
			default:
				fail(c, "closed")
			}
		}
	}
}

// lateOkay sends OKAY before the handler's first write or read, so that a
// handler that returns false without touching the stream is a refusal.
type lateOkay struct {
	net.Conn
	r     *bufio.Reader
	once  sync.Once
	bound chan bool
}

func (l *lateOkay) bind() {
	l.once.Do(func() {
		okay(l.Conn)
		l.bound <- true
	})
}

func (l *lateOkay) Read(p []byte) (int, error)  { l.bind(); return l.r.Read(p) }
func (l *lateOkay) Write(p []byte) (int, error) { l.bind(); return l.Conn.Write(p) }

func (d *Device) sync(c net.Conn, r *bufio.Reader) {
	var hdr [8]byte
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return
		}
		id := string(hdr[:4])
		n := binary.LittleEndian.Uint32(hdr[4:])
		if n > 1<<20 {
			return
		}
		arg := make([]byte, n)
		if _, err := io.ReadFull(r, arg); err != nil {
			return
		}
		switch id {
		case "STAT":
			var out [16]byte
			copy(out[:], "STAT")
			if f, ok := d.ReadFile(string(arg)); ok {
				binary.LittleEndian.PutUint32(out[4:], f.Mode)
				binary.LittleEndian.PutUint32(out[8:], uint32(len(f.Data)))
				binary.LittleEndian.PutUint32(out[12:], uint32(f.MTime.Unix()))
			}
			c.Write(out[:])
		case "SEND":
			spec := string(arg)
			i := strings.LastIndexByte(spec, ',')
			if i < 0 {
				syncFail(c, "bad SEND")
				return
			}
			mode, _ := strconv.ParseUint(spec[i+1:], 0, 32)
			var data bytes.Buffer
			var mtime uint32
			for {
				if _, err := io.ReadFull(r, hdr[:]); err != nil {
					return
				}
				m := binary.LittleEndian.Uint32(hdr[4:])
				if string(hdr[:4]) == "DONE" {
					mtime = m
					break
				}
				if string(hdr[:4]) != "DATA" || m > 64<<10 {
					syncFail(c, "bad DATA")
					return
				}
				if _, err := io.CopyN(&data, r, int64(m)); err != nil {
					return
				}
			}
			if mode&0170000 == 0 {
				mode |= 0100000
			}
			d.WriteFile(spec[:i], File{Data: data.Bytes(), Mode: uint32(mode), MTime: time.Unix(int64(mtime), 0)})
			c.Write([]byte("OKAY\x00\x00\x00\x00"))
		case "RECV":
			f, ok := d.ReadFile(string(arg))
			if !ok {
				syncFail(c, "open failed: No such file or directory")
				continue
			}
			for off := 0; off < len(f.Data); off += 64 << 10 {
				end := min(off+64<<10, len(f.Data))
				var h [8]byte
				copy(h[:], "DATA")
				binary.LittleEndian.PutUint32(h[4:], uint32(end-off))
				c.Write(h[:])
				c.Write(f.Data[off:end])
			}
			c.Write([]byte("DONE\x00\x00\x00\x00"))
		case "QUIT":
			return
		default:
			syncFail(c, "unknown sync request "+id)
			return
		}
	}
}

func syncFail(w io.Writer, msg string) {
	var h [8]byte
	copy(h[:], "FAIL")
	binary.LittleEndian.PutUint32(h[4:], uint32(len(msg)))
	w.Write(h[:])
	io.WriteString(w, msg)
}
