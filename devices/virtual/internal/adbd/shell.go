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

// shellService runs a shell command, or an interactive shell for an empty
// command. args are the comma-separated options after "shell": v2 selects
// the shell protocol; pty and raw choose the terminal (default: a pty for
// an interactive shell, pipes for a command, as adbd); TERM= is passed on.
func (s *Server) shellService(args []string, command string) serviceFunc {
	v2, term := false, ""
	usePty := command == ""
	for _, a := range args {
		switch {
		case a == "v2":
			v2 = true
		case a == "pty":
			usePty = true
		case a == "raw":
			usePty = false
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
		if usePty && term == "" {
			term = "dumb"
		}
		sh := &shell{s: s, st: st, v2: v2, uid: uid, pty: usePty, cmd: &proc.Cmd{
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
	uid int
	pty bool
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

// ends are the daemon's side of the command's stdio.
type ends struct {
	stdin         *os.File   // written by the daemon
	stdout        *os.File   // read by the daemon (the pty master in pty mode)
	stderr        *os.File   // nil when stderr goes to stdout
	child         []*os.File // the command's fds 0, 1, 2
	pty           bool
	closeChildren func()
}

// plumb creates the command's stdio: a pty (when asked for and the device
// has one), or pipes — one for stdout and stderr together in v1, two in v2.
func (sh *shell) plumb() (*ends, error) {
	if sh.pty {
		master, slave, err := openPty(sh.uid)
		if err == nil {
			return &ends{stdin: master, stdout: master, child: []*os.File{slave, slave, slave}, pty: true,
				closeChildren: func() { slave.Close() }}, nil
		}
		sh.s.log.Debug("no pty, using pipes", "err", err)
	}
	var opened []*os.File
	pipe := func() (r, w *os.File, err error) {
		r, w, err = os.Pipe()
		if err == nil {
			opened = append(opened, r, w)
		}
		return r, w, err
	}
	fail := func(err error) (*ends, error) {
		for _, f := range opened {
			f.Close()
		}
		return nil, err
	}
	inR, inW, err := pipe()
	if err != nil {
		return fail(err)
	}
	outR, outW, err := pipe()
	if err != nil {
		return fail(err)
	}
	e := &ends{stdin: inW, stdout: outR, child: []*os.File{inR, outW, outW}}
	if sh.v2 {
		errR, errW, err := pipe()
		if err != nil {
			return fail(err)
		}
		e.stderr, e.child[2] = errR, errW
	}
	e.closeChildren = func() {
		for _, f := range e.child {
			f.Close()
		}
	}
	return e, nil
}

func (sh *shell) run() {
	e, err := sh.plumb()
	if err != nil {
		sh.fail(err)
		return
	}
	sh.cmd.Files = e.child
	sh.cmd.Ctty = e.pty
	p, err := sh.s.cfg.Hooks.Reaper.Start(sh.cmd)
	e.closeChildren()
	if err != nil {
		e.stdin.Close()
		if !e.pty {
			e.stdout.Close()
		}
		if e.stderr != nil {
			e.stderr.Close()
		}
		sh.fail(err)
		return
	}

	var wg sync.WaitGroup
	copyOut := func(r *os.File, id byte) {
		defer wg.Done()
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
			// A pty master reads EIO once no process holds the slave.
			if err != nil {
				return
			}
		}
	}
	wg.Add(1)
	go copyOut(e.stdout, adbwire.ShellStdout)
	if e.stderr != nil {
		wg.Add(1)
		go copyOut(e.stderr, adbwire.ShellStderr)
	}

	// Input: the stream's bytes (v1) or stdin packets (v2). When the host
	// closes the stream the command is hung up on.
	inDone := make(chan struct{})
	go func() {
		defer close(inDone)
		sh.input(e)
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
	e.stdout.Close()
	if e.stderr != nil {
		e.stderr.Close()
	}
	if !e.pty {
		e.stdin.Close()
	}
}

// input feeds the command's stdin until the host closes it (v2
// close-stdin, ignored on a pty, which has no half-close) or the stream.
func (sh *shell) input(e *ends) {
	w := e.stdin
	if !sh.v2 {
		io.Copy(w, sh.st)
		if !e.pty {
			w.Close()
		}
		return
	}
	stdinOpen := true
	for {
		id, data, err := adbwire.ReadShellPacket(sh.st, adbwire.MaxShellPacketLen)
		if err != nil {
			if stdinOpen && !e.pty {
				w.Close()
			}
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
			if stdinOpen && !e.pty {
				w.Close()
				stdinOpen = false
			}
		case adbwire.ShellWindowSize:
			if e.pty {
				setWindowSize(w, string(data))
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
