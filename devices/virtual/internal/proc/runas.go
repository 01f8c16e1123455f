//go:build linux

package proc

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// RunAs runs fn on a fresh OS thread whose credentials are uid/gid with no
// supplementary groups, and waits for it. Linux credentials are per
// thread; the raw syscalls below change only this thread (unlike
// syscall.Setuid, which Go applies to every thread), and the thread is
// never unlocked, so it dies with the goroutine instead of going back to
// the pool. Files fn creates are owned by uid, permission checks are uid's,
// and a unix socket fn connects carries uid in SO_PEERCRED — as with adbd
// running as the shell user. uid 0 runs fn directly.
func RunAs(uid, gid int, fn func() error) error {
	if uid == 0 && gid == 0 {
		return fn()
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, 0, 0, 0); e != 0 {
			errc <- fmt.Errorf("run as %d: setgroups: %w", uid, e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESGID, uintptr(gid), uintptr(gid), uintptr(gid)); e != 0 {
			errc <- fmt.Errorf("run as %d: setresgid: %w", uid, e)
			return
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, uintptr(uid), uintptr(uid), uintptr(uid)); e != 0 {
			errc <- fmt.Errorf("run as %d: setresuid: %w", uid, e)
			return
		}
		errc <- fn()
	}()
	return <-errc
}
