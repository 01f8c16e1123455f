package supervise

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/supervise/logfile"
	"github.com/agentoslab/agentlab/runtime/transport"
	"golang.org/x/sys/unix"
)

// Defaults.
const (
	// DefaultRoot holds everything the supervisor keeps. It is outside
	// /data/adb (root-only on Android) because the runtime's uid must
	// reach its data, the package table and the apps' code.
	DefaultRoot = "/data/agentos"
	// DefaultRuntimeUID is the runtime's own uid: the top of Android's
	// application range, which the package manager hands out last (it
	// allocates the lowest free uid), and outside the bundles' default
	// range. On Android the supervisor refuses to start if an installed
	// APK has it.
	DefaultRuntimeUID = 19999
	// LogMaxBytes rotates supervisor.log (spec §4.12: 262,144 bytes).
	LogMaxBytes = 256 << 10
)

// Files and directories under the root.
const (
	supervisorDir = "supervisor"     // root only: pid, logs
	pidName       = "supervisor.pid" // flock'ed by the running supervisor
	logName       = "supervisor.log"
	runtimeLog    = "runtime.log"
	statusName    = "status"    // 0644: the runtime shows it in ctl status
	safeModeName  = "safe_mode" // marker: present = stay in safe mode
	runtimeDir    = "runtime"   // the runtime's data dir, owned by its uid
	appsDir       = "apps"      // package table, code, app data
	binDir        = "bin"       // agentosd copied where the runtime's uid can run it
	heartbeatName = "heartbeat"
)

// LeaveRequestName is the file in the runtime's data directory by which
// the runtime asks to leave safe mode (the owner's console, admin
// safemode.leave): it cannot remove the root-owned marker itself, so the
// supervisor does, as leave-safe-mode would.
const LeaveRequestName = "leave_safe_mode"

// Paths are the files of a supervisor root.
type Paths struct{ Root string }

func (p Paths) Supervisor() string { return filepath.Join(p.Root, supervisorDir) }
func (p Paths) PIDFile() string    { return filepath.Join(p.Root, supervisorDir, pidName) }
func (p Paths) Log() string        { return filepath.Join(p.Root, supervisorDir, logName) }
func (p Paths) Status() string     { return filepath.Join(p.Root, statusName) }
func (p Paths) SafeMode() string   { return filepath.Join(p.Root, safeModeName) }
func (p Paths) RuntimeData() string {
	return filepath.Join(p.Root, runtimeDir)
}
func (p Paths) Heartbeat() string { return filepath.Join(p.Root, runtimeDir, heartbeatName) }
func (p Paths) LeaveRequest() string {
	return filepath.Join(p.Root, runtimeDir, LeaveRequestName)
}
func (p Paths) Apps() string     { return filepath.Join(p.Root, appsDir) }
func (p Paths) Agentosd() string { return filepath.Join(p.Root, binDir, "agentosd") }

// Timing are the supervisor's constants (spec §4.12). Zero fields take
// the defaults; tests shorten them.
type Timing struct {
	PollBusy    time.Duration // heartbeat check while tasks run (1 s)
	PollIdle    time.Duration // heartbeat and flag check otherwise (5 s)
	BackoffBase time.Duration // first restart delay (1 s)
	BackoffMax  time.Duration // restart delay cap (60 s)
	ResetAfter  time.Duration // uptime that resets the backoff (60 s)
	LoopWindow  time.Duration // crash-loop window (600 s)
	LoopMax     int           // deaths within the window → safe mode (5)
	BootPoll    time.Duration // sys.boot_completed poll (1 s)
	StopGrace   time.Duration // SIGTERM → SIGKILL for the runtime (15 s)
}

func (t Timing) withDefaults() Timing {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&t.PollBusy, time.Second)
	def(&t.PollIdle, 5*time.Second)
	def(&t.BackoffBase, time.Second)
	def(&t.BackoffMax, 60*time.Second)
	def(&t.ResetAfter, 60*time.Second)
	def(&t.LoopWindow, 600*time.Second)
	def(&t.BootPoll, time.Second)
	def(&t.StopGrace, 15*time.Second)
	if t.LoopMax <= 0 {
		t.LoopMax = 5
	}
	return t
}

