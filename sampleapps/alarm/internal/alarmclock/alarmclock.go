// Package alarmclock models the device's "system alarm clock" — what
// Android's AlarmManager.setAlarmClock / getNextAlarmClock provide — for
// devices without Android. It is one small JSON file in a directory shared
// by every app of the device: each app registers the alarms it has armed
// under its package name, and anyone can ask which registered alarm fires
// next and who owns it. A lock file serialises read-modify-write between
// processes; writes replace the file atomically.
package alarmclock

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// FileName is the clock's file inside the shared directory.
const FileName = "alarm_clock.json"

// Bounds on what one file and one package may hold.
const (
	MaxFileBytes      = 1 << 20
	MaxEntriesPerPkg  = 1000
	maxPackageNameLen = 255
)

// Entry is one registered alarm.
type Entry struct {
	Package string    `json:"package"`
	ID      string    `json:"id"`
	FireAt  time.Time `json:"fire_at"`
}

type file struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

// Clock is the system alarm clock stored in one directory.
type Clock struct{ dir string }

// New returns the clock kept in dir (created on first write).
func New(dir string) *Clock { return &Clock{dir: dir} }

// Path is the clock's file.
func (c *Clock) Path() string { return filepath.Join(c.dir, FileName) }

// Set replaces every entry of pkg with entries (their Package is set to
// pkg). It writes only when something changed.
func (c *Clock) Set(pkg string, entries []Entry) error {
	if pkg == "" || len(pkg) > maxPackageNameLen {
		return fmt.Errorf("alarm clock: bad package name %q", pkg)
	}
	if len(entries) > MaxEntriesPerPkg {
		return fmt.Errorf("alarm clock: %d entries for %s (limit %d)", len(entries), pkg, MaxEntriesPerPkg)
	}
	return c.locked(func() error {
		f, err := c.read()
		if err != nil {
			return err
		}
		var kept []Entry
		var old []Entry
		for _, e := range f.Entries {
			if e.Package == pkg {
				old = append(old, e)
			} else {
				kept = append(kept, e)
			}
		}
		next := make([]Entry, 0, len(entries))
		for _, e := range entries {
			e.Package = pkg
			e.FireAt = e.FireAt.UTC()
			next = append(next, e)
		}
		sortEntries(old)
		sortEntries(next)
		if equal(old, next) {
			return nil
		}
		f.Entries = append(kept, next...)
		sortEntries(f.Entries)
		return c.write(f)
	})
}

// Entries returns every registered entry, soonest first.
func (c *Clock) Entries() ([]Entry, error) {
	var out []Entry
	err := c.locked(func() error {
		f, err := c.read()
		out = f.Entries
		return err
	})
	return out, err
}

// Next returns the registered alarm that fires first strictly after now
// (what getNextAlarmClock answers), or ok=false when there is none.
func (c *Clock) Next(now time.Time) (e Entry, ok bool, err error) {
	all, err := c.Entries()
	if err != nil {
		return Entry{}, false, err
	}
	for _, e := range all {
		if e.FireAt.After(now) {
			return e, true, nil
		}
	}
	return Entry{}, false, nil
}

func (c *Clock) locked(fn func() error) error {
	if err := apptool.SharedDir(c.dir); err != nil {
		return fmt.Errorf("alarm clock: %w", err)
	}
	lf, err := os.OpenFile(filepath.Join(c.dir, FileName+".lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return fmt.Errorf("alarm clock: %w", err)
	}
	defer lf.Close()
	// Whoever creates the lock file opens it to every app uid; for the
	// others this fails harmlessly.
	_ = lf.Chmod(0o666)
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("alarm clock: lock: %w", err)
	}
	defer syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	return fn()
}

func (c *Clock) read() (file, error) {
	f := file{Version: 1}
	fh, err := os.Open(c.Path())
	if errors.Is(err, os.ErrNotExist) {
		return f, nil
	}
	if err != nil {
		return f, fmt.Errorf("alarm clock: %w", err)
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileBytes+1))
	if err != nil {
		return f, fmt.Errorf("alarm clock: %w", err)
	}
	if len(data) > MaxFileBytes {
		return f, fmt.Errorf("alarm clock: %s is larger than %d bytes", c.Path(), MaxFileBytes)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return file{Version: 1}, fmt.Errorf("alarm clock: %s: %w", c.Path(), err)
	}
	sortEntries(f.Entries)
	return f, nil
}

func (c *Clock) write(f file) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("alarm clock: %w", err)
	}
	if len(data) > MaxFileBytes {
		return fmt.Errorf("alarm clock: file would exceed %d bytes", MaxFileBytes)
	}
	tmp, err := os.CreateTemp(c.dir, FileName+".tmp*")
	if err != nil {
		return fmt.Errorf("alarm clock: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("alarm clock: %w", err)
	}
	// Every app uid of the device reads and rewrites this file.
	if err := tmp.Chmod(0o666); err != nil {
		tmp.Close()
		return fmt.Errorf("alarm clock: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("alarm clock: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.Path()); err != nil {
		return fmt.Errorf("alarm clock: %w", err)
	}
	return nil
}

func sortEntries(es []Entry) {
	sort.SliceStable(es, func(i, j int) bool {
		if !es[i].FireAt.Equal(es[j].FireAt) {
			return es[i].FireAt.Before(es[j].FireAt)
		}
		if es[i].Package != es[j].Package {
			return es[i].Package < es[j].Package
		}
		return es[i].ID < es[j].ID
	})
}

func equal(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Package != b[i].Package || a[i].ID != b[i].ID || !a[i].FireAt.Equal(b[i].FireAt) {
			return false
		}
	}
	return true
}
