//go:build linux

package adbd

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// openPty opens a new pty pair in the device's devpts; the slave is given
// to uid, as login does.
func openPty(uid int) (master, slave *os.File, err error) {
	fd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	master = os.NewFile(uintptr(fd), "ptmx")
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("pty number: %w", err)
	}
	name := "/dev/pts/" + strconv.Itoa(n)
	sfd, err := unix.Open(name, unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("open %s: %w", name, err)
	}
	unix.Fchown(sfd, uid, uid)
	return master, os.NewFile(uintptr(sfd), name), nil
}

// setWindowSize applies a shell v2 window-size packet, "ROWSxCOLS,XxY".
func setWindowSize(pty *os.File, spec string) error {
	var ws unix.Winsize
	chars, pixels, _ := strings.Cut(spec, ",")
	r, c, ok := strings.Cut(chars, "x")
	if !ok {
		return fmt.Errorf("window size %q", spec)
	}
	rows, err1 := strconv.ParseUint(r, 10, 16)
	cols, err2 := strconv.ParseUint(c, 10, 16)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("window size %q", spec)
	}
	ws.Row, ws.Col = uint16(rows), uint16(cols)
	if x, y, ok := strings.Cut(pixels, "x"); ok {
		xp, _ := strconv.ParseUint(x, 10, 16)
		yp, _ := strconv.ParseUint(y, 10, 16)
		ws.Xpixel, ws.Ypixel = uint16(xp), uint16(yp)
	}
	return unix.IoctlSetWinsize(int(pty.Fd()), unix.TIOCSWINSZ, &ws)
}
