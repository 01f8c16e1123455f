//go:build linux

package adbd

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
	"github.com/agentoslab/agentlab/devices/virtual/internal/proc"
	"golang.org/x/sys/unix"
)

// syncService serves "sync:" as adbd's current uid: permissions, and the
// owner of pushed files, are the shell user's unless adb root is on.
func (s *Server) syncService() serviceFunc {
	return func(ctx context.Context, st *stream) {
		uid := s.cfg.Hooks.UID()
		err := proc.RunAs(uid, uid, func() error { return serveSync(st) })
		s.log.Debug("sync ended", "err", err)
	}
}

// syncStream is the sync service's stream: replies are written to it,
// requests and file data are taken from its payloads.
type syncStream interface {
	io.Writer
	take() ([]byte, error)
}

// serveSync loops over sync requests until QUIT, the end of the stream or
// a protocol error. The stream's payloads are the read buffer: requests
// are copied out of them, pushed file data goes from them into the file.
func serveSync(st syncStream) error {
	r := &payloadReader{take: st.take}
	// One WRTE of the largest payload per flush when pulling.
	w := bufio.NewWriterSize(st, adbwire.MaxPayload)
	buf := make([]byte, adbwire.MaxSyncData)
	for {
		req, err := adbwire.ReadSyncRequest(r)
		if err != nil {
			if errors.Is(err, adbwire.ErrPathTooLong) {
				w.Write(adbwire.AppendSyncFail(nil, "path too long"))
				w.Flush()
			}
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		switch req.ID {
		case adbwire.SyncQUIT:
			return nil
		case adbwire.SyncSTAT:
			var b []byte
			var fi unix.Stat_t
			if unix.Lstat(req.Path, &fi) == nil {
				b = adbwire.AppendSyncStatV1(nil, fi.Mode, uint32(fi.Size), uint32(fi.Mtim.Sec))
			} else {
				b = adbwire.AppendSyncStatV1(nil, 0, 0, 0)
			}
			w.Write(b)
		case adbwire.SyncSTA2, adbwire.SyncLST2:
			var fi unix.Stat_t
			var err error
			if req.ID == adbwire.SyncSTA2 {
				err = unix.Stat(req.Path, &fi)
			} else {
				err = unix.Lstat(req.Path, &fi)
			}
			w.Write(adbwire.AppendSyncStatV2(nil, req.ID, statV2(&fi, err)))
		case adbwire.SyncLIST, adbwire.SyncLIS2:
			list(w, req.Path, req.ID == adbwire.SyncLIS2)
		case adbwire.SyncSEND:
			if err := recvFile(r, w, req.Path); err != nil {
				return err
			}
		case adbwire.SyncRECV:
			sendFile(w, req.Path, buf)
		default:
			w.Write(adbwire.AppendSyncFail(nil, fmt.Sprintf("unknown command %s", req.ID)))
			w.Flush()
			return fmt.Errorf("sync: unknown request %s", req.ID)
		}
		if err := w.Flush(); err != nil {
			return err
		}
	}
}

func statV2(fi *unix.Stat_t, err error) *adbwire.StatV2 {
	if err != nil {
		var errno syscall.Errno
		if !errors.As(err, &errno) {
			errno = syscall.EIO
		}
		return &adbwire.StatV2{Error: uint32(errno)}
	}
	return &adbwire.StatV2{
		Dev: fi.Dev, Ino: fi.Ino, Mode: fi.Mode, Nlink: uint32(fi.Nlink),
		UID: fi.Uid, GID: fi.Gid, Size: uint64(fi.Size),
		Atime: fi.Atim.Sec, Mtime: fi.Mtim.Sec, Ctime: fi.Ctim.Sec,
	}
}

// list writes DENT (or DNT2) entries, "." and ".." included as adbd does,
// then DONE. An unreadable directory is just DONE.
func list(w *bufio.Writer, dir string, v2 bool) {
	names := []string{".", ".."}
	if f, err := os.Open(dir); err == nil {
		more, _ := f.Readdirnames(-1)
		f.Close()
		names = append(names, more...)
	} else {
		names = nil
	}
	for _, name := range names {
		var fi unix.Stat_t
		err := unix.Lstat(filepath.Join(dir, name), &fi)
		if v2 {
			b := adbwire.AppendSyncStatV2(nil, adbwire.SyncDNT2, statV2(&fi, err))
			b = append(b, byte(len(name)), byte(len(name)>>8), byte(len(name)>>16), byte(len(name)>>24))
			w.Write(append(b, name...))
			continue
		}
		if err != nil {
			continue
		}
		w.Write(adbwire.AppendSyncDent(nil, fi.Mode, uint32(fi.Size), uint32(fi.Mtim.Sec), name))
	}
	if v2 {
		w.Write(append(adbwire.SyncDONE[:], make([]byte, 72)...))
		return
	}
	w.Write(adbwire.AppendSyncListDone(nil))
}

// recvFile handles SEND: the body is read to its DONE even when the file
// can not be written, so the stream stays in step; the status follows.
func recvFile(r *payloadReader, w *bufio.Writer, target string) error {
	path, mode, err := adbwire.ParseSendTarget(target)
	if err != nil {
		w.Write(adbwire.AppendSyncFail(nil, err.Error()))
		return err
	}
	var (
		f       *os.File
		out     *gatherWriter
		link    []byte
		failure string
	)
	isLink := mode&unix.S_IFMT == unix.S_IFLNK
	if !isLink {
		// fixed_push_mkdir: create missing parents.
		if err := os.MkdirAll(filepath.Dir(path), 0o775); err != nil {
			failure = "secure_mkdirs failed: " + strerror(err)
		} else {
			os.Remove(path)
			f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, os.FileMode(mode&0o777))
			if err != nil {
				failure = "couldn't create file: " + strerror(err)
			}
		}
	}
	if f != nil {
		// The data of a payload's DATA chunks is written in one go before
		// the reader moves on to the next payload.
		out = &gatherWriter{f: f}
		r.onNext = out.flush
		defer func() { r.onNext = nil }()
	}
	var mtime uint32
	for {
		n, done, mt, err := adbwire.ReadSendHeader(r)
		if err == nil && !done {
			err = readData(r, n, func(data []byte) {
				switch {
				case isLink:
					if len(link)+len(data) <= 4096 {
						link = append(link, data...)
					}
				case out != nil:
					out.add(data)
				}
			})
		}
		if err != nil {
			if f != nil {
				f.Close()
				os.Remove(path)
			}
			return err
		}
		if done {
			mtime = mt
			break
		}
	}
	if out != nil {
		out.flush()
		if out.err != nil {
			failure = "write failed: " + strerror(out.err)
		}
	}
	if isLink && failure == "" {
		os.MkdirAll(filepath.Dir(path), 0o775)
		os.Remove(path)
		// The adb CLI sends the target with its C string's NUL.
		if err := os.Symlink(strings.TrimRight(string(link), "\x00"), path); err != nil {
			failure = "symlink failed: " + strerror(err)
		}
	}
	if f != nil {
		if failure == "" {
			f.Chmod(os.FileMode(mode & 0o777))
		}
		if err := f.Close(); err != nil && failure == "" {
			failure = "close failed: " + strerror(err)
		}
		if failure != "" {
			os.Remove(path)
		} else {
			t := time.Unix(int64(mtime), 0)
			os.Chtimes(path, t, t)
		}
	}
	if failure != "" {
		w.Write(adbwire.AppendSyncFail(nil, failure))
		return nil
	}
	w.Write(adbwire.AppendSyncOkay(nil))
	return nil
}

