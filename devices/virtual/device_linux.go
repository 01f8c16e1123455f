//go:build linux

package virtual

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/devices/virtual/internal/boot"
	"github.com/agentoslab/agentlab/devices/virtual/internal/netd"
	"github.com/agentoslab/agentlab/devices/virtual/internal/tools"
	"golang.org/x/sys/unix"
)

const (
	lockFile  = "lock"
	runFile   = "run.json"
	initLog   = "init.log"
	bootLimit = 60 * time.Second
	// maxInitLog bounds init.log across boots.
	maxInitLog = 1 << 20
)

// Init must be the first call in main() of any binary that starts
// virtual devices (agentlab, test binaries via TestMain): when the process
// was started as a device init, as a tool inside a device, or as a
// detached device keeper, it runs that and exits; otherwise it returns at
// once.
func Init() {
	initCalled.Store(true)
	if os.Getenv(boot.EnvInit) != "" && os.Getpid() == 1 {
		os.Exit(boot.Main())
	}
	if tools.InDevice() {
		os.Exit(tools.Main(os.Args))
	}
	if os.Getenv(envKeeper) != "" {
		os.Exit(runKeeper())
	}
}

// initCalled records that Init ran: without it, the binary re-executed
// as a device's init would run its own main inside the device.
var initCalled atomic.Bool

// errNoInit is returned by Start when Init was not called.
var errNoInit = errors.New("virtual device: call virtual.Init() first thing in main (and in TestMain): this binary is re-executed as the device's init")

// Device is a running virtual device owned by this process.
type Device struct {
	name, root string
	port       int
	log        *slog.Logger

	lnFile *os.File     // the adb listener, inherited by every boot's init
	netd   *netd.Server // the device's dnsproxyd, served from the host side
	lock   *os.File     // flock held while the device runs
	done   chan struct{}
	exited chan struct{} // the supervisor has returned

	// mu guards the fields that follow.
	mu       sync.Mutex
	initPID  int
	stopping bool
}

// Serial is what "adb connect" takes: "127.0.0.1:<port>".
func (d *Device) Serial() string { return "127.0.0.1:" + strconv.Itoa(d.port) }

// Name is the device's name.
func (d *Device) Name() string { return d.name }

// Root is the device's folder on the host.
func (d *Device) Root() string { return d.root }

// InitPID is the host pid of the current init (it changes on reboot).
func (d *Device) InitPID() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.initPID
}

// Done is closed when the device dies or is stopped; not on reboot.
func (d *Device) Done() <-chan struct{} { return d.done }

// hasSysAdmin reports whether this process holds CAP_SYS_ADMIN.
func hasSysAdmin() bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
			return err == nil && caps&(1<<unix.CAP_SYS_ADMIN) != 0
		}
	}
	return false
}

