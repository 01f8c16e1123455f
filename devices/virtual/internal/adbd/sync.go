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

// serveSync loops over sync requests until QUIT, the end of the stream or
// a protocol error.
func serveSync(st io.ReadWriter) error {
	r := bufio.NewReaderSize(st, 128<<10)
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
			if err := recvFile(r, w, req.Path, buf); err != nil {
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
func recvFile(r io.Reader, w *bufio.Writer, target string, buf []byte) error {
	path, mode, err := adbwire.ParseSendTarget(target)
	if err != nil {
		w.Write(adbwire.AppendSyncFail(nil, err.Error()))
		return err
	}
	var (
		f       *os.File
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
	var mtime uint32
	for {
		data, done, mt, err := adbwire.ReadSendChunk(r, buf)
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
		switch {
		case isLink:
			if len(link)+len(data) <= 4096 {
				link = append(link, data...)
			}
		case f != nil && failure == "":
			if _, err := f.Write(data); err != nil {
				failure = "write failed: " + strerror(err)
			}
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
