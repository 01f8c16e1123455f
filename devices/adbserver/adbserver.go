// Package adbserver runs a private adb server: the real adb binary, on a
// port of its own, owned by this process. Tests that start virtual
// devices in parallel each use their own server, so that one test's
// kill-server never drops another test's devices.
package adbserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// ErrNoADB is returned by Start when no adb binary can be found.
var ErrNoADB = errors.New("adb not found on PATH (install the Debian package adb or Android platform-tools)")

// Options configure a server. The zero value works.
type Options struct {
	// ADB is the adb binary; default "adb" from PATH.
	ADB string
	// Port is the server's port; 0 picks a free one.
	Port int
	// Output receives the server's own log; nil discards it.
	Output io.Writer
	Logger *slog.Logger
}

// Server is a running adb server.
type Server struct {
	adb  string
	port int
	log  *slog.Logger
	cmd  *exec.Cmd
	done chan struct{} // closed when the server process has exited

	closeOnce sync.Once
}

const startTimeout = 20 * time.Second

// Start starts "adb -P PORT nodaemon server" (the server stays this
// process's child, so Close can make sure it is gone) and waits until it
// answers host:version.
func Start(ctx context.Context, opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	adb := o.ADB
	if adb == "" {
		adb = "adb"
	}
	path, err := exec.LookPath(adb)
	if err != nil {
		return nil, fmt.Errorf("start adb server: %w", ErrNoADB)
	}
	var lastErr error
	for range 3 {
		port := o.Port
		if port == 0 {
			if port, err = freePort(); err != nil {
				return nil, fmt.Errorf("start adb server: %w", err)
			}
		}
		s, err := start(ctx, path, port, o.Output, log)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if o.Port != 0 || ctx.Err() != nil {
			break
		}
	}
	return nil, fmt.Errorf("start adb server: %w", lastErr)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

func start(ctx context.Context, adb string, port int, out io.Writer, log *slog.Logger) (*Server, error) {
	s := &Server{adb: adb, port: port, log: log, done: make(chan struct{})}
	if out == nil {
		out = io.Discard
	}
	s.cmd = exec.Command(adb, "-P", strconv.Itoa(port), "nodaemon", "server")
	s.cmd.Env = s.Env()
	s.cmd.Stdout = out
	s.cmd.Stderr = out
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Pdeathsig fires when the thread that started the child exits, and Go
	// ends threads whose goroutine exits while locked to them: start and
	// wait from one goroutine that keeps its own thread for the server's
	// life, so the server dies with this process and only then.
	started := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := s.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		s.cmd.Wait()
		close(s.done)
	}()
	if err := <-started; err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for {
		if err := s.ping(); err == nil {
			log.Info("adb server started", "port", port, "pid", s.cmd.Process.Pid)
			return s, nil
		}
		select {
		case <-s.done:
			return nil, fmt.Errorf("adb server on port %d exited at start", port)
		case <-ctx.Done():
			s.kill()
			return nil, fmt.Errorf("adb server on port %d: %w", port, ctx.Err())
		case <-t.C:
		}
	}
}

// ping asks host:version.
func (s *Server) ping() error {
	c, err := net.DialTimeout("tcp4", s.Addr(), time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.WriteString(c, "000chost:version"); err != nil {
		return err
	}
	var status [4]byte
	if _, err := io.ReadFull(bufio.NewReader(c), status[:]); err != nil {
		return err
	}
	if string(status[:]) != "OKAY" {
		return fmt.Errorf("host:version: %s", status[:])
	}
	return nil
}

// Port is the server's port.
func (s *Server) Port() int { return s.port }

// Addr is the server's address for smart-socket clients such as gadb.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Env is the environment of a child that must use this server: both the
// adb CLI and other adb clients honour these variables.
func (s *Server) Env() []string {
	return append(os.Environ(),
		"ADB_SERVER_SOCKET=tcp:127.0.0.1:"+strconv.Itoa(s.port),
		"ANDROID_ADB_SERVER_PORT="+strconv.Itoa(s.port))
}

// Command returns an exec.Cmd running the adb CLI against this server.
func (s *Server) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, s.adb, append([]string{"-P", strconv.Itoa(s.port)}, args...)...)
	cmd.Env = s.Env()
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// PID is the server process's id (a soak samples its figures).
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Done is closed when the server process has exited.
func (s *Server) Done() <-chan struct{} { return s.done }

// Close asks the server to exit (kill-server) and makes sure its process
// is gone. Idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Command(ctx, "kill-server").Run()
		t := time.NewTimer(5 * time.Second)
		defer t.Stop()
		select {
		case <-s.done:
		case <-t.C:
			s.kill()
		}
	})
	return nil
}

func (s *Server) kill() {
	// The server runs in its own process group with any helpers it forks.
	syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	<-s.done
}