// Start boots a device and returns once it answers adb (boot completed).
// The device belongs to this process: it dies with it.
func Start(ctx context.Context, opts *Options) (*Device, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if !hasSysAdmin() {
		return nil, fmt.Errorf("virtual device needs root (CAP_SYS_ADMIN) to create Linux namespaces: %w", ErrUnsupported)
	}
	if !initCalled.Load() {
		return nil, errNoInit
	}
	if err := o.normalize(); err != nil {
		return nil, err
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(o.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("start virtual device: %w", err)
	}
	name, lock, err := claim(o.StateDir, o.Name)
	if err != nil {
		return nil, err
	}
	d := &Device{name: name, root: filepath.Join(o.StateDir, name), log: log.With("vdevice", name),
		lock: lock, done: make(chan struct{}), exited: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			d.release()
		}
	}()
	for _, sub := range []string{"data", "system", "sdcard"} {
		if err := os.MkdirAll(filepath.Join(d.root, sub), 0o755); err != nil {
			return nil, fmt.Errorf("start virtual device %s: %w", name, err)
		}
	}
	ln, err := listen(o.Port)
	if err != nil {
		return nil, fmt.Errorf("start virtual device %s: %w", name, err)
	}
	d.port = ln.Addr().(*net.TCPAddr).Port
	d.lnFile, err = ln.File()
	ln.Close()
	if err != nil {
		return nil, fmt.Errorf("start virtual device %s: %w", name, err)
	}
	if err := d.android(&o); err != nil {
		return nil, fmt.Errorf("start virtual device %s: %w", name, err)
	}
	// os.Executable may fail or name a file already replaced; installTool
	// then copies the running binary.
	exe, _ := os.Executable()
	if err := installTool(toolFile(d.root), exe, selfExe); err != nil {
		return nil, fmt.Errorf("start virtual device %s: %w", name, err)
	}
	cfg := boot.Config{Name: name, HostRoot: d.root, RootMethod: o.RootMethod, SDK: o.SDK,
		ABI: o.ABI, Props: o.properties(name), Debug: os.Getenv("AGENTLAB_VDEVICE_DEBUG") != "",
		Netd: netdSocket(d.root), Hide: hiddenHostDirs()}
	b, _ := json.MarshalIndent(&cfg, "", "  ")
	if err := os.WriteFile(filepath.Join(d.root, boot.ConfigFile), b, 0o600); err != nil {
		return nil, fmt.Errorf("start virtual device %s: %w", name, err)
	}
	first := make(chan error, 1)
	go d.supervise(first)
	select {
	case err := <-first:
		if err != nil {
			<-d.exited
			return nil, fmt.Errorf("start virtual device %s: %w", name, err)
		}
	case <-ctx.Done():
		d.Stop(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("start virtual device %s: %w", name, ctx.Err())
	}
	ok = true
	d.log.Info("virtual device started", "serial", d.Serial(), "init_pid", d.InitPID())
	return d, nil
}

// claim takes the lock of the named device, or of the first free
// vdev-<n>.
func claim(stateDir, name string) (string, *os.File, error) {
	try := func(n string) (*os.File, error) {
		root := filepath.Join(stateDir, n)
		if err := os.MkdirAll(root, 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(filepath.Join(root, lockFile), os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, err
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, fmt.Errorf("virtual device %s: %w", n, ErrRunning)
			}
			return nil, err
		}
		return f, nil
	}
	if name != "" {
		f, err := try(name)
		return name, f, err
	}
	for n := 1; n <= 1000; n++ {
		name := fmt.Sprintf("vdev-%d", n)
		f, err := try(name)
		if errors.Is(err, ErrRunning) {
			continue
		}
		return name, f, err
	}
	return "", nil, errors.New("start virtual device: no free name vdev-1…vdev-1000")
}

// listen opens the adb listener on 127.0.0.1, avoiding the emulator
// ports for a chosen port.
func listen(port int) (*net.TCPListener, error) {
	if port != 0 {
		ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port})
		if err != nil {
			return nil, err
		}
		return ln, nil
	}
	var held []*net.TCPListener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for range 64 {
		ln, err := net.ListenTCP("tcp4", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			return nil, err
		}
		if p := ln.Addr().(*net.TCPAddr).Port; p >= 5555 && p <= 5585 {
			held = append(held, ln) // keep it so the next try gets another port
			continue
		}
		return ln, nil
	}
	return nil, errors.New("no free port outside 5555-5585")
}

// supervise boots the device, and boots it again each time init asks for
// a reboot, until it halts, dies or is stopped. The result of the first
// boot goes to first.
func (d *Device) supervise(first chan<- error) {
	defer close(d.exited)
	defer d.release()
	// Pdeathsig follows the thread that started the child: keep this
	// goroutine on one thread for the device's life, so init dies with
	// this process and never with a recycled thread.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for boots := 0; ; boots++ {
		cmd, ready, err := d.startInit()
		if err == nil {
			err = waitReady(ready, cmd)
		}
		if err == nil {
			d.writeRun()
		}
		if boots == 0 {
			first <- err
		}
		if err != nil {
			if cmd != nil {
				cmd.Process.Kill()
				cmd.Wait()
			}
			d.log.Error("virtual device boot failed", "err", err)
			return
		}
		err = cmd.Wait()
		d.mu.Lock()
		stopping := d.stopping
		d.mu.Unlock()
		var ee *exec.ExitError
		if !stopping && errors.As(err, &ee) && ee.ExitCode() == boot.ExitReboot {
			d.log.Info("virtual device rebooting")
			continue
		}
		d.log.Info("virtual device down", "state", cmd.ProcessState.String())
		return
	}
}

func (d *Device) startInit() (*exec.Cmd, *os.File, error) {
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	defer readyW.Close()
	// The log spans boots (a reboot's story is in the boot before it),
	// bounded by starting over once it is large.
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if st, err := os.Stat(filepath.Join(d.root, initLog)); err == nil && st.Size() > maxInitLog {
		flags |= os.O_TRUNC
	}
	logf, err := os.OpenFile(filepath.Join(d.root, initLog), flags, 0o644)
	if err != nil {
		readyR.Close()
		return nil, nil, err
	}
	defer logf.Close()
	cmd := &exec.Cmd{
		Path:       toolFile(d.root),
		Args:       []string{"agentlab-vdevice-init"},
		Env:        []string{boot.EnvInit + "=" + filepath.Join(d.root, boot.ConfigFile)},
		Dir:        "/",
		Stdin:      nil,
		Stdout:     logf,
		Stderr:     logf,
		ExtraFiles: []*os.File{d.lnFile, readyW},
		SysProcAttr: &syscall.SysProcAttr{
			Cloneflags: unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC,
			Pdeathsig:  syscall.SIGKILL,
			Setsid:     true,
		},
	}
	if err := cmd.Start(); err != nil {
		readyR.Close()
		if errors.Is(err, syscall.EPERM) {
			return nil, nil, fmt.Errorf("virtual device needs root (CAP_SYS_ADMIN) to create Linux namespaces: %w", ErrUnsupported)
		}
		return nil, nil, fmt.Errorf("start init: %w", err)
	}
	d.mu.Lock()
	d.initPID = cmd.Process.Pid
	d.mu.Unlock()
	return cmd, readyR, nil
}

