package todo

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The eight documented tools of spec §9.4 with their annotations.
func TestToolCatalog(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "UTC", "2026-10-12T10:00")
	want := []struct {
		name                              string
		readOnly, idempotent, destructive bool
	}{
		{"todo_list", true, false, false},
		{"todo_get", true, false, false},
		{"todo_create", false, false, false},
		{"todo_update", false, true, false},
		{"todo_set_status", false, true, false},
		{"todo_delete", false, false, true},
		{"todo_search", true, false, false},
		{"todo_summary", true, false, false},
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

var idRE = regexp.MustCompile(`^[0-9a-f]{8}$`)

// Every tool: normal use, missing required parameter, wrong type or
// out-of-range value, unknown id, oversized text, and the app's rules.
// {P} is a top-level to-do with subtask {S}; {D} is done.
func TestToolArguments(t *testing.T) {
	t.Parallel()
	long := func(n int) string { return strings.Repeat("字", n) }
	tests := []struct {
		tool, args string
		want       string // error sentence; "" = success
		check      func(t *testing.T, r map[string]any)
	}{
		{"todo_list", `{}`, "", count(2)},
		{"todo_list", `{"include_done":true}`, "", count(3)},
		{"todo_list", `{"status":"done"}`, "", count(1)},
		{"todo_list", `{"priority":"high"}`, "", count(1)},
		{"todo_list", `{"tag":"#WORK"}`, "", count(1)},
		{"todo_list", `{"parent_id":"{P}"}`, "", count(1)},
		{"todo_list", `{"due_before":"2026-10-14"}`, "", count(1)},
		{"todo_list", `{"due_before":"2026-10-13T23:00:00+08:00"}`, "", count(0)},
		{"todo_list", `{"due_after":"2026-10-14T23:59:00+08:00"}`, "", count(1)},
		{"todo_list", `{"overdue_only":true}`, "", count(0)},
		{"todo_list", `{"limit":1}`, "", func(t *testing.T, r map[string]any) {
			if r["count"] != 1.0 || r["next_offset"] != 1.0 || r["total"] != 2.0 {
				t.Errorf("page = %v", r)
			}
		}},
		{"todo_list", `{"limit":201}`, `Parameter "limit" must be between 1 and 200.`, nil},
		{"todo_list", `{"offset":-1}`, `Parameter "offset" must be at least 0.`, nil},
		{"todo_list", `{"status":"finished"}`, `Parameter "status" must be one of todo, doing, done, shelved.`, nil},
		{"todo_list", `{"due_before":"next week"}`, `Parameter "due_before" must be a date "YYYY-MM-DD" or an ISO-8601 date-time.`, nil},
		{"todo_list", `{"parent_id":"deadbeef"}`, `No todo with id "deadbeef"`, nil},
		{"todo_list", `{"overdue_only":"yes"}`, `Parameter "overdue_only" must be true or false.`, nil},

		{"todo_get", `{"id":"{P}"}`, "", func(t *testing.T, r map[string]any) {
			subs := r["subtasks"].([]any)
			if len(subs) != 1 || r["subtasks_total"] != 1.0 || r["due"] != "2026-10-14" || r["due_all_day"] != true {
				t.Errorf("todo = %v", r)
			}
		}},
		{"todo_get", `{}`, `Missing required parameter "id".`, nil},
		{"todo_get", `{"id":12345678}`, `Parameter "id" must be a string.`, nil},
		{"todo_get", `{"id":"00000000"}`, `No todo with id "00000000"`, nil},

		{"todo_create", `{"title":"Call bank","due":"2026-10-15T09:30:00+08:00","tags":["#home"," home ","Errands"],"notes":"ask about fees"}`, "", func(t *testing.T, r map[string]any) {
			if !idRE.MatchString(r["id"].(string)) || r["status"] != "todo" || r["priority"] != "medium" || r["due"] != "2026-10-15T09:30:00+08:00" ||
				r["due_all_day"] != false || fmt.Sprint(r["tags"]) != "[home Errands]" || r["done_at"] != nil {
				t.Errorf("todo = %v", r)
			}
		}},
		{"todo_create", `{"title":"Pay rent","due":"2026-10-15T09:30:00-04:00","due_all_day":true}`, "", func(t *testing.T, r map[string]any) {
			if r["due"] != "2026-10-15" || r["due_all_day"] != true {
				t.Errorf("todo = %v", r)
			}
		}},
		{"todo_create", `{"title":"Sub","parent_id":"{P}","status":"done"}`, "", func(t *testing.T, r map[string]any) {
			if r["parent_id"] == nil || r["done_at"] != "2026-10-12T10:00:00+08:00" {
				t.Errorf("todo = %v", r)
			}
		}},
		{"todo_create", `{"notes":"x"}`, `Missing required parameter "title".`, nil},
		{"todo_create", `{"title":"   "}`, `Parameter "title" must not be empty.`, nil},
		{"todo_create", `{"title":["a"]}`, `Parameter "title" must be a string.`, nil},
		{"todo_create", `{"title":"` + long(201) + `"}`, `Parameter "title" is too long (201 characters; the limit is 200).`, nil},
		{"todo_create", `{"title":"x","notes":"` + long(10001) + `"}`, `Parameter "notes" is too long (10001 characters; the limit is 10000).`, nil},
		{"todo_create", `{"title":"x","priority":"urgent"}`, `Parameter "priority" must be one of high, medium, low.`, nil},
		{"todo_create", `{"title":"x","due":"2026-10-15T09:30:00"}`, `Parameter "due" needs a UTC offset, e.g. "2026-10-12T17:00:00+08:00", or use a plain date "2026-10-12".`, nil},
		{"todo_create", `{"title":"x","due":"15/10/2026"}`, `Parameter "due" must be a date "YYYY-MM-DD" or an ISO-8601 date-time with offset, e.g. "2026-10-12T17:00:00+08:00".`, nil},
		{"todo_create", `{"title":"x","due":"1969-12-31"}`, `Parameter "due" must be between the years 1970 and 2200.`, nil},
		{"todo_create", `{"title":"x","due":"2201-01-01"}`, `Parameter "due" must be between the years 1970 and 2200.`, nil},
		{"todo_create", `{"title":"x","due":"2026-10-15","due_all_day":false}`, `Parameter "due" needs a time when "due_all_day" is false, e.g. "2026-10-12T17:00:00+08:00".`, nil},
		{"todo_create", `{"title":"x","due_all_day":true}`, `Parameter "due_all_day" only applies together with "due".`, nil},
		{"todo_create", `{"title":"x","tags":["a",""]}`, `Items of "tags" must not be empty.`, nil},
		{"todo_create", `{"title":"x","tags":["` + long(41) + `"]}`, `Each item of "tags" must be at most 40 characters.`, nil},
		{"todo_create", `{"title":"x","tags":"work"}`, `Parameter "tags" must be an array of strings.`, nil},
		{"todo_create", `{"title":"x","parent_id":"{S}"}`, `To-do "{S}" is itself a subtask; subtasks cannot have subtasks.`, nil},
		{"todo_create", `{"title":"x","parent_id":"abcdef12"}`, `No todo with id "abcdef12"`, nil},
		{"todo_create", `{"title":"x","reminder":"10m"}`, `Unknown parameter "reminder".`, nil},

		{"todo_update", `{"id":"{P}","notes":"","tags":[],"due":"","priority":"low"}`, "", func(t *testing.T, r map[string]any) {
			if r["notes"] != "" || fmt.Sprint(r["tags"]) != "[]" || r["due"] != nil || r["priority"] != "low" || r["updated_at"] != "2026-10-12T10:00:00+08:00" {
				t.Errorf("todo = %v", r)
			}
		}},
		{"todo_update", `{"id":"{S}","parent_id":""}`, "", func(t *testing.T, r map[string]any) {
			if r["parent_id"] != nil {
				t.Errorf("todo = %v", r)
			}
		}},
		{"todo_update", `{"id":"{D}","status":"todo"}`, "", func(t *testing.T, r map[string]any) {
			if r["done_at"] != nil || r["status"] != "todo" {
				t.Errorf("todo = %v", r)
			}
		}},
		{"todo_update", `{"id":"{D}","due_all_day":true}`, "", func(t *testing.T, r map[string]any) {
			// 2026-10-20T01:00+08:00 is 2026-10-20 on the phone.
			if r["due"] != "2026-10-20" || r["due_all_day"] != true {
				t.Errorf("todo = %v", r)
			}
		}},
		{"todo_update", `{"id":"{P}"}`, `Nothing to update: pass at least one of title, notes, priority, due, due_all_day, tags, parent_id, status.`, nil},
		{"todo_update", `{"title":"x"}`, `Missing required parameter "id".`, nil},
		{"todo_update", `{"id":"{P}","title":""}`, `Parameter "title" must not be empty.`, nil},
		{"todo_update", `{"id":"{P}","due":"2026-13-01"}`, `Parameter "due" must be a date "YYYY-MM-DD" or an ISO-8601 date-time with offset, e.g. "2026-10-12T17:00:00+08:00".`, nil},
		{"todo_update", `{"id":"{P}","due":"","due_all_day":true}`, `Parameter "due_all_day" cannot be combined with an empty "due".`, nil},
		{"todo_update", `{"id":"{P}","due_all_day":false}`, `An all-day due has no time; pass "due" as an ISO-8601 date-time with offset.`, nil},
		{"todo_update", `{"id":"{S}","due_all_day":true}`, `This to-do has no due date for "due_all_day" to apply to; pass "due" as well.`, nil},
		{"todo_update", `{"id":"{P}","parent_id":"{D}"}`, `To-do "{P}" has subtasks, so it cannot become a subtask.`, nil},
		{"todo_update", `{"id":"{D}","parent_id":"{D}"}`, `A to-do cannot be its own subtask.`, nil},
		{"todo_update", `{"id":"{P}","title":"` + long(201) + `"}`, `Parameter "title" is too long (201 characters; the limit is 200).`, nil},
		{"todo_update", `{"id":"ffffffff","title":"x"}`, `No todo with id "ffffffff"`, nil},
		{"todo_update", `{"id":"{P}","color":"red"}`, `Unknown parameter "color".`, nil},

		{"todo_set_status", `{"id":"{P}","status":"done"}`, "", func(t *testing.T, r map[string]any) {
			if r["status"] != "done" || r["done_at"] != "2026-10-12T10:00:00+08:00" {
				t.Errorf("todo = %v", r)
			}
		}},
		{"todo_set_status", `{"id":"{D}","status":"done"}`, "", func(t *testing.T, r map[string]any) {
			// Already done: done_at is kept from when it was done.
			if r["done_at"] != "2026-10-11T09:00:00+08:00" {
				t.Errorf("todo = %v", r)
			}
		}},
		{"todo_set_status", `{"id":"{P}"}`, `Missing required parameter "status".`, nil},
		{"todo_set_status", `{"id":"{P}","status":"later"}`, `Parameter "status" must be one of todo, doing, done, shelved.`, nil},
		{"todo_set_status", `{"id":"abcdabcd","status":"done"}`, `No todo with id "abcdabcd"`, nil},

		{"todo_delete", `{"id":"{P}"}`, "", func(t *testing.T, r map[string]any) {
			if r["deleted"] != 2.0 || r["subtasks_deleted"] != 1.0 || r["title"] != "Write report" {
				t.Errorf("result = %v", r)
			}
		}},
		{"todo_delete", `{"id":"{S}"}`, "", func(t *testing.T, r map[string]any) {
			if r["deleted"] != 1.0 || r["subtasks_deleted"] != 0.0 {
				t.Errorf("result = %v", r)
			}
		}},
		{"todo_delete", `{}`, `Missing required parameter "id".`, nil},
		{"todo_delete", `{"id":true}`, `Parameter "id" must be a string.`, nil},
		{"todo_delete", `{"id":"12345678"}`, `No todo with id "12345678"`, nil},

		{"todo_search", `{"query":"REPORT"}`, "", func(t *testing.T, r map[string]any) {
			res := r["results"].([]any)
			if r["total"] != 2.0 || res[0].(map[string]any)["title"] != "Write report" || fmt.Sprint(res[0].(map[string]any)["matched_in"]) != "[title]" {
				t.Errorf("result = %v", r)
			}
		}},
		{"todo_search", `{"query":"report figures"}`, "", func(t *testing.T, r map[string]any) {
			if r["total"] != 1.0 {
				t.Errorf("result = %v", r)
			}
		}},
		{"todo_search", `{"query":"milk","status":"done"}`, "", func(t *testing.T, r map[string]any) {
			if r["total"] != 1.0 {
				t.Errorf("result = %v", r)
			}
		}},
		{"todo_search", `{"query":"report","limit":1}`, "", func(t *testing.T, r map[string]any) {
			if r["count"] != 1.0 || r["has_more"] != true {
				t.Errorf("result = %v", r)
			}
		}},
		{"todo_search", `{}`, `Missing required parameter "query".`, nil},
		{"todo_search", `{"query":" "}`, `Parameter "query" must not be empty.`, nil},
		{"todo_search", `{"query":"x","limit":101}`, `Parameter "limit" must be between 1 and 100.`, nil},
		{"todo_search", `{"query":"` + long(201) + `"}`, `Parameter "query" is too long (201 characters; the limit is 200).`, nil},

		{"todo_summary", `{}`, "", func(t *testing.T, r map[string]any) {
			if r["total"] != 3.0 || r["week_start"] != "2026-10-12" || r["week_end"] != "2026-10-18" || r["due_this_week"] != 1.0 || r["time_zone"] != "Asia/Shanghai" {
				t.Errorf("summary = %v", r)
			}
		}},
		{"todo_summary", `{"verbose":true}`, `Unknown parameter "verbose".`, nil},
	}
	for i, tt := range tests {
		// Named by index: arguments may hold "#" or "?", which must not
		// reach a temp dir name (they end an SQLite URI path).
		t.Run(fmt.Sprintf("%02d_%s", i, tt.tool), func(t *testing.T) {
			t.Logf("%s %s", tt.tool, tt.args)
			t.Parallel()
			f := newFixture(t, "Asia/Shanghai", "2026-10-11T09:00")
			ids := map[string]string{}
			ids["{P}"] = f.create(`{"title":"Write report","priority":"high","due":"2026-10-14","tags":["work"],"notes":"figures from Q3"}`)
			ids["{S}"] = f.create(`{"title":"Collect report data","parent_id":"` + ids["{P}"] + `"}`)
			ids["{D}"] = f.create(`{"title":"Buy milk","status":"done","due":"2026-10-20T01:00:00+08:00"}`)
			f.Now = f.Now.AddDate(0, 0, 1).Add(time.Hour) // Monday 10:00
			args, want := tt.args, tt.want
			for k, v := range ids {
				args, want = strings.ReplaceAll(args, k, v), strings.ReplaceAll(want, k, v)
			}
			before := f.state()
			if want != "" {
				if got := f.Fail(tt.tool, args); got != want {
					t.Fatalf("error = %q, want %q", got, want)
				}
				if after := f.state(); after != before {
					t.Fatalf("a failed call changed the store")
				}
				return
			}
			r := f.OK(tt.tool, args)
			if tt.check != nil {
				tt.check(t, r)
			}
		})
	}
}

func count(n int) func(t *testing.T, r map[string]any) {
	return func(t *testing.T, r map[string]any) {
		t.Helper()
		if r["count"] != float64(n) || len(r["todos"].([]any)) != n {
			t.Errorf("count = %v, want %d: %v", r["count"], n, r)
		}
	}
}
