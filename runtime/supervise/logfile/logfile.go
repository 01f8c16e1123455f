// Package logfile writes size-rotated log files that root can keep safely
// inside directories other users own (an app's data directory): files
// are opened relative to a directory descriptor without following
// symlinks, never block on a FIFO, must be plain single-link files, and
// are handed to their owner's uid.
package logfile

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// Options configure a Writer. The zero value works.
type Options struct {
	// MaxBytes rotates the file when a write would take it past this
	// size; 0 means 1 MiB.
	MaxBytes int64
	// UID and GID own the file; -1 (or both 0 for root) keeps root.
	UID, GID int
	// Mode of the file; 0 means 0600.
	Mode uint32
}

// Writer appends to dir/name, renaming it to name.1 (replacing an older
// one) when it reaches MaxBytes. Safe for concurrent use. Write errors
// (a full disk) drop the data rather than fail the writer: a log must
// never stop the process whose output it keeps.
type Writer struct {
	name string
	opts Options

	mu    sync.Mutex
	dirFd int // guarded by mu
	f     *os.File
	size  int64
}

// Open opens (or creates) dir/name for appending.
func Open(dir, name string, opts *Options) (*Writer, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = 1 << 20
	}
	if o.Mode == 0 {
		o.Mode = 0o600
	}
	if o.UID == 0 && o.GID == 0 {
		o.UID, o.GID = -1, -1
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("logfile: open %s: %w", dir, err)
	}
	w := &Writer{name: name, opts: o, dirFd: fd}
	if err := w.openLocked(); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return w, nil
}

// openLocked opens the current file, replacing anything at the name that
// is not a plain file of the right owner with a fresh one.
func (w *Writer) openLocked() error {
	for attempt := 0; attempt < 2; attempt++ {
		fd, err := unix.Openat(w.dirFd, w.name, unix.O_WRONLY|unix.O_APPEND|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, w.opts.Mode)
		if err == nil {
			var st unix.Stat_t
			if err = unix.Fstat(fd, &st); err == nil && w.acceptable(&st) {
				if w.opts.UID >= 0 {
					unix.Fchown(fd, w.opts.UID, w.opts.GID)
				}
				unix.Fchmod(fd, w.opts.Mode)
				w.f = os.NewFile(uintptr(fd), w.name)
				w.size = st.Size
				return nil
			}
			unix.Close(fd)
		}
		// A symlink (ELOOP), a FIFO without reader (ENXIO), a hard link,
		// a foreign file: remove the name and create it afresh.
		if rerr := unix.Unlinkat(w.dirFd, w.name, 0); rerr != nil && !errors.Is(rerr, unix.ENOENT) {
			if errors.Is(rerr, unix.EISDIR) {
				unix.Unlinkat(w.dirFd, w.name, unix.AT_REMOVEDIR)
			}
		}
	}
	return fmt.Errorf("logfile: cannot open %s safely", w.name)
}

func (w *Writer) acceptable(st *unix.Stat_t) bool {
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		return false
	}
	return int(st.Uid) == 0 || (w.opts.UID >= 0 && int(st.Uid) == w.opts.UID)
}

// Write appends p, rotating first when the file would pass MaxBytes.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.f == nil {
		return len(p), nil
	}
	if w.size > 0 && w.size+int64(len(p)) > w.opts.MaxBytes {
		w.rotateLocked()
		if w.f == nil {
			return len(p), nil
		}
	}
	n, _ := w.f.Write(p)
	w.size += int64(n)
	return len(p), nil
}

func (w *Writer) rotateLocked() {
	w.f.Close()
	w.f = nil
	// renameat moves the directory entry itself: whatever the owner of
	// the directory put at name.1 is replaced, nothing is followed.
	unix.Renameat(w.dirFd, w.name, w.dirFd, w.name+".1")
	if err := w.openLocked(); err != nil {
		w.f = nil
	}
}

// Close closes the file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	if w.f != nil {
		err = w.f.Close()
		w.f = nil
	}
	if w.dirFd >= 0 {
		unix.Close(w.dirFd)
		w.dirFd = -1
	}
	return err
}
