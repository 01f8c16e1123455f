package notes

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
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// testClock is a settable clock.
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

// t0 is the fixed start of test clocks: Monday 2026-10-12 06:00 UTC.
var t0 = time.Date(2026, 10, 12, 6, 0, 0, 0, time.UTC)

func mustZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func newApp(t testing.TB, loc *time.Location, agent Agent) (*App, *testClock) {
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

// call runs a tool through apptool.Run and returns the decoded result or
// the error sentence.
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

// golden compares got with testdata/name, rewriting it under -update.
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
	d.Now = "" // the clock moves; the store is what counts
	b, _ := json.Marshal(d)
	return string(b)
}
