//go:build linux

package props

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

// Limits of Android's property area.
const (
	MaxNameLen    = 256
	MaxValueLen   = 91   // PROP_VALUE_MAX minus the NUL
	MaxROValueLen = 4096 // ro.* values may be long (build fingerprints)
	maxProps      = 10000
)

// Errors of Set. They are wrapped; match with errors.Is.
var (
	ErrReadOnly = errors.New("property is read-only")
	ErrBadName  = errors.New("illegal property name")
	ErrTooLong  = errors.New("property value too long")
	ErrDenied   = errors.New("permission denied")
	ErrTooMany  = errors.New("too many properties")
)

// Store holds a device's properties.
type Store struct {
	persistPath string
	onChange    func(name, value string)

	// mu guards the fields that follow.
	mu      sync.Mutex
	props   map[string]string
	changed chan struct{} // closed and replaced on every change
}

// NewStore returns an empty store that saves persist.* properties to
// persistPath ("" = nowhere). onChange (may be nil) is called after every
// change, outside the lock.
func NewStore(persistPath string, onChange func(name, value string)) *Store {
	return &Store{persistPath: persistPath, onChange: onChange, props: map[string]string{}, changed: make(chan struct{})}
}

// ValidName reports whether name is a legal property name.
func ValidName(name string) bool {
	if name == "" || len(name) > MaxNameLen || name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..") {
		return false
	}
	for _, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '.', c == '_', c == '-', c == ':', c == '@':
		default:
			return false
		}
	}
	return true
}

// Get returns a property.
func (s *Store) Get(name string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.props[name]
	return v, ok
}

// All returns every property as sorted name/value pairs.
func (s *Store) All() [][2]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([][2]string, 0, len(s.props))
	for k, v := range s.props {
		out = append(out, [2]string{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// Set sets a property as setprop does: ro.* only once, values bounded,
// persist.* saved.
func (s *Store) Set(name, value string) error { return s.set(name, value, false) }

// Reset sets a property as resetprop does: ro.* may be overwritten.
func (s *Store) Reset(name, value string) error { return s.set(name, value, true) }

func (s *Store) set(name, value string, force bool) error {
	if !ValidName(name) {
		return fmt.Errorf("set %q: %w", name, ErrBadName)
	}
	ro := strings.HasPrefix(name, "ro.")
	if (!ro && len(value) > MaxValueLen) || len(value) > MaxROValueLen || strings.ContainsAny(value, "\x00\n") {
		return fmt.Errorf("set %s: %w", name, ErrTooLong)
	}
	s.mu.Lock()
	old, exists := s.props[name]
	if ro && exists && !force {
		s.mu.Unlock()
		return fmt.Errorf("set %s: %w", name, ErrReadOnly)
	}
	if !exists && len(s.props) >= maxProps {
		s.mu.Unlock()
		return fmt.Errorf("set %s: %w", name, ErrTooMany)
	}
	s.props[name] = value
	s.broadcastLocked()
	var persisted [][2]string
	if strings.HasPrefix(name, "persist.") && s.persistPath != "" && old != value {
		persisted = s.persistedLocked()
	}
	s.mu.Unlock()
	if persisted != nil {
		if err := s.save(persisted); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	if s.onChange != nil {
		s.onChange(name, value)
	}
	return nil
}

// Delete removes a property (resetprop -d).
func (s *Store) Delete(name string) {
	s.mu.Lock()
	_, existed := s.props[name]
	delete(s.props, name)
	s.broadcastLocked()
	var persisted [][2]string
	if existed && strings.HasPrefix(name, "persist.") && s.persistPath != "" {
		persisted = s.persistedLocked()
	}
	s.mu.Unlock()
	if persisted != nil {
		s.save(persisted)
	}
}

func (s *Store) broadcastLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Wait waits until name exists (old == nil) or its value differs from
// *old, and returns the value.
func (s *Store) Wait(ctx context.Context, name string, old *string) (string, error) {
	for {
		s.mu.Lock()
		v, ok := s.props[name]
		ch := s.changed
		s.mu.Unlock()
		if ok && (old == nil || v != *old) {
			return v, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

func (s *Store) persistedLocked() [][2]string {
	out := [][2]string{}
	for k, v := range s.props {
		if strings.HasPrefix(k, "persist.") {
			out = append(out, [2]string{k, v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// save writes the persistent properties atomically.
func (s *Store) save(ps [][2]string) error {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p[0] + "=" + p[1] + "\n")
	}
	if err := os.MkdirAll(filepath.Dir(s.persistPath), 0o700); err != nil {
		return fmt.Errorf("save properties: %w", err)
	}
	tmp := s.persistPath + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("save properties: %w", err)
	}
	if err := os.Rename(tmp, s.persistPath); err != nil {
		return fmt.Errorf("save properties: %w", err)
	}
	return nil
}

// LoadPersistent loads the persist.* properties saved by earlier boots.
// A missing file is an empty one; malformed lines are skipped.
func (s *Store) LoadPersistent() error {
	f, err := os.Open(s.persistPath)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("load properties: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	s.mu.Lock()
	defer s.mu.Unlock()
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok && strings.HasPrefix(k, "persist.") && ValidName(k) && len(v) <= MaxValueLen && len(s.props) < maxProps {
			s.props[k] = v
		}
	}
	s.broadcastLocked()
	return sc.Err()
}

// LoadFile applies a key=value file (a module's system.prop, as resetprop
// -f does): comments and blank lines skipped, ro.* overwritten.
func (s *Store) LoadFile(path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("load %s: %w", filepath.Base(path), err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			s.Reset(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return nil
}
