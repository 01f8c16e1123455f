package alarm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The documented tools of spec §9.7 (nine) plus the extra alarm_snooze,
// with the annotations of §9.1.
func TestToolCatalog(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "UTC", "2026-10-12T06:00")
	want := []struct {
		name                              string
		readOnly, idempotent, destructive bool
	}{
		{"alarm_list", true, false, false},
		{"alarm_get", true, false, false},
		{"alarm_create", false, false, false},
		{"alarm_update", false, true, false},
		{"alarm_set_enabled", false, true, false},
		{"alarm_delete", false, false, true},
		{"alarm_next", true, false, false},
		{"alarm_dismiss", false, false, false},
		{"alarm_snooze", false, false, false},
		{"alarm_system_next", true, false, false},
	}
	tools := f.App.Tools()
	if len(tools) != len(want) {
		t.Fatalf("%d tools, want %d", len(tools), len(want))
	}
	for i, w := range want {
		tl := tools[i]
		an := tl.Annotations
		if tl.Name != w.name || *an.ReadOnlyHint != w.readOnly || *an.IdempotentHint != w.idempotent || *an.DestructiveHint != w.destructive {
			t.Errorf("tool %d = %s %+v, want %+v", i, tl.Name, an, w)
		}
		if tl.Title == "" || len(tl.Description) < 40 || tl.Handler == nil {
			t.Errorf("%s: title, description or handler missing", tl.Name)
		}
		var schema struct {
			Type       string                     `json:"type"`
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
			Additional *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tl.InputSchema, &schema); err != nil || schema.Type != "object" || schema.Additional == nil || *schema.Additional {
			t.Errorf("%s: bad schema %s (%v)", tl.Name, tl.InputSchema, err)
		}
		for _, r := range schema.Required {
			if _, ok := schema.Properties[r]; !ok {
				t.Errorf("%s: required %q not a property", tl.Name, r)
			}
		}
	}
}

