package adbwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SyncID is the 4-byte id of a sync message.
type SyncID [4]byte

// Sync message ids (file_sync_protocol.h).
var (
	SyncSTAT = SyncID{'S', 'T', 'A', 'T'}
	SyncSTA2 = SyncID{'S', 'T', 'A', '2'}
	SyncLST2 = SyncID{'L', 'S', 'T', '2'}
	SyncLIST = SyncID{'L', 'I', 'S', 'T'}
	SyncLIS2 = SyncID{'L', 'I', 'S', '2'}
	SyncSEND = SyncID{'S', 'E', 'N', 'D'}
	SyncSND2 = SyncID{'S', 'N', 'D', '2'}
	SyncRECV = SyncID{'R', 'E', 'C', 'V'}
	SyncRCV2 = SyncID{'R', 'C', 'V', '2'}
	SyncDENT = SyncID{'D', 'E', 'N', 'T'}
	SyncDNT2 = SyncID{'D', 'N', 'T', '2'}
	SyncDONE = SyncID{'D', 'O', 'N', 'E'}
	SyncDATA = SyncID{'D', 'A', 'T', 'A'}
	SyncOKAY = SyncID{'O', 'K', 'A', 'Y'}
	SyncFAIL = SyncID{'F', 'A', 'I', 'L'}
	SyncQUIT = SyncID{'Q', 'U', 'I', 'T'}
)

func (id SyncID) String() string {
	for _, c := range id {
		if c < 0x20 || c > 0x7e {
			return fmt.Sprintf("%q", id[:])
		}
	}
	return string(id[:])
}

// Sync limits.
const (
	// MaxSyncPath is the longest path a sync request may carry.
	MaxSyncPath = 1024
	// MaxSyncData is the largest DATA chunk (64 KiB).
	MaxSyncData = 64 << 10
	// SyncStatV2Size is the size of a STA2/LST2 reply.
	SyncStatV2Size = 72
)

// Errors of the sync decoders. They are wrapped; match with errors.Is.
var (
	ErrPathTooLong  = errors.New("adbwire: sync path too long")
	ErrChunkTooLong = errors.New("adbwire: sync data chunk too long")
	ErrUnexpected   = errors.New("adbwire: unexpected sync message")
)

// SyncHeader is the 8-byte header of every sync message: an id and a
// 32-bit argument (a length for most messages, the mtime for DONE).
type SyncHeader struct {
	ID  SyncID
	Arg uint32
}

// ReadSyncHeader reads one 8-byte sync header.
func ReadSyncHeader(r io.Reader) (SyncHeader, error) {
	var b [8]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return SyncHeader{}, err
	}
	var h SyncHeader
	copy(h.ID[:], b[:4])
	h.Arg = binary.LittleEndian.Uint32(b[4:])
	return h, nil
}

// SyncRequest is a request that names a path: STAT, STA2, LST2, LIST,
// LIS2, SEND, RECV, or QUIT (with an empty path).
type SyncRequest struct {
	ID   SyncID
	Path string
}

// ReadSyncRequest reads one request and its path. A path longer than
// MaxSyncPath is an error wrapping ErrPathTooLong (the stream can not be
// resynchronised after it).
func ReadSyncRequest(r io.Reader) (SyncRequest, error) {
	h, err := ReadSyncHeader(r)
	if err != nil {
		return SyncRequest{}, err
	}
	if h.ID == SyncQUIT {
		return SyncRequest{ID: h.ID}, nil
	}
	if h.Arg > MaxSyncPath {
		return SyncRequest{}, fmt.Errorf("sync %s: %d bytes: %w", h.ID, h.Arg, ErrPathTooLong)
	}
	p := make([]byte, h.Arg)
	if _, err := io.ReadFull(r, p); err != nil {
		return SyncRequest{}, fmt.Errorf("sync %s path: %w", h.ID, noEOF(err))
	}
	return SyncRequest{ID: h.ID, Path: string(p)}, nil
}

// ReadSendChunk reads the next message of a SEND body: a DATA chunk (its
// bytes are read into buf, which must hold MaxSyncData, and returned), or
// DONE with the file's mtime. Anything else wraps ErrUnexpected; a FAIL
// from the peer carries its message.
func ReadSendChunk(r io.Reader, buf []byte) (data []byte, done bool, mtime uint32, err error) {
	n, done, mtime, err := ReadSendHeader(r)
	if err != nil || done {
		return nil, done, mtime, err
	}
	if int(n) > len(buf) {
		return nil, false, 0, fmt.Errorf("sync DATA %d bytes: %w", n, ErrChunkTooLong)
	}
	if _, err := io.ReadFull(r, buf[:n]); err != nil {
		return nil, false, 0, fmt.Errorf("sync DATA: %w", noEOF(err))
	}
	return buf[:n], false, 0, nil
}

