//go:build !linux

package virtual

import (
	"context"
	"fmt"
	"net/netip"
)

// Init returns at once: there are no virtual devices off Linux.
func Init() {}

// Device is a running virtual device (Linux only).
type Device struct{}

func (d *Device) Serial() string                 { return "" }
func (d *Device) Name() string                   { return "" }
func (d *Device) Root() string                   { return "" }
func (d *Device) InitPID() int                   { return 0 }
func (d *Device) Done() <-chan struct{}          { c := make(chan struct{}); close(c); return c }
func (d *Device) Stop(ctx context.Context) error { return nil }

var errNotLinux = fmt.Errorf("virtual device needs Linux (namespaces): %w", ErrUnsupported)

// Start fails: virtual devices need Linux.
func Start(ctx context.Context, opts *Options) (*Device, error) { return nil, errNotLinux }

// StartDetached fails: virtual devices need Linux.
func StartDetached(ctx context.Context, opts *Options) (*Info, error) { return nil, errNotLinux }

// StopDetached fails: virtual devices need Linux.
func StopDetached(ctx context.Context, stateDir, name string) error { return errNotLinux }

// Reset fails: virtual devices need Linux.
func Reset(ctx context.Context, stateDir, name string) error { return errNotLinux }

// List finds nothing: virtual devices need Linux.
func List(stateDir string) ([]Info, error) { return nil, nil }

// SetHosts fails: virtual devices need Linux.
func SetHosts(stateDir, name string, hosts map[string][]netip.Addr) error { return errNotLinux }

// Hosts fails: virtual devices need Linux.
func Hosts(stateDir, name string) (map[string][]netip.Addr, error) { return nil, errNotLinux }
