// Package emulator provisions Android emulators for the lab, in two ways:
// an AVD provider that drives the local SDK tools (avdmanager, emulator,
// adb), and a container provider on testcontainers-go that runs emulator
// images (or the project's virtual device image) and adopts them into an
// adb server with adb connect. Every container carries the run's id as a
// label so that Reap can remove what a dead run left behind.
package emulator

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adb"
)

// Errors.
var (
	// ErrToolMissing: an SDK tool is not installed where it was looked for.
	ErrToolMissing = errors.New("android sdk tool not found")
	// ErrExited: the emulator process ended before the device booted.
	ErrExited = errors.New("emulator exited")
	// ErrBadPort: emulator console ports are even numbers in 5554..5682.
	ErrBadPort = errors.New("bad emulator port")
)

// AVDOptions configure an AVDProvider. The zero value uses the tools on
// PATH and the adb server on 127.0.0.1:5037.
type AVDOptions struct {
	// SDKRoot, when set, is where the tools are looked up:
	// cmdline-tools/latest/bin/avdmanager, emulator/emulator,
	// platform-tools/adb. Explicit paths below win.
	SDKRoot    string
	AVDManager string
	Emulator   string
	ADB        string
	// Server is the adb server the emulator registers with and the
	// provider waits on. Nil means 127.0.0.1:5037.
	Server *adb.Server
	// BootTimeout bounds Boot from process start to sys.boot_completed=1.
	// Default 5 min.
	BootTimeout time.Duration
	// KillTimeout bounds each rung of Kill (adb emu kill, SIGTERM) before
	// the next. Default 10 s.
	KillTimeout time.Duration
	// ExtraArgs are appended to the emulator command line (e.g. "-gpu",
	// "swiftshader_indirect").
	ExtraArgs []string
	// Env is added to the tools' environment.
	Env []string
	// Logger; nil discards.
	Logger *slog.Logger
}

// AVDProvider creates and boots AVDs with the local SDK.
type AVDProvider struct {
	opts   AVDOptions
	server *adb.Server
	log    *slog.Logger
}

