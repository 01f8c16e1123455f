// Package adb implements devices.Device for phones, emulators and virtual
// devices behind a real adb server, local or remote ("host:port").
//
// File transfers go through github.com/electricbubble/gadb v0.1.0; what
// gadb lacks (lab-reference B.8: shell v2 exit codes, localabstract and
// tcp:0 forwards, reverse, STAT, devices-l without dropped lines, every
// transport state, raw device streams, root/unroot/reboot) goes through a
// small smart-socket client in internal/hostproto.
package adb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adb/internal/hostproto"
)

// DefaultMaxOutput bounds what one command may return (stdout and stderr
// each), so that a runaway command cannot exhaust the lab's memory.
const DefaultMaxOutput = 64 << 20

// Options configure a Server. The zero value works.
type Options struct {
	// Logger receives debug lines about device lifecycle (reboot, root).
	// Commands, their output and file contents are never logged. Nil
	// discards.
	Logger *slog.Logger
	// MaxOutput bounds stdout and stderr of one command, each. Zero means
	// DefaultMaxOutput.
	MaxOutput int64
	// PollInterval is the longest wait between two probes while waiting
	// for a device (boot, root restart). Zero means 500 ms.
	PollInterval time.Duration
}

// Server is a handle on one adb server. It keeps no connection open:
// every request dials the server, as the adb CLI does.
type Server struct {
	hp   *hostproto.Client
	opts Options
	log  *slog.Logger

	mu      sync.Mutex
	devices map[string]*Device
}

// NewServer returns a handle on the adb server at addr ("127.0.0.1:5037";
// a bare port or empty host means 127.0.0.1).
func NewServer(addr string, opts *Options) *Server {
	if addr == "" {
		addr = "127.0.0.1:5037"
	}
	if !strings.Contains(addr, ":") {
		addr = "127.0.0.1:" + addr
	}
	if strings.HasPrefix(addr, ":") {
		addr = "127.0.0.1" + addr
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.MaxOutput <= 0 {
		o.MaxOutput = DefaultMaxOutput
	}
	if o.PollInterval <= 0 {
		o.PollInterval = 500 * time.Millisecond
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Server{hp: hostproto.New(addr), opts: o, log: log, devices: map[string]*Device{}}
}

// Addr is the server's address.
func (s *Server) Addr() string { return s.hp.Addr() }

// Name identifies the server as an inventory source ("adb:HOST:PORT").
func (s *Server) Name() string { return "adb:" + s.hp.Addr() }

// Version returns the server's protocol version (41 for adb 29 and later).
func (s *Server) Version(ctx context.Context) (int, error) {
	v, err := s.hp.Version(ctx)
	if err != nil {
		return 0, fmt.Errorf("adb version: %w", err)
	}
	return v, nil
}

// DeviceEntry is one device the server lists.
type DeviceEntry struct {
	Serial      string
	State       string // device, offline, unauthorized, recovery, ...
	Product     string
	Model       string
	Device      string
	TransportID int64
}

// Devices lists the server's devices (host:devices-l), offline and
// unauthorized ones included.
func (s *Server) Devices(ctx context.Context) ([]DeviceEntry, error) {
	es, err := s.hp.Devices(ctx)
	if err != nil {
		return nil, fmt.Errorf("adb devices: %w", err)
	}
	out := make([]DeviceEntry, len(es))
	for i, e := range es {
		out[i] = DeviceEntry{Serial: e.Serial, State: e.State, Product: e.Product, Model: e.Model, Device: e.Device, TransportID: e.TransportID}
	}
	return out, nil
}

// Connect asks the server to connect to a TCP device ("127.0.0.1:15555").
// Already connected counts as success.
func (s *Server) Connect(ctx context.Context, addr string) error {
	if _, err := s.hp.Connect(ctx, addr); err != nil {
		return fmt.Errorf("adb connect %s: %w", addr, err)
	}
	return nil
}

// Disconnect drops a TCP device from the server.
func (s *Server) Disconnect(ctx context.Context, addr string) error {
	if err := s.hp.Disconnect(ctx, addr); err != nil {
		return fmt.Errorf("adb disconnect %s: %w", addr, err)
	}
	return nil
}

// Reconnect kicks a device's transport so that the server re-establishes
// it (the second rung of the recovery ladder).
func (s *Server) Reconnect(ctx context.Context, serial string) error {
	if err := s.hp.Reconnect(ctx, serial); err != nil {
		return mapErr("adb reconnect", err)
	}
	return nil
}

// IsTCP reports whether serial names a TCP transport ("host:port"), which
// the server can be asked to connect again.
func IsTCP(serial string) bool {
	i := strings.LastIndexByte(serial, ':')
	if i <= 0 {
		return false
	}
	p, err := strconv.Atoi(serial[i+1:])
	return err == nil && p > 0 && p < 65536
}

// Device returns the handle for serial. Handles are cached: the same
// serial gives the same *Device. The device need not be present yet.
func (s *Server) Device(serial string) *Device {
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.devices[serial]; d != nil {
		return d
	}
	d := newDevice(s, serial)
	s.devices[serial] = d
	return d
}

// mapErr wraps err with op, adding devices.ErrDeviceGone when the server
// says the device is absent or not online, or the stream died mid-call.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var fe *hostproto.FailError
	if errors.As(err, &fe) && fe.Stage == hostproto.StageTransport {
		return fmt.Errorf("%s: %w: %w", op, devices.ErrDeviceGone, err)
	}
	if errors.Is(err, hostproto.ErrNoExitStatus) {
		return fmt.Errorf("%s: %w: %w", op, devices.ErrDeviceGone, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}
