package adbwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Command is a wire message command, its four ASCII letters read as a
// little-endian uint32.
type Command uint32

// Commands of the wire protocol. SYNC is obsolete and never on the wire;
// AUTH and STLS are defined so a decoder can name them, a device here never
// sends them.
const (
	CmdSYNC Command = 0x434e5953
	CmdCNXN Command = 0x4e584e43
	CmdAUTH Command = 0x48545541
	CmdOPEN Command = 0x4e45504f
	CmdOKAY Command = 0x59414b4f
	CmdCLSE Command = 0x45534c43
	CmdWRTE Command = 0x45545257
	CmdSTLS Command = 0x534c5453
)

// Protocol constants (adb.h).
const (
	// Version is A_VERSION: the checksum field is 0 and unchecked.
	Version = 0x01000001
	// MaxPayload is the largest payload either side may send once sizes
	// are negotiated (1 MiB).
	MaxPayload = 1 << 20
	// MaxPayloadV1 bounds CNXN and AUTH payloads, sent before sizes are
	// known.
	MaxPayloadV1 = 4 << 10
	// HeaderSize is the size of a message header.
	HeaderSize = 24
)

// Errors returned by ReadMessage. They are wrapped; match with errors.Is.
var (
	ErrBadMagic = errors.New("adbwire: header magic does not match command")
	ErrTooLarge = errors.New("adbwire: payload larger than the negotiated maximum")
)

func (c Command) String() string {
	switch c {
	case CmdSYNC, CmdCNXN, CmdAUTH, CmdOPEN, CmdOKAY, CmdCLSE, CmdWRTE, CmdSTLS:
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(c))
		return string(b[:])
	}
	return fmt.Sprintf("0x%08x", uint32(c))
}

// Message is one wire message.
type Message struct {
	Command Command
	Arg0    uint32
	Arg1    uint32
	Data    []byte
}

// Header returns the 24-byte header of m. The checksum field is 0, as for
// every peer at Version.
func (m *Message) Header() [HeaderSize]byte {
	var h [HeaderSize]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(m.Command))
	binary.LittleEndian.PutUint32(h[4:], m.Arg0)
	binary.LittleEndian.PutUint32(h[8:], m.Arg1)
	binary.LittleEndian.PutUint32(h[12:], uint32(len(m.Data)))
	binary.LittleEndian.PutUint32(h[16:], 0)
	binary.LittleEndian.PutUint32(h[20:], uint32(m.Command)^0xffffffff)
	return h
}

// AppendBinary appends the encoded message (header and payload) to b.
func (m *Message) AppendBinary(b []byte) ([]byte, error) {
	h := m.Header()
	b = append(b, h[:]...)
	return append(b, m.Data...), nil
}

// MarshalBinary encodes the message.
func (m *Message) MarshalBinary() ([]byte, error) {
	return m.AppendBinary(make([]byte, 0, HeaderSize+len(m.Data)))
}

// ParseHeader decodes a header and returns the message (without data) and
// the payload length it announces. maxData bounds that length.
func ParseHeader(h []byte, maxData uint32) (Message, uint32, error) {
	if len(h) < HeaderSize {
		return Message{}, 0, fmt.Errorf("parse header: %w", io.ErrUnexpectedEOF)
	}
	m := Message{
		Command: Command(binary.LittleEndian.Uint32(h[0:])),
		Arg0:    binary.LittleEndian.Uint32(h[4:]),
		Arg1:    binary.LittleEndian.Uint32(h[8:]),
	}
	n := binary.LittleEndian.Uint32(h[12:])
	if binary.LittleEndian.Uint32(h[20:]) != uint32(m.Command)^0xffffffff {
		return Message{}, 0, fmt.Errorf("parse header %s: %w", m.Command, ErrBadMagic)
	}
	if n > maxData {
		return Message{}, 0, fmt.Errorf("parse header %s: %d bytes > %d: %w", m.Command, n, maxData, ErrTooLarge)
	}
	return m, n, nil
}

// ReadMessage reads one message into a fresh payload. Payloads longer
// than maxData are refused before anything is allocated. The checksum
// field is not checked, as adb itself does not check it.
func ReadMessage(r io.Reader, maxData uint32) (Message, error) {
	var h [HeaderSize]byte
	m, n, err := ReadHeader(r, &h, maxData)
	if err != nil {
		return Message{}, err
	}
	if n > 0 {
		m.Data = make([]byte, n)
		if err := ReadPayload(r, m.Command, m.Data); err != nil {
			return Message{}, err
		}
	}
	return m, nil
}

// ReadHeader reads a header into h (the caller's, so that a read loop
// allocates nothing) and returns the message without its data and the
// payload length, at most maxData. The payload follows on r: the caller
// reads it with ReadPayload into a buffer of its choice, which lets a
// reader act on the header (flow control) before the payload arrives.
func ReadHeader(r io.Reader, h *[HeaderSize]byte, maxData uint32) (Message, uint32, error) {
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return Message{}, 0, err
	}
	return ParseHeader(h[:], maxData)
}

// ReadPayload reads the payload of a cmd message whose header has been
// read, filling buf, whose length must be the announced one. A stream
// that ends inside the payload is io.ErrUnexpectedEOF.
func ReadPayload(r io.Reader, cmd Command, buf []byte) error {
	if _, err := io.ReadFull(r, buf); err != nil {
		return fmt.Errorf("read %s payload: %w", cmd, noEOF(err))
	}
	return nil
}

// WriteMessage writes m in one Write call when w is unbuffered enough to
// care (header and payload are joined).
func WriteMessage(w io.Writer, m *Message) error {
	b, _ := m.MarshalBinary()
	_, err := w.Write(b)
	return err
}

// noEOF turns a clean EOF in the middle of a frame into ErrUnexpectedEOF.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// Banner is the identity a device sends in its CNXN.
type Banner struct {
	Product, Model, Device string
	Features               []string
}

// String formats the banner the way adbd does and the way gadb's
// DeviceList needs it: "device::ro.product.name=…;ro.product.model=…;
// ro.product.device=…;features=a,b".
func (b Banner) String() string {
	s := "device::ro.product.name=" + b.Product + ";ro.product.model=" + b.Model +
		";ro.product.device=" + b.Device + ";features="
	for i, f := range b.Features {
		if i > 0 {
			s += ","
		}
		s += f
	}
	return s
}

// OpenDestination returns the service name of an OPEN payload: the host
// appends NUL bytes, which are not part of the name.
func OpenDestination(data []byte) string {
	for len(data) > 0 && data[len(data)-1] == 0 {
		data = data[:len(data)-1]
	}
	return string(data)
}
