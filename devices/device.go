// Package devices defines the one interface the lab uses for every kind of
// Android target: physical phones and emulators reached through an adb
// server, and the project's virtual devices.
//
// The interface is shaped by what the lab does with a device (probe it, run
// commands with exit codes, move files, reach sockets inside it, reboot it,
// install the runtime module, collect evidence), not by the adb protocol.
// Implementations live in sub-packages: devices/adb wraps a real adb server.
// Errors that callers branch on are the sentinels below, matched with
// errors.Is.
package devices

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"time"
)

// Sentinel errors. Implementations wrap them ("op: %w") so that callers can
// branch with errors.Is; the wrapping text carries the detail.
var (
	// ErrUnsupported: the device lacks the facility (no logcat, no
	// screencap, no shell_v2 where it is required, ...). It is a property
	// of the device, not a fault: retrying will not help.
	ErrUnsupported = errors.New("unsupported by this device")
	// ErrDeviceGone: the device is not reachable through its adb server
	// (absent, offline, unauthorized, or the link dropped mid-call).
	ErrDeviceGone = errors.New("device gone")
	// ErrNoRoot: root was asked for and the device's root method cannot
	// give it (RootNone, su denied, adbd refuses root on a user build).
	ErrNoRoot = errors.New("no root on this device")
	// ErrNotExist: the remote path does not exist. It wraps fs.ErrNotExist
	// so that errors.Is(err, fs.ErrNotExist) holds too.
	ErrNotExist = notExist{}
	// ErrBootTimeout: the device did not finish booting before the
	// context's deadline.
	ErrBootTimeout = errors.New("device did not finish booting")
	// ErrOutputTooLarge: a command produced more output than the
	// implementation's bound; the command's result is discarded.
	ErrOutputTooLarge = errors.New("output exceeds limit")
	// ErrInvalidModule: a module zip has no valid module.prop (Part C.1).
	ErrInvalidModule = errors.New("invalid module zip")
)

type notExist struct{}

func (notExist) Error() string        { return "remote file does not exist" }
func (notExist) Is(target error) bool { return target == fs.ErrNotExist }

// RootMethod is how a device grants root (lab-reference C.3).
type RootMethod string

const (
	// RootMagisk: Magisk's su ("su -v" ends in ":MAGISKSU").
	RootMagisk RootMethod = "magisk"
	// RootKernelSU: KernelSU's su ("su -v" ends in ":KernelSU").
	RootKernelSU RootMethod = "kernelsu"
	// RootADB: no su, but adbd restarts as root on request (ro.debuggable=1:
	// eng/userdebug builds, AOSP and Google APIs emulator images).
	RootADB RootMethod = "adb-root"
	// RootNone: no way to root.
	RootNone RootMethod = "none"
)

// Info is what the lab knows about a device after probing it.
type Info struct {
	Serial  string
	Model   string // ro.product.model
	Product string // ro.product.name
	Device  string // ro.product.device
	// APILevel is ro.build.version.sdk.
	APILevel int
	// ABI is ro.product.cpu.abi (arm64-v8a, x86_64, ...).
	ABI string
	// BuildType is ro.build.type (user, userdebug, eng).
	BuildType string
	// Debuggable is ro.debuggable=1.
	Debuggable bool
	// Root is the detected root method; RootVersion is what the root tool
	// printed ("27.0:MAGISKSU", "v1.0.1:KernelSU"), empty otherwise.
	Root        RootMethod
	RootVersion string
	// Features are the adb features the device advertises (shell_v2, ...).
	Features []string
}

// Result is the outcome of a command that ran on the device. A command
// that ran and failed is a Result with a non-zero ExitCode and a nil error;
// an error means the command could not be run or its outcome is unknown.
type Result struct {
	Stdout []byte
	// Stderr is empty on devices without shell_v2: there the device merges
	// stderr into Stdout and the implementation cannot separate them.
	Stderr   []byte
	ExitCode int
}

