package hostproto

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// FuzzReply feeds arbitrary server bytes to the reply parsers: they must
// never panic, never allocate past the hex4 bound, and classify every
// outcome as OKAY, FAIL, ErrProtocol or a read error.
func FuzzReply(f *testing.F) {
	for _, s := range []string{"OKAY0004abcd", "FAIL0005nope!", "OKAYzzzz", "OKAY", "FAIL", "OKAYffff", "xxxx", "OKAY0002", ""} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		err := ReadStatus(r, StageHost, "fuzz")
		var fe *FailError
		switch {
		case err == nil:
			if !bytes.HasPrefix(b, []byte("OKAY")) {
				t.Fatalf("OKAY accepted for %q", b)
			}
			p, err := ReadHex4(r)
			if err == nil && len(p) > MaxRequest {
				t.Fatalf("payload of %d bytes", len(p))
			}
			if err != nil && !errors.Is(err, ErrProtocol) {
				t.Fatalf("hex4 error %v is not ErrProtocol", err)
			}
		case errors.As(err, &fe):
			if !bytes.HasPrefix(b, []byte("FAIL")) {
				t.Fatalf("FAIL reported for %q", b)
			}
		case errors.Is(err, ErrProtocol):
		default:
			t.Fatalf("unclassified error %v", err)
		}
	})
}

// FuzzParseDevicesL: every entry has a serial and a state, whatever the input.
func FuzzParseDevicesL(f *testing.F) {
	f.Add("emulator-5554          device product:p model:m device:d transport_id:1\n")
	f.Add("127.0.0.1:15555 offline transport_id:x\r\n")
	f.Add("a no permissions; see [x] usb:1\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		for _, e := range ParseDevicesL(s) {
			if e.Serial == "" || e.State == "" || strings.ContainsAny(e.Serial, " \t\n") {
				t.Fatalf("bad entry %+v from %q", e, s)
			}
		}
	})
}

// FuzzDemuxShellV2: the demuxer returns an exit code only after an exit
// packet, never writes more than the input holds, and never panics.
func FuzzDemuxShellV2(f *testing.F) {
	f.Add(ShellPacket(3, []byte{0}))
	f.Add(append(ShellPacket(1, []byte("out")), ShellPacket(3, []byte{7})...))
	f.Add(append(ShellPacket(2, []byte("err")), 3, 1, 0))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0x7f})
	f.Fuzz(func(t *testing.T, b []byte) {
		var o, e bytes.Buffer
		code, err := DemuxShellV2(bytes.NewReader(b), &o, &e)
		if o.Len()+e.Len() > len(b) {
			t.Fatalf("wrote %d bytes from %d", o.Len()+e.Len(), len(b))
		}
		if err == nil && (code < 0 || code > 255 || !bytes.Contains(b, []byte{3, 1, 0, 0, 0})) {
			t.Fatalf("exit %d without an exit packet in %x", code, b)
		}
		if err != nil && !errors.Is(err, ErrProtocol) && !errors.Is(err, ErrNoExitStatus) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("unclassified error %v", err)
		}
	})
}
