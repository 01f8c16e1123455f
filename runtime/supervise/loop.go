package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/supervise/logfile"
)

// nextBackoff is the restart delay after prev: base first, then doubling
// up to max (1, 2, 4 … 60 s). A runtime that stayed up for resetAfter
// starts over at base.
func nextBackoff(prev, uptime time.Duration, t Timing) time.Duration {
	if prev <= 0 || uptime >= t.ResetAfter {
		return t.BackoffBase
	}
	return min(prev*2, t.BackoffMax)
}

// deathWindow keeps the deaths of the last window.
type deathWindow struct {
	window time.Duration
	at     []time.Time
}

func (d *deathWindow) add(now time.Time) int {
	d.at = append(d.at, now)
	keep := d.at[:0]
	for _, t := range d.at {
		if now.Sub(t) < d.window {
			keep = append(keep, t)
		}
	}
	d.at = keep
	return len(d.at)
}

func (d *deathWindow) count() int { return len(d.at) }

// runtimeProc is one incarnation of the runtime.
type runtimeProc struct {
	cmd     *exec.Cmd
	pid     int
	started time.Time     // on the supervisor's clock
	done    chan struct{} // closed when reaped
	copied  chan struct{} // closed when its output is drained
}

// outcome is how watching an incarnation ended.
type outcome int

const (
	outDied     outcome = iota // the runtime exited on its own
	outStop                    // ctx ended: the supervisor exits
	outModule                  // the module was disabled or removed
	outSafeExit                // the safe-mode marker was removed
)

// loop starts and guards the runtime until the supervisor must exit; it
// returns the reason.
func (s *Supervisor) loop(ctx context.Context) string {
	deaths := &deathWindow{window: s.t.LoopWindow}
	var backoff time.Duration
	safe := s.inSafeMode()
	reason := ReasonBoot
	if safe {
		reason = ReasonCrashLoop
	}
	if s.unsupportedAPI != "" {
		s.pinSafeMode()
		safe, reason = true, ReasonUnsupportedAPI
	}
	for {
		if s.moduleOff() {
			return ReasonModuleDisabled
		}
		var started time.Time
		tasks, hbState := 0, ""
		rp, err := s.startRuntime(safe)
		if err != nil {
			s.logger.Error("supervise: runtime did not start", "err", err)
			started = s.clock.Now()
		} else {
			started = rp.started
			switch {
			case safe:
				s.setStatus(StateSafeMode, reason, rp.pid, deaths.count(), true)
			case reason == ReasonSafeModeExited:
				// The first normal runtime after safe mode says why it
				// runs (spec §11.9); later ones are plain restarts.
				s.setStatus(StateOK, ReasonSafeModeExited, rp.pid, deaths.count(), false)
				reason = ReasonRestart
			default:
				s.setStatus(StateOK, ReasonRuntimeUp, rp.pid, deaths.count(), false)
			}
			var out outcome
			out, tasks, hbState = s.watch(ctx, rp, safe)
			switch out {
			case outStop:
				return ReasonSupervisorExited
			case outModule:
				return ReasonModuleDisabled
			case outSafeExit:
				safe, backoff, reason = false, 0, ReasonSafeModeExited
				deaths = &deathWindow{window: s.t.LoopWindow}
				s.setStatus(StateOK, ReasonSafeModeExited, 0, 0, false)
				continue
			}
		}

		// The runtime died. A kick that came while it ran means nothing
		// now; drop it before the status says so, or the kick of someone
		// who saw "stopped" would be dropped with it.
		select {
		case <-s.kick:
		default:
		}
		now := s.clock.Now()
		uptime := now.Sub(started)
		n := deaths.add(now)
		if uptime >= s.t.ResetAfter {
			// Up long enough, whatever it died of: the next busy death
			// backs off from the start (an idle death in between must
			// not carry an old backoff over).
			backoff = 0
		}
		s.logger.Warn("supervise: runtime died", "uptime", uptime.Round(time.Millisecond).String(), "tasks", tasks, "state", hbState, "deaths", n)
		var wait time.Duration // 0: wait for a kick
		switch {
		case safe:
			s.setStatus(StateSafeMode, ReasonRuntimeDied, 0, n, true)
		case n >= s.t.LoopMax:
			safe, reason = true, ReasonCrashLoop
			if err := writeAtomic(s.paths.SafeMode(), []byte(ReasonCrashLoop+"\n"), 0o644); err != nil {
				s.logger.Error("supervise: safe-mode marker not written", "err", err)
			}
			s.logger.Error("supervise: crash loop; safe mode", "deaths", n, "window", s.t.LoopWindow.String())
			continue // start it again at once, in safe mode
		case (tasks > 0 || faultinject.Enabled && faultinject.Active(faultinject.IdleDeathRestarted)) && hbState != "stopping":
			backoff = nextBackoff(backoff, uptime, s.t)
			wait = backoff
			s.setStatusBackoff(n, backoff)
		case rp == nil:
			// It could not even be started: say so, and wait for a kick.
			s.setStatus(StateStopped, ReasonRuntimeStartError, 0, n, false)
		case hbState == "stopping":
			// It shut down as asked (SIGTERM, the owner): left stopped
			// until kicked, and said so (spec §11.9 user_stopped).
			s.setStatus(StateStopped, ReasonUserStopped, 0, n, false)
		default:
			// An idle runtime that died is left dead (spec §11.7).
			s.setStatus(StateStopped, ReasonRuntimeDied, 0, n, false)
		}
		switch s.pause(ctx, wait, safe) {
		case outStop:
			return ReasonSupervisorExited
		case outModule:
			return ReasonModuleDisabled
		case outSafeExit:
			safe, backoff, reason = false, 0, ReasonSafeModeExited
			deaths = &deathWindow{window: s.t.LoopWindow}
		}
		if safe {
			reason = ReasonRestart
		}
	}
}

