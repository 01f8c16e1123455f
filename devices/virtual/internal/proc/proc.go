//go:build linux

package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// Cmd describes a process to start.
type Cmd struct {
	Path string
	Args []string // Args[0] is argv[0]
	Env  []string
	Dir  string
	// UID and GID the process runs as; nil Cred keeps the caller's.
	Cred *syscall.Credential
	// Files become fds 0, 1, 2, …; a nil entry is closed in the child.
	Files []*os.File
	// Setsid puts the process in a new session and process group, so
	// KillGroup reaches its descendants.
	Setsid bool
	// Ctty makes fd 0 (a pty slave) the controlling terminal of the new
	// session; it needs Setsid.
	Ctty bool
}

// Process is a started process.
type Process struct {
	Pid    int
	done   chan struct{}
	status unix.WaitStatus
}

// Done is closed when the process has exited and been reaped.
func (p *Process) Done() <-chan struct{} { return p.done }

// Wait waits for the exit and returns the shell-style exit code: the exit
// status, or 128+signal for a process killed by a signal.
func (p *Process) Wait(ctx context.Context) (int, error) {
	select {
	case <-p.done:
		return p.ExitCode(), nil
	case <-ctx.Done():
		return -1, ctx.Err()
	}
}

// ExitCode is valid after Done is closed.
func (p *Process) ExitCode() int {
	switch {
	case p.status.Exited():
		return p.status.ExitStatus()
	case p.status.Signaled():
		return 128 + int(p.status.Signal())
	}
	return -1
}

// Signal sends sig to the process.
func (p *Process) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	return unix.Kill(p.Pid, sig)
}

// KillGroup sends sig to the process group led by the process (started
// with Setsid); it reaches the process's descendants too.
func (p *Process) KillGroup(sig syscall.Signal) error {
	err := unix.Kill(-p.Pid, sig)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	return err
}

// Reaper starts processes and reaps them.
type Reaper struct {
	orphans bool
	stop    chan struct{}
	wg      sync.WaitGroup

	// mu guards waiting. Start holds it across fork so that the reap loop
	// can never see a pid before it is registered.
	mu      sync.Mutex
	waiting map[int]*Process
	closed  bool
}

// NewReaper returns a Reaper. With reapOrphans (PID 1 only) it reaps every
// child of the process, including re-parented orphans, and must be the
// only code in the process that waits for children; otherwise each started
// process is waited for individually.
func NewReaper(reapOrphans bool) *Reaper {
	r := &Reaper{orphans: reapOrphans, stop: make(chan struct{}), waiting: map[int]*Process{}}
	if reapOrphans {
		sigc := make(chan os.Signal, 1)
		signal.Notify(sigc, unix.SIGCHLD)
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			defer signal.Stop(sigc)
			for {
				r.reapAll()
				select {
				case <-sigc:
				case <-r.stop:
					return
				}
			}
		}()
	}
	return r
}

// reapAll reaps every zombie child without blocking.
func (r *Reaper) reapAll() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil || pid <= 0 {
			return
		}
		r.mu.Lock()
		p := r.waiting[pid]
		delete(r.waiting, pid)
		r.mu.Unlock()
		if p != nil {
			p.status = ws
			close(p.done)
		}
	}
}

// Start starts c.
func (r *Reaper) Start(c *Cmd) (*Process, error) {
	fds := make([]uintptr, len(c.Files))
	for i, f := range c.Files {
		if f == nil {
			fds[i] = ^uintptr(0)
			continue
		}
		fds[i] = f.Fd()
	}
	attr := &syscall.ProcAttr{
		Dir:   c.Dir,
		Env:   c.Env,
		Files: fds,
		Sys:   &syscall.SysProcAttr{Credential: c.Cred, Setsid: c.Setsid, Setctty: c.Ctty, Ctty: 0},
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil, errors.New("start process: reaper closed")
	}
	pid, err := syscall.ForkExec(c.Path, c.Args, attr)
	runtime.KeepAlive(c.Files)
	if err != nil {
		r.mu.Unlock()
		return nil, fmt.Errorf("start %s: %w", c.Path, err)
	}
	p := &Process{Pid: pid, done: make(chan struct{})}
	if r.orphans {
		r.waiting[pid] = p
	}
	r.mu.Unlock()
	if !r.orphans {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			for {
				_, err := unix.Wait4(pid, &p.status, 0, nil)
				if !errors.Is(err, unix.EINTR) {
					break
				}
			}
			close(p.done)
		}()
	}
	return p, nil
}

// Close stops reaping and waits for the reaper's goroutines; processes
// still running must have been killed by the caller (in PID 1 the kernel
// does it when init exits).
func (r *Reaper) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	close(r.stop)
	r.wg.Wait()
}