// Options configure a Supervisor. The zero value works on a device.
type Options struct {
	// Root holds the supervisor's files; "" means DefaultRoot.
	Root string
	// ModDir is the module's directory ($MODDIR): the supervisor exits
	// when $ModDir/disable or $ModDir/remove appears, and reports the
	// module's version. "" disables both.
	ModDir string
	// RuntimeCmd is the runtime's argv; nil means
	// [<root>/bin/agentosd serve --data <root>/runtime [--socket-prefix P]],
	// with this executable copied to <root>/bin first.
	RuntimeCmd []string
	// RuntimeUID and RuntimeGID run the runtime; 0 means DefaultRuntimeUID
	// (and GID = UID). The runtime never runs as root.
	RuntimeUID, RuntimeGID int
	// Names are the socket names (their prefix reaches the runtime).
	Names transport.Names
	// MinAPI and MaxAPI, when set, are the Android API levels the module
	// supports: on another one (ro.build.version.sdk through Getprop) the
	// runtime runs in safe mode, reason unsupported_api, which cannot be
	// left (an OTA after flashing; customize.sh checked at flash time).
	MinAPI, MaxAPI int
	// Getprop is the getprop binary; "" looks it up in PATH, "-" means
	// none (do not wait for boot).
	Getprop string
	// AndroidPackagesList overrides apps.DefaultAndroidPackagesList.
	AndroidPackagesList string
	// Installer configures the package installer (its directory, the
	// reserved runtime uid and the packages list are set here).
	Installer apps.InstallerOptions
	// Launcher configures the launcher (its Installer, Names and
	// RuntimeUID are set here).
	Launcher launcher.Options
	// Timing are the loop's constants.
	Timing Timing
	// Environ is the environment TZ and ANDROID_* are passed from; nil
	// means os.Environ().
	Environ []string
	// Logger receives the supervisor's log; nil discards. (The command
	// writes it to <root>/supervisor/supervisor.log, rotated at 256 KiB.)
	Logger *slog.Logger
	// Observe, if set, is called with every status written (monitoring
	// and tests). It must not block.
	Observe func(Status)
	// Clock times the restart backoff, the crash-loop window and the
	// uptime that resets the backoff, and stamps the status; nil means
	// the real clock. (Polls and the stop grace are wall time.)
	Clock clock.Clock
}

// ErrAlreadyRunning means another supervisor holds the pid file.
type ErrAlreadyRunning struct{ PID int }

func (e *ErrAlreadyRunning) Error() string {
	return fmt.Sprintf("another supervisor is running (pid %d)", e.PID)
}

// Supervisor guards the runtime and hosts the launcher.
type Supervisor struct {
	o      Options
	t      Timing
	clock  clock.Clock
	paths  Paths
	logger *slog.Logger
	kick   chan struct{}

	// unsupportedAPI is the API level outside MinAPI–MaxAPI ("" when
	// supported or not checked): safe mode that cannot be left.
	unsupportedAPI string

	mu     sync.Mutex
	status Status // guarded by mu
}