func (s *Supervisor) setStatusBackoff(deaths int, backoff time.Duration) {
	s.mu.Lock()
	s.status.BackoffMs = backoff.Milliseconds()
	s.mu.Unlock()
	s.setStatus(StateBackoff, ReasonRuntimeDied, 0, deaths, false)
	s.mu.Lock()
	s.status.BackoffMs = 0
	s.mu.Unlock()
}

func (s *Supervisor) inSafeMode() bool {
	_, err := os.Lstat(s.paths.SafeMode())
	return err == nil
}

// pinSafeMode writes the marker for a safe mode that cannot be left.
func (s *Supervisor) pinSafeMode() {
	if err := writeAtomic(s.paths.SafeMode(), []byte(ReasonUnsupportedAPI+"\n"), 0o644); err != nil {
		s.logger.Error("supervise: safe-mode marker not written", "err", err)
	}
}

// leftSafeMode says the marker was removed and safe mode may end; on an
// unsupported API it writes the marker again and says no.
func (s *Supervisor) leftSafeMode() bool {
	if takeLeaveRequest(s.paths) {
		s.logger.Info("supervise: the runtime asks to leave safe mode")
		if _, err := removeMarker(s.paths); err != nil {
			s.logger.Error("supervise: safe-mode marker not removed", "err", err)
		}
	}
	if s.inSafeMode() {
		return false
	}
	if s.unsupportedAPI != "" {
		s.logger.Warn("supervise: safe mode stays: Android API not supported", "api", s.unsupportedAPI)
		s.pinSafeMode()
		return false
	}
	return true
}

// pause waits d (0: until a kick) on the clock while watching the
// supervisor's exits. It returns outDied to go on (time up or kicked).
func (s *Supervisor) pause(ctx context.Context, d time.Duration, safe bool) outcome {
	var timeUp <-chan time.Time
	if d > 0 {
		var t clock.Timer
		t, timeUp = s.clock.NewTimer(d)
		defer t.Stop()
	}
	poll := time.NewTicker(s.t.PollIdle)
	defer poll.Stop()
	for {
		select {
		case <-ctx.Done():
			return outStop
		case <-timeUp:
			return outDied
		case <-s.kick:
			if safe && s.leftSafeMode() {
				return outSafeExit
			}
			s.logger.Info("supervise: kicked; starting the runtime")
			return outDied
		case <-poll.C:
			if s.moduleOff() {
				return outModule
			}
			if safe && s.leftSafeMode() {
				return outSafeExit
			}
		}
	}
}

