package todo

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

// Debug command output shapes with a fixed clock (Monday 2026-10-12 09:00
// in Shanghai) and a seeded id source.
func TestDebugGolden(t *testing.T) {
	f := newFixture(t, "Asia/Shanghai", "2026-10-12T09:00")
	sampletest.Golden(t, "dump_empty", f.Debug("dump"))
	sampletest.Golden(t, "seed", f.Debug("seed"))
	again := f.Debug("seed").(*SeedResult)
	if again.Inserted != 0 || again.Total != 7 {
		t.Fatalf("seed is not idempotent: inserted %d total %d", again.Inserted, again.Total)
	}
	sampletest.Golden(t, "summary_seeded", f.Debug("tool", "todo_summary"))
	sampletest.Golden(t, "dump_seeded", f.Debug("dump"))
	sampletest.Golden(t, "reset", f.Debug("reset"))
	sampletest.Golden(t, "dump_after_reset", f.Debug("dump"))
}

func TestDebugUsage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "UTC", "2026-10-12T06:00")
	for _, c := range []struct {
		cmd  string
		args []string
	}{{"dump", []string{"x"}}, {"reset", []string{"x"}}, {"seed", []string{"x"}}, {"tool", nil}, {"ring", nil}} {
		var ue *apptool.UsageError
		if _, err := f.App.Debug(context.Background(), c.cmd, c.args); !errors.As(err, &ue) {
			t.Errorf("%s %v: err = %v, want a usage error", c.cmd, c.args, err)
		}
	}
	_, err := f.App.Debug(context.Background(), "tool", []string{"todo_get", `{"id":"00000000"}`})
	var te *apptool.ToolCallError
	if !errors.As(err, &te) || te.Sentence != `No todo with id "00000000"` {
		t.Fatalf("tool error: %v", err)
	}
}

// Every tool handler takes arbitrary JSON without panicking; errors are
// user sentences; a failed call leaves the store unchanged.
func FuzzTools(f *testing.F) {
	seeds := []string{`{}`, `{"title":"x","due":"2026-10-12","tags":["a"]}`, `{"id":"00000000"}`, `{"query":"报告"}`,
		`{"status":"done","include_done":true,"limit":3}`, `{"due_before":"2026-10-12T10:00:00+08:00"}`, `null`, `[1]`,
		`{"id":"x","due":"","tags":[],"parent_id":""}`, `{"title":"y","due":"2026-03-08T02:30:00-05:00","due_all_day":true}`}
	for i, s := range seeds {
		f.Add(uint8(i), []byte(s))
	}
	fx := newFixture(f, "America/New_York", "2026-03-08T01:30")
	fx.Debug("seed")
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
