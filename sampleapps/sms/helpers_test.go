package sms

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
	"github.com/agentoslab/agentlab/sampleapps/notes"
)

// t0 is Monday 2026-10-12 06:00 UTC (14:00 in Shanghai).
var t0 = time.Date(2026, 10, 12, 6, 0, 0, 0, time.UTC)

func newApp(t testing.TB, loc *time.Location, agent notes.Agent) (*App, *sampletest.Clock) {
	t.Helper()
	clk := sampletest.NewClock(t0)
	a, err := Open(context.Background(), t.TempDir(), &Options{Clock: clk.Now, Location: loc, Language: "zh-CN", Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, clk
}

func dumpJSON(t testing.TB, a *App) string {
	t.Helper()
	d, err := a.dump(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	d.Now = ""
	// Outbox states move with the clock; the stored rows are what count.
	for i := range d.Outbox {
		d.Outbox[i].State, d.Outbox[i].SentParts, d.Outbox[i].DeliveredParts = "", 0, 0
	}
	b, _ := json.Marshal(d)
	return string(b)
}

// scriptedAgent replays events and returns a fixed outcome.
type scriptedAgent struct {
	events []notes.Event
	stop   string
	err    error

	mu      sync.Mutex
	prompts []string
	scope   []notes.ToolScopeEntry
}

func (s *scriptedAgent) Schedule(ctx context.Context, prompt string, scope []notes.ToolScopeEntry, onEvent func(notes.Event)) (string, error) {
	s.mu.Lock()
	s.prompts = append(s.prompts, prompt)
	s.scope = scope
	s.mu.Unlock()
	for _, ev := range s.events {
		onEvent(ev)
	}
	return s.stop, s.err
}

func (s *scriptedAgent) GatewayName() string { return "fake" }