// ReadSendHeader reads the header of the next message of a SEND body and
// returns the length of a DATA chunk, at most MaxSyncData, whose bytes
// follow on r for the caller to take as it likes (into a file without a
// copy), or DONE with the file's mtime. Anything else is an error as for
// ReadSendChunk.
func ReadSendHeader(r io.Reader) (n uint32, done bool, mtime uint32, err error) {
	h, err := ReadSyncHeader(r)
	if err != nil {
		return 0, false, 0, noEOF(err)
	}
	switch h.ID {
	case SyncDATA:
		if h.Arg > MaxSyncData {
			return 0, false, 0, fmt.Errorf("sync DATA %d bytes: %w", h.Arg, ErrChunkTooLong)
		}
		return h.Arg, false, 0, nil
	case SyncDONE:
		return 0, true, h.Arg, nil
	case SyncFAIL:
		if h.Arg > MaxSyncPath {
			return 0, false, 0, fmt.Errorf("sync FAIL %d bytes: %w", h.Arg, ErrChunkTooLong)
		}
		msg := make([]byte, h.Arg)
		if _, err := io.ReadFull(r, msg); err != nil {
			return 0, false, 0, fmt.Errorf("sync FAIL: %w", noEOF(err))
		}
		return 0, false, 0, fmt.Errorf("sync: peer failed: %q: %w", msg, ErrUnexpected)
	}
	return 0, false, 0, fmt.Errorf("sync %s inside SEND: %w", h.ID, ErrUnexpected)
}

// ParseSendTarget splits the "PATH,MODE" argument of a v1 SEND at the last
// comma. MODE is parsed like strtoul(…, 0): decimal unless it starts with
// 0 (octal) or 0x (hex). A missing comma means mode 0, as in adbd.
func ParseSendTarget(s string) (path string, mode uint32, err error) {
	i := strings.LastIndexByte(s, ',')
	if i < 0 {
		return s, 0, nil
	}
	path, ms := s[:i], s[i+1:]
	if ms == "" {
		return path, 0, nil
	}
	v, err := strconv.ParseUint(ms, 0, 32)
	if err != nil {
		return "", 0, fmt.Errorf("sync SEND mode %q: %w", ms, err)
	}
	return path, uint32(v), nil
}

func appendHeader(b []byte, id SyncID, arg uint32) []byte {
	b = append(b, id[:]...)
	return binary.LittleEndian.AppendUint32(b, arg)
}

// AppendSyncRequest appends a request naming path (client side; tests and
// tools use it).
func AppendSyncRequest(b []byte, id SyncID, path string) []byte {
	b = appendHeader(b, id, uint32(len(path)))
	return append(b, path...)
}

// AppendSyncData appends a DATA chunk.
func AppendSyncData(b, data []byte) []byte {
	b = appendHeader(b, SyncDATA, uint32(len(data)))
	return append(b, data...)
}

// AppendSyncDone appends DONE with arg (the mtime after SEND, 0 after RECV).
func AppendSyncDone(b []byte, arg uint32) []byte { return appendHeader(b, SyncDONE, arg) }

// AppendSyncOkay appends the OKAY status (length 0).
func AppendSyncOkay(b []byte) []byte { return appendHeader(b, SyncOKAY, 0) }

// AppendSyncFail appends a FAIL status with its message.
func AppendSyncFail(b []byte, msg string) []byte {
	if len(msg) > MaxSyncPath {
		msg = msg[:MaxSyncPath]
	}
	b = appendHeader(b, SyncFAIL, uint32(len(msg)))
	return append(b, msg...)
}

// AppendSyncStatV1 appends a v1 STAT reply. mode 0 means "does not exist".
func AppendSyncStatV1(b []byte, mode, size, mtime uint32) []byte {
	b = append(b, SyncSTAT[:]...)
	b = binary.LittleEndian.AppendUint32(b, mode)
	b = binary.LittleEndian.AppendUint32(b, size)
	return binary.LittleEndian.AppendUint32(b, mtime)
}

// AppendSyncDent appends a v1 LIST entry.
func AppendSyncDent(b []byte, mode, size, mtime uint32, name string) []byte {
	b = append(b, SyncDENT[:]...)
	b = binary.LittleEndian.AppendUint32(b, mode)
	b = binary.LittleEndian.AppendUint32(b, size)
	b = binary.LittleEndian.AppendUint32(b, mtime)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(name)))
	return append(b, name...)
}

// AppendSyncListDone appends the end of a LIST: DONE and 16 zero bytes, a
// whole 20-byte dent.
func AppendSyncListDone(b []byte) []byte {
	b = append(b, SyncDONE[:]...)
	return append(b, make([]byte, 16)...)
}

// StatV2 is the body of a STA2/LST2 reply (struct sync_stat_v2).
type StatV2 struct {
	Error               uint32 // errno, 0 on success
	Dev, Ino            uint64
	Mode, Nlink         uint32
	UID, GID            uint32
	Size                uint64
	Atime, Mtime, Ctime int64
}

// AppendSyncStatV2 appends a 72-byte STA2 or LST2 reply with the given id.
func AppendSyncStatV2(b []byte, id SyncID, st *StatV2) []byte {
	le := binary.LittleEndian
	b = append(b, id[:]...)
	b = le.AppendUint32(b, st.Error)
	b = le.AppendUint64(b, st.Dev)
	b = le.AppendUint64(b, st.Ino)
	b = le.AppendUint32(b, st.Mode)
	b = le.AppendUint32(b, st.Nlink)
	b = le.AppendUint32(b, st.UID)
	b = le.AppendUint32(b, st.GID)
	b = le.AppendUint64(b, st.Size)
	b = le.AppendUint64(b, uint64(st.Atime))
	b = le.AppendUint64(b, uint64(st.Mtime))
	return le.AppendUint64(b, uint64(st.Ctime))
}
