//go:build linux

package proc

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ShellGroups are the supplementary groups of Android's shell user (uid
// 2000, what adbd runs commands as): input, log, adb, sdcard_rw, sdcard_r,
// net_bt_admin, net_bt, inet, net_bw_stats, readproc, uhid. inet is the one
// that matters here: without it the device refuses AF_INET sockets.
var ShellGroups = []uint32{1004, 1007, 1011, 1015, 1028, 3001, 3002, 3003, 3006, 3009, 3011}

// Groups are the supplementary groups a process of uid gets from adbd
// and su: the shell's for 2000, none otherwise.
func Groups(uid int) []uint32 {
	if uid == 2000 {
		return append([]uint32(nil), ShellGroups...)
	}
	return []uint32{}
}

// RunAs runs fn on a fresh OS thread whose credentials are uid/gid with
// uid's supplementary groups (Groups), and waits for it. Linux credentials are per
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
		groups := Groups(uid)
		var p unsafe.Pointer
		if len(groups) > 0 {
			p = unsafe.Pointer(&groups[0])
		}
		if _, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(groups)), uintptr(p), 0); e != 0 {
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
