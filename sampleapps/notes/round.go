package notes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// Files of the round tracker in the app's data directory.
const (
	roundLockFile  = "ask_agent.lock"
	roundStateFile = "ask_agent.json"
)

// Bounds of the round tracker.
const (
	// roundWriteEvery spaces snapshot writes during a stream of text
	// chunks; other events are written at once.
	roundWriteEvery = 250 * time.Millisecond
	// StopWait bounds ask_agent_stop's wait for the stopped round's
	// final report.
	StopWait = 10 * time.Second
	stopPoll = 20 * time.Millisecond
	// maxStateBytes bounds the state file read back: a report is far
	// smaller (the Recorder bounds text and items).
	maxStateBytes = 1 << 20
)

// Errors of the round tracker.
var (
	errBadState     = errors.New("the state file holds no report")
	ErrRoundRunning = &apptool.UserError{Sentence: "A schedule round is already running; watch it with ask_agent_status or stop it with ask_agent_stop."}
	ErrNoRound      = &apptool.UserError{Sentence: "No schedule round has run yet."}
	ErrNotRunning   = &apptool.UserError{Sentence: "No schedule round is running."}
)

// Rounds lets the app's separate one-shot processes see and stop its
// "schedule with AgentOS" round. ask_agent runs a round synchronously in
// its own process; while it runs, that process holds an exclusive lock on
// <dataDir>/ask_agent.lock and keeps <dataDir>/ask_agent.json up to date
// (its pid and a snapshot of the report, then the final report).
// ask_agent_status reads the file; ask_agent_stop sends the running
// process SIGTERM, which cancels the round (the report says stopped), and
// waits for the final report. One round runs at a time per app.
type Rounds struct {
	dir string
	// stop ends the round run by process pid; nil sends SIGTERM.
	stop func(pid int) error
}

// NewRounds returns the tracker of the rounds whose files live in dir.
func NewRounds(dir string) *Rounds { return &Rounds{dir: dir} }

type roundDoc struct {
	PID     int             `json:"pid"`
	Pending bool            `json:"pending"`
	Report  json.RawMessage `json:"report"`
}

// Round is one running round, owned by the process that runs it.
type Round struct {
	r    *Rounds
	lock *os.File

	mu   sync.Mutex // guards last
	last time.Time
}

// Begin claims the app's one round for this process and records report
// as its first snapshot. It fails with ErrRoundRunning while another
// process runs one.
func (r *Rounds) Begin(report any) (*Round, error) {
	f, ok, err := r.tryLock()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, ErrRoundRunning
	}
	rd := &Round{r: r, lock: f, last: time.Now()}
	if err := r.write(report, true); err != nil {
		f.Close()
		return nil, err
	}
	return rd, nil
}

// tryLock takes the round lock without waiting; ok is false while another
// process holds it.
func (r *Rounds) tryLock() (f *os.File, ok bool, err error) {
	f, err = os.OpenFile(filepath.Join(r.dir, roundLockFile), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("round lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("round lock: %w", err)
	}
	return f, true, nil
}

// Update records a snapshot of the running round's report, taken by
// snapshot only when due: text chunks (urgent false) at most every
// roundWriteEvery, everything else at once. Failures to write are not the
// round's failures: status then shows an older snapshot.
func (rd *Round) Update(urgent bool, snapshot func() any) {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	now := time.Now()
	if !urgent && now.Sub(rd.last) < roundWriteEvery {
		return
	}
	rd.last = now
	rd.r.write(snapshot(), true)
}

// Finish records the final report and releases the round.
func (rd *Round) Finish(report any) error {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	err := rd.r.write(report, false)
	rd.lock.Close() // releases the flock
	return err
}

// write replaces the state file atomically (temporary file + rename).
func (r *Rounds) write(report any, pending bool) error {
	rep, err := json.Marshal(report)
	if err != nil {
		return fmt.Errorf("round state: %w", err)
	}
	b, err := json.Marshal(roundDoc{PID: os.Getpid(), Pending: pending, Report: rep})
	if err != nil {
		return fmt.Errorf("round state: %w", err)
	}
	tmp, err := os.CreateTemp(r.dir, roundStateFile+".*")
	if err != nil {
		return fmt.Errorf("round state: %w", err)
	}
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(r.dir, roundStateFile))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("round state: %w", err)
	}
	return nil
}

