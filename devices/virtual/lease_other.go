//go:build !unix

package virtual

import "errors"

// ErrLeased means another live process holds the device's lease.
var ErrLeased = errors.New("virtual device leased by another process")

// Lease is a hold on a virtual device (unix only).
type Lease struct{}

// TakeLease fails: virtual devices need Linux.
func TakeLease(stateDir, name string) (*Lease, error) { return nil, errNotLinux }

// Release does nothing.
func (l *Lease) Release() error { return nil }