// Every tool: normal use, missing required parameter, wrong type or
// out-of-range value, unknown id, oversized text and unknown parameters
// (seed §5.12).
func TestToolArguments(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("闹", MaxLabel+1)
	tests := []struct {
		tool, args string
		want       string // error sentence; "" = success
		check      func(t *testing.T, r map[string]any)
	}{
		{"alarm_list", `{}`, "", func(t *testing.T, r map[string]any) {
			if r["count"] != 2.0 {
				t.Errorf("count = %v", r["count"])
			}
		}},
		{"alarm_list", `{"enabled_only":true}`, "", func(t *testing.T, r map[string]any) {
			if r["count"] != 1.0 {
				t.Errorf("count = %v", r["count"])
			}
		}},
		{"alarm_list", `{"enabled_only":"yes"}`, `Parameter "enabled_only" must be true or false.`, nil},
		{"alarm_list", `{"limit":3}`, `Unknown parameter "limit".`, nil},
		{"alarm_list", `[]`, `Arguments must be a JSON object.`, nil},

		{"alarm_get", `{"id":1}`, "", func(t *testing.T, r map[string]any) {
			if r["time"] != "07:00" || r["next_fire_at"] != "2026-10-12T07:00:00+08:00" || r["repeat"] != "weekdays" {
				t.Errorf("alarm = %v", r)
			}
		}},
		{"alarm_get", `{}`, `Missing required parameter "id".`, nil},
		{"alarm_get", `{"id":"1"}`, `Parameter "id" must be an integer.`, nil},
		{"alarm_get", `{"id":0}`, `Parameter "id" must be at least 1.`, nil},
		{"alarm_get", `{"id":99}`, `No alarm with id 99`, nil},

		{"alarm_create", `{"time":"7:5"}`, `Parameter "time" must be a 24-hour clock time "HH:mm", e.g. "07:30".`, nil},
		{"alarm_create", `{"time":"6:45","label":"Run","days":["Mon","tue","mon"],"snooze_minutes":5,"vibrate":false}`, "", func(t *testing.T, r map[string]any) {
			if r["time"] != "06:45" || r["repeat"] != "custom" || fmt.Sprint(r["days"]) != "[mon tue]" || r["snooze_minutes"] != 5.0 || r["vibrate"] != false {
				t.Errorf("alarm = %v", r)
			}
			if r["next_fire_at"] != "2026-10-12T06:45:00+08:00" {
				t.Errorf("next_fire_at = %v", r["next_fire_at"])
			}
		}},
		{"alarm_create", `{"time":"23:59","enabled":false}`, "", func(t *testing.T, r map[string]any) {
			if r["next_fire_at"] != nil || r["repeat"] != "once" {
				t.Errorf("alarm = %v", r)
			}
		}},
		{"alarm_create", `{}`, `Missing required parameter "time".`, nil},
		{"alarm_create", `{"time":700}`, `Parameter "time" must be a string.`, nil},
		{"alarm_create", `{"time":"24:00"}`, `Parameter "time" must be a 24-hour clock time "HH:mm", e.g. "07:30".`, nil},
		{"alarm_create", `{"time":"07:00","days":["mon","funday"]}`, `Items of "days" must be one of mon, tue, wed, thu, fri, sat, sun.`, nil},
		{"alarm_create", `{"time":"07:00","days":"mon"}`, `Parameter "days" must be an array of strings.`, nil},
		{"alarm_create", `{"time":"07:00","snooze_minutes":61}`, `Parameter "snooze_minutes" must be between 1 and 60.`, nil},
		{"alarm_create", `{"time":"07:00","snooze_minutes":0}`, `Parameter "snooze_minutes" must be between 1 and 60.`, nil},
		{"alarm_create", `{"time":"07:00","label":"` + long + `"}`, `Parameter "label" is too long (61 characters; the limit is 60).`, nil},
		{"alarm_create", `{"time":"07:00","date":"2026-10-13"}`, `Unknown parameter "date".`, nil},

		{"alarm_update", `{"id":1,"time":"07:30","label":""}`, "", func(t *testing.T, r map[string]any) {
			if r["time"] != "07:30" || r["label"] != "" || r["repeat"] != "weekdays" {
				t.Errorf("alarm = %v", r)
			}
		}},
		{"alarm_update", `{"id":1,"days":[]}`, "", func(t *testing.T, r map[string]any) {
			if r["repeat"] != "once" {
				t.Errorf("alarm = %v", r)
			}
		}},
		{"alarm_update", `{"id":1}`, `Nothing to update: pass at least one of time, label, days, enabled, vibrate, snooze_minutes.`, nil},
		{"alarm_update", `{"time":"07:30"}`, `Missing required parameter "id".`, nil},
		{"alarm_update", `{"id":1,"enabled":1}`, `Parameter "enabled" must be true or false.`, nil},
		{"alarm_update", `{"id":42,"label":"x"}`, `No alarm with id 42`, nil},
		{"alarm_update", `{"id":1,"label":"` + long + `"}`, `Parameter "label" is too long (61 characters; the limit is 60).`, nil},

		{"alarm_set_enabled", `{"id":2,"enabled":true}`, "", func(t *testing.T, r map[string]any) {
			if r["enabled"] != true || r["next_fire_at"] != "2026-10-17T06:30:00+08:00" {
				t.Errorf("alarm = %v", r)
			}
		}},
		{"alarm_set_enabled", `{"id":2}`, `Missing required parameter "enabled".`, nil},
		{"alarm_set_enabled", `{"id":2,"enabled":"false"}`, `Parameter "enabled" must be true or false.`, nil},
		{"alarm_set_enabled", `{"id":7,"enabled":false}`, `No alarm with id 7`, nil},

		{"alarm_delete", `{"id":2}`, "", func(t *testing.T, r map[string]any) {
			if r["deleted"] != true || r["alarm"].(map[string]any)["id"] != 2.0 {
				t.Errorf("result = %v", r)
			}
		}},
		{"alarm_delete", `{}`, `Missing required parameter "id".`, nil},
		{"alarm_delete", `{"id":1.5}`, `Parameter "id" must be an integer.`, nil},
		{"alarm_delete", `{"id":3}`, `No alarm with id 3`, nil},

		{"alarm_next", `{}`, "", func(t *testing.T, r map[string]any) {
			if r["next_fire_at"] != "2026-10-12T07:00:00+08:00" || r["fires_in_minutes"] != 60.0 {
				t.Errorf("result = %v", r)
			}
		}},
		{"alarm_next", `{"id":1}`, `Unknown parameter "id".`, nil},

		{"alarm_dismiss", `{}`, `No alarm is ringing right now.`, nil},
		{"alarm_dismiss", `{"id":1}`, `Alarm 1 is not ringing right now.`, nil},
		{"alarm_dismiss", `{"id":"x"}`, `Parameter "id" must be an integer.`, nil},
		{"alarm_dismiss", `{"id":9}`, `No alarm with id 9`, nil},
		{"alarm_snooze", `{}`, `No alarm is ringing right now.`, nil},
		{"alarm_snooze", `{"id":-1}`, `Parameter "id" must be at least 1.`, nil},
		{"alarm_snooze", `{"id":9}`, `No alarm with id 9`, nil},

		{"alarm_system_next", `{}`, "", func(t *testing.T, r map[string]any) {
			if r["owned_by_this_app"] != true || r["next_fire_at"] != "2026-10-12T07:00:00+08:00" {
				t.Errorf("result = %v", r)
			}
		}},
		{"alarm_system_next", `{"x":1}`, `Unknown parameter "x".`, nil},
	}
	for i, tt := range tests {
		// Named by index: arguments may hold "#" or "?", which must not
		// reach a temp dir name (they end an SQLite URI path).
		t.Run(fmt.Sprintf("%02d_%s", i, tt.tool), func(t *testing.T) {
			t.Logf("%s %s", tt.tool, tt.args)
			t.Parallel()
			// Monday 06:00 in Shanghai; alarm 1 rings on weekdays at
			// 07:00, alarm 2 (off) on weekends at 06:30.
			f := newFixture(t, "Asia/Shanghai", "2026-10-12T06:00")
			f.OK("alarm_create", `{"time":"07:00","label":"Wake up","days":["mon","tue","wed","thu","fri"]}`)
			f.OK("alarm_create", `{"time":"06:30","days":["sat","sun"],"enabled":false}`)
			before := f.state()
			if tt.want != "" {
				if got := f.Fail(tt.tool, tt.args); got != tt.want {
					t.Fatalf("error = %q, want %q", got, tt.want)
				}
				if after := f.state(); after != before {
					t.Fatalf("a failed call changed the store:\n%s\n%s", before, after)
				}
				return
			}
			r := f.OK(tt.tool, tt.args)
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func TestAlarmNextNull(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "UTC", "2026-10-12T06:00")
	for _, name := range []string{"alarm_next", "alarm_system_next"} {
		if r := f.Call(name, `{}`); r.IsError || r.Text != "null" || r.Structured != nil {
			t.Fatalf("%s with no alarms = %+v", name, r)
		}
	}
	f.OK("alarm_create", `{"time":"07:00","enabled":false}`)
	if r := f.Call("alarm_next", `{}`); r.Text != "null" {
		t.Fatalf("only a disabled alarm: %s", r.Text)
	}
}

func TestAlarmLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "UTC", "2026-10-12T06:00")
	// Fill all but one slot in one transaction, then take the last one
	// through the tool.
	if err := f.App.do(context.Background(), func(s *state) error {
		for i := 0; i < MaxAlarms-1; i++ {
			if err := s.add(&alarm{Minute: i % 1440, SnoozeMinutes: 10}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.OK("alarm_create", `{"time":"07:00"}`)
	if got := f.Fail("alarm_create", `{"time":"07:00"}`); !strings.Contains(got, "already 500 alarms") {
		t.Fatalf("error = %q", got)
	}
}
