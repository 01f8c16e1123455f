// Package sampletest holds what the sample apps' tests share: calling an
// app's tools the way the provider SDK shell does (apptool.Run), a
// settable clock, golden files of debug output, the plugin-asset checks
// and running an app's binary as the launcher and the lab do. It is
// imported by tests only.
//
// It imports internal/golden, which registers the -update flag.
package sampletest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/golden"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// App is what the helpers need of an opened sample app.
type App interface {
	Tools() []apptool.Tool
}

// Find returns the tool called name.
func Find(tools []apptool.Tool, name string) (apptool.Tool, bool) {
	for _, tl := range tools {
		if tl.Name == name {
			return tl, true
		}
	}
	return apptool.Tool{}, false
}

// Tool returns app's tool called name, failing the test without one.
func Tool(t testing.TB, app App, name string) apptool.Tool {
	t.Helper()
	tl, ok := Find(app.Tools(), name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tl
}

// Call runs a tool with the JSON arguments args through apptool.Run.
func Call(t testing.TB, app App, name, args string) apptool.Result {
	t.Helper()
	return apptool.Run(context.Background(), Tool(t, app, name), json.RawMessage(args))
}

// Try calls a tool and returns either its decoded result or, when the
// call failed, its error sentence.
func Try(t testing.TB, app App, name, args string) (map[string]any, string) {
	t.Helper()
	r := Call(t, app, name, args)
	if r.IsError {
		return nil, r.Text
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(r.Text), &m); err != nil {
		t.Fatalf("%s: result %q: %v", name, r.Text, err)
	}
	return m, ""
}

// OK calls a tool that must succeed and returns its decoded result.
func OK(t testing.TB, app App, name, args string) map[string]any {
	t.Helper()
	m, e := Try(t, app, name, args)
	if e != "" {
		t.Fatalf("%s %s: %s", name, args, e)
	}
	return m
}

// Fail calls a tool that must fail and returns its error sentence.
func Fail(t testing.TB, app App, name, args string) string {
	t.Helper()
	r := Call(t, app, name, args)
	if !r.IsError {
		t.Fatalf("%s %s succeeded: %s", name, args, r.Text)
	}
	return r.Text
}

// Debugger is an app with the debug commands of its binary.
type Debugger interface {
	Debug(ctx context.Context, cmd string, args []string) (any, error)
}

// Debug runs a debug command that must succeed and returns its document.
func Debug(t testing.TB, app Debugger, cmd string, args ...string) any {
	t.Helper()
	out, err := app.Debug(context.Background(), cmd, args)
	if err != nil {
		t.Fatalf("debug %s %v: %v", cmd, args, err)
	}
	return out
}

// Golden compares v, as indented JSON, with testdata/<name>.golden.json
// (see internal/golden).
func Golden(t testing.TB, name string, v any) {
	t.Helper()
	golden.JSON(t, filepath.Join("testdata", name+".golden.json"), v)
}

// Location loads a time zone, failing the test when it cannot.
func Location(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

// Clock is a settable clock for an app's Options.Clock. It is safe for
// concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock stopped at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Fixture is one app opened in a temporary directory for a test, with a
// clock the test sets. Not for concurrent use: tests move Now between
// calls.
type Fixture[A apptool.App] struct {
	T   testing.TB
	App A
	// Now is what the app's clock returns.
	Now time.Time
	// Loc is the device time zone the app was opened with.
	Loc *time.Location
}

// Opener opens the app under test with its data under dir (a fresh
// temporary directory), clock and loc.
type Opener[A apptool.App] func(dir string, clock func() time.Time, loc *time.Location) (A, error)

// NewFixture opens an app with a clock stopped at now, the wall time
// "2006-01-02T15:04" in zone; the app is closed when the test ends.
func NewFixture[A apptool.App](t testing.TB, zone, now string, open Opener[A]) *Fixture[A] {
	t.Helper()
	loc := Location(t, zone)
	at, err := time.ParseInLocation("2006-01-02T15:04", now, loc)
	if err != nil {
		t.Fatal(err)
	}
	f := &Fixture[A]{T: t, Now: at, Loc: loc}
	app, err := open(t.TempDir(), func() time.Time { return f.Now }, loc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	f.App = app
	return f
}

// Tool returns the app's tool called name.
func (f *Fixture[A]) Tool(name string) apptool.Tool {
	f.T.Helper()
	return Tool(f.T, f.App, name)
}

// Call runs a tool with the JSON arguments args.
func (f *Fixture[A]) Call(name, args string) apptool.Result {
	f.T.Helper()
	return Call(f.T, f.App, name, args)
}

// OK calls a tool that must succeed and returns its decoded result.
func (f *Fixture[A]) OK(name, args string) map[string]any {
	f.T.Helper()
	return OK(f.T, f.App, name, args)
}

// Fail calls a tool that must fail and returns its error sentence.
func (f *Fixture[A]) Fail(name, args string) string {
	f.T.Helper()
	return Fail(f.T, f.App, name, args)
}

// Debug runs a debug command that must succeed and returns its document.
func (f *Fixture[A]) Debug(cmd string, args ...string) any {
	f.T.Helper()
	return Debug(f.T, f.App, cmd, args...)
}
