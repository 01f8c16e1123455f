package supervise

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/clock"
)

// Exit codes of `agentosd supervise`.
const (
	ExitOK             = 0
	ExitFailed         = 1
	ExitUsage          = 2
	ExitAlreadyRunning = 3
)

// CLI is what `agentosd supervise` gets from its command: where to write
// and, from the signal handling that only the command does, when to
// kick a stopped runtime (SIGUSR1).
type CLI struct {
	Stdout io.Writer // leave-safe-mode's answer
	Stderr io.Writer
	Kick   <-chan struct{}
	// Clock, when set, returns the clock for the runtime data directory
	// given (the lab's build follows serve's virtual clock there) and
	// its stop; nil means the real clock.
	Clock func(runtimeData string, log *slog.Logger) (c clock.Clock, stop func())
}

// Main runs `agentosd supervise [flags] [-- RUNTIME ARGV…]` until ctx
// ends (SIGTERM) or the module is disabled, and returns the exit code.
// The argv after "--" replaces the runtime's command (tests, labs).
// `agentosd supervise leave-safe-mode [--root R]` leaves safe mode.
func Main(ctx context.Context, args []string, cli CLI) int {
	if cli.Stderr == nil {
		cli.Stderr = io.Discard
	}
	if len(args) > 0 && args[0] == "leave-safe-mode" {
		if cli.Stdout == nil {
			cli.Stdout = io.Discard
		}
		return leaveSafeModeMain(args[1:], cli.Stdout, cli.Stderr)
	}
	var runtimeCmd []string
	for i, a := range args {
		if a == "--" {
			runtimeCmd, args = args[i+1:], args[:i]
			break
		}
	}
	fs := newFlagSet("supervise", cli.Stderr)
	var o Options
	fs.StringVar(&o.Root, "root", DefaultRoot, "data root of the supervisor, the runtime and the apps")
	fs.StringVar(&o.ModDir, "moddir", os.Getenv("MODDIR"), "module directory: exit when its disable or remove flag appears")
	fs.IntVar(&o.RuntimeUID, "runtime-uid", DefaultRuntimeUID, "uid (and gid) the runtime runs as; never 0")
	fs.StringVar(&o.Names.Prefix, "socket-prefix", "", "socket-name prefix (several runtimes on one host)")
	fs.StringVar(&o.Names.Dir, "socket-dir", "", "directory for socket files where abstract sockets do not exist")
	fs.StringVar(&o.Getprop, "getprop", "", `getprop binary to wait for sys.boot_completed ("-": do not wait; default: from PATH)`)
	fs.IntVar(&o.MinAPI, "min-api", 0, "lowest supported Android API level: below it, safe mode unsupported_api (0: unchecked)")
	fs.IntVar(&o.MaxAPI, "max-api", 0, "highest supported Android API level (0: unchecked)")
	uids := fs.String("uid-range", fmt.Sprintf("%d-%d", 10100, 19998), "uids given to installed apps")
	logStderr := fs.Bool("log-stderr", false, "also write the log to stderr")
	// Loop constants (spec §4.12); changed only by tests and labs.
	fs.DurationVar(&o.Timing.PollBusy, "poll-busy", 0, "heartbeat check while tasks run (default 1s)")
	fs.DurationVar(&o.Timing.PollIdle, "poll-idle", 0, "heartbeat and flag check otherwise (default 5s)")
	fs.DurationVar(&o.Timing.BackoffBase, "backoff-base", 0, "first restart delay (default 1s)")
	fs.DurationVar(&o.Timing.BackoffMax, "backoff-max", 0, "restart delay cap (default 60s)")
	fs.DurationVar(&o.Timing.ResetAfter, "reset-after", 0, "uptime that resets the backoff (default 60s)")
	fs.DurationVar(&o.Timing.LoopWindow, "loop-window", 0, "crash-loop window (default 10m)")
	fs.IntVar(&o.Timing.LoopMax, "loop-max", 0, "deaths within the window that mean safe mode (default 5)")
	fs.DurationVar(&o.Timing.StopGrace, "stop-grace", 0, "SIGTERM to SIGKILL for the runtime (default 15s)")
	fs.DurationVar(&o.Launcher.StartTimeout, "app-start-timeout", 0, "time an app's server has to listen (default 10s)")
	if err := fs.Parse(args); err != nil {
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(cli.Stderr, "agentosd supervise: unexpected argument %q (runtime command goes after --)\n", fs.Arg(0))
		return ExitUsage
	}
	first, last, ok := parseRange(*uids)
	if !ok {
		fmt.Fprintf(cli.Stderr, "agentosd supervise: --uid-range %q: want FIRST-LAST\n", *uids)
		return ExitUsage
	}
	o.Installer.FirstUID, o.Installer.LastUID = first, last
	if len(runtimeCmd) > 0 {
		o.RuntimeCmd = runtimeCmd
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(cli.Stderr, "agentosd supervise: must run as root (it starts the runtime and the apps under their own uids)")
		return ExitFailed
	}
	logw, err := OpenLog(o.Root)
	if err != nil {
		fmt.Fprintf(cli.Stderr, "agentosd supervise: %v\n", err)
		return ExitFailed
	}
	defer logw.Close()
	var out io.Writer = logw
	if *logStderr {
		out = io.MultiWriter(logw, cli.Stderr)
	}
	o.Logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if cli.Clock != nil {
		c, stop := cli.Clock(Paths{Root: o.Root}.RuntimeData(), o.Logger)
		defer stop()
		o.Clock = c
	}
	s, err := New(&o)
	if err != nil {
		fmt.Fprintf(cli.Stderr, "agentosd supervise: %v\n", err)
		return ExitUsage
	}
	if cli.Kick != nil {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-cli.Kick:
					if !ok {
						return
					}
					s.Kick()
				}
			}
		}()
	}
	if err := s.Run(ctx); err != nil {
		var ar *ErrAlreadyRunning
		if errors.As(err, &ar) {
			fmt.Fprintf(cli.Stderr, "agentosd supervise: %v; not starting a second one\n", err)
			return ExitAlreadyRunning
		}
		fmt.Fprintf(cli.Stderr, "agentosd supervise: %v\n", err)
		return ExitFailed
	}
	return ExitOK
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

