package sampletest

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// clockApp is an app with one tool that reports its clock, and one that
// always fails.
type clockApp struct {
	now    func() time.Time
	closed bool
}

func (a *clockApp) Tools() []apptool.Tool {
	return []apptool.Tool{
		{Name: "now", Handler: func(ctx context.Context, args json.RawMessage) (any, error) {
			return map[string]string{"now": a.now().Format(time.RFC3339), "args": string(args)}, nil
		}},
		{Name: "refuse", Handler: func(ctx context.Context, args json.RawMessage) (any, error) {
			return nil, apptool.Errorf("No.")
		}},
	}
}

func (a *clockApp) Debug(ctx context.Context, cmd string, args []string) (any, error) {
	if cmd != "echo" {
		return nil, errors.New("unknown")
	}
	return args, nil
}

func (a *clockApp) Close() error { a.closed = true; return nil }

func TestFixture(t *testing.T) {
	var app *clockApp
	var gotDir string
	t.Run("use", func(t *testing.T) {
		f := NewFixture(t, "Asia/Shanghai", "2026-10-12T14:00", func(dir string, clock func() time.Time, loc *time.Location) (*clockApp, error) {
			gotDir = dir
			app = &clockApp{now: clock}
			return app, nil
		})
		if gotDir == "" || f.Loc.String() != "Asia/Shanghai" {
			t.Fatalf("dir %q loc %v", gotDir, f.Loc)
		}
		if r := f.OK("now", `{"a":1}`); r["now"] != "2026-10-12T14:00:00+08:00" || r["args"] != `{"a":1}` {
			t.Errorf("now = %v", r)
		}
		f.Now = f.Now.Add(time.Hour)
		if r := f.OK("now", `{}`); r["now"] != "2026-10-12T15:00:00+08:00" {
			t.Errorf("after moving the clock: %v", r)
		}
		if got := f.Fail("refuse", `{}`); got != "No." {
			t.Errorf("Fail = %q", got)
		}
		if m, e := Try(t, f.App, "refuse", `{}`); m != nil || e != "No." {
			t.Errorf("Try = %v, %q", m, e)
		}
		if got := f.Debug("echo", "x", "y").([]string); len(got) != 2 || got[1] != "y" {
			t.Errorf("Debug = %v", got)
		}
		if _, ok := Find(f.App.Tools(), "missing"); ok {
			t.Error("Find found a missing tool")
		}
	})
	if app == nil || !app.closed {
		t.Error("the app was not closed when its test ended")
	}
}

func TestClock(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 10, 12, 6, 0, 0, 0, time.UTC)
	c := NewClock(t0)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Advance(time.Minute)
	}()
	<-done
	if got := c.Now(); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("Now = %v", got)
	}
}