// NewAVDProvider returns a provider. It does not check the tools until
// they are used.
func NewAVDProvider(opts *AVDOptions) *AVDProvider {
	var o AVDOptions
	if opts != nil {
		o = *opts
	}
	if o.BootTimeout <= 0 {
		o.BootTimeout = 5 * time.Minute
	}
	if o.KillTimeout <= 0 {
		o.KillTimeout = 10 * time.Second
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	srv := o.Server
	if srv == nil {
		srv = adb.NewServer("127.0.0.1:5037", &adb.Options{Logger: log})
	}
	return &AVDProvider{opts: o, server: srv, log: log}
}

func (p *AVDProvider) tool(explicit, sdkRel, name string) (string, error) {
	cand := explicit
	if cand == "" && p.opts.SDKRoot != "" {
		cand = filepath.Join(p.opts.SDKRoot, sdkRel)
	}
	if cand == "" {
		cand = name
	}
	path, err := exec.LookPath(cand)
	if err != nil {
		return "", fmt.Errorf("%s: %w", cand, ErrToolMissing)
	}
	return path, nil
}

func (p *AVDProvider) env() []string {
	env := append(os.Environ(), p.opts.Env...)
	if _, port, ok := strings.Cut(p.server.Addr(), ":"); ok {
		// The emulator and adb CLI find the server through this variable.
		env = append(env, "ANDROID_ADB_SERVER_PORT="+port)
	}
	return env
}

// AVD names an AVD to create.
type AVD struct {
	// Name is the AVD's name ([a-zA-Z0-9._-]+).
	Name string
	// Package is the system image, e.g.
	// "system-images;android-34;google_apis;x86_64" (google_apis and
	// default images allow adb root; google_apis_playstore does not).
	Package string
	// Device is the hardware profile, e.g. "pixel_6" (optional).
	Device string
}

// Create runs "avdmanager create avd" (replacing an AVD of that name).
func (p *AVDProvider) Create(ctx context.Context, avd AVD) error {
	if avd.Name == "" || strings.Trim(avd.Name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != "" {
		return fmt.Errorf("create avd: name %q: want [a-zA-Z0-9._-]+", avd.Name)
	}
	if avd.Package == "" {
		return errors.New("create avd: no system image package")
	}
	tool, err := p.tool(p.opts.AVDManager, "cmdline-tools/latest/bin/avdmanager", "avdmanager")
	if err != nil {
		return fmt.Errorf("create avd: %w", err)
	}
	args := []string{"create", "avd", "-n", avd.Name, "-k", avd.Package, "--force"}
	if avd.Device != "" {
		args = append(args, "-d", avd.Device)
	}
	cmd := exec.CommandContext(ctx, tool, args...)
	cmd.Env = p.env()
	// avdmanager asks "Do you wish to create a custom hardware profile?"
	cmd.Stdin = strings.NewReader("no\n")
	out := &tailBuffer{max: 8 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("create avd %s: %w: %s", avd.Name, err, out.String())
	}
	p.log.Info("avd created", "name", avd.Name)
	return nil
}

// Emulator is a running emulator process and its device.
type Emulator struct {
	// Serial is "emulator-PORT".
	Serial string
	// Device is the emulator's device on the provider's adb server.
	Device *adb.Device

	p    *AVDProvider
	cmd  *exec.Cmd
	out  *tailBuffer
	done chan struct{}
	err  error // process exit status, set before done closes

	killOnce sync.Once
	killErr  error
}

// Boot starts "emulator -avd NAME -no-window -no-audio -no-boot-anim
// -port PORT -read-only", waits until the device is "device" on the adb
// server with sys.boot_completed=1, and restarts adbd as root on
// userdebug and eng images. On failure the emulator is killed. On
// success the caller owns the emulator and must Kill it: a goroutine
// waits on the process until it exits.
func (p *AVDProvider) Boot(ctx context.Context, name string, port int) (*Emulator, error) {
	if port < 5554 || port > 5682 || port%2 != 0 {
		return nil, fmt.Errorf("boot %s: port %d: %w", name, port, ErrBadPort)
	}
	tool, err := p.tool(p.opts.Emulator, "emulator/emulator", "emulator")
	if err != nil {
		return nil, fmt.Errorf("boot %s: %w", name, err)
	}
	args := []string{"-avd", name, "-no-window", "-no-audio", "-no-boot-anim", "-port", strconv.Itoa(port), "-read-only"}
	args = append(args, p.opts.ExtraArgs...)
	// Not CommandContext: the emulator outlives Boot's context.
	cmd := exec.Command(tool, args...)
	cmd.Env = p.env()
	out := &tailBuffer{max: 16 << 10}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("boot %s: %w", name, err)
	}
	serial := "emulator-" + strconv.Itoa(port)
	e := &Emulator{Serial: serial, Device: p.server.Device(serial), p: p, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		e.err = cmd.Wait()
		close(e.done)
	}()
	p.log.Info("emulator started", "avd", name, "serial", serial, "pid", cmd.Process.Pid)

	bctx, cancel := context.WithTimeout(ctx, p.opts.BootTimeout)
	defer cancel()
	// The emulator dying ends the wait at once.
	bctx, cancelOnExit := context.WithCancelCause(bctx)
	defer cancelOnExit(nil)
	go func() {
		select {
		case <-e.done:
			cancelOnExit(ErrExited)
		case <-bctx.Done():
		}
	}()
	if err := e.Device.WaitBoot(bctx); err != nil {
		if cause := context.Cause(bctx); errors.Is(cause, ErrExited) {
			err = fmt.Errorf("%w (%v): %s", ErrExited, e.err, out.String())
		}
		_ = e.Kill(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("boot %s: %w", name, err)
	}
	in, err := e.Device.Info(bctx)
	if err != nil {
		_ = e.Kill(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("boot %s: %w", name, err)
	}
	if in.Root == devices.RootADB && (in.BuildType == "userdebug" || in.BuildType == "eng") {
		if err := e.Device.Root(bctx); err != nil {
			_ = e.Kill(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("boot %s: %w", name, err)
		}
	}
	p.log.Info("emulator booted", "serial", serial)
	return e, nil
}

// Done is closed when the emulator process has exited.
func (e *Emulator) Done() <-chan struct{} { return e.done }

// Output is the tail of the emulator's own output.
func (e *Emulator) Output() string { return e.out.String() }

// Kill stops the emulator: "adb emu kill" first (a clean shutdown), then
// SIGTERM, then SIGKILL to its process group, each rung bounded by
// KillTimeout. It returns once the process is gone.
func (e *Emulator) Kill(ctx context.Context) error {
	e.killOnce.Do(func() { e.killErr = e.kill(ctx) })
	return e.killErr
}

func (e *Emulator) kill(ctx context.Context) error {
	wait := func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-e.done:
			return true
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
	select {
	case <-e.done:
		return nil
	default:
	}
	if tool, err := e.p.tool(e.p.opts.ADB, "platform-tools/adb", "adb"); err == nil {
		_, port, _ := strings.Cut(e.p.server.Addr(), ":")
		kctx, cancel := context.WithTimeout(ctx, e.p.opts.KillTimeout)
		cmd := exec.CommandContext(kctx, tool, "-P", port, "-s", e.Serial, "emu", "kill")
		cmd.Env = e.p.env()
		_ = cmd.Run()
		cancel()
		if wait(e.p.opts.KillTimeout) {
			return nil
		}
	}
	pgid := -e.cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	if wait(e.p.opts.KillTimeout) {
		return nil
	}
	_ = syscall.Kill(pgid, syscall.SIGKILL)
	select {
	case <-e.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("kill %s: %w", e.Serial, ctx.Err())
	}
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   bytes.Buffer
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b.Write(p)
	if over := t.b.Len() - t.max; over > 0 {
		t.b.Next(over)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(t.b.String())
}

var _ io.Writer = (*tailBuffer)(nil)
