//go:build linux

package adbd

import (
	"net"
	"path/filepath"
	"testing"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
	"github.com/agentoslab/agentlab/internal/testenv"
)

// BenchmarkSyncPush measures the daemon's side of a push alone: a host
// written here speaks the wire protocol directly (no adb server), sends
// the adb CLI's DATA chunks (64 KiB less their header) in 1 MiB WRTEs with
// one WRTE in flight, and the daemon writes the file. The host's part is
// kept cheap (the body is built once and sent without a copy), so the
// time is mostly the daemon's.
func BenchmarkSyncPush(b *testing.B) {
	testenv.NeedRoot(b)
	nc := newTestServer(b, 0)
	h := &host{t: b, nc: nc}
	h.send(adbwire.CmdCNXN, adbwire.Version, adbwire.MaxPayload, "host::")
	h.recvQuiet()
	const size = 64 << 20
	body := sendBody(filepath.Join(b.TempDir(), "push.bin"), size)
	b.SetBytes(size)
	for i := uint32(1); b.Loop(); i++ {
		pushOverWire(h, i, body)
	}
}

// sendBody returns the sync requests of a push of size zero bytes to dst
// as the adb CLI sends them, QUIT included.
func sendBody(dst string, size int) []byte {
	chunk := make([]byte, adbwire.MaxSyncData-8)
	body := adbwire.AppendSyncRequest(nil, adbwire.SyncSEND, dst+",33188")
	for sent := 0; sent < size; sent += len(chunk) {
		body = adbwire.AppendSyncData(body, chunk[:min(len(chunk), size-sent)])
	}
	body = adbwire.AppendSyncDone(body, 0)
	return adbwire.AppendSyncRequest(body, adbwire.SyncQUIT, "")
}

// pushOverWire sends body on a new sync stream (host id id) in 1 MiB
// WRTEs, each only after the previous one's OKAY, and waits for the end
// of the stream.
func pushOverWire(h *host, id uint32, body []byte) {
	h.sendQuiet(adbwire.CmdOPEN, id, 0, "sync:\x00")
	okay := h.recvQuiet()
	if okay.Command != adbwire.CmdOKAY {
		h.t.Fatalf("sync: open answered %s", okay.Command)
	}
	local := okay.Arg0
	for len(body) > 0 {
		n := min(len(body), adbwire.MaxPayload)
		h.wrte(id, local, body[:n])
		body = body[n:]
	}
	for {
		m := h.recvQuiet()
		if m.Command == adbwire.CmdWRTE {
			h.sendQuiet(adbwire.CmdOKAY, id, local, "")
		}
		if m.Command == adbwire.CmdCLSE {
			return
		}
	}
}

func (h *host) sendQuiet(cmd adbwire.Command, a0, a1 uint32, data string) {
	if err := adbwire.WriteMessage(h.nc, &adbwire.Message{Command: cmd, Arg0: a0, Arg1: a1, Data: []byte(data)}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) recvQuiet() adbwire.Message {
	m, err := adbwire.ReadMessage(h.nc, adbwire.MaxPayload)
	if err != nil {
		h.t.Fatal(err)
	}
	return m
}

// wrte sends one WRTE and waits for its OKAY.
func (h *host) wrte(local, remote uint32, data []byte) {
	m := adbwire.Message{Command: adbwire.CmdWRTE, Arg0: local, Arg1: remote, Data: data}
	hdr := m.Header()
	bufs := net.Buffers{hdr[:], data}
	if _, err := bufs.WriteTo(h.nc); err != nil {
		h.t.Fatal(err)
	}
	for {
		m := h.recvQuiet()
		if m.Command == adbwire.CmdOKAY {
			return
		}
		if m.Command == adbwire.CmdCLSE {
			h.t.Fatal("stream closed during push")
		}
	}
}
