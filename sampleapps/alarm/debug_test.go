package alarm

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/alarm/internal/alarmclock"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

// Debug command output shapes with a fixed clock (Monday 2026-10-12 06:00
// in Shanghai).
func TestDebugGolden(t *testing.T) {
	f := newFixture(t, "Asia/Shanghai", "2026-10-12T06:00")
	sampletest.Golden(t, "dump_empty", f.Debug("dump"))
	sampletest.Golden(t, "seed", f.Debug("seed"))
	seedAgain := f.Debug("seed").(*SeedResult)
	if seedAgain.Inserted != 0 || seedAgain.Total != len(seedAlarms) {
		t.Fatalf("seed is not idempotent: %+v", seedAgain)
	}
	// Another clock app's alarm, earlier than ours.
	if err := alarmclock.New(f.sys).Set("com.example.clock", []alarmclock.Entry{{ID: "x", FireAt: f.Now.Add(30 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	sampletest.Golden(t, "dump_seeded", f.Debug("dump"))
	sampletest.Golden(t, "dump_page", f.Debug("dump", `{"offset":1,"limit":2}`))
	sampletest.Golden(t, "ring", f.Debug("ring", "1"))
	sampletest.Golden(t, "tool_dismiss", f.Debug("tool", "alarm_dismiss", `{}`))
	_, err := f.App.Debug(context.Background(), "tool", []string{"alarm_get", `{"id":77}`})
	var te *apptool.ToolCallError
	if !errors.As(err, &te) || te.Sentence != "No alarm with id 77" {
		t.Fatalf("tool error: %v", err)
	}
	sampletest.Golden(t, "reset", f.Debug("reset"))
	sampletest.Golden(t, "dump_after_reset", f.Debug("dump"))
}

func TestDebugUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "UTC", "2026-10-12T06:00")
	tests := []struct {
		cmd  string
		args []string
	}{
		{"ring", nil}, {"ring", []string{"x"}}, {"ring", []string{"0"}}, {"reset", []string{"now"}},
		{"seed", []string{"x"}}, {"dump", []string{`{"limit":0}`}}, {"dump", []string{`{"x":1}`}},
		{"dump", []string{"{", "}"}}, {"fly", nil}, {"tool", nil},
	}
	for _, tt := range tests {
		_, err := f.App.Debug(context.Background(), tt.cmd, tt.args)
		var ue *apptool.UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%s %v: err = %v, want a usage error", tt.cmd, tt.args, err)
		}
	}
	_, err := f.App.Debug(context.Background(), "ring", []string{"5"})
	if s, ok := apptool.IsUserError(err); !ok || s != "No alarm with id 5" {
		t.Fatalf("ring unknown id: %v", err)
	}
}

func TestSystemNext(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "Europe/Berlin", "2026-10-12T06:00")
	clock := alarmclock.New(f.sys)
	f.OK("alarm_create", `{"time":"07:00"}`)
	// A foreign alarm earlier than ours is the system's next one.
	if err := clock.Set("com.example.clock", []alarmclock.Entry{{ID: "a", FireAt: f.Now.Add(20 * time.Minute)}}); err != nil {
		t.Fatal(err)
	}
	r := f.OK("alarm_system_next", `{}`)
	if r["owned_by_this_app"] != false || r["next_fire_at"] != "2026-10-12T06:20:00+02:00" || r["fires_in_minutes"] != 20.0 {
		t.Fatalf("foreign first: %v", r)
	}
	// Once it has passed, ours is next.
	f.Now = f.Now.Add(25 * time.Minute)
	r = f.OK("alarm_system_next", `{}`)
	if r["owned_by_this_app"] != true || r["next_fire_at"] != "2026-10-12T07:00:00+02:00" {
		t.Fatalf("ours next: %v", r)
	}
	// Deleting ours unregisters it.
	f.OK("alarm_delete", `{"id":1}`)
	if res := f.Call("alarm_system_next", `{}`); res.Text != "null" {
		t.Fatalf("after delete: %s", res.Text)
	}
	entries, _ := clock.Entries()
	for _, e := range entries {
		if e.Package == Package {
			t.Fatalf("still registered: %+v", e)
		}
	}
}

// Every tool handler takes arbitrary JSON without panicking; errors are
// user sentences; a failed call leaves the store unchanged.
func FuzzTools(f *testing.F) {
	seeds := []string{`{}`, `{"id":1}`, `{"time":"07:00","days":["mon"]}`, `{"id":1,"label":""}`, `{"id":1,"enabled":false}`,
		`{"enabled_only":true}`, `null`, `[]`, `{"id":1e999}`, `{"time":"7:00","snooze_minutes":60,"vibrate":true}`, `{"id":"1"}`}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	fx := newFixture(f, "America/New_York", "2026-03-08T01:30")
	fx.Debug("seed")
	fx.Debug("ring", "1")
	tools := fx.App.Tools()
	f.Fuzz(func(t *testing.T, which uint8, raw []byte) {
		tl := tools[int(which)%len(tools)]
		before := snapshot(t, fx.App)
		out, err := tl.Handler(context.Background(), json.RawMessage(raw))
		if err != nil {
			if _, ok := apptool.IsUserError(err); !ok {
				t.Fatalf("%s(%s): not a user error: %v", tl.Name, raw, err)
			}
			if after := snapshot(t, fx.App); after != before {
				t.Fatalf("%s(%s) failed but changed the store", tl.Name, raw)
			}
			return
		}
		if _, err := apptool.Compact(out); err != nil {
			t.Fatalf("%s: result does not encode: %v", tl.Name, err)
		}
	})
}
