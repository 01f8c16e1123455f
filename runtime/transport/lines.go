// Package transport carries the runtime's JSON-RPC traffic: newline framing
// with the spec's line limit, a guard that answers malformed lines itself
// before they reach the ACP SDK, unix sockets with abstract names, and the
// peer credentials (SO_PEERCRED) that are the only source of identity.
package transport

import (
	"bufio"
	"errors"
	"io"
	"unicode/utf8"
)

// MaxLineChars is the longest line a peer may send (spec §4.2): 65,536
// UTF-16 code units, not counting the newline.
const MaxLineChars = 65536

// ErrLineTooLong means a peer sent a line over the limit. The connection
// must be closed: the rest of the stream can no longer be framed safely.
var ErrLineTooLong = errors.New("transport: line exceeds the length limit")

// LineReader reads '\n'-terminated lines ("\r\n" accepted) of at most
// MaxChars UTF-16 code units. Memory is bounded by the limit, never by
// what the peer sends.
type LineReader struct {
	r        *bufio.Reader
	maxChars int
	buf      []byte
}

// NewLineReader returns a LineReader; maxChars <= 0 means MaxLineChars.
func NewLineReader(r io.Reader, maxChars int) *LineReader {
	if maxChars <= 0 {
		maxChars = MaxLineChars
	}
	return &LineReader{r: bufio.NewReaderSize(r, 64*1024), maxChars: maxChars}
}

// ReadLine returns the next line without its terminator. The slice is
// valid until the next call. At the end of the stream it returns io.EOF;
// a final line without a newline is returned first. A line over the
// limit returns ErrLineTooLong.
func (lr *LineReader) ReadLine() ([]byte, error) {
	lr.buf = lr.buf[:0]
	// A UTF-16 code unit takes at most 3 bytes of UTF-8 (4 bytes make 2
	// units), so more bytes than this can never be a valid line.
	maxBytes := 3*lr.maxChars + 1 // +1 for a trailing '\r'
	for {
		frag, err := lr.r.ReadSlice('\n')
		lr.buf = append(lr.buf, frag...)
		if len(lr.buf) > maxBytes+1 {
			return nil, ErrLineTooLong
		}
		switch {
		case err == nil:
			line := lr.buf[:len(lr.buf)-1]
			if n := len(line); n > 0 && line[n-1] == '\r' {
				line = line[:n-1]
			}
			if UTF16Len(line) > lr.maxChars {
				return nil, ErrLineTooLong
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(lr.buf) == 0 {
				return nil, io.EOF
			}
			if UTF16Len(lr.buf) > lr.maxChars {
				return nil, ErrLineTooLong
			}
			return lr.buf, nil
		default:
			return nil, err
		}
	}
}

// UTF16Len is the length of b in UTF-16 code units, the unit the spec's
// limits are written in (Java String.length). Invalid UTF-8 bytes count
// one unit each, as a decoder would replace them with U+FFFD.
func UTF16Len(b []byte) int {
	n := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			n++
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
		i += size
	}
	return n
}

// UTF16LenString is UTF16Len for a string.
func UTF16LenString(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}
