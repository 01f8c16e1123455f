package todo

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// Overdue, today and this week follow the device zone, including across a
// DST change (America/New_York falls back on Sunday 2026-11-01).
func TestSummaryAndOverdue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		zone, now                  string
		dues                       []string // one open to-do per due
		overdue, today, week       int
		today0, weekStart, weekEnd string
	}{
		{"UTC", "2026-10-14T12:00",
			[]string{"2026-10-13", "2026-10-14", "2026-10-14T11:00:00Z", "2026-10-14T13:00:00Z", "2026-10-18", "2026-10-19"},
			2, 2, 3, "2026-10-14", "2026-10-12", "2026-10-18"},
		// 23:30 in Shanghai is 15:30 UTC: a due of 2026-10-14T16:00Z is
		// tomorrow on the phone, so not today.
		{"Asia/Shanghai", "2026-10-14T23:30",
			[]string{"2026-10-14", "2026-10-14T16:00:00Z", "2026-10-14T15:00:00Z"},
			1, 1, 2, "2026-10-14", "2026-10-12", "2026-10-18"},
		// Sunday of the fall-back weekend: the week is Monday 10-26 to
		// Sunday 11-01, and 01:30 happened twice.
		{"America/New_York", "2026-11-01T01:45",
			[]string{"2026-11-01T01:30:00-05:00", "2026-11-01T01:30:00-04:00", "2026-11-01", "2026-11-02"},
			1, 2, 2, "2026-11-01", "2026-10-26", "2026-11-01"},
	}
	for _, tt := range tests {
		t.Run(tt.zone, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.zone, tt.now)
			for _, d := range tt.dues {
				f.create(fmt.Sprintf(`{"title":"due %s","due":%q}`, d, d))
			}
			// Done and shelved to-dos never count as overdue or due.
			f.create(`{"title":"old done","due":"2020-01-01","status":"done"}`)
			f.create(`{"title":"old shelved","due":"2020-01-01","status":"shelved"}`)
			s := f.OK("todo_summary", `{}`)
			if s["overdue"] != float64(tt.overdue) || s["due_today"] != float64(tt.today) || s["due_this_week"] != float64(tt.week) ||
				s["today"] != tt.today0 || s["week_start"] != tt.weekStart || s["week_end"] != tt.weekEnd || s["time_zone"] != tt.zone {
				t.Fatalf("summary = %v", s)
			}
			counts := s["counts"].(map[string]any)
			if counts["todo"] != float64(len(tt.dues)) || counts["done"] != 1.0 || counts["shelved"] != 1.0 || counts["doing"] != 0.0 {
				t.Fatalf("counts = %v", counts)
			}
			if l := f.OK("todo_list", `{"overdue_only":true}`); l["total"] != float64(tt.overdue) {
				t.Fatalf("overdue_only total = %v", l["total"])
			}
		})
	}
}

// Lists put high priority first, then the soonest due, undated last, then
// creation order.
func TestListOrder(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "Europe/Berlin", "2026-10-12T09:00")
	f.create(`{"title":"low undated","priority":"low"}`)
	f.create(`{"title":"medium undated"}`)
	f.create(`{"title":"medium late","due":"2026-10-20"}`)
	f.create(`{"title":"medium soon","due":"2026-10-13T08:00:00+02:00"}`)
	f.create(`{"title":"high undated","priority":"high"}`)
	f.create(`{"title":"medium same day all-day","due":"2026-10-13"}`)
	r := f.OK("todo_list", `{}`)
	var got []string
	for _, it := range r["todos"].([]any) {
		got = append(got, it.(map[string]any)["title"].(string))
	}
	want := "[high undated medium same day all-day medium soon medium late medium undated low undated]"
	if fmt.Sprint(got) != want {
		t.Fatalf("order = %v\nwant    %v", got, want)
	}
}

// Lists page by the 65,536-char channel limit as well as by limit, and
// next_offset continues exactly where the page was cut.
func TestListFitsTheChannel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "UTC", "2026-10-12T09:00")
	// Quotes and backslashes cost double once the text item is escaped.
	notes := strings.Repeat(`"\`, 100)
	if err := f.App.do(t.Context(), func(s *state) error {
		for i := 0; i < 200; i++ {
			title := fmt.Sprintf("%03d %s", i, strings.Repeat("题", 190))
			if err := s.add(&todo{Title: title, Notes: notes, Status: "todo", Priority: "medium", Tags: []string{"a", "b"}}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r := f.Call("todo_list", `{"limit":200}`)
	if r.IsError || apptool.WireCost(r.Structured) > apptool.MaxWireChars {
		t.Fatalf("result too large: %d (isError=%v)", apptool.WireCost(r.Structured), r.IsError)
	}
	m := f.OK("todo_list", `{"limit":200}`)
	n := int(m["count"].(float64))
	if n == 0 || n >= 200 || m["next_offset"] != float64(n) || m["total"] != 200.0 {
		t.Fatalf("count %v next_offset %v total %v", m["count"], m["next_offset"], m["total"])
	}
	next := f.OK("todo_list", fmt.Sprintf(`{"limit":200,"offset":%d}`, n))
	first := next["todos"].([]any)[0].(map[string]any)["title"].(string)
	if !strings.HasPrefix(first, fmt.Sprintf("%03d ", n)) {
		t.Fatalf("next page starts at %q, want item %d", first[:3], n)
	}
}
