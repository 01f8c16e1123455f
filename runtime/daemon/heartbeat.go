package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/clock"
)

// Heartbeat states (the supervisor reads them, spec §11).
const (
	stateStarting   = "starting"
	stateRecovering = "recovering"
	stateIdle       = "idle"
	stateBusy       = "busy"
	stateStopping   = "stopping"
)

// heartbeat writes <data>/heartbeat: key=value lines pid, tasks, at (unix
// ms on the runtime's clock) and state. It is rewritten (through a rename,
// so a reader never sees half a file) when the task count changes and
// every interval (wall time: the writer's pace) otherwise.
type heartbeat struct {
	path  string
	every time.Duration
	clock clock.Clock
	tasks func() int

	wake chan struct{} // poked when the task count may have changed
	stop chan struct{}
	done chan struct{}

	mu    sync.Mutex // guards state and writes
	state string
}

func newHeartbeat(data string, every time.Duration, c clock.Clock) *heartbeat {
	return &heartbeat{path: filepath.Join(data, "heartbeat"), every: every, clock: c, wake: make(chan struct{}, 1)}
}

// set writes the heartbeat with a fixed state (starting, recovering,
// stopping) and the given task count.
func (h *heartbeat) set(state string, tasks int) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.state = state
	return h.writeLocked(tasks)
}

func (h *heartbeat) writeLocked(tasks int) error {
	b := fmt.Appendf(nil, "pid=%d\ntasks=%d\nat=%d\nstate=%s\n", os.Getpid(), tasks, h.clock.Now().UnixMilli(), h.state)
	tmp := h.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	if err := os.Rename(tmp, h.path); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// poke asks for a rewrite; it never blocks (the engine calls it).
func (h *heartbeat) poke() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// start runs the writer: idle or busy by the task count, until close.
func (h *heartbeat) start(tasks func() int) {
	h.tasks = tasks
	h.stop, h.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(h.done)
		t := time.NewTicker(h.every)
		defer t.Stop()
		for {
			h.mu.Lock()
			n := h.tasks()
			h.state = stateIdle
			if n > 0 {
				h.state = stateBusy
			}
			h.writeLocked(n)
			h.mu.Unlock()
			select {
			case <-h.stop:
				return
			case <-t.C:
			case <-h.wake:
			}
		}
	}()
}

// close stops the writer (if started).
func (h *heartbeat) close() {
	if h.stop != nil {
		close(h.stop)
		<-h.done
		h.stop = nil
	}
}
