package adb

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/electricbubble/gadb"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adb/internal/hostproto"
	"github.com/agentoslab/agentlab/devices/adb/internal/modzip"
	"github.com/agentoslab/agentlab/devices/adb/internal/probe"
)

// Device is one device behind a Server. It implements devices.Device.
type Device struct {
	srv    *Server
	serial string

	mu sync.Mutex // guards the fields that follow
	// features is the device's adb feature list, fetched once per boot.
	features []string
	// root is the detected root method ("" until probed).
	root devices.RootMethod
	// bootBefore is the boot identity recorded by Reboot; WaitBoot waits
	// for a different one. Empty when no reboot is pending.
	bootBefore string
}

var _ devices.Device = (*Device)(nil)

func newDevice(s *Server, serial string) *Device {
	return &Device{srv: s, serial: serial}
}

// Serial is the device's adb serial.
func (d *Device) Serial() string { return d.serial }

// State returns the transport state from the server (get-state).
func (d *Device) State(ctx context.Context) (string, error) {
	st, err := d.srv.hp.State(ctx, d.serial)
	if err != nil {
		var fe *hostproto.FailError
		if errors.As(err, &fe) {
			return "", fmt.Errorf("get-state %s: %w: %w", d.serial, devices.ErrDeviceGone, err)
		}
		return "", fmt.Errorf("get-state %s: %w", d.serial, err)
	}
	return st, nil
}

func (d *Device) featureList(ctx context.Context) ([]string, error) {
	d.mu.Lock()
	f := d.features
	d.mu.Unlock()
	if f != nil {
		return f, nil
	}
	f, err := d.srv.hp.Features(ctx, d.serial)
	if err != nil {
		var fe *hostproto.FailError
		if errors.As(err, &fe) {
			return nil, fmt.Errorf("features %s: %w: %w", d.serial, devices.ErrDeviceGone, err)
		}
		return nil, fmt.Errorf("features %s: %w", d.serial, err)
	}
	if f == nil {
		f = []string{}
	}
	d.mu.Lock()
	d.features = f
	d.mu.Unlock()
	return f, nil
}

// HasFeature reports whether the device advertises an adb feature.
func (d *Device) HasFeature(ctx context.Context, name string) (bool, error) {
	f, err := d.featureList(ctx)
	if err != nil {
		return false, err
	}
	return slices.Contains(f, name), nil
}

// Info probes the device's properties and root method in one shell round
// trip.
func (d *Device) Info(ctx context.Context) (devices.Info, error) {
	f, err := d.featureList(ctx)
	if err != nil {
		return devices.Info{}, err
	}
	res, err := d.Shell(ctx, probe.InfoScript())
	if err != nil {
		return devices.Info{}, fmt.Errorf("probe %s: %w", d.serial, err)
	}
	in := probe.Info(string(res.Stdout))
	in.Serial = d.serial
	in.Features = slices.Clone(f)
	d.mu.Lock()
	d.root = in.Root
	d.mu.Unlock()
	return in, nil
}

func (d *Device) rootMethod(ctx context.Context) (devices.RootMethod, error) {
	d.mu.Lock()
	r := d.root
	d.mu.Unlock()
	if r != "" {
		return r, nil
	}
	in, err := d.Info(ctx)
	if err != nil {
		return "", err
	}
	return in.Root, nil
}

// limitBuffer is a bytes.Buffer that refuses to grow past max.
type limitBuffer struct {
	bytes.Buffer
	max int64
}

func (b *limitBuffer) Write(p []byte) (int, error) {
	if int64(b.Len()+len(p)) > b.max {
		return 0, devices.ErrOutputTooLarge
	}
	return b.Buffer.Write(p)
}

// Shell runs cmd and returns its output and exit code. With shell_v2 it
// uses "shell,v2,raw:" (exit code, separate stderr); without, "shell:"
// plus a per-call sentinel that carries $? back in stdout.
func (d *Device) Shell(ctx context.Context, cmd string) (devices.Result, error) {
	v2, err := d.HasFeature(ctx, "shell_v2")
	if err != nil {
		return devices.Result{}, fmt.Errorf("shell: %w", err)
	}
	if v2 {
		stdout := &limitBuffer{max: d.srv.opts.MaxOutput}
		stderr := &limitBuffer{max: d.srv.opts.MaxOutput}
		code, err := d.srv.hp.ShellV2(ctx, d.serial, cmd, stdout, stderr)
		if err != nil {
			return devices.Result{}, mapErr("shell", err)
		}
		return devices.Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: code}, nil
	}
	return d.shellV1(ctx, cmd)
}

