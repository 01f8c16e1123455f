//go:build unix

package virtual

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// ErrLeased means another live process (another lab run) holds the
// device's lease.
var ErrLeased = errors.New("virtual device leased by another process")

// Lease is one process's hold on a virtual device: while it is held, no
// other Lease of the same device succeeds. It is an flock on
// <stateDir>/<name>.lease (beside the device's root, not in it), so the
// kernel releases it when the holder exits or dies; a crashed run leaves
// no stale lease behind.
type Lease struct {
	f *os.File
}

// TakeLease takes the lease of device name in stateDir without waiting:
// ErrLeased (the error names the holder's pid) when a live process holds
// it.
func TakeLease(stateDir, name string) (*Lease, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	if !nameRE.MatchString(name) {
		return nil, fmt.Errorf("lease virtual device %q: bad name", name)
	}
	if err := os.MkdirAll(stateDir, 0o755); err != nil {
		return nil, fmt.Errorf("lease virtual device %s: %w", name, err)
	}
	path := filepath.Join(stateDir, name+".lease")
	// Not O_TRUNC: the holder's pid stays readable until the lock is ours.
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lease virtual device %s: %w", name, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s: %w (pid %s)", name, ErrLeased, holder(path))
		}
		return nil, fmt.Errorf("lease virtual device %s: %w", name, err)
	}
	// The pid is for the message another run shows; the lock is the lease.
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &Lease{f: f}, nil
}

func holder(path string) string {
	b, err := os.ReadFile(path)
	if s := strings.TrimSpace(string(b)); err == nil && s != "" {
		return s
	}
	return "unknown"
}

// Release gives the lease up. It is safe to call twice.
func (l *Lease) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	f := l.f
	l.f = nil
	// Closing the file drops the flock.
	return f.Close()
}
