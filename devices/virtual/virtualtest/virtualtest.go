// Package virtualtest boots virtual devices for tests and benchmarks: a
// device behind a private, real adb server, connected and booted, stopped
// when the test ends. The test binary is every device's init, so its
// TestMain must call virtual.Init first.
package virtualtest

import (
	"context"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/devices/adbserver"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/testenv"
)

// Device is a booted virtual device and the adb server it is adopted by.
type Device struct {
	VD *virtual.Device
	// ADB is the private adb server; Server talks to it.
	ADB    *adbserver.Server
	Server *adb.Server
	// Dev is the device through the adb server, booted.
	Dev *adb.Device
}

// Start boots a virtual device with o (nil for the defaults; StateDir
// defaults to a temporary directory), or skips where this host cannot.
// Cleanups stop the device and the server; a test's own cleanups
// registered after Start run before them (the device is still up).
func Start(tb testing.TB, o *virtual.Options) *Device {
	tb.Helper()
	testenv.NeedVirtualDevices(tb)
	opts := virtual.Options{}
	if o != nil {
		opts = *o
	}
	if opts.StateDir == "" {
		opts.StateDir = tb.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := adbserver.Start(ctx, nil)
	if err != nil {
		tb.Fatalf("adb server: %v", err)
	}
	tb.Cleanup(func() { srv.Close() })
	vd, err := virtual.Start(ctx, &opts)
	if err != nil {
		tb.Fatalf("virtual device: %v", err)
	}
	tb.Cleanup(func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		vd.Stop(sctx)
	})
	s := adb.NewServer(srv.Addr(), nil)
	if err := s.Connect(ctx, vd.Serial()); err != nil {
		tb.Fatalf("adb connect: %v", err)
	}
	dev := s.Device(vd.Serial())
	if err := dev.WaitBoot(ctx); err != nil {
		tb.Fatalf("boot: %v", err)
	}
	return &Device{VD: vd, ADB: srv, Server: s, Dev: dev}
}