// shellV1 recovers the exit code on devices without shell_v2: the command
// runs in its own sh (so "exit 3" ends only it), then a random sentinel
// and $? are printed; the last sentinel in the output splits it.
func (d *Device) shellV1(ctx context.Context, cmd string) (devices.Result, error) {
	var nonce [8]byte
	_, _ = rand.Read(nonce[:])
	sentinel := "\x1eAGENTLAB-RC-" + hex.EncodeToString(nonce[:]) + ":"
	wrapped := "sh -c " + Quote(cmd) + "; printf '%s%d\\n' " + Quote(sentinel) + " $?"
	out, err := d.srv.hp.Exec(ctx, d.serial, "shell:"+wrapped, d.srv.opts.MaxOutput)
	if err != nil {
		if errors.Is(err, hostproto.ErrTooLong) {
			return devices.Result{}, fmt.Errorf("shell: %w", devices.ErrOutputTooLarge)
		}
		return devices.Result{}, mapErr("shell", err)
	}
	i := bytes.LastIndex(out, []byte(sentinel))
	if i < 0 {
		return devices.Result{}, fmt.Errorf("shell: no exit status in output: %w", devices.ErrDeviceGone)
	}
	status, late, _ := bytes.Cut(out[i+len(sentinel):], []byte("\n"))
	code, err := strconv.Atoi(string(status))
	if err != nil {
		return devices.Result{}, fmt.Errorf("shell: bad exit status: %w", hostproto.ErrProtocol)
	}
	// Output that arrived after the sentinel (a late write by a child)
	// still belongs to the command.
	return devices.Result{Stdout: append(out[:i:i], late...), ExitCode: code}, nil
}

// Quote quotes s for sh as one word.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// Su runs cmd as root: "su -c" for Magisk and KernelSU, a root adbd for
// adb-root devices (restarting adbd as root first if needed).
func (d *Device) Su(ctx context.Context, cmd string) (devices.Result, error) {
	rm, err := d.rootMethod(ctx)
	if err != nil {
		return devices.Result{}, fmt.Errorf("su: %w", err)
	}
	switch rm {
	case devices.RootMagisk, devices.RootKernelSU:
		return d.Shell(ctx, "su -c "+Quote(cmd))
	case devices.RootADB:
		if err := d.Root(ctx); err != nil {
			return devices.Result{}, fmt.Errorf("su: %w", err)
		}
		return d.Shell(ctx, cmd)
	default:
		return devices.Result{}, fmt.Errorf("su on %s: %w", d.serial, devices.ErrNoRoot)
	}
}

// SuStream starts cmd as root and returns its stdin and stdout as one
// raw stream ("exec:": no PTY, no shell-protocol framing, so bytes pass
// unchanged both ways). It is for long-lived conversations with a device
// program (the lab's `agentosd ctl --lines`); closing the stream ends
// cmd's stdin. Stderr is the device's business: send it to /dev/null in
// cmd when the stream must carry only cmd's output.
func (d *Device) SuStream(ctx context.Context, cmd string) (net.Conn, error) {
	rm, err := d.rootMethod(ctx)
	if err != nil {
		return nil, fmt.Errorf("su stream: %w", err)
	}
	service := "exec:" + cmd
	switch rm {
	case devices.RootMagisk, devices.RootKernelSU:
		service = "exec:su -c " + Quote(cmd)
	case devices.RootADB:
		if err := d.Root(ctx); err != nil {
			return nil, fmt.Errorf("su stream: %w", err)
		}
	default:
		return nil, fmt.Errorf("su stream on %s: %w", d.serial, devices.ErrNoRoot)
	}
	c, err := d.srv.hp.Dial(ctx, d.serial, service)
	if err != nil {
		return nil, mapErr("su stream", err)
	}
	return c, nil
}

