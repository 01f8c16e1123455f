package engine_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/engine/enginetest"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/stretchr/testify/require"
)

// leasedModel is a ModelLeaser whose configuration the test clears, as
// the owner's `model clear` does.
type leasedModel struct {
	p model.Provider

	mu      sync.Mutex // guards the fields below
	cleared bool
	revoked chan struct{}
	leases  int
}

var _ engine.ModelLeaser = (*leasedModel)(nil)

func newLeasedModel(p model.Provider) *leasedModel {
	return &leasedModel{p: p, revoked: make(chan struct{})}
}

func (l *leasedModel) Current() (model.Config, model.Provider, bool) {
	cfg, p, _, ok := l.Lease()
	return cfg, p, ok
}

func (l *leasedModel) Lease() (model.Config, model.Provider, <-chan struct{}, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cleared {
		return model.Config{}, nil, nil, false
	}
	l.leases++
	return model.Config{Provider: "scripted", Model: "m1"}, l.p, l.revoked, true
}

func (l *leasedModel) clear() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.cleared = true
	close(l.revoked)
}

// checkKeyRevoked asserts the spec §3.2 error of a turn stopped by a
// cleared key, on the Go error, the wire and the task's terminal event.
func checkKeyRevoked(t *testing.T, h *harness, sessionID string, turn *engine.Turn, err error) {
	t.Helper()
	var ce *errcode.Error
	if !errors.As(err, &ce) || !errors.Is(err, errcode.ModelNotConfigured) || ce.TaskID != turn.TaskID() {
		t.Fatalf("error %#v, want model_not_configured of task %s", err, turn.TaskID())
	}
	w := ce.Wire()
	if w.Code != errcode.ModelNotConfigured.RPC() || w.Data.AgentosCode != string(errcode.ModelNotConfigured) ||
		w.Data.Retryable || w.Data.Details["reason"] != "key_revoked" || w.Data.TaskID != turn.TaskID() ||
		w.Message != string(errcode.ModelNotConfigured)+": "+engine.KeyRevokedText {
		t.Fatalf("wire %+v", w)
	}
	var end *engine.TaskEndBody
	for _, ev := range h.events(sessionID) {
		if ev.TaskID == turn.TaskID() && ev.Type == engine.EvTaskFailed {
			b := body[engine.TaskEndBody](t, ev)
			end = &b
		}
	}
	if end == nil || end.Error == nil || end.Error.Code != errcode.ModelNotConfigured || end.Error.Details["reason"] != "key_revoked" {
		t.Fatalf("terminal event %+v", end)
	}
}

func TestClearedKeyStopsRunningTurns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// reply is what the model does while the key is cleared.
		reply enginetest.Reply
		// startedEvent is logged once the turn is in the middle of it.
		startedEvent string
	}{
		{"while streaming", enginetest.Reply{Events: enginetest.Text("work").Events, Hold: true}, engine.EvMessageDelta},
		{"while a tool runs", enginetest.Calls(enginetest.Call("c1", enginetest.ToolSlow, map[string]int{"ms": 60000})), engine.EvToolDispatched},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &enginetest.Model{}
			lm := newLeasedModel(m)
			h := newHarness(t, func(o *engine.Options) { o.Models = lm })
			h.model = m
			m.Push(tc.reply, tc.reply)
			s1, s2 := h.session(desktop, nil), h.session(app, nil)
			t1 := h.submit(desktop, s1, "one")
			t2 := h.submit(app, s2, "two")
			queued := h.submit(desktop, s1, "three") // waits behind t1
			started := func(sid string) func() bool {
				return func() bool { return len(find(h.events(sid), tc.startedEvent)) > 0 }
			}
			require.Eventually(t, started(s1), 10*time.Second, 2*time.Millisecond, "waiting for the first turn to start")
			require.Eventually(t, started(s2), 10*time.Second, 2*time.Millisecond, "waiting for the second turn to start")
			requests := len(m.Requests())

			lm.clear()
			_, err1 := wait(t, t1)
			checkKeyRevoked(t, h, s1, t1, err1)
			_, err2 := wait(t, t2)
			checkKeyRevoked(t, h, s2, t2, err2)

			// The queued prompt runs after the clear: no key, no request,
			// plain model_not_configured.
			_, err3 := wait(t, queued)
			var ce *errcode.Error
			if !errors.As(err3, &ce) || ce.Code != errcode.ModelNotConfigured || ce.Details != nil || ce.Text == engine.KeyRevokedText {
				t.Fatalf("queued prompt: %#v", err3)
			}
			if n := len(m.Requests()); n != requests {
				t.Fatalf("%d model requests after the clear", n-requests)
			}
		})
	}
}

func TestClearedKeyLeavesOtherEndsAlone(t *testing.T) {
	t.Parallel()
	t.Run("a cancel that came first", func(t *testing.T) {
		t.Parallel()
		m := &enginetest.Model{Default: enginetest.Reply{Events: enginetest.Text("work").Events, Hold: true}}
		lm := newLeasedModel(m)
		h := newHarness(t, func(o *engine.Options) { o.Models = lm })
		id := h.session(desktop, nil)
		turn := h.submit(desktop, id, "x")
		require.Eventually(t, func() bool {
			return len(find(h.events(id), engine.EvMessageDelta)) > 0
		}, 10*time.Second, 2*time.Millisecond, "waiting for the turn to stream")
		h.e.CancelSession(context.Background(), id, "client")
		lm.clear()
		if stop, err := wait(t, turn); stop != engine.StopCancelled || err != nil {
			t.Fatalf("result %q %v", stop, err)
		}
	})
	t.Run("a turn that finished", func(t *testing.T) {
		t.Parallel()
		lm := newLeasedModel(&enginetest.Model{})
		h := newHarness(t, func(o *engine.Options) { o.Models = lm })
		id := h.session(desktop, nil)
		if stop, err := h.run(desktop, id, "x"); stop != engine.StopEndTurn || err != nil {
			t.Fatalf("result %q %v", stop, err)
		}
		lm.clear()
		evs := h.events(id)
		if last := evs[len(evs)-1]; last.Type != engine.EvTaskCompleted {
			t.Fatalf("last event %s", last.Type)
		}
	})
}
