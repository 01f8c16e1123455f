// Package peercred reads the kernel's identity of the process on the
// other end of a unix socket (SO_PEERCRED). It is the only identity the
// runtime and the virtual device's services trust, so both read it here:
// one implementation, one place to audit.
package peercred

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// Cred is a peer's identity as the kernel reports it.
type Cred struct {
	UID int
	GID int
	PID int
}

// ErrNotUnix means the connection is not a unix socket, so the kernel
// has no credentials to report.
var ErrNotUnix = errors.New("peer credentials: not a unix socket")

// Of returns the credentials of the process on the other end of c, read
// from the socket (the values the peer had when it connected).
func Of(c net.Conn) (Cred, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return Cred{}, fmt.Errorf("%w (%T)", ErrNotUnix, c)
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return Cred{}, fmt.Errorf("peer credentials: %w", err)
	}
	var ucred *unix.Ucred
	var serr error
	if err := raw.Control(func(fd uintptr) {
		ucred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return Cred{}, fmt.Errorf("peer credentials: %w", err)
	}
	if serr != nil {
		return Cred{}, fmt.Errorf("peer credentials: %w", serr)
	}
	return Cred{UID: int(ucred.Uid), GID: int(ucred.Gid), PID: int(ucred.Pid)}, nil
}