// shellUID returns the uid the device's shell runs as.
func (d *Device) shellUID(ctx context.Context) (string, error) {
	res, err := d.Shell(ctx, "id -u")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// Root restarts adbd as root ("adb root") and waits until the shell runs
// as uid 0. A production build's refusal is ErrNoRoot.
func (d *Device) Root(ctx context.Context) error {
	return d.setRoot(ctx, true)
}

// Unroot restarts adbd as the shell user ("adb unroot") and waits until
// the shell no longer runs as uid 0.
func (d *Device) Unroot(ctx context.Context) error {
	return d.setRoot(ctx, false)
}

func (d *Device) setRoot(ctx context.Context, root bool) error {
	op, svc := "adb root", "root:"
	if !root {
		op, svc = "adb unroot", "unroot:"
	}
	if uid, err := d.shellUID(ctx); err == nil && (uid == "0") == root {
		return nil
	}
	out, err := d.srv.hp.Exec(ctx, d.serial, svc, 4096)
	if err != nil && len(out) == 0 {
		return mapErr(op, err)
	}
	text := strings.TrimSpace(string(out))
	if strings.Contains(text, "cannot run as root") {
		return fmt.Errorf("%s: %s: %w", op, text, devices.ErrNoRoot)
	}
	d.srv.log.Debug("adbd restarting", "serial", d.serial, "root", root)
	// adbd restarts and the transport may drop and come back; wait for the
	// shell's uid rather than for the disconnect, which may be too quick
	// to observe.
	err = d.poll(ctx, func(ctx context.Context) (bool, string) {
		d.dropFeatures()
		uid, err := d.shellUID(ctx)
		if err != nil {
			return false, err.Error()
		}
		return (uid == "0") == root, "shell uid " + uid
	})
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

func (d *Device) dropFeatures() {
	d.mu.Lock()
	d.features = nil
	d.mu.Unlock()
}

// poll calls probe until it reports done or ctx ends, backing off from
// 50 ms up to the server's PollInterval. On timeout the error names the
// last observation.
func (d *Device) poll(ctx context.Context, check func(context.Context) (bool, string)) error {
	wait := 50 * time.Millisecond
	last := ""
	for {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ok, what := check(pctx)
		cancel()
		if ok {
			return nil
		}
		last = what
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting (last: %s): %w", last, ctx.Err())
		case <-t.C:
		}
		wait = min(wait*2, d.srv.opts.PollInterval)
	}
}

// gadbDevice finds gadb's handle for the device. gadb builds handles only
// from host:devices-l lines with product/model/device (B.8 gap 5), which
// every online device has, so a miss means the device is not online.
func (d *Device) gadbDevice() (gadb.Device, error) {
	host, port, err := net.SplitHostPort(d.srv.hp.Addr())
	if err != nil {
		return gadb.Device{}, fmt.Errorf("adb server address: %w", err)
	}
	p, _ := strconv.Atoi(port)
	c, err := gadb.NewClientWith(host, p)
	if err != nil {
		return gadb.Device{}, fmt.Errorf("gadb client: %w", err)
	}
	list, err := c.DeviceList()
	if err != nil {
		return gadb.Device{}, fmt.Errorf("gadb devices: %w", err)
	}
	for _, g := range list {
		if g.Serial() == d.serial {
			return g, nil
		}
	}
	return gadb.Device{}, fmt.Errorf("%s not online: %w", d.serial, devices.ErrDeviceGone)
}

// ctxReader and ctxWriter stop gadb's transfer loops at the next chunk
// once ctx is done (gadb itself takes no context; its own read deadline
// of 60 s bounds a stalled server).
//
// ctxReader also never returns data together with io.EOF: gadb v0.1.0's
// push loop drops the bytes of a Read that ends with io.EOF (zip and
// compress readers do that), so EOF is held back for the next call.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
	eof bool
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if c.eof {
		return 0, io.EOF
	}
	n, err := c.r.Read(p)
	if err == io.EOF && n > 0 {
		c.eof = true
		return n, nil
	}
	return n, err
}

type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

// Push writes r to remote with mode's permission bits (sync SEND through
// gadb).
func (d *Device) Push(ctx context.Context, r io.Reader, remote string, mode fs.FileMode) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("push %s: %w", remote, err)
	}
	g, err := d.gadbDevice()
	if err != nil {
		return fmt.Errorf("push %s: %w", remote, err)
	}
	if err := g.Push(&ctxReader{ctx: ctx, r: r}, remote, time.Now(), mode.Perm()); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("push %s: %w", remote, ctx.Err())
		}
		return fmt.Errorf("push %s: %w", remote, err)
	}
	return nil
}

