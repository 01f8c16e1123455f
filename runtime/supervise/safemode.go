package supervise

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// LeftSafeMode is what LeaveSafeMode did.
type LeftSafeMode struct {
	// WasInSafeMode says the marker was there (and is gone now).
	WasInSafeMode bool
	// KickedPID is the running supervisor told at once (0: none runs;
	// the next one starts the runtime normally).
	KickedPID int
}

// LeaveSafeMode removes the safe-mode marker under root and kicks the
// running supervisor (SIGUSR1) so it restarts the runtime normally now
// rather than at its next poll. It is `agentosd supervise
// leave-safe-mode` and the module's action.sh.
func LeaveSafeMode(root string) (LeftSafeMode, error) {
	return leaveSafeMode(root, func(pid int) error { return syscall.Kill(pid, syscall.SIGUSR1) })
}

func leaveSafeMode(root string, kick func(pid int) error) (LeftSafeMode, error) {
	p := Paths{Root: root}
	var res LeftSafeMode
	was, err := removeMarker(p)
	if err != nil {
		return res, err
	}
	res.WasInSafeMode = was
	pid, err := runningSupervisor(p.PIDFile())
	if err != nil || pid <= 0 || !res.WasInSafeMode {
		return res, err
	}
	if err := kick(pid); err != nil {
		return res, fmt.Errorf("supervise: kick supervisor %d: %w", pid, err)
	}
	res.KickedPID = pid
	return res, nil
}

// removeMarker removes the safe-mode marker: the one way out of safe
// mode, for leave-safe-mode and for the runtime's request alike.
func removeMarker(p Paths) (was bool, err error) {
	switch err := os.Remove(p.SafeMode()); {
	case err == nil:
		return true, nil
	case !errors.Is(err, os.ErrNotExist):
		return false, fmt.Errorf("supervise: leave safe mode: %w", err)
	}
	return false, nil
}

// takeLeaveRequest reports whether the runtime asked to leave safe mode,
// removing the request so that it counts once.
func takeLeaveRequest(p Paths) bool {
	fi, err := os.Lstat(p.LeaveRequest())
	if err != nil {
		return false
	}
	os.Remove(p.LeaveRequest())
	// Only a regular file the runtime wrote is a request.
	return fi.Mode().IsRegular()
}

// runningSupervisor is the pid in the pid file when a supervisor holds
// its lock (a stale file, or a reused pid, is not signalled); 0 when
// none runs.
func runningSupervisor(path string) (int, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("supervise: pid file: %w", err)
	}
	defer f.Close()
	// flock locks belong to the open file description: our own probe
	// conflicts with the running supervisor's lock even in its process.
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
		unix.Flock(int(f.Fd()), unix.LOCK_UN)
		return 0, nil
	} else if !errors.Is(err, unix.EWOULDBLOCK) {
		return 0, fmt.Errorf("supervise: pid file: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(f, 32))
	if err != nil {
		return 0, fmt.Errorf("supervise: pid file: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("supervise: pid file holds %q", strings.TrimSpace(string(b)))
	}
	return pid, nil
}

// leaveSafeModeMain is `agentosd supervise leave-safe-mode [--root R]`.
func leaveSafeModeMain(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("supervise leave-safe-mode", stderr)
	root := fs.String("root", DefaultRoot, "data root of the supervisor")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return ExitUsage
	}
	res, err := LeaveSafeMode(*root)
	if err != nil {
		fmt.Fprintf(stderr, "agentosd supervise leave-safe-mode: %v\n", err)
		return ExitFailed
	}
	switch {
	case !res.WasInSafeMode:
		fmt.Fprintln(stdout, "AgentOS is not in safe mode")
	case res.KickedPID > 0:
		fmt.Fprintln(stdout, "AgentOS left safe mode; the supervisor restarts the runtime normally")
	default:
		fmt.Fprintln(stdout, "AgentOS left safe mode; the runtime starts normally with the supervisor")
	}
	return ExitOK
}
