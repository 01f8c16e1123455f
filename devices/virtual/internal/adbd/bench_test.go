//go:build linux

package adbd

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
)

// BenchmarkSyncPush measures the daemon's side of a push alone: a host
// written here speaks the wire protocol directly (no adb server), sends
// 64 KiB DATA chunks in 1 MiB WRTEs with one WRTE in flight, and the
// daemon writes the file.
func BenchmarkSyncPush(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	nc := newTestServer(b, 0)
	h := &host{t: b, nc: nc}
	h.send(adbwire.CmdCNXN, adbwire.Version, adbwire.MaxPayload, "host::")
	h.recvQuiet()
	const size = 64 << 20
	dst := filepath.Join(b.TempDir(), "push.bin")
	b.SetBytes(size)
	for i := uint32(1); b.Loop(); i++ {
		pushOverWire(h, i, size, dst)
	}
}

// pushOverWire pushes size zero bytes to dst on stream id, with 1 MiB
// WRTEs, each sent only after the previous one's OKAY.
func pushOverWire(h *host, id uint32, size int, dst string) {
	h.sendQuiet(adbwire.CmdOPEN, id, 0, "sync:\x00")
	okay := h.recvQuiet()
	if okay.Command != adbwire.CmdOKAY {
		h.t.Fatalf("sync: open answered %s", okay.Command)
	}
	local := okay.Arg0
	chunk := make([]byte, adbwire.MaxSyncData)
	var body []byte
	body = adbwire.AppendSyncRequest(body, adbwire.SyncSEND, dst+",33188")
	for sent := 0; sent < size; sent += len(chunk) {
		body = adbwire.AppendSyncData(body, chunk)
		if len(body) >= adbwire.MaxPayload-len(chunk)-8 {
			h.wrte(id, local, body)
			body = body[:0]
		}
	}
	body = adbwire.AppendSyncDone(body, 0)
	body = adbwire.AppendSyncRequest(body, adbwire.SyncQUIT, "")
	h.wrte(id, local, body)
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
	if err := adbwire.WriteMessage(h.nc, &adbwire.Message{Command: adbwire.CmdWRTE, Arg0: local, Arg1: remote, Data: data}); err != nil {
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
