//go:build linux

package virtual

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// A keeper is a detached process that owns one device for a CLI that
// exits: it holds the listener and the init, and stops the device on
// SIGTERM.
const (
	envKeeper  = "AGENTLAB_VDEVICE_KEEPER"
	keeperArg0 = "agentlab-vdevice-keeper"
)

// keeperOptions is the JSON form of Options handed to a keeper.
type keeperOptions struct {
	Name, StateDir, ABI, RootMethod, TimeZone string
	Port, SDK                                 int
	Props                                     map[string]string
	Hosts                                     map[string][]netip.Addr
}

// StartDetached starts a device owned by a new detached keeper process,
// so that it outlives the caller, and returns once it has booted.
func StartDetached(ctx context.Context, opts *Options) (*Info, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("start keeper: %w", err)
	}
	return startDetached(ctx, exe, opts)
}

// startDetached starts the keeper from exe, a binary that calls Init.
func startDetached(ctx context.Context, exe string, opts *Options) (*Info, error) {
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
	ko, _ := json.Marshal(keeperOptions{Name: o.Name, StateDir: o.StateDir, ABI: o.ABI, RootMethod: o.RootMethod,
		Port: o.Port, SDK: o.SDK, Props: o.Props, TimeZone: o.TimeZone, Hosts: o.Hosts})
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("start keeper: %w", err)
	}
	defer r.Close()
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        []string{keeperArg0},
		Env:         append(os.Environ(), envKeeper+"="+string(ko)),
		Dir:         "/",
		ExtraFiles:  []*os.File{w},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	w.Close()
	if err != nil {
		return nil, fmt.Errorf("start keeper: %w", err)
	}
	// The keeper is not waited for: it outlives this process.
	cmd.Process.Release()
	deadline := time.Now().Add(bootLimit + 10*time.Second)
	if dl, ok := ctx.Deadline(); ok && dl.Before(deadline) {
		deadline = dl
	}
	r.SetReadDeadline(deadline)
	line, _ := bufio.NewReader(r).ReadString('\n')
	line = strings.TrimSpace(line)
	if j, ok := strings.CutPrefix(line, "ok "); ok {
		var in Info
		if err := json.Unmarshal([]byte(j), &in); err != nil {
			return nil, fmt.Errorf("start keeper: %w", err)
		}
		return &in, nil
	}
	if msg, ok := strings.CutPrefix(line, "error: "); ok {
		return nil, errors.New(msg)
	}
	return nil, errors.New("start keeper: it exited without starting the device")
}

func runKeeper() int {
	var ko keeperOptions
	err := json.Unmarshal([]byte(os.Getenv(envKeeper)), &ko)
	os.Unsetenv(envKeeper)
	report := os.NewFile(3, "report")
	if err != nil {
		fmt.Fprintf(report, "error: keeper options: %v\n", err)
		return 1
	}
	signal.Ignore(syscall.SIGPIPE)
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	ctx, cancel := context.WithTimeout(context.Background(), bootLimit)
	d, err := Start(ctx, &Options{Name: ko.Name, StateDir: ko.StateDir, Port: ko.Port, SDK: ko.SDK, ABI: ko.ABI,
		RootMethod: ko.RootMethod, Props: ko.Props, TimeZone: ko.TimeZone, Hosts: ko.Hosts})
	cancel()
	if err != nil {
		fmt.Fprintf(report, "error: %v\n", err)
		return 1
	}
	in := info(d.Root(), d.Name())
	b, _ := json.Marshal(in)
	fmt.Fprintf(report, "ok %s\n", b)
	report.Close()
	select {
	case <-sigc:
		d.Stop(context.Background())
	case <-d.Done():
	}
	return 0
}

// StopDetached stops a device owned by a keeper and waits until it is
// down. name is the device's name or the serial StartDetached printed
// (127.0.0.1:PORT). A device owned by another kind of process (a test,
// agentlab run) is not touched: it is stopped by its owner.
func StopDetached(ctx context.Context, stateDir, name string) error {
	if stateDir == "" {
		stateDir = DefaultStateDir()
	}
	name, err := Resolve(stateDir, name)
	if err != nil {
		return fmt.Errorf("stop virtual device: %w", err)
	}
	root := filepath.Join(stateDir, name)
	if _, err := os.Stat(root); err != nil {
		return fmt.Errorf("stop virtual device %s: %w", name, ErrNotFound)
	}
	in := info(root, name)
	if in.State != "running" {
		return nil
	}
	if in.PID <= 0 {
		return fmt.Errorf("stop virtual device %s: owner unknown", name)
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", in.PID))
	if err != nil || string(bytes.SplitN(cmdline, []byte{0}, 2)[0]) != keeperArg0 {
		return fmt.Errorf("stop virtual device %s: it belongs to process %d, which is not a vdevice keeper; stop it there", name, in.PID)
	}
	if err := unix.Kill(in.PID, unix.SIGTERM); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("stop virtual device %s: %w", name, err)
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for running(root) {
		select {
		case <-ctx.Done():
			return fmt.Errorf("stop virtual device %s: %w", name, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}
