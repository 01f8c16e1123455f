package adbwire

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// FuzzReadMessage feeds arbitrary bytes to the message parser: it must
// never panic, never return a payload over the limit, and re-encode what it
// accepted to the same bytes (modulo the ignored checksum).
func FuzzReadMessage(f *testing.F) {
	for _, m := range []Message{
		{Command: CmdCNXN, Arg0: Version, Arg1: MaxPayload, Data: []byte("host::features=shell_v2,cmd")},
		{Command: CmdOPEN, Arg0: 1, Data: []byte("shell,v2,raw:id\x00")},
		{Command: CmdWRTE, Arg0: 1, Arg1: 2, Data: []byte("data")},
		{Command: CmdOKAY, Arg0: 1, Arg1: 2},
	} {
		b, _ := m.MarshalBinary()
		f.Add(b)
	}
	f.Add([]byte("CNXN\x00\x00\x00\x01"))
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 4096
		r := bytes.NewReader(in)
		for {
			m, err := ReadMessage(r, max)
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) &&
					!errors.Is(err, ErrBadMagic) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("unexpected error kind: %v", err)
				}
				return
			}
			if len(m.Data) > max {
				t.Fatalf("payload %d over limit", len(m.Data))
			}
			b, _ := m.MarshalBinary()
			again, err := ReadMessage(bytes.NewReader(b), max)
			if err != nil || again.Command != m.Command || again.Arg0 != m.Arg0 || again.Arg1 != m.Arg1 || !bytes.Equal(again.Data, m.Data) {
				t.Fatalf("re-encode mismatch: %+v vs %+v (%v)", again, m, err)
			}
		}
	})
}

// FuzzSyncStream runs the device's view of a sync session over arbitrary
// bytes: requests, SEND bodies and QUIT.
func FuzzSyncStream(f *testing.F) {
	var b []byte
	b = AppendSyncRequest(b, SyncSTAT, "/data/local/tmp")
	b = AppendSyncRequest(b, SyncSEND, "/data/local/tmp/x,33188")
	b = AppendSyncData(b, []byte("hello"))
	b = AppendSyncDone(b, 99)
	b = AppendSyncRequest(b, SyncRECV, "/x")
	b = AppendSyncRequest(b, SyncQUIT, "")
	f.Add(b)
	f.Add(AppendSyncRequest(nil, SyncLIST, "/"))
	f.Add([]byte("SEND\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, in []byte) {
		r := bytes.NewReader(in)
		buf := make([]byte, MaxSyncData)
		for {
			req, err := ReadSyncRequest(r)
			if err != nil {
				return
			}
			if len(req.Path) > MaxSyncPath {
				t.Fatalf("path %d over limit", len(req.Path))
			}
			switch req.ID {
			case SyncQUIT:
				return
			case SyncSEND:
				if _, _, err := ParseSendTarget(req.Path); err != nil {
					return
				}
				for {
					data, done, _, err := ReadSendChunk(r, buf)
					if err != nil {
						return
					}
					if len(data) > MaxSyncData {
						t.Fatalf("chunk %d over limit", len(data))
					}
					if done {
						break
					}
				}
			}
		}
	})
}

// FuzzShellPacket parses arbitrary bytes as a stream of shell v2 packets.
func FuzzShellPacket(f *testing.F) {
	f.Add(AppendShellPacket(AppendShellPacket(nil, ShellStdin, []byte("ls\n")), ShellCloseStdin, nil))
	f.Add(AppendShellPacket(nil, ShellWindowSize, []byte("24x80,0x0")))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		const max = 1 << 16
		r := bytes.NewReader(in)
		for {
			id, data, err := ReadShellPacket(r, max)
			if err != nil {
				return
			}
			if len(data) > max {
				t.Fatalf("packet %d over limit", len(data))
			}
			b := AppendShellPacket(nil, id, data)
			id2, data2, err := ReadShellPacket(bytes.NewReader(b), max)
			if err != nil || id2 != id || !bytes.Equal(data, data2) {
				t.Fatalf("re-encode mismatch")
			}
		}
	})
}