// watch polls the runtime's heartbeat until it exits or the supervisor
// must stop it. It returns the last heartbeat's tasks and state.
func (s *Supervisor) watch(ctx context.Context, rp *runtimeProc, safe bool) (outcome, int, string) {
	tasks, state := 0, ""
	read := func() {
		hb, err := ReadHeartbeat(s.paths.Heartbeat())
		if err == nil {
			tasks, state = hb.Tasks, hb.State
		}
	}
	interval := s.t.PollIdle
	timer := time.NewTimer(interval)
	defer timer.Stop()
	for {
		select {
		case <-rp.done:
			read()
			<-rp.copied
			return outDied, tasks, state
		case <-ctx.Done():
			s.stopRuntime(rp)
			return outStop, tasks, state
		case <-s.kick:
			// leave-safe-mode kicks so the marker's removal counts at
			// once; any other kick means nothing to a running runtime.
			if safe && s.leftSafeMode() {
				s.logger.Info("supervise: safe-mode marker removed; restarting the runtime normally")
				s.stopRuntime(rp)
				return outSafeExit, tasks, state
			}
		case <-timer.C:
			read()
			if s.moduleOff() {
				s.stopRuntime(rp)
				return outModule, tasks, state
			}
			if safe && s.leftSafeMode() {
				s.logger.Info("supervise: safe-mode marker removed; restarting the runtime normally")
				s.stopRuntime(rp)
				return outSafeExit, tasks, state
			}
			interval = s.t.PollIdle
			if tasks > 0 {
				interval = s.t.PollBusy
			}
			timer.Reset(interval)
		}
	}
}

// runtimeArgv is the runtime's command line.
func (s *Supervisor) runtimeArgv() []string {
	if s.o.RuntimeCmd != nil {
		return s.o.RuntimeCmd
	}
	argv := []string{s.paths.Agentosd(), "serve", "--data", s.paths.RuntimeData()}
	if s.o.Names.Prefix != "" {
		argv = append(argv, "--socket-prefix", s.o.Names.Prefix)
	}
	return argv
}

// startRuntime starts one incarnation as the runtime's uid, in its own
// process group, output to <root>/supervisor/runtime.log.
func (s *Supervisor) startRuntime(safe bool) (*runtimeProc, error) {
	argv := s.runtimeArgv()
	logw, err := logfile.Open(s.paths.Supervisor(), runtimeLog, &logfile.Options{MaxBytes: LogMaxBytes})
	if err != nil {
		return nil, err
	}
	rd, wr, err := os.Pipe()
	if err != nil {
		logw.Close()
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = []string{
		"PATH=/system/bin:/system/xbin:/vendor/bin:/usr/local/bin:/usr/bin:/bin",
		"HOME=" + s.paths.RuntimeData(),
		"AGENTOS_ROOT=" + s.o.Root,
	}
	if safe {
		cmd.Env = append(cmd.Env, "AGENTOS_SAFE_MODE=1")
	} else {
		// A request a safe-mode runtime left behind must not end the
		// next safe mode.
		os.Remove(s.paths.LeaveRequest())
	}
	for _, kv := range s.o.Environ {
		if strings.HasPrefix(kv, "TZ=") || strings.HasPrefix(kv, "ANDROID_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Dir = s.paths.RuntimeData()
	cmd.Stdout, cmd.Stderr = wr, wr
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uint32(s.o.RuntimeUID), Gid: uint32(s.o.RuntimeGID), Groups: RuntimeGroups()},
		Setpgid:    true,
		// The runtime shuts down with its supervisor rather than run on
		// unguarded and block the next supervisor's runtime.
		Pdeathsig: syscall.SIGTERM,
	}
	if err := cmd.Start(); err != nil {
		rd.Close()
		wr.Close()
		logw.Close()
		return nil, fmt.Errorf("start %s: %w", argv[0], err)
	}
	wr.Close()
	rp := &runtimeProc{cmd: cmd, pid: cmd.Process.Pid, started: s.clock.Now(), done: make(chan struct{}), copied: make(chan struct{})}
	go func() {
		defer close(rp.copied)
		defer logw.Close()
		defer rd.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := rd.Read(buf)
			if n > 0 {
				logw.Write(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		err := cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			s.logger.Warn("supervise: wait", "err", err)
		}
		s.logger.Info("supervise: runtime exited", "pid", rp.pid, "status", cmd.ProcessState.String())
		// What the runtime left in its group (the extension host) goes too.
		syscall.Kill(-rp.pid, syscall.SIGKILL)
		close(rp.done)
	}()
	s.logger.Info("supervise: runtime started", "pid", rp.pid, "uid", s.o.RuntimeUID, "safeMode", safe)
	return rp, nil
}

// stopRuntime sends SIGTERM, SIGKILL to the group after the grace period,
// and waits until the runtime was reaped and its output drained.
func (s *Supervisor) stopRuntime(rp *runtimeProc) {
	syscall.Kill(rp.pid, syscall.SIGTERM)
	select {
	case <-rp.done:
	case <-time.After(s.t.StopGrace):
		s.logger.Warn("supervise: runtime ignored SIGTERM; killing it", "pid", rp.pid)
		syscall.Kill(-rp.pid, syscall.SIGKILL)
		<-rp.done
	}
	select {
	case <-rp.copied:
	case <-time.After(2 * time.Second):
	}
}
