package calendar

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// The eleven documented tools of spec §9.7 plus calendar_update, with the
// annotations of §9.2.
func TestToolCatalog(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "UTC", "2026-10-12T08:00")
	want := []struct {
		name                              string
		readOnly, idempotent, destructive bool
	}{
		{"calendar_list", true, false, false},
		{"calendar_create", false, false, false},
		{"calendar_update", false, true, false},
		{"calendar_delete", false, false, true},
		{"event_list", true, false, false},
		{"event_get", true, false, false},
		{"event_create", false, false, false},
		{"event_update", false, true, false},
		{"event_delete", false, false, true},
		{"event_search", true, false, false},
		{"agenda_today", true, false, false},
		{"free_slots", true, false, false},
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
		if tl.Title == "" || len(tl.Description) < 40 {
			t.Errorf("%s: title or description missing", tl.Name)
		}
	}
}

// Every tool: normal use, missing required parameter, wrong type or
// out-of-range value, unknown id, oversized text and the app's rules.
//
// Fixture (Asia/Shanghai, Monday 2026-10-12 08:00): calendars local:1
// Personal (default) and local:2 Work; events local:1 Dentist 10-13
// 15:00-16:00, local:2 Stand-up daily 09:30-09:45 from 10-12 until 10-16
// (Work), local:3 all-day Trip 10-14..10-15.
func TestToolArguments(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("日", n) }
	perm := PermissionSentence
	tests := []struct {
		tool, args string
		want       string // error sentence; "" = success
		check      func(t *testing.T, r map[string]any)
	}{
		{"calendar_list", `{}`, "", func(t *testing.T, r map[string]any) {
			if r["total"] != 2.0 || r["system_permission"] != "denied" {
				t.Errorf("result = %v", r)
			}
		}},
		{"calendar_list", `{"limit":0}`, `Parameter "limit" must be between 1 and 200.`, nil},
		{"calendar_list", `{"offset":"1"}`, `Parameter "offset" must be an integer.`, nil},
		{"calendar_list", `{"storage":"app"}`, `Unknown parameter "storage".`, nil},

		{"calendar_create", `{"name":"Family","color":"#00ff00"}`, "", func(t *testing.T, r map[string]any) {
			if r["id"] != "local:3" || r["color"] != "#00FF00" || r["storage"] != "app" || r["source"] != "local" || r["is_default"] != false {
				t.Errorf("calendar = %v", r)
			}
		}},
		{"calendar_create", `{}`, `Missing required parameter "name".`, nil},
		{"calendar_create", `{"name":"` + long(61) + `"}`, `Parameter "name" is too long (61 characters; the limit is 60).`, nil},
		{"calendar_create", `{"name":"work"}`, `A calendar named "Work" already exists.`, nil},
		{"calendar_create", `{"name":"X","color":"green"}`, `Parameter "color" must be a color "#RRGGBB", e.g. "#4285F4".`, nil},

		{"calendar_update", `{"id":"local:2","name":"Job","visible":false}`, "", func(t *testing.T, r map[string]any) {
			if r["name"] != "Job" || r["visible"] != false || r["event_count"] != 1.0 {
				t.Errorf("calendar = %v", r)
			}
		}},
		{"calendar_update", `{"id":"local:2"}`, `Nothing to update: pass at least one of name, color, visible.`, nil},
		{"calendar_update", `{"name":"x"}`, `Missing required parameter "id".`, nil},
		{"calendar_update", `{"id":"local:2","visible":"no"}`, `Parameter "visible" must be true or false.`, nil},
		{"calendar_update", `{"id":"local:2","name":"personal"}`, `A calendar named "Personal" already exists.`, nil},
		{"calendar_update", `{"id":"local:9","name":"x"}`, `No calendar with id "local:9"`, nil},
		{"calendar_update", `{"id":"sys:1","visible":false}`, perm, nil},

		{"calendar_delete", `{"id":"local:2"}`, "", func(t *testing.T, r map[string]any) {
			if r["deleted"] != true || r["deleted_events"] != 1.0 || r["name"] != "Work" {
				t.Errorf("result = %v", r)
			}
		}},
		{"calendar_delete", `{"id":"local:1"}`, `The default calendar cannot be deleted.`, nil},
		{"calendar_delete", `{"id":"sys:1"}`, perm, nil},
		{"calendar_delete", `{}`, `Missing required parameter "id".`, nil},
		{"calendar_delete", `{"id":2}`, `Parameter "id" must be a string.`, nil},
		{"calendar_delete", `{"id":"work"}`, `No calendar with id "work"`, nil},

		{"event_list", `{}`, "", func(t *testing.T, r map[string]any) {
			if r["total"] != 7.0 || r["from"] != "2026-10-12T00:00:00+08:00" || r["to"] != "2026-11-11T00:00:00+08:00" || r["time_zone"] != "Asia/Shanghai" {
				t.Errorf("result = %v", r)
			}
			first := r["events"].([]any)[0].(map[string]any)
			if first["id"] != "local:2@20261012" || first["series_id"] != "local:2" || first["start"] != "2026-10-12T09:30:00+08:00" {
				t.Errorf("first = %v", first)
			}
		}},
		{"event_list", `{"query":"DENT"}`, "", func(t *testing.T, r map[string]any) {
			if r["total"] != 1.0 {
				t.Errorf("result = %v", r)
			}
		}},
		{"event_list", `{"from":"2026-10-14","to":"2026-10-14"}`, "", func(t *testing.T, r map[string]any) {
			if fmt.Sprint(starts(r)) != "[2026-10-14 2026-10-14T09:30:00+08:00]" {
				t.Errorf("starts = %v", starts(r))
			}
		}},
		{"event_list", `{"from":"2026-10-13T15:30:00+08:00","to":"2026-10-13T15:31:00+08:00"}`, "", func(t *testing.T, r map[string]any) {
			if fmt.Sprint(starts(r)) != "[2026-10-13T15:00:00+08:00]" {
				t.Errorf("a running event must overlap: %v", starts(r))
			}
		}},
		{"event_list", `{"calendar_id":"local:2","limit":2}`, "", func(t *testing.T, r map[string]any) {
			if r["total"] != 5.0 || r["count"] != 2.0 || r["next_offset"] != 2.0 {
				t.Errorf("result = %v", r)
			}
		}},
		{"event_list", `{"from":"2026-10-14","to":"2026-10-13"}`, `Parameter "to" must be later than "from".`, nil},
		{"event_list", `{"from":"2026-01-01","to":"2028-01-05"}`, `The range from "from" to "to" may span at most 731 days.`, nil},
		{"event_list", `{"from":"next monday"}`, `Parameter "from" must be an ISO-8601 date-time such as "2026-10-12T15:00:00+08:00" or a date "2026-10-12".`, nil},
		{"event_list", `{"calendar_id":"sys:1"}`, perm, nil},
		{"event_list", `{"calendar_id":"local:7"}`, `No calendar with id "local:7"`, nil},
		{"event_list", `{"limit":201}`, `Parameter "limit" must be between 1 and 200.`, nil},
		{"event_list", `{"query":"` + long(201) + `"}`, `Parameter "query" is too long (201 characters; the limit is 200).`, nil},

		{"event_get", `{"id":"local:1"}`, "", func(t *testing.T, r map[string]any) {
			if r["title"] != "Dentist" || r["start"] != "2026-10-13T15:00:00+08:00" || r["end"] != "2026-10-13T16:00:00+08:00" ||
				fmt.Sprint(r["reminder_minutes"]) != "[30]" || r["color"] != "#4285F4" || r["recurrence"] != "none" {
				t.Errorf("event = %v", r)
			}
		}},
		{"event_get", `{"id":"local:2@20261014"}`, "", func(t *testing.T, r map[string]any) {
			if r["id"] != "local:2@20261014" || r["start"] != "2026-10-14T09:30:00+08:00" || r["recurrence_until"] != "2026-10-16T23:59:59+08:00" {
				t.Errorf("event = %v", r)
			}
		}},
		{"event_get", `{"id":"local:3"}`, "", func(t *testing.T, r map[string]any) {
			if r["all_day"] != true || r["start"] != "2026-10-14" || r["end"] != "2026-10-15" {
				t.Errorf("event = %v", r)
			}
		}},
		{"event_get", `{"id":"local:2@20261017"}`, `Event "local:2" has no occurrence "20261017"`, nil},
		{"event_get", `{"id":"local:9"}`, `No event with id "local:9"`, nil},
		{"event_get", `{"id":"sys:1"}`, perm, nil},
		{"event_get", `{}`, `Missing required parameter "id".`, nil},
		{"event_get", `{"id":5}`, `Parameter "id" must be a string.`, nil},

		{"event_create", `{"title":"王总会议","start":"2026-10-14T15:00:00+08:00","reminder_minutes":[15,15,5],"location":"3 号会议室"}`, "", func(t *testing.T, r map[string]any) {
			if r["id"] != "local:4" || r["end"] != "2026-10-14T16:00:00+08:00" || fmt.Sprint(r["reminder_minutes"]) != "[5 15]" || r["calendar_id"] != "local:1" {
				t.Errorf("event = %v", r)
			}
		}},
		{"event_create", `{"title":"Holiday","start":"2026-10-20","end":"2026-10-23T00:00:00+08:00"}`, "", func(t *testing.T, r map[string]any) {
			if r["all_day"] != true || r["start"] != "2026-10-20" || r["end"] != "2026-10-22" {
				t.Errorf("event = %v", r)
			}
		}},
		{"event_create", `{"title":"Run","start":"2026-10-12T07:00:00Z","recurrence":"weekly","recurrence_until":"2026-11-30","calendar_id":"local:2","color":"#123abc"}`, "", func(t *testing.T, r map[string]any) {
			if r["start"] != "2026-10-12T15:00:00+08:00" || r["recurrence_until"] != "2026-11-30T23:59:59+08:00" || r["color"] != "#123ABC" || r["calendar_id"] != "local:2" {
				t.Errorf("event = %v", r)
			}
		}},
		{"event_create", `{"start":"2026-10-14T15:00:00+08:00"}`, `Missing required parameter "title".`, nil},
		{"event_create", `{"title":"x"}`, `Missing required parameter "start".`, nil},
		{"event_create", `{"title":"x","start":"tomorrow 3pm"}`, `Parameter "start" must be an ISO-8601 date-time such as "2026-10-12T15:00:00+08:00" or a date "2026-10-12".`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14T15:00:00+08:00","end":"2026-10-14T14:00:00+08:00"}`, `Parameter "end" must not be before "start".`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","all_day":false}`, `Parameter "start" needs a time (e.g. "2026-10-12T15:00:00+08:00") unless "all_day" is true.`, nil},
		{"event_create", `{"title":"x","start":"1969-12-31T10:00:00Z"}`, `Parameter "start" must be between the years 1970 and 2200.`, nil},
		{"event_create", `{"title":"` + long(501) + `","start":"2026-10-14"}`, `Parameter "title" is too long (501 characters; the limit is 500).`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","description":"` + long(10001) + `"}`, `Parameter "description" is too long (10001 characters; the limit is 10000).`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","reminder_minutes":[1,2,3,4,5,6,7,8,9,10,11]}`, `Parameter "reminder_minutes" may hold at most 10 reminders.`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","reminder_minutes":[-5]}`, `Parameter "reminder_minutes" must be between 0 and 40320.`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","reminder_minutes":15}`, `Parameter "reminder_minutes" must be an array of integers.`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","recurrence":"custom"}`, `Parameter "recurrence" cannot be "custom": custom rules are read-only here; use none, daily, weekly, monthly or yearly.`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","recurrence":"hourly"}`, `Parameter "recurrence" must be one of none, daily, weekly, monthly, yearly.`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","recurrence_until":"2026-12-01"}`, `Parameter "recurrence_until" only applies to a repeating event; set "recurrence" as well.`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","recurrence":"daily","recurrence_until":"2026-10-01"}`, `Parameter "recurrence_until" must not be before the event starts.`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","calendar_id":"sys:1"}`, perm, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","calendar_id":"local:8"}`, `No calendar with id "local:8"`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","color":"red"}`, `Parameter "color" must be a color "#RRGGBB", e.g. "#4285F4".`, nil},
		{"event_create", `{"title":"x","start":"2026-10-14","attendees":["a"]}`, `Unknown parameter "attendees".`, nil},

		{"event_update", `{"id":"local:2@20261013","title":"Daily sync","start":"2026-10-12T10:00:00+08:00"}`, "", func(t *testing.T, r map[string]any) {
			if r["id"] != "local:2" || r["title"] != "Daily sync" || r["end"] != "2026-10-12T10:15:00+08:00" || r["recurrence"] != "daily" {
				t.Errorf("event = %v", r)
			}
		}},
		{"event_update", `{"id":"local:2","recurrence":"none"}`, "", func(t *testing.T, r map[string]any) {
			if r["recurrence_until"] != nil || r["id"] != "local:2" {
				t.Errorf("event = %v", r)
			}
		}},
		{"event_update", `{"id":"local:1","location":"","calendar_id":"local:2","all_day":true}`, "", func(t *testing.T, r map[string]any) {
			if r["location"] != "" || r["calendar_id"] != "local:2" || r["all_day"] != true || r["start"] != "2026-10-13" || r["end"] != "2026-10-13" {
				t.Errorf("event = %v", r)
			}
		}},
		{"event_update", `{"id":"local:3","end":"2026-10-16"}`, "", func(t *testing.T, r map[string]any) {
			if r["start"] != "2026-10-14" || r["end"] != "2026-10-16" {
				t.Errorf("event = %v", r)
			}
		}},
		{"event_update", `{"id":"local:1"}`, `Nothing to update: pass at least one field besides id.`, nil},
		{"event_update", `{"title":"x"}`, `Missing required parameter "id".`, nil},
		{"event_update", `{"id":"local:1","all_day":"yes"}`, `Parameter "all_day" must be true or false.`, nil},
		{"event_update", `{"id":"local:1","end":"2026-10-13T14:00:00+08:00"}`, `Parameter "end" must not be before "start".`, nil},
		{"event_update", `{"id":"local:1","title":""}`, `Parameter "title" must not be empty.`, nil},
		{"event_update", `{"id":"local:1","calendar_id":"sys:1"}`, perm, nil},
		{"event_update", `{"id":"local:44","title":"x"}`, `No event with id "local:44"`, nil},

		{"event_delete", `{"id":"local:2@20261013"}`, "", func(t *testing.T, r map[string]any) {
			if r["deleted"] != true || r["series_id"] != "local:2" || r["was_recurring"] != true || r["id"] != "local:2@20261013" {
				t.Errorf("result = %v", r)
			}
		}},
		{"event_delete", `{}`, `Missing required parameter "id".`, nil},
		{"event_delete", `{"id":"local:0"}`, `No event with id "local:0"`, nil},
		{"event_delete", `{"id":"sys:1"}`, perm, nil},

		{"event_search", `{"query":"stand"}`, "", func(t *testing.T, r map[string]any) {
			if r["total"] != 1.0 || fmt.Sprint(starts(r)) != "[2026-10-12T09:30:00+08:00]" {
				t.Errorf("result = %v", r)
			}
		}},
		{"event_search", `{"query":"clinic","calendar_id":"local:2"}`, "", func(t *testing.T, r map[string]any) {
			if r["total"] != 0.0 {
				t.Errorf("result = %v", r)
			}
		}},
		{"event_search", `{}`, `Missing required parameter "query".`, nil},
		{"event_search", `{"query":"  "}`, `Parameter "query" must not be empty.`, nil},
		{"event_search", `{"query":"x","limit":1000}`, `Parameter "limit" must be between 1 and 200.`, nil},

		{"agenda_today", `{}`, "", func(t *testing.T, r map[string]any) {
			if r["date"] != "2026-10-12" || r["total"] != 1.0 || fmt.Sprint(starts(r)) != "[2026-10-12T09:30:00+08:00]" {
				t.Errorf("result = %v", r)
			}
		}},
		{"agenda_today", `{"calendar_id":"local:1"}`, "", func(t *testing.T, r map[string]any) {
			if r["total"] != 0.0 {
				t.Errorf("result = %v", r)
			}
		}},
		{"agenda_today", `{"calendar_id":"nope"}`, `No calendar with id "nope"`, nil},
		{"agenda_today", `{"offset":-2}`, `Parameter "offset" must be at least 0.`, nil},

		{"free_slots", `{"date":"2026-10-13","duration_minutes":60}`, "", func(t *testing.T, r map[string]any) {
			b, _ := json.Marshal(r["slots"])
			if string(b) != `[{"end":"2026-10-13T15:00:00+08:00","minutes":315,"start":"2026-10-13T09:45:00+08:00"},{"end":"2026-10-13T18:00:00+08:00","minutes":120,"start":"2026-10-13T16:00:00+08:00"}]` {
				t.Errorf("slots = %s", b)
			}
		}},
		{"free_slots", `{"date":"2026-10-14","duration_minutes":30,"include_all_day":true}`, "", func(t *testing.T, r map[string]any) {
			if r["total"] != 0.0 {
				t.Errorf("all-day trip must block the day: %v", r)
			}
		}},
		{"free_slots", `{"date":"2026-10-14","duration_minutes":30,"day_start":"20:00","day_end":"24:00"}`, "", func(t *testing.T, r map[string]any) {
			w := r["window"].(map[string]any)
			if w["end"] != "2026-10-15T00:00:00+08:00" || r["total"] != 1.0 {
				t.Errorf("result = %v", r)
			}
		}},
		{"free_slots", `{"duration_minutes":30}`, `Missing required parameter "date".`, nil},
		{"free_slots", `{"date":"2026-10-13"}`, `Missing required parameter "duration_minutes".`, nil},
		{"free_slots", `{"date":"13/10/2026","duration_minutes":30}`, `Parameter "date" must be a date "YYYY-MM-DD" between the years 1970 and 2200.`, nil},
		{"free_slots", `{"date":"2026-10-13","duration_minutes":0}`, `Parameter "duration_minutes" must be between 1 and 1440.`, nil},
		{"free_slots", `{"date":"2026-10-13","duration_minutes":30,"day_start":"9am"}`, `Parameter "day_start" must be a clock time "HH:mm", e.g. "09:00".`, nil},
		{"free_slots", `{"date":"2026-10-13","duration_minutes":30,"day_start":"24:00"}`, `Parameter "day_start" must be a clock time "HH:mm", e.g. "09:00".`, nil},
		{"free_slots", `{"date":"2026-10-13","duration_minutes":30,"day_start":"18:00","day_end":"09:00"}`, `Parameter "day_end" must be later than "day_start".`, nil},
		{"free_slots", `{"date":"2026-10-13","duration_minutes":30,"calendar_id":"sys:2"}`, perm, nil},
	}
	for i, tt := range tests {
		// Named by index: arguments may hold "#" or "?", which must not
		// reach a temp dir name (they end an SQLite URI path).
		t.Run(fmt.Sprintf("%02d_%s", i, tt.tool), func(t *testing.T) {
			t.Parallel()
			t.Logf("%s %s", tt.tool, tt.args)
			f := newFixture(t, "Asia/Shanghai", "2026-10-12T08:00")
			f.OK("calendar_create", `{"name":"Work"}`)
			f.create(`{"title":"Dentist","start":"2026-10-13T15:00:00+08:00","end":"2026-10-13T16:00:00+08:00","reminder_minutes":[30],"location":"Clinic"}`)
			f.create(`{"title":"Stand-up","start":"2026-10-12T09:30:00+08:00","end":"2026-10-12T09:45:00+08:00","recurrence":"daily","recurrence_until":"2026-10-16","calendar_id":"local:2"}`)
			f.create(`{"title":"Trip","start":"2026-10-14","end":"2026-10-15"}`)
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
