//go:build linux

package adbd

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
	"github.com/agentoslab/agentlab/devices/virtual/internal/proc"
	"github.com/agentoslab/agentlab/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

// testdataDir is absolute: some tests change the working directory.
var testdataDir, _ = filepath.Abs("testdata")

const testBanner = "device::ro.product.name=vdev_x86_64;ro.product.model=Virtual Device;ro.product.device=vdev;features=shell_v2,stat_v2,ls_v2,fixed_push_mkdir"

// newTestServer serves one end of a pipe; the other end is the "host".
func newTestServer(t testing.TB, uid int) net.Conn {
	t.Helper()
	r := proc.NewReaper(false)
	s := NewServer(&Config{Banner: testBanner, Hooks: Hooks{
		Reaper: r,
		Shell:  "/bin/sh",
		Env:    func(int, string) []string { return []string{"PATH=/usr/bin:/bin", "LC_ALL=C"} },
		UID:    func() int { return uid },
		Root:   func(bool) (string, bool) { return "adbd cannot run as root in production builds\n", false },
		Reboot: func(string) {},
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	host, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	dev, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.ServeConn(dev)
	}()
	t.Cleanup(func() {
		host.Close()
		<-done
		s.Close()
		r.Close()
	})
	return host
}

// host drives the host side of a connection and records every packet.
type host struct {
	t   testing.TB
	nc  net.Conn
	log strings.Builder
}

func (h *host) send(cmd adbwire.Command, a0, a1 uint32, data string) {
	h.t.Helper()
	m := adbwire.Message{Command: cmd, Arg0: a0, Arg1: a1, Data: []byte(data)}
	fmt.Fprintf(&h.log, "> %s\n", format(&m))
	h.nc.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if err := adbwire.WriteMessage(h.nc, &m); err != nil {
		h.t.Fatalf("send %s: %v", cmd, err)
	}
}

func (h *host) recv() adbwire.Message {
	h.t.Helper()
	h.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	m, err := adbwire.ReadMessage(h.nc, adbwire.MaxPayload)
	if err != nil {
		h.t.Fatalf("recv: %v", err)
	}
	fmt.Fprintf(&h.log, "< %s\n", format(&m))
	return m
}

// recvSet reads n messages that the device sends from different
// goroutines (the OKAY for our WRTE, and the service's answer to it), whose
// order on the wire is not defined, and records them OKAYs first.
func (h *host) recvSet(n int) []adbwire.Message {
	h.t.Helper()
	ms := make([]adbwire.Message, 0, n)
	for range n {
		h.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		m, err := adbwire.ReadMessage(h.nc, adbwire.MaxPayload)
		if err != nil {
			h.t.Fatalf("recv: %v", err)
		}
		ms = append(ms, m)
	}
	sort.SliceStable(ms, func(i, j int) bool {
		return ms[i].Command == adbwire.CmdOKAY && ms[j].Command != adbwire.CmdOKAY
	})
	for i := range ms {
		fmt.Fprintf(&h.log, "< %s\n", format(&ms[i]))
	}
	return ms
}

// drain acknowledges WRTEs on a stream until the device closes it and
// returns what it wrote.
func (h *host) drain(local uint32) []byte {
	h.t.Helper()
	var out []byte
	for {
		m := h.recv()
		switch m.Command {
		case adbwire.CmdWRTE:
			out = append(out, m.Data...)
			h.send(adbwire.CmdOKAY, local, m.Arg0, "")
		case adbwire.CmdCLSE:
			return out
		case adbwire.CmdOKAY:
			// The device acknowledging one of our WRTEs.
		default:
			h.t.Fatalf("unexpected %s while draining", m.Command)
		}
	}
}

func format(m *adbwire.Message) string {
	return fmt.Sprintf("%s %#x %#x %s", m.Command, m.Arg0, m.Arg1, strconv.Quote(string(m.Data)))
}

// TestTranscriptShell pins the host<->device packets of a connection: the
// device answers the host's CNXN exactly once (never first, never twice),
// binds OPENs with OKAY, sends one WRTE at a time and waits for OKAY,
// frames shell v2 output and exit status, ends streams with CLSE, and
// rejects unknown services with CLSE(0, id).
func TestTranscriptShell(t *testing.T) {
	testenv.NeedRoot(t)
	t.Parallel()
	h := &host{t: t, nc: newTestServer(t, 2000)}
	h.send(adbwire.CmdAUTH, 1, 0, "ignored before CNXN")
	h.send(adbwire.CmdCNXN, adbwire.Version, adbwire.MaxPayload, "host::features=shell_v2,cmd,stat_v2,ls_v2")
	if m := h.recv(); m.Command != adbwire.CmdCNXN || string(m.Data) != testBanner {
		t.Fatalf("first packet %s %q", m.Command, m.Data)
	}
	h.send(adbwire.CmdOPEN, 7, 0, "shell,v2,TERM=xterm,raw:echo hello $(id -u); exit 3\x00")
	if m := h.recv(); m.Command != adbwire.CmdOKAY || m.Arg1 != 7 {
		t.Fatalf("open answer %s", format(&m))
	}
	out := h.drain(7)
	if !bytes.HasSuffix(out, []byte{adbwire.ShellExit, 1, 0, 0, 0, 3}) {
		t.Fatalf("no exit 3 packet at the end: %q", out)
	}
	h.send(adbwire.CmdOPEN, 8, 0, "bogus:\x00")
	if m := h.recv(); m.Command != adbwire.CmdCLSE || m.Arg0 != 0 || m.Arg1 != 8 {
		t.Fatalf("unknown service answer %s", format(&m))
	}
	h.send(adbwire.CmdWRTE, 99, 42, "to an unknown stream")
	h.send(adbwire.CmdCNXN, adbwire.Version, adbwire.MaxPayload, "host::features=shell_v2")
	h.send(adbwire.CmdOPEN, 9, 0, "shell:echo v1 $((6*7))\x00")
	if m := h.recv(); m.Command != adbwire.CmdOKAY || m.Arg1 != 9 {
		t.Fatalf("open answer %s", format(&m))
	}
	if out := h.drain(9); string(out) != "v1 42\n" {
		t.Fatalf("shell v1 output %q", out)
	}
	golden(t, "transcript_shell.txt", h.log.String())
}

const shellHeader = "# Host<->device packets of one connection (> host to device, < device to host).\n" +
	"# Pins: one CNXN answer, only after the host's; OKAY binds OPEN; one WRTE in flight;\n" +
	"# shell v2 stdout+exit packets then CLSE; CLSE(0,id) for unknown services;\n" +
	"# unknown stream ids and a repeated CNXN ignored. Regenerate with -update.\n"

func golden(t *testing.T, name, got string) {
	t.Helper()
	goldenFile(t, name, shellHeader, got)
}

// goldenFile compares got with testdata/name (after its prose header),
// or rewrites the file with -update.
func goldenFile(t *testing.T, name, header, got string) {
	t.Helper()
	path := filepath.Join(testdataDir, name)
	if *update {
		if err := os.WriteFile(path, []byte(header+got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if w := strings.TrimPrefix(string(want), header); w != got {
		t.Errorf("transcript differs from %s (run with -update after checking):\n--- got\n%s--- want\n%s", path, got, w)
	}
}

func TestShellStdinAndExit(t *testing.T) {
	testenv.NeedRoot(t)
	t.Parallel()
	h := &host{t: t, nc: newTestServer(t, 2000)}
	h.send(adbwire.CmdCNXN, adbwire.Version, adbwire.MaxPayload, "host::")
	h.recv()
	h.send(adbwire.CmdOPEN, 1, 0, "shell,v2,raw:tr a-z A-Z; exit 5\x00")
	h.recv()
	var in []byte
	in = adbwire.AppendShellPacket(in, adbwire.ShellStdin, []byte("abc\n"))
	in = adbwire.AppendShellPacket(in, adbwire.ShellCloseStdin, nil)
	// Split the packets across WRTEs mid-header: framing must not care.
	h.send(adbwire.CmdWRTE, 1, 1, string(in[:3]))
	if m := h.recv(); m.Command != adbwire.CmdOKAY {
		t.Fatalf("WRTE not acknowledged: %s", format(&m))
	}
	h.send(adbwire.CmdWRTE, 1, 1, string(in[3:]))
	out := h.drain(1)
	var stdout []byte
	code := -1
	r := bytes.NewReader(out)
	for {
		id, data, err := adbwire.ReadShellPacket(r, adbwire.MaxShellPacketLen)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		switch id {
		case adbwire.ShellStdout:
			stdout = append(stdout, data...)
		case adbwire.ShellExit:
			code = int(data[0])
		}
	}
	if string(stdout) != "ABC\n" || code != 5 {
		t.Fatalf("stdout %q code %d", stdout, code)
	}
}

// TestSyncPushFlowControl pushes through the sync service as fast as the
// daemon's OKAYs allow: the daemon acknowledges queued WRTEs early and
// must never let the host get ahead of its queue (the stream would be
// closed as a flow-control violation).
func TestSyncPushFlowControl(t *testing.T) {
	testenv.NeedRoot(t)
	t.Parallel()
	h := &host{t: t, nc: newTestServer(t, 0)}
	h.sendQuiet(adbwire.CmdCNXN, adbwire.Version, adbwire.MaxPayload, "host::")
	h.recvQuiet()
	dst := filepath.Join(t.TempDir(), "f")
	const size = 24 << 20
	body := sendBody(dst, size)
	for i := uint32(1); i <= 3; i++ {
		pushOverWire(h, i, body)
		if st, err := os.Stat(dst); err != nil || st.Size() != size {
			t.Fatalf("push %d: %v size %d", i, err, st.Size())
		}
	}
}

// recordConn is a net.Conn that records what is written to it.
type recordConn struct {
	net.Conn
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *recordConn) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}
func (r *recordConn) SetWriteDeadline(time.Time) error { return nil }
func (r *recordConn) Close() error                     { return nil }

func (r *recordConn) okays(t *testing.T) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	rd := bytes.NewReader(r.buf.Bytes())
	for {
		m, err := adbwire.ReadMessage(rd, adbwire.MaxPayload)
		if err != nil {
			return n
		}
		if m.Command == adbwire.CmdOKAY {
			n++
		}
	}
}

// TestEarlyAckInterleaving steps through the flow control of a stream's
// queue: a WRTE is acknowledged when its header is accounted for (before
// its payload is queued) if the queue has room for the next one; the OKAY
// of the WRTE that fills the queue waits until the service takes a
// payload; and a WRTE sent while an OKAY is held back is refused (the
// stream would be closed), so the host can never overrun the queue.
func TestEarlyAckInterleaving(t *testing.T) {
	t.Parallel()
	rc := &recordConn{}
	c := newConn(NewServer(&Config{}), rc, 1)
	c.online = true
	c.maxData = adbwire.MaxPayload
	st := c.newStream(9)
	type step struct {
		what  string
		do    func() bool // false: the WRTE was refused
		ok    bool
		okays int
	}
	wrte := func(b string) func() bool {
		return func() bool {
			ok := st.reserve()
			if ok {
				st.put([]byte(b))
			}
			return ok
		}
	}
	steps := []step{
		{"first WRTE: acknowledged before its payload is queued", st.reserve, true, 1},
		{"its payload queued", func() bool { st.put([]byte("a")); return true }, true, 1},
	}
	for i := 2; i < inQueue; i++ {
		steps = append(steps, step{fmt.Sprintf("WRTE %d: acknowledged at once", i), wrte("a"), true, i})
	}
	steps = append(steps,
		// The service takes a payload off the queue but has not accounted
		// for the take yet: the slot is still taken.
		step{"service takes a payload", func() bool { <-st.in; return true }, true, inQueue - 1},
		step{"X fills the queue: OKAY held back", wrte("x"), true, inQueue - 1},
		step{"Y before X's OKAY: refused", st.reserve, false, inQueue - 1},
		step{"the take is accounted: X acknowledged", func() bool { st.taken(); return true }, true, inQueue},
		step{"Y fills the queue again", wrte("y"), true, inQueue},
		step{"Z before Y's OKAY: refused", st.reserve, false, inQueue},
		step{"the service reads everything queued; Y acknowledged", func() bool {
			want := strings.Repeat("a", inQueue-2) + "xy"
			b := make([]byte, len(want))
			_, err := io.ReadFull(st, b)
			return err == nil && string(b) == want
		}, true, inQueue + 1},
	)
	for _, s := range steps {
		if ok := s.do(); ok != s.ok {
			t.Fatalf("%s: accepted = %v, want %v", s.what, ok, s.ok)
		}
		if n := rc.okays(t); n != s.okays {
			t.Fatalf("%s: %d OKAYs sent, want %d", s.what, n, s.okays)
		}
	}
}

// TestWRTEAcknowledgedBeforePayload: the OKAY for a WRTE leaves as soon as
// its header is in, while its payload is still on the way; the payload
// then reaches the service whole.
func TestWRTEAcknowledgedBeforePayload(t *testing.T) {
	testenv.NeedRoot(t)
	t.Parallel()
	h := &host{t: t, nc: newTestServer(t, 0)}
	h.sendQuiet(adbwire.CmdCNXN, adbwire.Version, adbwire.MaxPayload, "host::")
	h.recvQuiet()
	h.sendQuiet(adbwire.CmdOPEN, 3, 0, "sync:\x00")
	local := h.recvQuiet().Arg0
	path := filepath.Join(t.TempDir(), strings.Repeat("p", 200))
	req := adbwire.AppendSyncRequest(nil, adbwire.SyncSTAT, path)
	m := adbwire.Message{Command: adbwire.CmdWRTE, Arg0: 3, Arg1: local, Data: req}
	wire, _ := m.MarshalBinary()
	cut := adbwire.HeaderSize + 5
	if _, err := h.nc.Write(wire[:cut]); err != nil {
		t.Fatal(err)
	}
	h.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	if got, err := adbwire.ReadMessage(h.nc, adbwire.MaxPayload); err != nil || got.Command != adbwire.CmdOKAY || got.Arg1 != 3 {
		t.Fatalf("before the payload: got %s, %v; want OKAY", format(&got), err)
	}
	if _, err := h.nc.Write(wire[cut:]); err != nil {
		t.Fatal(err)
	}
	reply := h.recvQuiet()
	if reply.Command != adbwire.CmdWRTE || !bytes.Equal(reply.Data, adbwire.AppendSyncStatV1(nil, 0, 0, 0)) {
		t.Fatalf("STAT of a missing path answered %s", format(&reply))
	}
}

// TestTranscriptSync pins a sync session: SEND of a small file with its
// mtime (the body straddles WRTEs mid-header), STAT v1 of it and of a
// missing path, RECV, a RECV failure, and QUIT ending the stream.
func TestTranscriptSync(t *testing.T) {
	testenv.NeedRoot(t)
	// Relative paths keep the transcript free of the temp dir's name (and
	// of its length, which is on the wire); so no t.Parallel.
	t.Chdir(t.TempDir())
	h := &host{t: t, nc: newTestServer(t, 0)}
	h.send(adbwire.CmdCNXN, adbwire.Version, adbwire.MaxPayload, "host::features=shell_v2,cmd,stat_v2,ls_v2")
	h.recv()
	h.log.Reset()
	file := "f.txt"
	h.send(adbwire.CmdOPEN, 5, 0, "sync:\x00")
	okay := h.recv()
	local := okay.Arg0
	var body []byte
	body = adbwire.AppendSyncRequest(body, adbwire.SyncSEND, file+",33188")
	body = adbwire.AppendSyncData(body, []byte("hello sync\n"))
	body = adbwire.AppendSyncDone(body, 1234567890)
	h.send(adbwire.CmdWRTE, 5, local, string(body[:len(body)-6]))
	h.recv() // OKAY
	h.send(adbwire.CmdWRTE, 5, local, string(body[len(body)-6:]))
	if m := h.recvSet(2); m[1].Command != adbwire.CmdWRTE || string(m[1].Data) != "OKAY\x00\x00\x00\x00" {
		t.Fatalf("SEND status %s", format(&m[1]))
	}
	h.send(adbwire.CmdOKAY, 5, local, "")
	for _, req := range [][]byte{
		adbwire.AppendSyncRequest(nil, adbwire.SyncSTAT, file),
		adbwire.AppendSyncRequest(nil, adbwire.SyncSTAT, file+".missing"),
		adbwire.AppendSyncRequest(nil, adbwire.SyncRECV, file),
		adbwire.AppendSyncRequest(nil, adbwire.SyncRECV, file+".missing"),
	} {
		h.send(adbwire.CmdWRTE, 5, local, string(req))
		h.recvSet(2) // OKAY and the reply
		h.send(adbwire.CmdOKAY, 5, local, "")
	}
	h.send(adbwire.CmdWRTE, 5, local, string(adbwire.AppendSyncRequest(nil, adbwire.SyncQUIT, "")))
	if m := h.recvSet(2); m[1].Command != adbwire.CmdCLSE {
		t.Fatalf("QUIT answered %s", format(&m[1]))
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "hello sync\n" {
		t.Fatalf("pushed file %q %v", b, err)
	}
	goldenFile(t, "transcript_sync.txt", syncHeader, h.log.String())
}

const syncHeader = "# A sync session after CNXN (> host to device, < device to host).\n" +
	"# Pins: SEND body split mid-header across WRTEs; OKAY status after DONE; STAT v1 reply\n" +
	"# (mode 0 for a missing path); RECV as DATA+DONE; RECV failure as FAIL with strerror;\n" +
	"# QUIT ends the stream with CLSE. Regenerate with -update.\n"
