//go:build linux

package adbd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
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
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid), Groups: []uint32{}}
}

// shellService runs a shell command (or an interactive shell for an empty
// command). args are the comma-separated options after "shell": v2 selects
// the shell protocol; raw, pty and TERM= are accepted (there is no pty: an
// interactive shell reads the stream as a pipe).
func (s *Server) shellService(args []string, command string) serviceFunc {
	v2, term := false, ""
	for _, a := range args {
		switch {
		case a == "v2":
			v2 = true
		case strings.HasPrefix(a, "TERM="):
			term = strings.TrimPrefix(a, "TERM=")
		}
	}
	return func(ctx context.Context, st *stream) {
		uid := s.cfg.Hooks.UID()
		argv := []string{"sh"}
		if command != "" {
			argv = append(argv, "-c", command)
		}
		sh := &shell{s: s, st: st, v2: v2, cmd: &proc.Cmd{
			Path: s.cfg.Hooks.Shell, Args: argv, Env: s.cfg.Hooks.Env(uid, term),
			Dir: "/", Cred: credFor(uid), Setsid: true,
		}}
		sh.run()
	}
}

type shell struct {
	s   *Server
	st  *stream
	v2  bool
	cmd *proc.Cmd

	wmu sync.Mutex // one packet at a time on the stream
}

func (sh *shell) packet(id byte, data []byte) error {
	sh.wmu.Lock()
	defer sh.wmu.Unlock()
	if !sh.v2 {
		_, err := sh.st.Write(data)
		return err
	}
	_, err := sh.st.Write(adbwire.AppendShellPacket(make([]byte, 0, len(data)+adbwire.ShellHeaderSize), id, data))
	return err
}

func (sh *shell) run() {
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		sh.fail(err)
		return
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		stdinR.Close()
		stdinW.Close()
		sh.fail(err)
		return
	}
	errR, errW := outR, outW
	if sh.v2 {
		if errR, errW, err = os.Pipe(); err != nil {
			stdinR.Close()
			stdinW.Close()
			outR.Close()
			outW.Close()
			sh.fail(err)
			return
		}
	}
	sh.cmd.Files = []*os.File{stdinR, outW, errW}
	p, err := sh.s.cfg.Hooks.Reaper.Start(sh.cmd)
	stdinR.Close()
	outW.Close()
	if sh.v2 {
		errW.Close()
	}
	if err != nil {
		stdinW.Close()
		outR.Close()
		if sh.v2 {
			errR.Close()
		}
		sh.fail(err)
		return
	}

	var wg sync.WaitGroup
	copyOut := func(r *os.File, id byte) {
		defer wg.Done()
		defer r.Close()
		buf := make([]byte, 64<<10)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				if sh.packet(id, buf[:n]) != nil {
					// The host is gone: stop the command.
					p.KillGroup(syscall.SIGKILL)
					io.Copy(io.Discard, r)
					return
				}
			}
			if err != nil {
				return
			}
		}
	}
	wg.Add(1)
	go copyOut(outR, adbwire.ShellStdout)
	if sh.v2 {
		wg.Add(1)
		go copyOut(errR, adbwire.ShellStderr)
	}

	// Input: the stream's bytes (v1) or stdin packets (v2). When the host
	// closes the stream the command is hung up on.
	inDone := make(chan struct{})
	go func() {
		defer close(inDone)
		sh.input(stdinW)
		stdinW.Close()
	}()
	go func() {
		select {
		case <-sh.st.Done():
			p.KillGroup(syscall.SIGHUP)
			t := time.NewTimer(2 * time.Second)
			defer t.Stop()
			select {
			case <-p.Done():
			case <-t.C:
				p.KillGroup(syscall.SIGKILL)
			}
		case <-p.Done():
		}
	}()

	wg.Wait()
	code, _ := p.Wait(context.Background())
	if sh.v2 {
		sh.packet(adbwire.ShellExit, []byte{byte(code)})
	}
	sh.st.Close()
	<-inDone
}

// input feeds the command's stdin until the host closes it (v2
// close-stdin) or the stream.
func (sh *shell) input(w *os.File) {
	if !sh.v2 {
		io.Copy(w, sh.st)
		return
	}
	stdinOpen := true
	for {
		id, data, err := adbwire.ReadShellPacket(sh.st, adbwire.MaxShellPacketLen)
		if err != nil {
			return
		}
		switch id {
		case adbwire.ShellStdin:
			if stdinOpen {
				if _, err := w.Write(data); err != nil {
					stdinOpen = false
				}
			}
		case adbwire.ShellCloseStdin:
			if stdinOpen {
				w.Close()
				stdinOpen = false
			}
		}
	}
}

// fail reports a command that could not start: exit status 126, as adbd.
func (sh *shell) fail(err error) {
	sh.s.log.Debug("shell start failed", "err", err)
	msg := []byte(fmt.Sprintf("sh: %v\n", errors.Unwrap(err)))
	if sh.v2 {
		sh.packet(adbwire.ShellStderr, msg)
		sh.packet(adbwire.ShellExit, []byte{126})
	} else {
		sh.packet(0, msg)
	}
}
