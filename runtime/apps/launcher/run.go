package launcher

import (
	"context"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// RunResult is what a one-shot command did. Stdout and Stderr are the
// first MaxOutputBytes of each (base64 in JSON); the Dropped counts say
// how much more the command wrote.
type RunResult struct {
	ExitCode      int    `json:"exitCode"`
	Stdout        []byte `json:"stdout"`
	Stderr        []byte `json:"stderr"`
	StdoutDropped int64  `json:"stdoutDropped,omitempty"`
	StderrDropped int64  `json:"stderrDropped,omitempty"`
	// TimedOut says the command was killed at its timeout (ExitCode is
	// then 137, SIGKILL).
	TimedOut   bool  `json:"timedOut,omitempty"`
	DurationMs int64 `json:"durationMs"`
}

// Run runs one of pkg's debug commands (args[0] must be listed in its
// app.json "commands") as the app's uid and returns its output and exit
// code. timeout 0 means the default; it is capped at MaxRunTimeout.
func (s *Server) Run(ctx context.Context, pkg string, args []string, timeout time.Duration) (*RunResult, error) {
	p, ok := s.lookup(pkg)
	if !ok {
		return nil, refusal(errcode.InvalidParams, "not_installed", "%s is not installed", clip(pkg))
	}
	if len(args) == 0 {
		return nil, refusal(errcode.InvalidParams, "no_such_command", "no command given; %s has: %s", pkg, strings.Join(p.Commands, ", "))
	}
	if !p.HasCommand(args[0]) {
		return nil, refusal(errcode.InvalidParams, "no_such_command", "%q is not a debug command of %s (it has: %s)", clip(args[0]), pkg, strings.Join(p.Commands, ", "))
	}
	if len(args) > maxArgs {
		return nil, refusal(errcode.InvalidParams, "bad_args", "more than %d arguments", maxArgs)
	}
	for _, a := range args {
		if len(a) > maxArgBytes || strings.ContainsRune(a, 0) {
			return nil, refusal(errcode.InvalidParams, "bad_args", "an argument is longer than %d bytes or holds a NUL", maxArgBytes)
		}
	}
	if timeout <= 0 {
		timeout = s.o.RunTimeout
	}
	timeout = min(timeout, MaxRunTimeout)
	select {
	case s.runs <- struct{}{}:
		defer func() { <-s.runs }()
	default:
		return nil, refusal(errcode.Busy, "busy", "%d commands are already running; try again", s.o.MaxRuns)
	}

	stdout := &capWriter{max: s.o.MaxOutputBytes}
	stderr := &capWriter{max: s.o.MaxOutputBytes}
	cmd := exec.Command(p.BinaryPath(), args...)
	cmd.Env = s.env(p, "")
	cmd.Dir = p.DataDir
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = s.sysProcAttr(p)
	// Descendants that keep the output pipes open do not hold the call.
	cmd.WaitDelay = time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, refusal(errcode.ToolUnavailable, "spawn_failed", "cannot start %s: %v", pkg, err)
	}
	pid := cmd.Process.Pid
	waited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(waited)
	}()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	timedOut := false
	select {
	case <-waited:
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
	}
	// Whatever is left of the group goes: the command on a timeout or a
	// cancelled call, its stray children otherwise.
	syscall.Kill(-pid, syscall.SIGKILL)
	<-waited
	if err := ctx.Err(); err != nil && !timedOut {
		return nil, errcode.Wrap(errcode.Internal, "the run was cancelled", err)
	}
	res := &RunResult{
		ExitCode: exitCode(cmd.ProcessState), TimedOut: timedOut,
		DurationMs: time.Since(start).Milliseconds(),
	}
	res.Stdout, res.StdoutDropped = stdout.result()
	res.Stderr, res.StderrDropped = stderr.result()
	s.logger.Info("launcher: ran", "package", pkg, "command", args[0], "exit", res.ExitCode, "timedOut", timedOut, "ms", res.DurationMs)
	return res, nil
}

// capWriter keeps the first max bytes written and counts the rest, so a
// flood of output costs nothing but the counter.
type capWriter struct {
	max     int
	mu      sync.Mutex
	buf     []byte
	dropped int64
}

func (w *capWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := w.max - len(w.buf)
	if room >= len(p) {
		w.buf = append(w.buf, p...)
		return len(p), nil
	}
	if room > 0 {
		w.buf = append(w.buf, p[:room]...)
	}
	w.dropped += int64(len(p) - max(room, 0))
	return len(p), nil
}

func (w *capWriter) result() ([]byte, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf == nil {
		return []byte{}, w.dropped
	}
	return w.buf, w.dropped
}