// Pull copies remote into w (sync RECV through gadb). A missing file is
// devices.ErrNotExist, found with STAT first because gadb reports it only
// as text.
func (d *Device) Pull(ctx context.Context, remote string, w io.Writer) error {
	if _, err := d.Stat(ctx, remote); err != nil {
		return fmt.Errorf("pull: %w", err)
	}
	g, err := d.gadbDevice()
	if err != nil {
		return fmt.Errorf("pull %s: %w", remote, err)
	}
	if err := g.Pull(remote, ctxWriter{ctx, w}); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("pull %s: %w", remote, ctx.Err())
		}
		return fmt.Errorf("pull %s: %w", remote, err)
	}
	return nil
}

// Stat describes remote (sync STAT v1).
func (d *Device) Stat(ctx context.Context, remote string) (devices.FileInfo, error) {
	st, err := d.srv.hp.StatPath(ctx, d.serial, remote)
	if err != nil {
		return devices.FileInfo{}, mapErr("stat "+remote, err)
	}
	if st.Mode == 0 {
		return devices.FileInfo{}, fmt.Errorf("stat %s: %w", remote, devices.ErrNotExist)
	}
	return devices.FileInfo{Mode: unixMode(st.Mode), Size: int64(st.Size), ModTime: time.Unix(int64(st.MTime), 0)}, nil
}

// unixMode converts a st_mode to fs.FileMode.
func unixMode(m uint32) fs.FileMode {
	fm := fs.FileMode(m & 0o777)
	switch m & 0o170000 {
	case 0o040000:
		fm |= fs.ModeDir
	case 0o120000:
		fm |= fs.ModeSymlink
	case 0o010000:
		fm |= fs.ModeNamedPipe
	case 0o140000:
		fm |= fs.ModeSocket
	case 0o020000:
		fm |= fs.ModeDevice | fs.ModeCharDevice
	case 0o060000:
		fm |= fs.ModeDevice
	}
	if m&0o4000 != 0 {
		fm |= fs.ModeSetuid
	}
	if m&0o2000 != 0 {
		fm |= fs.ModeSetgid
	}
	if m&0o1000 != 0 {
		fm |= fs.ModeSticky
	}
	return fm
}

// ErrBadSpec: a forward, reverse or dial address is not one this package
// accepts.
var ErrBadSpec = errors.New("bad socket spec")

func checkSpec(spec string, allowed ...string) error {
	for _, p := range allowed {
		if rest, ok := strings.CutPrefix(spec, p); ok && rest != "" && !strings.ContainsAny(rest, ";\x00") {
			if p == "tcp:" {
				if n, err := strconv.Atoi(rest); err != nil || n < 0 || n > 65535 {
					return fmt.Errorf("%q: %w", spec, ErrBadSpec)
				}
			}
			return nil
		}
	}
	return fmt.Errorf("%q (want %s...): %w", spec, strings.Join(allowed, "... or "), ErrBadSpec)
}

var deviceSockets = []string{"tcp:", "localabstract:", "localreserved:", "localfilesystem:", "local:"}

// Forward forwards local (host, "tcp:N" or "tcp:0") to remote on the
// device ("tcp:N", "localabstract:NAME", ...) and returns the host port.
func (d *Device) Forward(ctx context.Context, local, remote string) (int, error) {
	if err := checkSpec(local, "tcp:"); err != nil {
		return 0, fmt.Errorf("forward: %w", err)
	}
	if err := checkSpec(remote, deviceSockets...); err != nil {
		return 0, fmt.Errorf("forward: %w", err)
	}
	p, err := d.srv.hp.Forward(ctx, d.serial, local, remote, false)
	if err != nil {
		return 0, d.hostErr(ctx, "forward", err)
	}
	return p, nil
}

// hostErr maps a host-serial request's FAIL: an absent or offline device
// is ErrDeviceGone; anything else (bind failures) stays as is. The server
// says which only in text, so the device's state decides.
func (d *Device) hostErr(ctx context.Context, op string, err error) error {
	var fe *hostproto.FailError
	if errors.As(err, &fe) {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if st, serr := d.State(sctx); serr != nil || st != "device" {
			return fmt.Errorf("%s: %w: %w", op, devices.ErrDeviceGone, err)
		}
	}
	return fmt.Errorf("%s: %w", op, err)
}

