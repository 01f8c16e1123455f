//go:build linux

package virtual_test

import (
	"bufio"
	"encoding/binary"
	"net"
	"sync"
	"testing"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
)

// discardDevice speaks just enough of the device side of the adb wire
// protocol for "adb push" of one file: CNXN, OPEN sync:, STAT (nothing
// exists), SEND (the data counted and dropped, then OKAY) and QUIT. It
// acknowledges each WRTE as soon as its header is in and reads payloads
// into one reused buffer: no device can do less.
type discardDevice struct {
	addr string
	ln   net.Listener
	wg   sync.WaitGroup

	// mu guards the fields that follow.
	mu    sync.Mutex
	conns []net.Conn
	bytes int64 // file data received
}

func startDiscardDevice(b *testing.B) *discardDevice {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	d := &discardDevice{addr: ln.Addr().String(), ln: ln}
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d.mu.Lock()
			d.conns = append(d.conns, c)
			d.mu.Unlock()
			d.wg.Add(1)
			go func() {
				defer d.wg.Done()
				d.serve(c)
			}()
		}
	}()
	b.Cleanup(func() {
		ln.Close()
		d.mu.Lock()
		for _, c := range d.conns {
			c.Close()
		}
		d.mu.Unlock()
		d.wg.Wait()
	})
	return d
}

func (d *discardDevice) received() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.bytes
}

func (d *discardDevice) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	payload := make([]byte, adbwire.MaxPayload)
	send := func(cmd adbwire.Command, a0, a1 uint32, data []byte) error {
		return adbwire.WriteMessage(c, &adbwire.Message{Command: cmd, Arg0: a0, Arg1: a1, Data: data})
	}
	streams := map[uint32]*discardSync{} // by our id
	var next uint32
	var h [adbwire.HeaderSize]byte
	for {
		m, n, err := adbwire.ReadHeader(br, &h, adbwire.MaxPayload)
		if err != nil {
			return
		}
		st := streams[m.Arg1]
		if m.Command == adbwire.CmdWRTE && st != nil && send(adbwire.CmdOKAY, m.Arg1, m.Arg0, nil) != nil {
			return
		}
		if adbwire.ReadPayload(br, m.Command, payload[:n]) != nil {
			return
		}
		data := payload[:n]
		switch m.Command {
		case adbwire.CmdCNXN:
			banner := adbwire.Banner{Product: "discard", Model: "discard", Device: "discard"}
			if send(adbwire.CmdCNXN, adbwire.Version, adbwire.MaxPayload, []byte(banner.String())) != nil {
				return
			}
		case adbwire.CmdOPEN:
			if adbwire.OpenDestination(data) != "sync:" {
				send(adbwire.CmdCLSE, 0, m.Arg0, nil)
				continue
			}
			next++
			streams[next] = &discardSync{remote: m.Arg0}
			if send(adbwire.CmdOKAY, next, m.Arg0, nil) != nil {
				return
			}
		case adbwire.CmdWRTE:
			if st == nil {
				continue
			}
			reply, quit, dropped, ok := st.feed(data)
			d.mu.Lock()
			d.bytes += dropped
			d.mu.Unlock()
			// The host has one request out at a time, so one reply is
			// never sent before the OKAY for the previous one.
			if reply != nil && send(adbwire.CmdWRTE, m.Arg1, st.remote, reply) != nil {
				return
			}
			if quit || !ok {
				delete(streams, m.Arg1)
				send(adbwire.CmdCLSE, m.Arg1, st.remote, nil)
			}
		case adbwire.CmdCLSE:
			delete(streams, m.Arg1)
		}
	}
}

// discardSync follows a sync session across WRTEs.
type discardSync struct {
	remote  uint32
	hdr     []byte // a sync header being gathered
	skip    int    // bytes still to drop: a path or a DATA chunk
	data    bool   // the bytes to drop are file data
	inSend  bool   // between SEND and DONE
	statDue bool   // a STAT's path is being dropped: answer it after
}

// feed takes one WRTE payload. It returns the reply owed to the host,
// whether the session ended (QUIT), how many bytes of file data were
// dropped, and false on a request this device does not serve.
func (s *discardSync) feed(b []byte) (reply []byte, quit bool, dropped int64, ok bool) {
	for len(b) > 0 {
		if s.skip > 0 {
			n := min(s.skip, len(b))
			if s.data {
				dropped += int64(n)
			}
			s.skip -= n
			b = b[n:]
			if s.skip == 0 && s.statDue {
				s.statDue = false
				reply = adbwire.AppendSyncStatV1(nil, 0, 0, 0)
			}
			continue
		}
		n := min(8-len(s.hdr), len(b))
		s.hdr = append(s.hdr, b[:n]...)
		b = b[n:]
		if len(s.hdr) < 8 {
			break
		}
		id, arg := adbwire.SyncID(s.hdr[:4]), int(binary.LittleEndian.Uint32(s.hdr[4:]))
		s.hdr = s.hdr[:0]
		s.skip, s.data = arg, false
		switch {
		case s.inSend && id == adbwire.SyncDATA:
			s.data = true
		case s.inSend && id == adbwire.SyncDONE:
			s.skip, s.inSend = 0, false
			reply = adbwire.AppendSyncOkay(nil)
		case id == adbwire.SyncSEND:
			s.inSend = true // its path is dropped first
		case id == adbwire.SyncSTAT:
			if arg == 0 {
				reply = adbwire.AppendSyncStatV1(nil, 0, 0, 0)
			} else {
				s.statDue = true
			}
		case id == adbwire.SyncQUIT:
			return reply, true, dropped, true
		default:
			return reply, false, dropped, false
		}
	}
	return reply, false, dropped, true
}
