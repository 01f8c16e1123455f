package calendar

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

var update = flag.Bool("update", false, "rewrite testdata golden files")

type fixture struct {
	t   testing.TB
	app *App
	now time.Time
	loc *time.Location
	sys string
}

func loadLoc(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// newFixture opens an app in a temp dir with a clock fixed at now (local
// wall time "2006-01-02T15:04" in zone).
func newFixture(t testing.TB, zone, now string) *fixture {
	t.Helper()
	loc := loadLoc(t, zone)
	at, err := time.ParseInLocation("2006-01-02T15:04", now, loc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	f := &fixture{t: t, now: at, loc: loc, sys: filepath.Join(dir, "system")}
	app, err := Open(context.Background(), filepath.Join(dir, "app"), &Options{
		Clock: func() time.Time { return f.now }, Location: loc, SystemDir: f.sys,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	f.app = app
	return f
}

func (f *fixture) tool(name string) apptool.Tool {
	f.t.Helper()
	tl, ok := findTool(f.app.Tools(), name)
	if !ok {
		f.t.Fatalf("no tool %s", name)
	}
	return tl
}

func findTool(tools []apptool.Tool, name string) (apptool.Tool, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return apptool.Tool{}, false
}

func (f *fixture) call(name, args string) apptool.Result {
	f.t.Helper()
	return apptool.Run(context.Background(), f.tool(name), json.RawMessage(args))
}

// ok calls a tool that must succeed and decodes its result.
func (f *fixture) ok(name, args string) map[string]any {
	f.t.Helper()
	r := f.call(name, args)
	if r.IsError {
		f.t.Fatalf("%s %s: %s", name, args, r.Text)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Text), &m); err != nil {
		f.t.Fatalf("%s: result %q: %v", name, r.Text, err)
	}
	return m
}

// fail calls a tool that must fail and returns its sentence.
func (f *fixture) fail(name, args string) string {
	f.t.Helper()
	r := f.call(name, args)
	if !r.IsError {
		f.t.Fatalf("%s %s succeeded: %s", name, args, r.Text)
	}
	return r.Text
}

func (f *fixture) debug(cmd string, args ...string) any {
	f.t.Helper()
	out, err := f.app.Debug(context.Background(), cmd, args)
	if err != nil {
		f.t.Fatalf("debug %s: %v", cmd, err)
	}
	return out
}

// state is a full dump, for before/after comparisons.
func (f *fixture) state() string { return snapshot(f.t, f.app) }

func snapshot(t testing.TB, app *App) string {
	d, err := app.dump(context.Background(), 0, MaxLocalEvents)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(d)
	return string(b)
}

func golden(t *testing.T, name string, v any) {
	t.Helper()
	got, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", name+".golden.json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from golden (go test -update to accept):\n%s", path, got)
	}
}

// grant turns the simulated calendar permission on.
func (f *fixture) grant() {
	f.t.Helper()
	f.debug("set", "permission", "granted")
}

// create makes an event and returns its id.
func (f *fixture) create(args string) string {
	f.t.Helper()
	return f.ok("event_create", args)["id"].(string)
}

// starts lists the start of each event of a list result.
func starts(r map[string]any) []string {
	var out []string
	for _, e := range r["events"].([]any) {
		out = append(out, e.(map[string]any)["start"].(string))
	}
	return out
}