// readData hands the n bytes of a DATA chunk to use as slices of the
// payloads they arrived in.
func readData(r *payloadReader, n uint32, use func([]byte)) error {
	for n > 0 {
		data, err := r.next(int(n))
		if err != nil {
			return fmt.Errorf("sync DATA: %w", noEOF(err))
		}
		n -= uint32(len(data))
		use(data)
	}
	return nil
}

// gatherWriter writes pushed file data, slices of WRTE payloads, with one
// writev per payload. The adb CLI sends DATA chunks of 64 KiB less their
// 8-byte header, so writing chunk by chunk would end nearly every write
// mid-page, which costs the filesystem a third more than whole pages.
type gatherWriter struct {
	f   *os.File
	iov [][]byte
	err error // the first write error; later data is dropped
}

// maxIOV is IOV_MAX: tiny DATA chunks must not grow one writev past it.
const maxIOV = 1024

func (g *gatherWriter) add(b []byte) {
	g.iov = append(g.iov, b)
	if len(g.iov) == maxIOV {
		g.flush()
	}
}

// flush writes what was gathered; the slices are forgotten either way.
func (g *gatherWriter) flush() {
	if len(g.iov) > 0 && g.err == nil {
		g.err = writev(g.f, g.iov)
	}
	clear(g.iov)
	g.iov = g.iov[:0]
}

// writev writes every byte of iov to f, which it consumes.
func writev(f *os.File, iov [][]byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	err = rc.Write(func(fd uintptr) bool {
		for len(iov) > 0 {
			n, err := unix.Writev(int(fd), iov)
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil {
				werr = err
				return true
			}
			if n == 0 {
				werr = io.ErrShortWrite
				return true
			}
			for n > 0 {
				if n < len(iov[0]) {
					iov[0] = iov[0][n:]
					break
				}
				n -= len(iov[0])
				iov = iov[1:]
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	return werr
}

// sendFile handles RECV.
func sendFile(w *bufio.Writer, path string, buf []byte) {
	f, err := os.Open(path)
	if err != nil {
		w.Write(adbwire.AppendSyncFail(nil, "open failed: "+strerror(err)))
		return
	}
	defer f.Close()
	for {
		n, err := f.Read(buf)
		if n > 0 {
			var h [8]byte
			copy(h[:], adbwire.SyncDATA[:])
			binary.LittleEndian.PutUint32(h[4:], uint32(n))
			w.Write(h[:])
			w.Write(buf[:n])
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			w.Write(adbwire.AppendSyncFail(nil, "read failed: "+strerror(err)))
			return
		}
	}
	w.Write(adbwire.AppendSyncDone(nil, 0))
}

// strerror formats err like C's strerror: "No such file or directory".
func strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		s := []rune(errno.Error())
		s[0] = unicode.ToUpper(s[0])
		return string(s)
	}
	return err.Error()
}
