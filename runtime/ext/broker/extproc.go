package broker

import (
	"context"
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
)

// Restart backoff of the extension host (like the supervisor's: 1, 2, 4 …
// 60 s, reset after a minute up).
const (
	restartFirst = time.Second
	restartMax   = 60 * time.Second
	restartReset = 60 * time.Second
)

// ExtArgs are the arguments of `agentosd ext` for these options (after
// the program name): ext --data … --apps … and the socket flags, then
// Options.ExtFlags.
func (o *Options) ExtArgs() []string {
	args := []string{"ext", "--data", o.DataDir, "--apps", o.AppsDir, "--link", o.Names.Ext()}
	if o.Names.Prefix != "" {
		args = append(args, "--socket-prefix", o.Names.Prefix)
	}
	if o.Names.Dir != "" {
		args = append(args, "--socket-dir", o.Names.Dir)
	}
	return append(args, o.ExtFlags...)
}

// defaultExtCommand runs this binary as `agentosd ext`.
func (b *Broker) defaultExtCommand() (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := b.o.ExtArgs()
	cmd := exec.Command(exe, args...)
	cmd.Env = os.Environ()
	return cmd, nil
}

// superviseExt runs the extension host and restarts it when it ends,
// with backoff, until ctx ends. Its death never stops serve.
func (b *Broker) superviseExt(ctx context.Context) {
	backoff := b.o.RestartBackoff
	if backoff <= 0 {
		backoff = restartFirst
	}
	delay := time.Duration(0)
	for {
		if delay > 0 {
			t, due := b.o.Clock.NewTimer(delay)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-due:
			case <-b.restartNow:
				t.Stop()
			}
		}
		start := b.o.Clock.Now()
		err := b.runExt(ctx)
		if ctx.Err() != nil {
			return
		}
		b.mu.Lock()
		b.extRestarts++
		forced := b.forceRestart
		b.forceRestart = false
		b.mu.Unlock()
		b.o.Logger.Warn("extension host ended; restarting", "err", errString(err))
		switch {
		case forced:
			delay = 0
		case clock.Since(b.o.Clock, start) > restartReset:
			delay = backoff
		case delay == 0:
			delay = backoff
		default:
			delay = min(2*delay, restartMax)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// runExt starts one extension host process and waits for it. It runs on
// a locked OS thread so that Pdeathsig (set in the child) fires only when
// this process dies, not when some thread of it exits.
func (b *Broker) runExt(ctx context.Context) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var cmd *exec.Cmd
	var err error
	if b.o.ExtCommand != nil {
		cmd, err = b.o.ExtCommand()
	} else {
		cmd, err = b.defaultExtCommand()
	}
	if err != nil {
		return err
	}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if cmd.Stderr == nil {
		cmd.Stderr = b.o.ExtStderr
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	b.mu.Lock()
	b.extPID = cmd.Process.Pid
	b.extProc = cmd.Process
	b.extStarted = time.Now()
	b.mu.Unlock()
	b.pidChanged()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		cmd.Process.Kill()
		err = <-done
	}
	b.mu.Lock()
	b.extPID = 0
	b.extProc = nil
	b.mu.Unlock()
	b.pidChanged()
	return err
}

// KillExt kills the extension host (SIGKILL); the supervisor restarts it
// after its backoff. It reports whether one was running.
func (b *Broker) KillExt() (int, bool) {
	b.mu.Lock()
	p, pid := b.extProc, b.extPID
	b.mu.Unlock()
	if p == nil {
		return 0, false
	}
	p.Kill()
	return pid, true
}

// RestartExt kills the extension host and starts a new one at once.
func (b *Broker) RestartExt() (int, bool) {
	b.mu.Lock()
	b.forceRestart = true
	b.mu.Unlock()
	select {
	case b.restartNow <- struct{}{}:
	default:
	}
	return b.KillExt()
}
