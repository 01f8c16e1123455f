package adbwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Shell protocol v2 packet ids (shell_protocol.h).
const (
	ShellStdin        byte = 0
	ShellStdout       byte = 1
	ShellStderr       byte = 2
	ShellExit         byte = 3
	ShellCloseStdin   byte = 4
	ShellWindowSize   byte = 5
	ShellHeaderSize        = 5
	MaxShellPacketLen      = MaxPayload - ShellHeaderSize
)

// ErrShellTooLong is wrapped by ReadShellPacket for a packet over the limit.
var ErrShellTooLong = errors.New("adbwire: shell packet too long")

// ReadShellPacket reads one v2 packet: an id byte, a little-endian uint32
// length and the data. Lengths over max are refused before allocation.
func ReadShellPacket(r io.Reader, max uint32) (id byte, data []byte, err error) {
	var h [ShellHeaderSize]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(h[1:])
	if n > max {
		return 0, nil, fmt.Errorf("shell packet id %d: %d bytes > %d: %w", h[0], n, max, ErrShellTooLong)
	}
	data = make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return 0, nil, fmt.Errorf("shell packet id %d: %w", h[0], noEOF(err))
	}
	return h[0], data, nil
}

// AppendShellPacket appends one v2 packet.
func AppendShellPacket(b []byte, id byte, data []byte) []byte {
	b = append(b, id)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(data)))
	return append(b, data...)
}