// RemoveForward removes the forward listening on local.
func (d *Device) RemoveForward(ctx context.Context, local string) error {
	if err := d.srv.hp.KillForward(ctx, d.serial, local); err != nil {
		return d.hostErr(ctx, "remove forward "+local, err)
	}
	return nil
}

// Reverse makes the device listen on remote and relay to local on the
// host ("tcp:N"). It returns the device port chosen for "tcp:0".
func (d *Device) Reverse(ctx context.Context, remote, local string) (int, error) {
	if err := checkSpec(remote, "tcp:", "localabstract:"); err != nil {
		return 0, fmt.Errorf("reverse: %w", err)
	}
	if err := checkSpec(local, "tcp:", "localabstract:"); err != nil {
		return 0, fmt.Errorf("reverse: %w", err)
	}
	p, err := d.srv.hp.Reverse(ctx, d.serial, remote, local, false)
	if err != nil {
		return 0, mapErr("reverse", err)
	}
	return p, nil
}

// RemoveReverse removes the reverse listening on remote.
func (d *Device) RemoveReverse(ctx context.Context, remote string) error {
	if err := d.srv.hp.KillReverse(ctx, d.serial, remote); err != nil {
		return mapErr("remove reverse "+remote, err)
	}
	return nil
}

// Dial opens a stream to a socket on the device; ctx bounds only the
// handshake.
func (d *Device) Dial(ctx context.Context, addr string) (net.Conn, error) {
	if err := checkSpec(addr, deviceSockets...); err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	c, err := d.srv.hp.Dial(ctx, d.serial, addr)
	if err != nil {
		return nil, mapErr("dial "+addr, err)
	}
	return c, nil
}

// bootScript prints an identity that changes on every boot: the kernel's
// boot id (a real reboot) and init's start time (a virtual device's
// reboot restarts its init, not the kernel).
const bootScript = `cat /proc/sys/kernel/random/boot_id 2>/dev/null; cut -d' ' -f22 /proc/1/stat 2>/dev/null`

func (d *Device) bootID(ctx context.Context) (string, error) {
	res, err := d.Shell(ctx, bootScript)
	if err != nil {
		return "", err
	}
	return strings.Join(strings.Fields(string(res.Stdout)), "/"), nil
}

// Reboot records the current boot, then sends reboot:. The link dropping
// under the request is expected and not an error.
func (d *Device) Reboot(ctx context.Context) error {
	id, err := d.bootID(ctx)
	if err != nil {
		return fmt.Errorf("reboot %s: %w", d.serial, err)
	}
	d.mu.Lock()
	d.bootBefore = id
	d.mu.Unlock()
	d.srv.log.Debug("rebooting", "serial", d.serial)
	if _, err := d.srv.hp.Exec(ctx, d.serial, "reboot:", 4096); err != nil {
		var fe *hostproto.FailError
		if errors.As(err, &fe) || ctx.Err() != nil {
			return mapErr("reboot "+d.serial, err)
		}
	}
	d.dropFeatures()
	return nil
}

// WaitBoot waits for state "device", sys.boot_completed=1 and, after
// Reboot, a boot different from the one Reboot saw. TCP devices that stay
// away are asked to connect again.
func (d *Device) WaitBoot(ctx context.Context) error {
	d.mu.Lock()
	before := d.bootBefore
	d.mu.Unlock()
	var awaySince time.Time
	err := d.poll(ctx, func(ctx context.Context) (bool, string) {
		st, err := d.State(ctx)
		if err != nil || st != "device" {
			if awaySince.IsZero() {
				awaySince = time.Now()
			} else if IsTCP(d.serial) && time.Since(awaySince) > 3*time.Second {
				_, _ = d.srv.hp.Connect(ctx, d.serial)
				awaySince = time.Now()
			}
			if err != nil {
				return false, err.Error()
			}
			return false, "state " + st
		}
		awaySince = time.Time{}
		d.dropFeatures()
		res, err := d.Shell(ctx, "getprop sys.boot_completed; "+bootScript)
		if err != nil {
			return false, err.Error()
		}
		f := strings.Fields(string(res.Stdout))
		if len(f) == 0 || f[0] != "1" {
			return false, "sys.boot_completed not 1"
		}
		if before != "" && strings.Join(f[1:], "/") == before {
			return false, "still the boot before the reboot"
		}
		return true, ""
	})
	if err != nil {
		return fmt.Errorf("wait boot %s: %w: %w", d.serial, devices.ErrBootTimeout, err)
	}
	d.mu.Lock()
	d.bootBefore = ""
	d.mu.Unlock()
	return nil
}