// New returns a supervisor; Run runs it.
func New(opts *Options) (*Supervisor, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Root == "" {
		o.Root = DefaultRoot
	}
	root, err := filepath.Abs(o.Root)
	if err != nil {
		return nil, fmt.Errorf("supervise: %w", err)
	}
	o.Root = root
	if o.RuntimeUID == 0 {
		o.RuntimeUID = DefaultRuntimeUID
	}
	if o.RuntimeGID == 0 {
		o.RuntimeGID = o.RuntimeUID
	}
	if o.RuntimeUID <= 0 || o.RuntimeGID <= 0 {
		return nil, errors.New("supervise: the runtime never runs as root")
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.AndroidPackagesList == "" {
		o.AndroidPackagesList = apps.DefaultAndroidPackagesList
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Supervisor{o: o, t: o.Timing.withDefaults(), clock: clock.Or(o.Clock), paths: Paths{o.Root}, logger: logger, kick: make(chan struct{}, 1)}
	s.status.ModuleVersion, s.status.ModuleVersionCode = readModuleProp(o.ModDir)
	return s, nil
}

// Paths returns the supervisor's file layout.
func (s *Supervisor) Paths() Paths { return s.paths }

// Kick starts the runtime if it is stopped (left dead after an idle
// death); it does nothing otherwise. The command sends it on SIGUSR1.
func (s *Supervisor) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Status returns the last status written.
func (s *Supervisor) Status() Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

func (s *Supervisor) setStatus(state State, reason string, pid int, deaths int, safe bool) {
	s.mu.Lock()
	st := s.status
	if st.State != state {
		st.Since = s.clock.Now().UnixMilli()
	}
	st.State, st.Reason, st.RuntimePID, st.Deaths, st.SafeMode = state, reason, pid, deaths, safe
	st.Seq++
	s.status = st
	s.mu.Unlock()
	if err := writeAtomic(s.paths.Status(), st.Marshal(), 0o644); err != nil {
		s.logger.Warn("supervise: status not written", "err", err)
	}
	s.logger.Info("supervise: status", "state", string(state), "reason", reason, "pid", pid, "deaths", deaths)
	if s.o.Observe != nil {
		s.o.Observe(st)
	}
}

// OpenLog opens <root>/supervisor/supervisor.log for the supervisor's
// own log, rotated at LogMaxBytes, creating the directories.
func OpenLog(root string) (io.WriteCloser, error) {
	p := Paths{Root: root}
	s := &Supervisor{o: Options{Root: root}, paths: p}
	if err := s.prepareRoot(); err != nil {
		return nil, err
	}
	return logfile.Open(p.Supervisor(), logName, &logfile.Options{MaxBytes: LogMaxBytes, Mode: 0o600})
}

// lockPID takes the pid file's lock for the process's lifetime.
func lockPID(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		b, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, &ErrAlreadyRunning{PID: pid}
		}
		return nil, err
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, err
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Run supervises until ctx ends (SIGTERM) or the module is disabled or
// removed. It returns *ErrAlreadyRunning when another supervisor runs.
func (s *Supervisor) Run(ctx context.Context) error {
	if err := s.prepareRoot(); err != nil {
		return err
	}
	pidf, err := lockPID(s.paths.PIDFile())
	if err != nil {
		var ar *ErrAlreadyRunning
		if errors.As(err, &ar) {
			return err
		}
		return fmt.Errorf("supervise: pid file: %w", err)
	}
	defer pidf.Close()
	s.logger.Info("supervise: started", "pid", os.Getpid(), "root", s.o.Root, "runtimeUID", s.o.RuntimeUID)
	s.countBoot()
	s.setStatus(StateInit, ReasonBoot, 0, 0, false)

	if s.waitBoot(ctx) {
		return nil
	}
	s.checkAPI(ctx)
	if err := s.checkRuntimeUID(); err != nil {
		s.setStatus(StateStopped, ReasonUIDConflict, 0, 0, false)
		return err
	}
	if err := s.prepareRuntime(); err != nil {
		s.setStatus(StateStopped, ReasonRuntimeStartError, 0, 0, false)
		return err
	}

	inOpts := s.o.Installer
	inOpts.Reserved = append(append([]int(nil), inOpts.Reserved...), s.o.RuntimeUID)
	inOpts.AndroidPackagesList = s.o.AndroidPackagesList
	if inOpts.Logger == nil {
		inOpts.Logger = s.logger
	}
	if inOpts.Clock == nil {
		inOpts.Clock = s.clock
	}
	in, err := apps.OpenInstaller(s.paths.Apps(), &inOpts)
	if err != nil {
		return fmt.Errorf("supervise: %w", err)
	}
	defer in.Close()
	// The launcher's checks are among the rules a fault-injection build
	// breaks; its fault file is under this supervisor's root.
	faultinject.SetRoot(s.o.Root)
	// Bundled apps before the runtime starts, so it finds them in the
	// table; a failure is reported, never fatal.
	if rs := installBundled(ctx, in, s.o.ModDir, s.logger); rs != nil {
		if err := writeAtomic(filepath.Join(s.o.Root, bundledName), marshalBundled(rs), 0o644); err != nil {
			s.logger.Warn("supervise: bundled results not written", "err", err)
		}
	}
	lo := s.o.Launcher
	lo.Installer, lo.Names, lo.RuntimeUID = in, s.o.Names, s.o.RuntimeUID
	if lo.Environ == nil {
		lo.Environ = s.o.Environ
	}
	if lo.Logger == nil {
		lo.Logger = s.logger
	}
	ln, err := launcher.NewServer(&lo)
	if err != nil {
		return fmt.Errorf("supervise: %w", err)
	}
	if err := ln.Start(ctx); err != nil {
		return fmt.Errorf("supervise: %w", err)
	}
	defer ln.Close()

	reason := s.loop(ctx)
	s.setStatus(StateStopped, reason, 0, s.Status().Deaths, s.Status().SafeMode)
	s.logger.Info("supervise: exiting", "reason", reason)
	return nil
}

// prepareRoot creates the root-owned directories.
func (s *Supervisor) prepareRoot() error {
	for _, d := range []struct {
		path string
		mode os.FileMode
	}{{s.o.Root, 0o755}, {s.paths.Supervisor(), 0o700}} {
		if err := os.MkdirAll(d.path, d.mode); err != nil {
			return fmt.Errorf("supervise: %w", err)
		}
		fi, err := os.Lstat(d.path)
		if err != nil {
			return fmt.Errorf("supervise: %w", err)
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !fi.IsDir() || !ok || int(st.Uid) != os.Geteuid() {
			return fmt.Errorf("supervise: %s must be a directory owned by the supervisor's user", d.path)
		}
		if err := os.Chmod(d.path, d.mode); err != nil {
			return fmt.Errorf("supervise: %w", err)
		}
	}
	return nil
}

// prepareRuntime creates the runtime's data directory (owned by its uid,
// 0700) and, for the default command, copies agentosd where that uid can
// run it.
func (s *Supervisor) prepareRuntime() error {
	dir := s.paths.RuntimeData()
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("supervise: runtime data: %w", err)
	}
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return fmt.Errorf("supervise: runtime data %s is not a directory", dir)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && (int(st.Uid) != s.o.RuntimeUID || int(st.Gid) != s.o.RuntimeGID) {
		// The runtime's uid changed (--runtime-uid): hand it everything
		// the previous uid had, or it could not open its own store.
		s.logger.Info("supervise: runtime uid changed; chowning its data", "from", st.Uid, "to", s.o.RuntimeUID)
		if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, s.o.RuntimeUID, s.o.RuntimeGID)
		}); err != nil {
			return fmt.Errorf("supervise: runtime data: %w", err)
		}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("supervise: runtime data: %w", err)
	}
	if s.o.RuntimeCmd != nil {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("supervise: %w", err)
	}
	if err := installCopy(self, s.paths.Agentosd()); err != nil {
		return fmt.Errorf("supervise: install agentosd: %w", err)
	}
	return nil
}

