package bridge

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"
)

// FuzzReadLine: the handshake reader returns the first line and exactly
// the bytes after it, whatever the chunking, and never more than its bound.
func FuzzReadLine(f *testing.F) {
	f.Add([]byte("{\"result\":{}}\n{\"x\":1}\n"), uint8(3))
	f.Add([]byte("no newline"), uint8(1))
	f.Add([]byte("\n"), uint8(0))
	f.Fuzz(func(t *testing.T, data []byte, chunk uint8) {
		var r io.Reader = bytes.NewReader(data)
		if chunk%2 == 1 {
			r = iotest.HalfReader(r)
		}
		if chunk%3 == 0 {
			r = iotest.OneByteReader(r)
		}
		line, rest, err := readLine(r, 64)
		i := bytes.IndexByte(data, '\n')
		switch {
		case err == nil:
			if i < 0 || !bytes.Equal(line, data[:i]) || !bytes.HasPrefix(data[i+1:], rest) {
				t.Fatalf("line %q rest %q from %q", line, rest, data)
			}
		case errors.Is(err, errTooLong):
			if i >= 0 && i <= 64 {
				t.Fatalf("too long with a newline at %d", i)
			}
		case i >= 0 && i <= 64:
			t.Fatalf("error %v with a newline at %d", err, i)
		}
	})
}

func FuzzParseState(f *testing.F) {
	f.Add([]byte(`{"version":1,"devices":{"adb:x":{"token":"t","pairingId":"dp_1","label":"l","pairedAt":"2026-01-01T00:00:00Z"}}}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := ParseState(data)
		if err != nil {
			if !errors.Is(err, ErrBadState) {
				t.Fatalf("error %v does not wrap ErrBadState", err)
			}
			return
		}
		if st.Version != StateVersion || st.Devices == nil {
			t.Fatalf("accepted %+v", st)
		}
	})
}