// moduleStage is where both root solutions stage a module (C.2).
const moduleStage = "/data/adb/modules_update"

// InstallModule installs the module zip at zipPath (C.2): Magisk with
// "magisk --install-module", KernelSU with "ksud module install"; on
// adb-root devices the files are copied into /data/adb/modules_update/ID
// and the "update" flag is set, as Magisk's installer does. Rebooting is
// the caller's step.
func (d *Device) InstallModule(ctx context.Context, zipPath string) error {
	m, err := modzip.Open(zipPath)
	if err != nil {
		return fmt.Errorf("install module: %w", err)
	}
	defer m.Close()
	rm, err := d.rootMethod(ctx)
	if err != nil {
		return fmt.Errorf("install module %s: %w", m.Prop.ID, err)
	}
	switch rm {
	case devices.RootMagisk, devices.RootKernelSU:
		return d.installWithTool(ctx, rm, zipPath, m.Prop.ID)
	case devices.RootADB:
		return d.installByCopy(ctx, m)
	default:
		return fmt.Errorf("install module %s on %s: %w", m.Prop.ID, d.serial, devices.ErrNoRoot)
	}
}

func (d *Device) installWithTool(ctx context.Context, rm devices.RootMethod, zipPath, id string) error {
	op := "install module " + id
	remote := "/data/local/tmp/agentlab-module-" + id + ".zip"
	if err := pushFile(ctx, d, zipPath, remote, 0o644); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	cmd := "magisk --install-module " + Quote(remote)
	if rm == devices.RootKernelSU {
		// ksud lives in /data/adb on real devices (a root-only path).
		cmd = "if [ -x /data/adb/ksud ]; then k=/data/adb/ksud; else k=ksud; fi; $k module install " + Quote(remote)
	}
	res, err := d.Su(ctx, cmd)
	_, _ = d.Shell(context.WithoutCancel(ctx), "rm -f "+Quote(remote))
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if res.ExitCode != 0 {
		return &CommandError{Op: op, Result: res}
	}
	return nil
}

func (d *Device) installByCopy(ctx context.Context, m *modzip.Module) error {
	id := m.Prop.ID
	op := "install module " + id
	if err := d.Root(ctx); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	dir := moduleStage + "/" + id
	dirs := map[string]bool{dir: true}
	for _, f := range m.Files {
		dirs[path.Dir(dir+"/"+f.Name)] = true
	}
	mk := "rm -rf " + Quote(dir) + " && mkdir -p"
	for _, p := range slices.Sorted(maps.Keys(dirs)) {
		mk += " " + Quote(p)
	}
	if res, err := d.Shell(ctx, mk); err != nil || res.ExitCode != 0 {
		return commandErr(op, res, err)
	}
	for _, f := range m.Files {
		rc, err := f.Open()
		if err != nil {
			return fmt.Errorf("%s: read %s: %w", op, f.Name, err)
		}
		err = d.Push(ctx, rc, dir+"/"+f.Name, f.Mode)
		rc.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
	}
	// Magisk's installer leaves an "update" flag and module.prop in the
	// live directory so managers show the pending module.
	live := "/data/adb/modules/" + id
	flag := "mkdir -p " + Quote(live) + " && touch " + Quote(live+"/update") + " && cp " + Quote(dir+"/module.prop") + " " + Quote(live+"/module.prop")
	if res, err := d.Shell(ctx, flag); err != nil || res.ExitCode != 0 {
		return commandErr(op, res, err)
	}
	return nil
}

// CommandError is a device command that ran and failed; it carries the
// result for the report.
type CommandError struct {
	Op     string
	Result devices.Result
}

func (e *CommandError) Error() string {
	msg := strings.TrimSpace(string(e.Result.Stderr))
	if msg == "" {
		msg = strings.TrimSpace(string(e.Result.Stdout))
	}
	if len(msg) > 512 {
		msg = msg[len(msg)-512:]
	}
	return fmt.Sprintf("%s: exit %d: %s", e.Op, e.Result.ExitCode, msg)
}

