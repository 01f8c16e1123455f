// Package virtual is the lab's virtual clock across processes: serve's
// Owner keeps the offset in a file in the runtime's data directory and
// moves its clock; a Follower in another process re-reads that file and
// moves its own. labclock uses it in builds with the agentos_labclock
// tag only; release binaries do not link it.
package virtual

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/clock/internal/manual"
)

// FileName is the offset file in the runtime's data directory.
const FileName = "clock"

// maxFileBytes bounds a read of the offset file.
const maxFileBytes = 64

// Owner is serve's virtual clock and the owner of its offset. Safe for
// concurrent use.
type Owner struct {
	path string
	c    *manual.Clock

	mu sync.Mutex // serialises advances: the file write, then the move
}

// Open returns the owner's clock for dataDir, at the offset the file
// holds (0 when there is none). An unreadable file is an error: another
// offset would move time backwards under what is stored.
func Open(dataDir string) (*Owner, error) {
	o := &Owner{path: filepath.Join(dataDir, FileName), c: manual.New(time.Now, true)}
	off, err := ReadOffset(o.path)
	if err != nil {
		return nil, err
	}
	o.c.AdvanceTo(off)
	return o, nil
}

// Clock is the virtual clock.
func (o *Owner) Clock() clock.Clock { return o.c }

// Offset is how far the clock is ahead of the real clock.
func (o *Owner) Offset() time.Duration { return o.c.Offset() }

// Advance writes the offset moved by d for the followers, then moves the
// clock, firing what became due. When the write fails nothing moves.
func (o *Owner) Advance(d time.Duration) error {
	if d <= 0 {
		return errors.New("virtual clock: advance by a positive duration")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	next := o.c.Offset() + d
	if err := writeOffset(o.path, next); err != nil {
		return fmt.Errorf("virtual clock: %w", err)
	}
	o.c.AdvanceTo(next)
	return nil
}

// Follower is a clock that follows an owner's offset file.
type Follower struct {
	path    string
	c       *manual.Clock
	log     *slog.Logger
	lastErr string // only the following goroutine (and Follow before it) touch it
	stop    chan struct{}
	once    sync.Once
	done    chan struct{}
}

// Follow returns a clock following the offset file in dataDir: read now,
// then every interval until Close. A missing file is offset 0; an
// unreadable one is logged once per distinct error and leaves the clock
// where it is.
func Follow(dataDir string, interval time.Duration, log *slog.Logger) *Follower {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f := &Follower{path: filepath.Join(dataDir, FileName), c: manual.New(time.Now, true), log: log,
		stop: make(chan struct{}), done: make(chan struct{})}
	f.read()
	go func() {
		defer close(f.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-f.stop:
				return
			case <-t.C:
				f.read()
			}
		}
	}()
	return f
}

func (f *Follower) read() {
	off, err := ReadOffset(f.path)
	if err != nil {
		if err.Error() != f.lastErr {
			f.log.Warn("virtual clock: offset not read", "err", err)
			f.lastErr = err.Error()
		}
		return
	}
	f.lastErr = ""
	if f.c.AdvanceTo(off) {
		f.log.Debug("virtual clock: advanced", "offset", off.String())
	}
}

// Clock is the followed clock.
func (f *Follower) Clock() clock.Clock { return f.c }

// Offset is how far the clock is ahead of the real clock.
func (f *Follower) Offset() time.Duration { return f.c.Offset() }

// Close stops following and waits for the reader to end; the clock
// keeps its offset. It is idempotent.
func (f *Follower) Close() {
	f.once.Do(func() { close(f.stop) })
	<-f.done
}

// ReadOffset reads the offset file at path; a missing file is 0.
func ReadOffset(path string) (time.Duration, error) {
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("virtual clock: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxFileBytes))
	if err != nil {
		return 0, fmt.Errorf("virtual clock: %w", err)
	}
	return ParseOffset(b)
}

// writeOffset replaces the file through a rename, so a reader sees the
// old offset or the new one, never half of either.
func writeOffset(path string, off time.Duration) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, FormatOffset(off), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// FormatOffset is the offset file's content: offset_ns=N and a newline.
func FormatOffset(d time.Duration) []byte { return fmt.Appendf(nil, "offset_ns=%d\n", int64(d)) }

// ParseOffset reads what FormatOffset wrote: exactly one line
// offset_ns=N, N a non-negative decimal without sign or leading zeros.
func ParseOffset(b []byte) (time.Duration, error) {
	s, ok := strings.CutPrefix(string(b), "offset_ns=")
	if !ok {
		return 0, errors.New("virtual clock: offset file: want offset_ns=N")
	}
	s, ok = strings.CutSuffix(s, "\n")
	if !ok {
		return 0, errors.New("virtual clock: offset file: want one line")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 || s != strconv.FormatInt(n, 10) {
		return 0, fmt.Errorf("virtual clock: offset file: bad offset %q", s)
	}
	return time.Duration(n), nil
}
