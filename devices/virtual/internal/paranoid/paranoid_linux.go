//go:build linux

package paranoid

import (
	"bufio"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Android's network groups (android_filesystem_config.h).
const (
	AIDInet   = 3003
	AIDNetRaw = 3004
)

// Kernel ABI not (all) in x/sys.
const (
	setModeFilter     = 1          // SECCOMP_SET_MODE_FILTER, seccomp(2)'s operation
	ioctlNotifIDValid = 0x40082102 // SECCOMP_IOCTL_NOTIF_ID_VALID
	notifFlagContinue = 1          // SECCOMP_USER_NOTIF_FLAG_CONTINUE
	retUserNotif      = 0x7fc00000 // SECCOMP_RET_USER_NOTIF
	auditArchX86_64   = 0xc000003e
	auditArchAArch64  = 0xc00000b7

	// seccomp_data offsets.
	offNr   = 0
	offArch = 4
	offArg0 = 16 // low word of args[0] on little-endian ABIs
)

// seccompNotif is struct seccomp_notif.
type seccompNotif struct {
	ID    uint64
	PID   uint32
	Flags uint32
	Data  struct {
		Nr   int32
		Arch uint32
		IP   uint64
		Args [6]uint64
	}
}

// seccompNotifResp is struct seccomp_notif_resp.
type seccompNotifResp struct {
	ID    uint64
	Val   int64
	Error int32
	Flags uint32
}

// Enforcer answers the notifications of the installed filter.
type Enforcer struct {
	fd  int
	log *slog.Logger
}

func arch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return auditArchX86_64, nil
	case "arm64":
		return auditArchAArch64, nil
	}
	return 0, fmt.Errorf("paranoid network: no filter for %s", runtime.GOARCH)
}

// program is the filter: socket(AF_INET|AF_INET6, …) of the native ABI
// notifies, everything else is allowed.
func program(archID uint32) []unix.SockFilter {
	ld := func(k uint32) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_LD | unix.BPF_W | unix.BPF_ABS, K: k}
	}
	jeq := func(k uint32, jt, jf uint8) unix.SockFilter {
		return unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k, Jt: jt, Jf: jf}
	}
	ret := func(k uint32) unix.SockFilter { return unix.SockFilter{Code: unix.BPF_RET | unix.BPF_K, K: k} }
	return []unix.SockFilter{
		ld(offArch),
		jeq(archID, 0, 5), // other ABI → allow
		ld(offNr),
		jeq(uint32(unix.SYS_SOCKET), 0, 3), // not socket → allow
		ld(offArg0),
		jeq(unix.AF_INET, 2, 0),  // → notify
		jeq(unix.AF_INET6, 1, 0), // → notify, else allow
		ret(unix.SECCOMP_RET_ALLOW),
		ret(retUserNotif),
	}
}

// Install filters this process (every thread, and so every process it
// starts from now on) and returns the enforcer whose Serve must run for
// the filtered calls to complete. Sockets this process already holds are
// not affected. It needs CAP_SYS_ADMIN (no no_new_privs is set, so setuid
// binaries keep working).
func Install(log *slog.Logger) (*Enforcer, error) {
	a, err := arch()
	if err != nil {
		return nil, err
	}
	prog := program(a)
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	flags := uintptr(unix.SECCOMP_FILTER_FLAG_NEW_LISTENER | unix.SECCOMP_FILTER_FLAG_TSYNC | unix.SECCOMP_FILTER_FLAG_TSYNC_ESRCH)
	fd, _, errno := unix.Syscall(unix.SYS_SECCOMP, setModeFilter, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(prog)
	if errno != 0 {
		return nil, fmt.Errorf("paranoid network: seccomp: %w", errno)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Enforcer{fd: int(fd), log: log}, nil
}

// Serve answers notifications until the listener fails (the process is
// going down). It runs for the device's life.
func (e *Enforcer) Serve() {
	for {
		var req seccompNotif
		if err := ioctl(e.fd, unix.SECCOMP_IOCTL_NOTIF_RECV, unsafe.Pointer(&req)); err != nil {
			if errors.Is(err, unix.EINTR) || errors.Is(err, unix.ENOENT) {
				continue
			}
			e.log.Error("paranoid network: listener", "err", err)
			return
		}
		allowed, why := HasNetwork(int(req.PID))
		id := req.ID
		if ioctl(e.fd, ioctlNotifIDValid, unsafe.Pointer(&id)) != nil {
			continue // the caller died (and its tid may be reused)
		}
		resp := seccompNotifResp{ID: req.ID}
		if allowed {
			resp.Flags = notifFlagContinue
		} else {
			resp.Error = -int32(unix.EACCES)
			e.log.Debug("paranoid network: socket refused", "tid", req.PID, "why", why)
		}
		if err := ioctl(e.fd, unix.SECCOMP_IOCTL_NOTIF_SEND, unsafe.Pointer(&resp)); err != nil && !errors.Is(err, unix.ENOENT) {
			e.log.Warn("paranoid network: answer", "err", err)
		}
	}
}

func ioctl(fd int, req uint, arg unsafe.Pointer) error {
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg))
	if errno != 0 {
		return errno
	}
	return nil
}

// HasNetwork applies the kernel's rule to the task tid: effective uid 0,
// or inet or net_raw among its effective and supplementary groups. The
// reason says what was found.
func HasNetwork(tid int) (bool, string) {
	f, err := os.Open("/proc/" + strconv.Itoa(tid) + "/status")
	if err != nil {
		return false, err.Error()
	}
	defer f.Close()
	var euid, egid = -1, -1
	var groups []int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		switch k {
		case "Uid":
			if len(fields) > 1 {
				euid, _ = strconv.Atoi(fields[1])
			}
		case "Gid":
			if len(fields) > 1 {
				egid, _ = strconv.Atoi(fields[1])
			}
		case "Groups":
			for _, g := range fields {
				if n, err := strconv.Atoi(g); err == nil {
					groups = append(groups, n)
				}
			}
		}
	}
	if euid == 0 {
		return true, "euid 0"
	}
	for _, g := range append(groups, egid) {
		if g == AIDInet || g == AIDNetRaw {
			return true, "group " + strconv.Itoa(g)
		}
	}
	return false, fmt.Sprintf("euid %d, egid %d, groups %v: not in inet (3003) or net_raw (3004)", euid, egid, groups)
}