// installCopy copies src to dst (root-owned, 0755, in a 0755 directory)
// unless dst already has the same content.
func installCopy(src, dst string) error {
	want, err := fileDigest(src)
	if err != nil {
		return err
	}
	if got, err := fileDigest(dst); err == nil && bytes.Equal(got, want) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	os.Chmod(filepath.Dir(dst), 0o755)
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := dst + ".tmp"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|unix.O_NOFOLLOW, 0o755)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Chmod(0o755)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, dst)
}

func fileDigest(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	return h.Sum(nil), nil
}

// checkRuntimeUID refuses a runtime uid that an Android package has:
// that app would be admitted to the admin socket as the runtime.
func (s *Supervisor) checkRuntimeUID() error {
	uids, err := apps.AndroidUIDs(s.o.AndroidPackagesList)
	if err != nil {
		return fmt.Errorf("supervise: %w", err)
	}
	if uids[s.o.RuntimeUID] {
		return fmt.Errorf("supervise: runtime uid %d belongs to an installed Android package (%s); choose another with --runtime-uid", s.o.RuntimeUID, s.o.AndroidPackagesList)
	}
	return nil
}

// moduleOff reports whether the module was disabled or marked for removal.
func (s *Supervisor) moduleOff() bool {
	if s.o.ModDir == "" {
		return false
	}
	for _, f := range []string{"disable", "remove"} {
		if _, err := os.Lstat(filepath.Join(s.o.ModDir, f)); err == nil {
			return true
		}
	}
	return false
}

