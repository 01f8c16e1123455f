package adbwire

import (
	"bytes"
	"errors"
	"fmt"
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
		// The same bytes decoded the way a read loop does it: header into
		// a reused array, payload into a reused buffer.
		r2 := bytes.NewReader(in)
		var h [HeaderSize]byte
		reused := make([]byte, max)
		for {
			m, err := ReadMessage(r, max)
			m2, n, err2 := ReadHeader(r2, &h, max)
			if err2 == nil {
				err2 = ReadPayload(r2, m2.Command, reused[:n])
				m2.Data = reused[:n]
			}
			if (err == nil) != (err2 == nil) {
				t.Fatalf("ReadMessage err %v, ReadHeader+ReadPayload err %v", err, err2)
			}
			if err != nil {
				if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) &&
					!errors.Is(err, ErrBadMagic) && !errors.Is(err, ErrTooLarge) {
					t.Fatalf("unexpected error kind: %v", err)
				}
				if errors.Is(err, io.EOF) != errors.Is(err2, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) != errors.Is(err2, io.ErrUnexpectedEOF) {
					t.Fatalf("error kinds differ: %v vs %v", err, err2)
				}
				return
			}
			if m2.Command != m.Command || m2.Arg0 != m.Arg0 || m2.Arg1 != m.Arg1 || !bytes.Equal(m2.Data, m.Data) {
				t.Fatalf("reused-buffer decode %+v, ReadMessage %+v", m2, m)
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
		// Once reading whole chunks, once reading only chunk headers and
		// taking the data in small pieces (as the daemon does, straight
		// from its WRTE payloads): both must see the same session.
		whole := syncSession(t, bytes.NewReader(in), func(r io.Reader, buf []byte) ([]byte, bool, uint32, error) {
			return ReadSendChunk(r, buf)
		})
		pieces := syncSession(t, bytes.NewReader(in), func(r io.Reader, buf []byte) ([]byte, bool, uint32, error) {
			n, done, mtime, err := ReadSendHeader(r)
			if err != nil || done {
				return nil, done, mtime, err
			}
			if n > MaxSyncData {
				t.Fatalf("chunk %d over limit", n)
			}
			data := buf[:0]
			for len(data) < int(n) {
				k := min(int(n)-len(data), 1000)
				if _, err := io.ReadFull(r, buf[len(data):len(data)+k]); err != nil {
					return nil, false, 0, noEOF(err)
				}
				data = buf[:len(data)+k]
			}
			return data, false, 0, nil
		})
		if whole != pieces {
			t.Fatalf("sessions differ:\n%s\nvs\n%s", whole, pieces)
		}
	})
}

// syncSession reads a device's view of a sync session with chunk reading
// the SEND bodies, and returns what it saw.
func syncSession(t *testing.T, r io.Reader, chunk func(io.Reader, []byte) ([]byte, bool, uint32, error)) string {
	var log bytes.Buffer
	buf := make([]byte, MaxSyncData)
	for {
		req, err := ReadSyncRequest(r)
		if err != nil {
			fmt.Fprintf(&log, "end: %v\n", errors.Is(err, io.EOF))
			return log.String()
		}
		if len(req.Path) > MaxSyncPath {
			t.Fatalf("path %d over limit", len(req.Path))
		}
		fmt.Fprintf(&log, "%s %q\n", req.ID, req.Path)
		switch req.ID {
		case SyncQUIT:
			return log.String()
		case SyncSEND:
			if _, _, err := ParseSendTarget(req.Path); err != nil {
				return log.String()
			}
			for {
				data, done, mtime, err := chunk(r, buf)
				if err != nil {
					fmt.Fprintf(&log, "send error: unexpected EOF %v, too long %v, unexpected %v\n",
						errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, ErrChunkTooLong), errors.Is(err, ErrUnexpected))
					return log.String()
				}
				if len(data) > MaxSyncData {
					t.Fatalf("chunk %d over limit", len(data))
				}
				if done {
					fmt.Fprintf(&log, "DONE %d\n", mtime)
					break
				}
				fmt.Fprintf(&log, "DATA %x\n", data)
			}
		}
	}
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