// FileInfo describes a remote file (sync STAT).
type FileInfo struct {
	Mode    fs.FileMode
	Size    int64
	ModTime time.Time
}

// Battery is the device's battery state. Present is false on devices that
// have none (emulators without a battery HAL, virtual devices); then Level
// is meaningless.
type Battery struct {
	Present bool
	Level   int // percent, 0..100
	// Charging is true when a charger is connected.
	Charging bool
}

// Device is one Android target.
//
// All methods are safe for concurrent use. Every method that talks to the
// device takes a context and returns when it is done; errors wrap the
// sentinels above where one applies.
type Device interface {
	// Serial is the adb serial ("emulator-5554", "127.0.0.1:15555", ...).
	Serial() string
	// State is the adb transport state: "device", "offline",
	// "unauthorized", "recovery", ... An absent device is ErrDeviceGone.
	State(ctx context.Context) (string, error)
	// Info probes properties, features and the root method.
	Info(ctx context.Context) (Info, error)

	// Shell runs cmd with the device's sh and returns its output and exit
	// code (shell v2; on devices without shell_v2 a sentinel recovers the
	// exit code and stderr arrives merged into Stdout).
	Shell(ctx context.Context, cmd string) (Result, error)
	// Su runs cmd as root through the device's root method: su -c for
	// Magisk and KernelSU, a root adbd for adb-root. ErrNoRoot otherwise.
	Su(ctx context.Context, cmd string) (Result, error)

	// Push writes r to the remote path with the given permission bits.
	Push(ctx context.Context, r io.Reader, remote string, mode fs.FileMode) error
	// Pull copies the remote file into w. A missing file is ErrNotExist.
	Pull(ctx context.Context, remote string, w io.Writer) error
	// Stat describes a remote path. A missing path is ErrNotExist.
	Stat(ctx context.Context, remote string) (FileInfo, error)

	// Forward makes the adb server listen on local ("tcp:N", "tcp:0") and
	// relay each connection to remote on the device ("tcp:N",
	// "localabstract:NAME"). It returns the host TCP port, which the
	// server chose when local is "tcp:0".
	Forward(ctx context.Context, local, remote string) (int, error)
	// RemoveForward removes a forward by its local spec ("tcp:N").
	RemoveForward(ctx context.Context, local string) error
	// Reverse makes the device listen on remote ("tcp:N", "tcp:0",
	// "localabstract:NAME") and relay each connection to local on the
	// host ("tcp:N"). It returns the device port chosen for "tcp:0".
	Reverse(ctx context.Context, remote, local string) (int, error)
	// RemoveReverse removes a reverse by its remote spec.
	RemoveReverse(ctx context.Context, remote string) error
	// Dial opens a stream straight to a socket on the device
	// ("localabstract:NAME", "tcp:N") through the adb server, with no
	// forward left behind.
	Dial(ctx context.Context, addr string) (net.Conn, error)

	// Reboot asks the device to reboot and returns once the request was
	// sent; WaitBoot then waits until the device is back in state
	// "device" with sys.boot_completed=1 (after a Reboot, a different boot).
	Reboot(ctx context.Context) error
	WaitBoot(ctx context.Context) error

	// InstallModule installs a Magisk/KernelSU module zip from the host
	// through the device's root method (lab-reference C.2). The module is
	// staged in /data/adb/modules_update; rebooting is the caller's step.
	InstallModule(ctx context.Context, zipPath string) error

	// Logs returns the device log since the given time (zero: all of it).
	// ErrUnsupported when the device has no logcat.
	Logs(ctx context.Context, since time.Time) ([]byte, error)
	// Screenshot returns a PNG of the screen. ErrUnsupported when the
	// device has no screencap.
	Screenshot(ctx context.Context) ([]byte, error)
	// Battery reports the battery; Present=false when there is none.
	Battery(ctx context.Context) (Battery, error)
	// FreeStorage returns the bytes available to the filesystem holding
	// path.
	FreeStorage(ctx context.Context, path string) (int64, error)
}
