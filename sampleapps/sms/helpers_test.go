package sms

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/notes"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// t0 is Monday 2026-10-12 06:00 UTC (14:00 in Shanghai).
var t0 = time.Date(2026, 10, 12, 6, 0, 0, 0, time.UTC)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func newApp(t testing.TB, loc *time.Location, agent notes.Agent) (*App, *testClock) {
	t.Helper()
	clk := &testClock{t: t0}
	a, err := Open(context.Background(), t.TempDir(), &Options{Clock: clk.Now, Location: loc, Language: "zh-CN", Agent: agent})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a, clk
}

func toolByName(t testing.TB, a *App, name string) apptool.Tool {
	t.Helper()
	for _, tl := range a.Tools() {
		if tl.Name == name {
			return tl
		}
	}
	t.Fatalf("no tool %s", name)
	return apptool.Tool{}
}

func call(t testing.TB, a *App, name, args string) (map[string]any, string) {
	t.Helper()
	res := apptool.Run(context.Background(), toolByName(t, a, name), json.RawMessage(args))
	if res.IsError {
		return nil, res.Text
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(res.Text), &m); err != nil {
		t.Fatalf("%s result %q: %v", name, res.Text, err)
	}
	return m, ""
}

func mustCall(t testing.TB, a *App, name, args string) map[string]any {
	t.Helper()
	m, e := call(t, a, name, args)
	if e != "" {
		t.Fatalf("%s %s: %s", name, args, e)
	}
	return m
}

func debug(t testing.TB, a *App, cmd string, args ...string) any {
	t.Helper()
	out, err := a.Debug(context.Background(), cmd, args)
	if err != nil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return out
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden file (run with -update to accept):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}

func indentJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
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
