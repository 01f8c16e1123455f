//go:build linux

package peer

import (
	"errors"
	"fmt"
	"net"

	"golang.org/x/sys/unix"
)

// Cred returns the peer's pid, uid and gid.
func Cred(c net.Conn) (*unix.Ucred, error) {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return nil, errors.New("peer credentials: not a unix socket")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("peer credentials: %w", err)
	}
	var cred *unix.Ucred
	var serr error
	err = raw.Control(func(fd uintptr) {
		cred, serr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err == nil {
		err = serr
	}
	if err != nil {
		return nil, fmt.Errorf("peer credentials: %w", err)
	}
	return cred, nil
}

// UID returns the peer's uid.
func UID(c net.Conn) (int, error) {
	cr, err := Cred(c)
	if err != nil {
		return -1, err
	}
	return int(cr.Uid), nil
}