func (r *Rounds) read() (*roundDoc, error) {
	f, err := os.Open(filepath.Join(r.dir, roundStateFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrNoRound
	}
	if err != nil {
		return nil, fmt.Errorf("round state: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxStateBytes+1))
	if err != nil {
		return nil, fmt.Errorf("round state: %w", err)
	}
	if len(b) > maxStateBytes {
		return nil, fmt.Errorf("round state: larger than %d bytes", maxStateBytes)
	}
	var d roundDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("round state: %w", err)
	}
	var report map[string]json.RawMessage
	if err := json.Unmarshal(d.Report, &report); err != nil || report == nil {
		return nil, fmt.Errorf("round state: %w", errBadState)
	}
	return &d, nil
}

// running reports whether a process holds the round lock.
func (r *Rounds) running() (bool, error) {
	f, ok, err := r.tryLock()
	if err != nil {
		return false, err
	}
	if ok {
		f.Close()
	}
	return !ok, nil
}

// Status returns the report of the running round (a snapshot: state
// "running", pending true) or of the last one. A round whose process
// ended before the round did (killed at the launcher's timeout, say) is
// reported as ended with error STOPPED and interrupted.
func (r *Rounds) Status() (json.RawMessage, error) {
	d, err := r.read()
	if err != nil {
		return nil, err
	}
	if !d.Pending {
		return d.Report, nil
	}
	// Read before checking the lock: a round that finished in between has
	// already replaced the snapshot.
	running, err := r.running()
	if err != nil || running {
		return d.Report, err
	}
	if d2, err := r.read(); err == nil && !d2.Pending {
		return d2.Report, nil
	}
	return orphaned(d.Report)
}

// orphaned turns the last snapshot of a round whose process died into an
// ended report.
func orphaned(snapshot json.RawMessage) (json.RawMessage, error) {
	var m map[string]any
	if err := json.Unmarshal(snapshot, &m); err != nil {
		return nil, fmt.Errorf("round state: %w", err)
	}
	m["state"], m["current_state"], m["pending"] = StateError, StateError, false
	m["error"], m["error_detail"] = string(Stopped), "The app process running the round ended before the round did."
	m["stopped"], m["interrupted"] = true, true
	return json.Marshal(m)
}

// Stop stops the running round and returns its final report, waiting at
// most StopWait for it. ErrNotRunning when no round runs.
func (r *Rounds) Stop(ctx context.Context) (json.RawMessage, error) {
	running, err := r.running()
	if err != nil {
		return nil, err
	}
	d, rerr := r.read()
	if !running || (rerr == nil && !d.Pending) {
		return nil, ErrNotRunning
	}
	if rerr != nil {
		return nil, rerr
	}
	stop := r.stop
	if stop == nil {
		stop = func(pid int) error { return syscall.Kill(pid, syscall.SIGTERM) }
	}
	if err := stop(d.PID); err != nil && !errors.Is(err, syscall.ESRCH) {
		return nil, fmt.Errorf("stop round: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, StopWait)
	defer cancel()
	// The stopping process releases the lock after writing its final
	// report; nothing signals across processes, so the lock is polled.
	t := time.NewTicker(stopPoll)
	defer t.Stop()
	for {
		running, err := r.running()
		if err != nil {
			return nil, err
		}
		if !running {
			return r.Status()
		}
		select {
		case <-ctx.Done():
			return nil, apptool.Errorf("The round did not stop within %s.", StopWait)
		case <-t.C:
		}
	}
}
