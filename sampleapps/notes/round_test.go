package notes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// gateAgent sends its events, says so on started, and blocks until the
// round is cancelled.
type gateAgent struct {
	events  []Event
	started chan struct{}
}

func (g *gateAgent) Schedule(ctx context.Context, _ string, _ []ToolScopeEntry, onEvent func(Event)) (string, error) {
	for _, ev := range g.events {
		onEvent(ev)
	}
	close(g.started)
	<-ctx.Done()
	return "", ctx.Err()
}

func decodeReport(t *testing.T, raw json.RawMessage) *AskReport {
	t.Helper()
	var r AskReport
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("report %s: %v", raw, err)
	}
	return &r
}

// While ask_agent runs, ask_agent_status shows its report as it stands
// (pending, the panel state, the cards waiting), a second ask_agent is
// refused, and ask_agent_stop ends it: the final report says stopped and
// is what status shows from then on.
func TestRoundStatusAndStop(t *testing.T) {
	t.Parallel()
	agent := &gateAgent{started: make(chan struct{}), events: []Event{
		{Kind: EventWaiting}, {Kind: EventRunning},
		tcRef("call_1", "calendar", "event_create", StatusPendingApproval),
		{Kind: EventText, Text: "Creating the meeting."},
	}}
	a, _ := newApp(t, time.UTC, agent)
	if _, err := a.Debug(context.Background(), "ask_agent_status", nil); !errors.Is(err, ErrNoRound) {
		t.Fatalf("status before any round: %v", err)
	}
	if _, err := a.Debug(context.Background(), "ask_agent_stop", nil); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("stop before any round: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stops := 0
	a.rounds.stop = func(pid int) error {
		if pid != os.Getpid() {
			t.Errorf("stop pid %d, want this process", pid)
		}
		stops++
		cancel()
		return nil
	}
	type result struct {
		rep *AskReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := a.Debug(ctx, "ask_agent", []string{`{"text":"明天下午3点开会"}`})
		rep, _ := out.(*AskReport)
		done <- result{rep, err}
	}()
	<-agent.started

	raw, err := a.Debug(context.Background(), "ask_agent_status", nil)
	if err != nil {
		t.Fatal(err)
	}
	st := decodeReport(t, raw.(json.RawMessage))
	if !st.Pending || st.State != StateRunning || st.CurrentState != StateRunning || st.TextChars != 8 ||
		len(st.Items) != 1 || st.Items[0].Status != ItemAwaitingApproval || st.Items[0].Kind != "event" {
		t.Errorf("status while running: %+v", st)
	}
	if _, err := a.Debug(context.Background(), "ask_agent", []string{`{"text":"x"}`}); !errors.Is(err, ErrRoundRunning) {
		t.Errorf("second round: %v", err)
	}

	raw, err = a.Debug(context.Background(), "ask_agent_stop", nil)
	if err != nil {
		t.Fatal(err)
	}
	final := decodeReport(t, raw.(json.RawMessage))
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if stops != 1 || final.Pending || !final.Stopped || final.Error == nil || *final.Error != string(Stopped) ||
		final.Items[0].Status != ItemCancelled || final.AgentText != "Creating the meeting." {
		t.Errorf("stop returned %+v", final)
	}
	if !r.rep.Stopped || r.rep.State != StateError {
		t.Errorf("ask_agent returned %+v", r.rep)
	}
	raw, err = a.Debug(context.Background(), "ask_agent_status", nil)
	if err != nil || !decodeReport(t, raw.(json.RawMessage)).Stopped {
		t.Errorf("status after stop: %s %v", raw, err)
	}
	if _, err := a.Debug(context.Background(), "ask_agent_stop", nil); !errors.Is(err, ErrNotRunning) {
		t.Errorf("stop after the end: %v", err)
	}
}

// A round whose process died (no lock held, snapshot still pending) is
// reported as ended, stopped and interrupted, not as running forever.
func TestRoundOrphaned(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := NewRounds(dir)
	rd, err := r.Begin(&AskReport{RunReport: NewRecorder("agentos").Snapshot(), TextChars: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Simulate the death: drop the lock without a final report.
	rd.lock.Close()
	raw, err := r.Status()
	if err != nil {
		t.Fatal(err)
	}
	rep := decodeReport(t, raw)
	if rep.Pending || rep.State != StateError || !rep.Interrupted || !rep.Stopped || rep.Error == nil || *rep.Error != string(Stopped) || rep.TextChars != 3 {
		t.Errorf("orphaned round: %s", raw)
	}
	if _, err := r.Stop(context.Background()); !errors.Is(err, ErrNotRunning) {
		t.Errorf("stop of an orphan: %v", err)
	}
	// A state file that is not JSON is an error, not a report.
	for _, bad := range [][]byte{[]byte("{"), append([]byte(`{"pending":false,"report":{}}`), bytes.Repeat([]byte(" "), maxStateBytes)...)} {
		os.WriteFile(filepath.Join(dir, roundStateFile), bad, 0o600)
		if _, err := r.Status(); err == nil {
			t.Errorf("broken state file of %d bytes accepted", len(bad))
		}
	}
}

// Whatever the state file holds (it is the app's own file, but a crash
// can leave anything), status answers an error or one JSON document, and
// a pending round without its process is never reported as running.
func FuzzRoundStatus(f *testing.F) {
	f.Add([]byte(`{"pid":1,"pending":true,"report":{"state":"running","pending":true}}`))
	f.Add([]byte(`{"pid":1,"pending":false,"report":{"state":"done"}}`))
	f.Add([]byte(`{"pid":1,"pending":true,"report":[1,2]}`))
	f.Add([]byte(`{"pending":true,"report":null}`))
	f.Add([]byte(`{"pending":false}`))
	f.Add([]byte(`not json`))
	dir := f.TempDir()
	r := NewRounds(dir)
	f.Fuzz(func(t *testing.T, state []byte) {
		if err := os.WriteFile(filepath.Join(dir, roundStateFile), state, 0o600); err != nil {
			t.Fatal(err)
		}
		raw, err := r.Status()
		if err != nil {
			return
		}
		if !json.Valid(raw) {
			t.Fatalf("status %q is not JSON", raw)
		}
		var d roundDoc
		if json.Unmarshal(state, &d) == nil && d.Pending {
			var m map[string]any
			if json.Unmarshal(raw, &m) != nil || m["pending"] != false || m["state"] != StateError {
				t.Fatalf("orphaned round reported as %s", raw)
			}
		}
	})
}
