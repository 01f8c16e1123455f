package hostproto

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Shell v2 packet ids this client uses (lab-reference B.6; 0 is stdin
// and 5 a window-size change, neither sent here).
const (
	idStdout     = 1
	idStderr     = 2
	idExit       = 3
	idCloseStdin = 4
)

// MaxShellPacket bounds one shell v2 packet's data. adbd never sends more
// than its max payload (1 MiB) minus the 5-byte header.
const MaxShellPacket = 1 << 20

// ErrNoExitStatus: the shell v2 stream ended without an exit packet, so
// the command's outcome is unknown (the device or its link died).
var ErrNoExitStatus = errors.New("shell stream ended without exit status")

// DemuxShellV2 reads shell v2 packets from r, copying stdout and stderr
// packets to the writers, until the exit packet, whose status it returns.
// Unknown packet ids are skipped. A write error stops the demuxer and is
// returned as is.
func DemuxShellV2(r io.Reader, stdout, stderr io.Writer) (int, error) {
	var hdr [5]byte
	buf := make([]byte, 32<<10)
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return 0, ErrNoExitStatus
			}
			return 0, fmt.Errorf("shell v2 header: %w", truncated(err))
		}
		id := hdr[0]
		n := binary.LittleEndian.Uint32(hdr[1:])
		if n > MaxShellPacket {
			return 0, fmt.Errorf("shell v2 packet of %d bytes: %w", n, ErrProtocol)
		}
		if id == idExit {
			if n != 1 {
				return 0, fmt.Errorf("shell v2 exit packet of %d bytes: %w", n, ErrProtocol)
			}
			var code [1]byte
			if _, err := io.ReadFull(r, code[:]); err != nil {
				return 0, fmt.Errorf("shell v2 exit status: %w", truncated(err))
			}
			return int(code[0]), nil
		}
		var w io.Writer = io.Discard
		switch id {
		case idStdout:
			w = stdout
		case idStderr:
			w = stderr
		}
		for n > 0 {
			chunk := buf
			if uint32(len(chunk)) > n {
				chunk = chunk[:n]
			}
			if _, err := io.ReadFull(r, chunk); err != nil {
				return 0, fmt.Errorf("shell v2 data: %w", truncated(err))
			}
			if _, err := w.Write(chunk); err != nil {
				return 0, err
			}
			n -= uint32(len(chunk))
		}
	}
}

// ShellPacket frames one shell v2 packet.
func ShellPacket(id byte, data []byte) []byte {
	p := make([]byte, 5+len(data))
	p[0] = id
	binary.LittleEndian.PutUint32(p[1:], uint32(len(data)))
	copy(p[5:], data)
	return p
}

// ShellV2 runs cmd with "shell,v2,raw:" on the device, closes its stdin at
// once, and demultiplexes stdout and stderr into the writers. It returns
// the exit status.
func (c *Client) ShellV2(ctx context.Context, serial, cmd string, stdout, stderr io.Writer) (int, error) {
	cn, err := c.Open(ctx, serial, "shell,v2,raw:"+cmd)
	if err != nil {
		return 0, err
	}
	defer cn.Close()
	// Commands that read stdin see EOF instead of hanging.
	if _, err := cn.nc.Write(ShellPacket(idCloseStdin, nil)); err != nil {
		return 0, fmt.Errorf("shell v2 close stdin: %w", err)
	}
	code, err := DemuxShellV2(cn.r, stdout, stderr)
	if err != nil {
		if ctx.Err() != nil {
			return 0, fmt.Errorf("shell v2: %w", ctx.Err())
		}
		return 0, fmt.Errorf("shell v2: %w", err)
	}
	return code, nil
}