func parseRange(s string) (int, int, bool) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, false
	}
	first, err1 := strconv.Atoi(a)
	last, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || first <= 0 || last < first {
		return 0, 0, false
	}
	return first, last, true
}

// RuntimeEnv is what the supervisor tells the runtime it starts
// (environment variables AGENTOS_ROOT and AGENTOS_SAFE_MODE).
type RuntimeEnv struct {
	// Root is the supervisor's root; "" when the runtime was started by
	// hand (no supervisor: no apps, no launcher).
	Root string
	// SafeMode says the runtime must refuse new tasks (safe_mode).
	SafeMode bool
}

// FromEnv reads RuntimeEnv from the process environment (for serve).
func FromEnv(getenv func(string) string) RuntimeEnv {
	return RuntimeEnv{Root: getenv("AGENTOS_ROOT"), SafeMode: getenv("AGENTOS_SAFE_MODE") == "1"}
}

// StatusPath is the status file under root.
func (e RuntimeEnv) StatusPath() string { return Paths{Root: e.Root}.Status() }

// AppsDir is the package table's directory under root.
func (e RuntimeEnv) AppsDir() string { return Paths{Root: e.Root}.Apps() }

// RuntimeGroups are the runtime's supplementary groups: inet, because it
// reaches model providers and session MCP servers, and on Android a
// non-root process opens AF_INET sockets only with it.
func RuntimeGroups() []uint32 { return []uint32{apps.InetGID} }

// RuntimeIdentity is who the runtime under root runs as: the running
// runtime's uid, gid and groups (from /proc, so what the supervisor
// really gave) when the status file names one, else the defaults
// (DefaultRuntimeUID and RuntimeGroups). Diagnostics run as it to see
// what the runtime sees.
func RuntimeIdentity(root string) *syscall.Credential {
	def := &syscall.Credential{Uid: DefaultRuntimeUID, Gid: DefaultRuntimeUID, Groups: RuntimeGroups()}
	st, err := ReadStatus(Paths{Root: root}.Status())
	if err != nil || st.RuntimePID <= 0 {
		return def
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(st.RuntimePID) + "/status")
	if err != nil {
		return def
	}
	c := &syscall.Credential{Groups: []uint32{}}
	var haveUID, haveGID bool
	for _, line := range strings.Split(string(b), "\n") {
		k, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		switch {
		case k == "Uid" && len(f) > 1:
			n, err := strconv.ParseUint(f[1], 10, 32)
			c.Uid, haveUID = uint32(n), err == nil
		case k == "Gid" && len(f) > 1:
			n, err := strconv.ParseUint(f[1], 10, 32)
			c.Gid, haveGID = uint32(n), err == nil
		case k == "Groups":
			for _, g := range f {
				if n, err := strconv.ParseUint(g, 10, 32); err == nil {
					c.Groups = append(c.Groups, uint32(n))
				}
			}
		}
	}
	if !haveUID || !haveGID || c.Uid == 0 {
		return def
	}
	return c
}
