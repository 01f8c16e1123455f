package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
)

// MaxPayload is the largest frame payload, as upstream's fast path.
const MaxPayload = 8 << 20

// headerLen is the magic and the length.
const headerLen = 8

// Magic starts a frame: MagicRequest from the controller, MagicResponse
// from the callee.
type Magic [4]byte

var (
	MagicRequest  = Magic{'A', 'C', 'I', 'S'}
	MagicResponse = Magic{'A', 'C', 'I', 'R'}
)

func (m Magic) String() string { return string(m[:]) }

// Frame errors. A stream that produced one can no longer be framed: the
// connection must be closed.
var (
	ErrBadMagic  = errors.New("aci: frame does not start with the expected magic")
	ErrFrameSize = fmt.Errorf("aci: frame length must be 1 to %d bytes", MaxPayload)
)

// WriteFrame writes one frame. The payload is not copied (on a socket
// header and payload go out in one writev).
func WriteFrame(w io.Writer, m Magic, payload []byte) error {
	if len(payload) == 0 || len(payload) > MaxPayload {
		return fmt.Errorf("write frame of %d bytes: %w", len(payload), ErrFrameSize)
	}
	var hdr [headerLen]byte
	copy(hdr[:4], m[:])
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(payload)))
	bufs := net.Buffers{hdr[:], payload}
	if _, err := bufs.WriteTo(w); err != nil {
		return fmt.Errorf("write frame: %w", err)
	}
	return nil
}

// ReadFrame reads one frame that must start with m. Memory is bounded by
// MaxPayload whatever the peer sends; the length is checked before a
// byte of payload is read or allocated. A stream that ends before the
// first byte of a frame is io.EOF; one that ends inside a frame is
// io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader, m Magic) ([]byte, error) {
	var hdr [headerLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	if Magic(hdr[:4]) != m {
		return nil, fmt.Errorf("read frame: got %q, want %q: %w", hdr[:4], m[:], ErrBadMagic)
	}
	n := binary.BigEndian.Uint32(hdr[4:])
	if n == 0 || n > MaxPayload {
		return nil, fmt.Errorf("read frame of %d bytes: %w", n, ErrFrameSize)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("read frame: %w", err)
	}
	return payload, nil
}