// waitReady reads the init's one-line report.
func waitReady(ready *os.File, cmd *exec.Cmd) error {
	defer ready.Close()
	ready.SetReadDeadline(time.Now().Add(bootLimit))
	line, err := bufio.NewReader(ready).ReadString('\n')
	line = strings.TrimSpace(line)
	switch {
	case line == "ready":
		return nil
	case strings.HasPrefix(line, "error: "):
		return errors.New(strings.TrimPrefix(line, "error: "))
	case err != nil && errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("init did not finish booting within %s", bootLimit)
	}
	return fmt.Errorf("init exited while booting (see %s)", initLog)
}

type runState struct {
	PID     int    `json:"pid"`
	InitPID int    `json:"init_pid"`
	Port    int    `json:"port"`
	Serial  string `json:"serial"`
}

func (d *Device) writeRun() {
	b, _ := json.Marshal(runState{PID: os.Getpid(), InitPID: d.InitPID(), Port: d.port, Serial: d.Serial()})
	os.WriteFile(filepath.Join(d.root, runFile), b, 0o644)
}

// release frees what the device holds on the host once it is down.
func (d *Device) release() {
	if d.lnFile != nil {
		d.lnFile.Close()
	}
	if d.netd != nil {
		d.netd.Close()
	}
	os.Remove(filepath.Join(d.root, runFile))
	if d.lock != nil {
		d.lock.Close()
	}
	select {
	case <-d.done:
	default:
		close(d.done)
	}
}

// Stop shuts the device down: init ends every process inside, and the
// namespaces, mounts and in-device forwards go with them. Idempotent.
func (d *Device) Stop(ctx context.Context) error {
	d.mu.Lock()
	d.stopping = true
	d.mu.Unlock()
	// SIGTERM asks init to shut down; if a reboot raced with Stop, the
	// new init gets it too. After the grace period, SIGKILL: killing PID 1
	// of the namespace kills everything inside.
	grace := time.NewTimer(5 * time.Second)
	defer grace.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	signalled, sig := 0, unix.SIGTERM
	cancelled := ctx.Done()
	for {
		if pid := d.InitPID(); pid > 0 && pid != signalled {
			unix.Kill(pid, sig)
			signalled = pid
		}
		select {
		case <-d.exited:
			return nil
		case <-tick.C:
		case <-grace.C:
			sig, signalled = unix.SIGKILL, 0
		case <-cancelled:
			sig, signalled, cancelled = unix.SIGKILL, 0, nil
		}
	}
}

// List returns every device under stateDir ("" = the default).
func List(stateDir string) ([]Info, error) {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	entries, err := os.ReadDir(stateDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list virtual devices: %w", err)
	}
	var out []Info
	for _, e := range entries {
		if !e.IsDir() || !nameRE.MatchString(e.Name()) {
			continue
		}
		root := filepath.Join(stateDir, e.Name())
		if _, err := os.Stat(filepath.Join(root, boot.ConfigFile)); err != nil {
			continue
		}
		out = append(out, info(root, e.Name()))
	}
	return out, nil
}

func info(root, name string) Info {
	in := Info{Name: name, Root: root, State: "stopped"}
	if running(root) {
		in.State = "running"
		var rs runState
		if b, err := os.ReadFile(filepath.Join(root, runFile)); err == nil && json.Unmarshal(b, &rs) == nil {
			in.Serial, in.Port, in.PID = rs.Serial, rs.Port, rs.PID
		}
	}
	return in
}

// running probes the device's lock.
func running(root string) bool {
	f, err := os.Open(filepath.Join(root, lockFile))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err != nil {
		return true
	}
	unix.Flock(int(f.Fd()), unix.LOCK_UN)
	return false
}

// Reset wipes a stopped device's /data (and /sdcard): the next boot is
// a first boot, with no modules, no persistent properties, no pushed files.
func Reset(ctx context.Context, stateDir, name string) error {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	if !nameRE.MatchString(name) {
		return fmt.Errorf("reset virtual device %q: bad name", name)
	}
	root := filepath.Join(stateDir, name)
	if _, err := os.Stat(root); err != nil {
		return fmt.Errorf("reset virtual device %s: %w", name, ErrNotFound)
	}
	_, lock, err := claim(stateDir, name)
	if err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	defer lock.Close()
	for _, sub := range []string{"data", "sdcard"} {
		p := filepath.Join(root, sub)
		if err := os.RemoveAll(p); err != nil {
			return fmt.Errorf("reset virtual device %s: %w", name, err)
		}
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("reset virtual device %s: %w", name, err)
		}
	}
	return nil
}
