package pool

import (
	"context"
	"io"
	"io/fs"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/devices"
)

// fakeDev is a device whose health the test sets field by field.
type fakeDev struct {
	serial string

	mu      sync.Mutex
	state   string // adb state; "device" is healthy
	boot    string // sys.boot_completed
	hang    bool   // shell never answers
	battery devices.Battery
	free    int64
	root    devices.RootMethod
	suOK    bool
	modules map[string]bool
	abi     string
	api     int
	// rebootFixes makes Reboot+WaitBoot bring the device back.
	rebootFixes bool
	reboots     int
}

func newFakeDev(serial string) *fakeDev {
	return &fakeDev{serial: serial, state: "device", boot: "1", battery: devices.Battery{Present: true, Level: 90},
		free: 4 << 30, root: devices.RootMagisk, suOK: true, modules: map[string]bool{}, abi: "x86_64", api: 34}
}

func (f *fakeDev) set(fn func(f *fakeDev)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeDev) Serial() string { return f.serial }

func (f *fakeDev) State(ctx context.Context) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state == "" {
		return "", devices.ErrDeviceGone
	}
	return f.state, nil
}

func (f *fakeDev) Info(ctx context.Context) (devices.Info, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.state != "device" {
		return devices.Info{}, devices.ErrDeviceGone
	}
	return devices.Info{Serial: f.serial, ABI: f.abi, APILevel: f.api, Root: f.root, Model: "Fake"}, nil
}

// reachable waits like a real shell: a hung device blocks until ctx ends.
func (f *fakeDev) reachable(ctx context.Context) error {
	f.mu.Lock()
	state, hang := f.state, f.hang
	f.mu.Unlock()
	if state != "device" {
		return devices.ErrDeviceGone
	}
	if hang {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

func (f *fakeDev) Shell(ctx context.Context, cmd string) (devices.Result, error) {
	if err := f.reachable(ctx); err != nil {
		return devices.Result{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if cmd == "getprop sys.boot_completed" {
		return devices.Result{Stdout: []byte(f.boot + "\n")}, nil
	}
	return devices.Result{}, nil
}

func (f *fakeDev) Su(ctx context.Context, cmd string) (devices.Result, error) {
	if err := f.reachable(ctx); err != nil {
		return devices.Result{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.root == devices.RootNone {
		return devices.Result{}, devices.ErrNoRoot
	}
	if !f.suOK {
		return devices.Result{Stderr: []byte("permission denied"), ExitCode: 1}, nil
	}
	if cmd == "id -u" {
		return devices.Result{Stdout: []byte("0\n")}, nil
	}
	if _, rest, ok := strings.Cut(cmd, "/data/adb/modules/"); ok {
		id, _, _ := strings.Cut(rest, "/")
		if f.modules[id] {
			return devices.Result{}, nil
		}
		return devices.Result{ExitCode: 1}, nil
	}
	return devices.Result{}, nil
}

func (f *fakeDev) Battery(ctx context.Context) (devices.Battery, error) {
	if err := f.reachable(ctx); err != nil {
		return devices.Battery{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.battery, nil
}

func (f *fakeDev) FreeStorage(ctx context.Context, path string) (int64, error) {
	if err := f.reachable(ctx); err != nil {
		return 0, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.free, nil
}

func (f *fakeDev) Reboot(ctx context.Context) error {
	if err := f.reachable(ctx); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reboots++
	return nil
}

func (f *fakeDev) WaitBoot(ctx context.Context) error {
	f.mu.Lock()
	fixes := f.rebootFixes
	f.mu.Unlock()
	if !fixes {
		<-ctx.Done()
		return devices.ErrBootTimeout
	}
	// Booting takes a while, on the fake clock.
	select {
	case <-time.After(20 * time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	f.set(func(f *fakeDev) { f.state, f.boot, f.hang = "device", "1", false })
	return nil
}

func (f *fakeDev) Push(context.Context, io.Reader, string, fs.FileMode) error { return nil }
func (f *fakeDev) Pull(context.Context, string, io.Writer) error              { return nil }
func (f *fakeDev) Stat(context.Context, string) (devices.FileInfo, error) {
	return devices.FileInfo{}, devices.ErrNotExist
}
func (f *fakeDev) Forward(context.Context, string, string) (int, error) {
	return 0, devices.ErrUnsupported
}
func (f *fakeDev) RemoveForward(context.Context, string) error { return nil }
func (f *fakeDev) Reverse(context.Context, string, string) (int, error) {
	return 0, devices.ErrUnsupported
}
func (f *fakeDev) RemoveReverse(context.Context, string) error    { return nil }
func (f *fakeDev) Dial(context.Context, string) (net.Conn, error) { return nil, devices.ErrUnsupported }
func (f *fakeDev) InstallModule(context.Context, string) error    { return devices.ErrUnsupported }
func (f *fakeDev) Logs(context.Context, time.Time) ([]byte, error) {
	return nil, devices.ErrUnsupported
}
func (f *fakeDev) Screenshot(context.Context) ([]byte, error) { return nil, devices.ErrUnsupported }

var _ devices.Device = (*fakeDev)(nil)

// fakeSource lists fake devices; it can reconnect and connect TCP ones.
type fakeSource struct {
	mu      sync.Mutex
	devs    []*fakeDev
	hidden  map[string]bool
	tcp     bool
	onRecon func(serial string)
	onConn  func(serial string)
	calls   []string
	fail    error // listing fails with this
}

func (s *fakeSource) set(fn func(s *fakeSource)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

func (s *fakeSource) Name() string { return "fake" }

func (s *fakeSource) Devices(ctx context.Context) ([]Found, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fail != nil {
		return nil, s.fail
	}
	var out []Found
	for _, d := range s.devs {
		if s.hidden[d.serial] {
			continue
		}
		st, _ := d.State(ctx)
		if st == "" {
			st = "offline"
		}
		out = append(out, Found{Serial: d.serial, State: st, Device: d})
	}
	return out, nil
}

func (s *fakeSource) hide(serial string, hidden bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hidden == nil {
		s.hidden = map[string]bool{}
	}
	s.hidden[serial] = hidden
}

func (s *fakeSource) Reconnect(ctx context.Context, serial string) error {
	s.mu.Lock()
	s.calls = append(s.calls, "reconnect "+serial)
	fn := s.onRecon
	s.mu.Unlock()
	if fn != nil {
		fn(serial)
	}
	return nil
}

func (s *fakeSource) CanConnect(serial string) bool { return s.tcp }

func (s *fakeSource) Connect(ctx context.Context, serial string) error {
	s.mu.Lock()
	s.calls = append(s.calls, "connect "+serial)
	fn := s.onConn
	s.mu.Unlock()
	if fn != nil {
		fn(serial)
	}
	return nil
}
