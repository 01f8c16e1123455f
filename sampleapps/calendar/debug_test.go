package calendar

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

// Debug command output shapes with a fixed clock (Monday 2026-10-12 08:00
// in Shanghai).
func TestDebugGolden(t *testing.T) {
	f := newFixture(t, "Asia/Shanghai", "2026-10-12T08:00")
	sampletest.Golden(t, "dump_empty", f.Debug("dump"))
	sampletest.Golden(t, "seed", f.Debug("seed"))
	if again := f.Debug("seed").(*SeedResult); again.Inserted != 0 || again.TotalEvents != len(seedEvents) {
		t.Fatalf("seed is not idempotent: %+v", again)
	}
	sampletest.Golden(t, "dump_seeded", f.Debug("dump"))
	sampletest.Golden(t, "dump_page", f.Debug("dump", `{"offset":5,"limit":1}`))
	sampletest.Golden(t, "agenda_seeded", f.Debug("tool", "agenda_today"))
	sampletest.Golden(t, "set_permission", f.Debug("set", "permission", "granted"))
	sampletest.Golden(t, "dump_granted", f.Debug("dump"))
	sampletest.Golden(t, "reset", f.Debug("reset"))
	sampletest.Golden(t, "clear", f.Debug("clear"))
	sampletest.Golden(t, "dump_after_reset", f.Debug("dump"))
}

func TestDebugUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "UTC", "2026-10-12T06:00")
	for _, c := range []struct {
		cmd  string
		args []string
	}{
		{"set", nil}, {"set", []string{"permission"}}, {"set", []string{"permission", "yes"}}, {"set", []string{"color", "granted"}},
		{"reset", []string{"x"}}, {"clear", []string{"x"}}, {"seed", []string{"x"}}, {"dump", []string{`{"limit":0}`}},
		{"dump", []string{`{"x":1}`}}, {"tool", nil}, {"remind_test", nil},
	} {
		var ue *apptool.UsageError
		if _, err := f.App.Debug(context.Background(), c.cmd, c.args); !errors.As(err, &ue) {
			t.Errorf("%s %v: err = %v, want a usage error", c.cmd, c.args, err)
		}
	}
	_, err := f.App.Debug(context.Background(), "tool", []string{"event_get", `{"id":"sys:1"}`})
	var te *apptool.ToolCallError
	if !errors.As(err, &te) || te.Sentence != PermissionSentence {
		t.Fatalf("tool error: %v", err)
	}
}

// Every tool handler takes arbitrary JSON without panicking; errors are
// user sentences; a failed call leaves both stores unchanged.
func FuzzTools(f *testing.F) {
	seeds := []string{`{}`, `{"name":"Work","color":"#00FF00"}`, `{"id":"local:1"}`, `{"id":"local:3@20261012"}`,
		`{"title":"x","start":"2026-10-12T09:00:00+08:00","recurrence":"weekly","recurrence_until":"2026-12-01","reminder_minutes":[5]}`,
		`{"from":"2026-10-01","to":"2026-11-01","query":"会"}`, `{"date":"2026-03-08","duration_minutes":30,"day_end":"24:00"}`,
		`{"query":"站会","calendar_id":"local:2"}`, `{"id":"sys:1","visible":false}`, `null`, `[]`, `{"id":"local:1","start":"2026-03-08","all_day":false}`}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	fx := newFixture(f, "America/New_York", "2026-03-08T01:30")
	fx.Debug("seed")
	fx.Debug("set", "permission", "granted")
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