// waitBoot waits for sys.boot_completed=1 when getprop exists. It
// reports true when the supervisor must exit instead (ctx ended, module
// disabled).
// bootCountName keeps the number of supervisor starts under the root.
const bootCountName = "boot_count"

// countBoot increments <root>/boot_count (a start of the supervisor is a
// boot: service.sh runs it once per boot) and puts it in the status.
func (s *Supervisor) countBoot() {
	path := filepath.Join(s.o.Root, bootCountName)
	var n int64
	if b, err := os.ReadFile(path); err == nil {
		n, _ = strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	}
	n = max(n, 0) + 1
	if err := writeAtomic(path, []byte(strconv.FormatInt(n, 10)+"\n"), 0o644); err != nil {
		s.logger.Warn("supervise: boot count not written", "err", err)
	}
	s.mu.Lock()
	s.status.BootCount = n
	s.mu.Unlock()
}

// getprop returns the getprop binary, "" for none.
func (s *Supervisor) getprop() string {
	switch s.o.Getprop {
	case "-":
		return ""
	case "":
		p, _ := exec.LookPath("getprop")
		return p
	}
	return s.o.Getprop
}

// checkAPI records an API level outside MinAPI–MaxAPI.
func (s *Supervisor) checkAPI(ctx context.Context) {
	getprop := s.getprop()
	if getprop == "" || (s.o.MinAPI == 0 && s.o.MaxAPI == 0) {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	out, err := exec.CommandContext(cctx, getprop, "ro.build.version.sdk").Output()
	cancel()
	api, perr := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil || perr != nil {
		s.logger.Warn("supervise: API level unreadable; not checked", "err", errors.Join(err, perr))
		return
	}
	if (s.o.MinAPI > 0 && api < s.o.MinAPI) || (s.o.MaxAPI > 0 && api > s.o.MaxAPI) {
		s.unsupportedAPI = strconv.Itoa(api)
		s.logger.Error("supervise: Android API not supported; safe mode", "api", api, "min", s.o.MinAPI, "max", s.o.MaxAPI)
	}
}

func (s *Supervisor) waitBoot(ctx context.Context) bool {
	getprop := s.getprop()
	if getprop == "" {
		return false
	}
	logged := false
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		out, err := exec.CommandContext(cctx, getprop, "sys.boot_completed").Output()
		cancel()
		if err == nil && strings.TrimSpace(string(out)) == "1" {
			return false
		}
		if !logged {
			s.logger.Info("supervise: waiting for sys.boot_completed=1")
			logged = true
		}
		if s.moduleOff() {
			s.setStatus(StateStopped, ReasonModuleDisabled, 0, 0, false)
			return true
		}
		select {
		case <-ctx.Done():
			s.setStatus(StateStopped, ReasonSupervisorExited, 0, 0, false)
			return true
		case <-time.After(s.t.BootPoll):
		}
	}
}
