//go:build linux

package adbd

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
)

// TestSyncPushOddChunks pushes files whose SEND bodies are cut every way
// the host may cut them: DATA chunks of any size (runs of 1-byte chunks
// beyond IOV_MAX in one WRTE among them) in WRTEs of any size, cut inside
// headers and inside data. The file must hold exactly the pushed bytes.
func TestSyncPushOddChunks(t *testing.T) {
	t.Parallel()
	h := &host{t: t, nc: newTestServer(t, 0)}
	h.sendQuiet(adbwire.CmdCNXN, adbwire.Version, adbwire.MaxPayload, "host::")
	h.recvQuiet()
	dir := t.TempDir()
	tests := []struct {
		name   string
		chunks func(r *rand.Rand) int // next DATA chunk size
		wrtes  func(r *rand.Rand) int // next WRTE size
		size   int
	}{
		{"adb CLI chunks, 1 MiB WRTEs", func(*rand.Rand) int { return adbwire.MaxSyncData - 8 }, func(*rand.Rand) int { return adbwire.MaxPayload }, 5<<20 + 123},
		{"random chunks, random WRTEs", func(r *rand.Rand) int { return 1 + r.IntN(adbwire.MaxSyncData) }, func(r *rand.Rand) int { return 1 + r.IntN(adbwire.MaxPayload) }, 3 << 20},
		{"1-byte chunks, 1 MiB WRTEs", func(*rand.Rand) int { return 1 }, func(*rand.Rand) int { return adbwire.MaxPayload }, 300 << 10},
		{"largest chunks, 7-byte WRTEs", func(*rand.Rand) int { return adbwire.MaxSyncData }, func(*rand.Rand) int { return 7 }, 100 << 10},
	}
	for i, tt := range tests {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		data := make([]byte, tt.size)
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		dst := filepath.Join(dir, tt.name)
		body := adbwire.AppendSyncRequest(nil, adbwire.SyncSEND, dst+",33188")
		for rest := data; len(rest) > 0; {
			n := min(tt.chunks(r), len(rest))
			body = adbwire.AppendSyncData(body, rest[:n])
			rest = rest[n:]
		}
		body = adbwire.AppendSyncDone(body, 1234567890)
		id := uint32(100 + i)
		h.sendQuiet(adbwire.CmdOPEN, id, 0, "sync:\x00")
		local := h.recvQuiet().Arg0
		for len(body) > 0 {
			n := min(tt.wrtes(r), len(body))
			h.wrte(id, local, body[:n])
			body = body[n:]
		}
		if m := h.recvQuiet(); m.Command != adbwire.CmdWRTE || !bytes.Equal(m.Data, adbwire.AppendSyncOkay(nil)) {
			t.Fatalf("%s: SEND answered %s", tt.name, format(&m))
		}
		h.sendQuiet(adbwire.CmdOKAY, id, local, "")
		h.sendQuiet(adbwire.CmdWRTE, id, local, string(adbwire.AppendSyncRequest(nil, adbwire.SyncQUIT, "")))
		for m := h.recvQuiet(); m.Command != adbwire.CmdCLSE; m = h.recvQuiet() {
		}
		got, err := os.ReadFile(dst)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%s: file holds %d bytes (%v), want the %d pushed", tt.name, len(got), err, len(data))
		}
		if st, err := os.Stat(dst); err != nil || st.ModTime().Unix() != 1234567890 {
			t.Fatalf("%s: mtime %v %v", tt.name, st.ModTime(), err)
		}
	}
}
