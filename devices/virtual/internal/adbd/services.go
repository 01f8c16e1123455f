//go:build linux

package adbd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"syscall"

	"github.com/agentoslab/agentlab/devices/virtual/internal/proc"
)

// Features is what this daemon implements, and so all it advertises in
// its banner: the adb CLI picks protocols from this list.
var Features = []string{"shell_v2", "stat_v2", "ls_v2", "fixed_push_mkdir"}

// Hooks is what the daemon needs from the device it runs in.
type Hooks struct {
	// Reaper starts every process (the init's, inside a device).
	Reaper *proc.Reaper
	// Shell is the path of sh inside the device.
	Shell string
	// Env returns the environment of a shell started for uid.
	Env func(uid int, term string) []string
	// UID returns the uid adbd runs as now: 2000, or 0 after adb root.
	UID func() int
	// Root handles root: (true) and unroot: (false): the line to print and
	// whether adbd restarts, dropping every connection.
	Root func(enable bool) (reply string, restart bool)
	// Reboot asks the device to reboot; target is what follows "reboot:".
	Reboot func(target string)
}

type serviceFunc func(ctx context.Context, st *stream)

func noCleanup() {}

// service sets up the service named dest. An error rejects the OPEN;
// cleanup releases what setup took if the stream never starts.
func (s *Server) service(c *conn, dest string) (run serviceFunc, cleanup func(), err error) {
	switch name, _, _ := strings.Cut(dest, ":"); name {
	case "tcp", "localabstract", "localreserved", "localfilesystem", "local":
		sock, err := s.dialSocket(dest)
		if err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context, st *stream) { pump(st, sock) }, func() { sock.Close() }, nil
	}
	run, err = s.setup(c, dest)
	return run, noCleanup, err
}

func (s *Server) setup(c *conn, dest string) (serviceFunc, error) {
	name, arg, _ := strings.Cut(dest, ":")
	switch {
	case name == "shell" || strings.HasPrefix(name, "shell,"):
		return s.shellService(strings.Split(name, ",")[1:], arg), nil
	case name == "exec":
		return s.shellService([]string{"raw"}, arg), nil
	case dest == "sync:":
		return s.syncService(), nil
	case name == "reverse":
		return func(ctx context.Context, st *stream) { c.reverse(st, arg) }, nil
	case dest == "root:" || dest == "unroot:":
		return s.rootService(dest == "root:"), nil
	case name == "reboot":
		return func(ctx context.Context, st *stream) {
			// Like adbd, never answer: the stream ends when the device
			// drops the connection, so "adb reboot" returns only once the
			// server has seen the device go away.
			s.cfg.Hooks.Reboot(arg)
			select {
			case <-st.Done():
			case <-ctx.Done():
			}
		}, nil
	case name == "remount":
		return s.textService(func() string {
			if s.cfg.Hooks.UID() != 0 {
				return "Not running as root. Try \"adb root\" first.\n"
			}
			return "remount succeeded: /system of a virtual device is always writable\n"
		}), nil
	case name == "tcpip":
		return s.textService(func() string {
			return "tcpip is not supported: a virtual device is always reached over TCP at the serial it was connected with\n"
		}), nil
	case dest == "usb:":
		return s.textService(func() string { return "usb is not supported: a virtual device has no USB\n" }), nil
	}
	return nil, fmt.Errorf("unknown service %q", serviceKind(dest))
}

func (s *Server) textService(text func() string) serviceFunc {
	return func(ctx context.Context, st *stream) { io.WriteString(st, text()) }
}

func (s *Server) rootService(enable bool) serviceFunc {
	return func(ctx context.Context, st *stream) {
		reply, restart := s.cfg.Hooks.Root(enable)
		if _, err := io.WriteString(st, reply); err != nil {
			return
		}
		if restart {
			// adbd restarts: the reply has been acknowledged, so drop the
			// connection before the stream ends; the adb CLI sees the
			// device go away and waits for it to come back.
			s.DropAll()
		}
	}
}

// credFor returns the credential of a process adbd starts as uid.
func credFor(uid int) *syscall.Credential {
	if uid == 0 {
		return nil
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: proc.Groups(uid)}
}