func commandErr(op string, res devices.Result, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return &CommandError{Op: op, Result: res}
}

// hasCommand reports whether the device's shell finds name.
func (d *Device) hasCommand(ctx context.Context, name string) (bool, error) {
	res, err := d.Shell(ctx, "command -v "+name+" >/dev/null 2>&1")
	if err != nil {
		return false, err
	}
	return res.ExitCode == 0, nil
}

// Logs dumps logcat since the given time (threadtime format).
func (d *Device) Logs(ctx context.Context, since time.Time) ([]byte, error) {
	ok, err := d.hasCommand(ctx, "logcat")
	if err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("logs on %s: no logcat: %w", d.serial, devices.ErrUnsupported)
	}
	cmd := "logcat -d -v threadtime"
	if !since.IsZero() {
		cmd += fmt.Sprintf(" -T %d.%03d", since.Unix(), since.Nanosecond()/1e6)
	}
	res, err := d.Shell(ctx, cmd)
	if err != nil {
		return nil, fmt.Errorf("logs: %w", err)
	}
	if res.ExitCode != 0 {
		return nil, &CommandError{Op: "logcat", Result: res}
	}
	return res.Stdout, nil
}

var pngMagic = []byte("\x89PNG\r\n\x1a\n")

// Screenshot returns screencap's PNG.
func (d *Device) Screenshot(ctx context.Context) ([]byte, error) {
	ok, err := d.hasCommand(ctx, "screencap")
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	if !ok {
		return nil, fmt.Errorf("screenshot on %s: no screencap: %w", d.serial, devices.ErrUnsupported)
	}
	v2, err := d.HasFeature(ctx, "shell_v2")
	if err != nil {
		return nil, fmt.Errorf("screenshot: %w", err)
	}
	var png []byte
	if v2 {
		res, err := d.Shell(ctx, "screencap -p")
		if err != nil {
			return nil, fmt.Errorf("screenshot: %w", err)
		}
		if res.ExitCode != 0 {
			return nil, &CommandError{Op: "screencap", Result: res}
		}
		png = res.Stdout
	} else {
		// exec: keeps binary output intact where shell v1 has no framing.
		png, err = d.srv.hp.Exec(ctx, d.serial, "exec:screencap -p", d.srv.opts.MaxOutput)
		if err != nil {
			return nil, mapErr("screenshot", err)
		}
	}
	if !bytes.HasPrefix(png, pngMagic) {
		return nil, fmt.Errorf("screenshot: screencap output is not a PNG: %w", hostproto.ErrProtocol)
	}
	return png, nil
}

// Battery reads dumpsys battery, else the battery power supply in sysfs;
// a device with neither has no battery.
func (d *Device) Battery(ctx context.Context) (devices.Battery, error) {
	res, err := d.Shell(ctx, "dumpsys battery 2>/dev/null")
	if err != nil {
		return devices.Battery{}, fmt.Errorf("battery: %w", err)
	}
	if res.ExitCode == 0 {
		if b, err := probe.Battery(string(res.Stdout)); err == nil {
			return b, nil
		}
	}
	res, err = d.Shell(ctx, "cat /sys/class/power_supply/battery/capacity /sys/class/power_supply/battery/present 2>/dev/null")
	if err != nil {
		return devices.Battery{}, fmt.Errorf("battery: %w", err)
	}
	b, err := probe.SysfsBattery(string(res.Stdout))
	if err != nil {
		return devices.Battery{Present: false}, nil
	}
	return b, nil
}

// FreeStorage returns the bytes available on the filesystem of path
// (df -Pk).
func (d *Device) FreeStorage(ctx context.Context, p string) (int64, error) {
	res, err := d.Shell(ctx, "df -Pk "+Quote(p))
	if err != nil {
		return 0, fmt.Errorf("free storage: %w", err)
	}
	if res.ExitCode != 0 {
		return 0, &CommandError{Op: "df " + p, Result: res}
	}
	n, err := probe.DFAvailable(string(res.Stdout))
	if err != nil {
		return 0, fmt.Errorf("free storage of %s: %w", p, err)
	}
	return n, nil
}
