package calendar

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

// listStarts lists the starts of the occurrences in [from, to).
func (f *fixture) listStarts(from, to string) []string {
	f.T.Helper()
	return starts(f.OK("event_list", fmt.Sprintf(`{"from":%q,"to":%q,"limit":200}`, from, to)))
}

func TestRecurrenceExpansion(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, zone, event, from, to, want string
	}{
		{"monthly clamps to the month's end", "UTC",
			`{"title":"m","start":"2026-01-31T10:00:00Z","recurrence":"monthly"}`, "2026-01-01", "2026-05-01",
			"[2026-01-31T10:00:00+00:00 2026-02-28T10:00:00+00:00 2026-03-31T10:00:00+00:00 2026-04-30T10:00:00+00:00]"},
		{"yearly from a leap day", "UTC",
			`{"title":"y","start":"2028-02-29","recurrence":"yearly"}`, "2028-01-01", "2029-12-31",
			"[2028-02-29 2029-02-28]"},
		{"weekly keeps the wall time across DST (New York)", "America/New_York",
			`{"title":"w","start":"2026-10-26T09:00:00-04:00","recurrence":"weekly"}`, "2026-10-20", "2026-11-10",
			"[2026-10-26T09:00:00-04:00 2026-11-02T09:00:00-05:00 2026-11-09T09:00:00-05:00]"},
		{"daily in a spring-forward gap fires when the gap ends (Berlin)", "Europe/Berlin",
			`{"title":"d","start":"2026-03-28T02:30:00+01:00","recurrence":"daily"}`, "2026-03-28", "2026-03-30",
			"[2026-03-28T02:30:00+01:00 2026-03-29T03:00:00+02:00 2026-03-30T02:30:00+02:00]"},
		{"until is inclusive of the day", "Asia/Shanghai",
			`{"title":"u","start":"2026-10-12T20:00:00+08:00","recurrence":"daily","recurrence_until":"2026-10-14"}`, "2026-10-01", "2026-10-31",
			"[2026-10-12T20:00:00+08:00 2026-10-13T20:00:00+08:00 2026-10-14T20:00:00+08:00]"},
		{"all-day monthly spanning two days overlaps the range start", "Asia/Shanghai",
			`{"title":"a","start":"2026-09-30","end":"2026-10-01","recurrence":"monthly"}`, "2026-10-01", "2026-11-01",
			"[2026-09-30 2026-10-30]"},
		{"long range far from the start", "UTC",
			`{"title":"far","start":"1990-01-01T08:00:00Z","recurrence":"daily"}`, "2026-10-12", "2026-10-14",
			"[2026-10-12T08:00:00+00:00 2026-10-13T08:00:00+00:00 2026-10-14T08:00:00+00:00]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, tt.zone, "2026-10-12T08:00")
			f.create(tt.event)
			if got := fmt.Sprint(f.listStarts(tt.from, tt.to)); got != tt.want {
				t.Fatalf("starts = %s\nwant     %s", got, tt.want)
			}
		})
	}
}

// insertSystem writes an event straight into the simulated provider, as
// another calendar app (or an account sync) would.
func (f *fixture) insertSystem(e *event) {
	f.T.Helper()
	if _, err := f.App.sys.ExecContext(context.Background(), `INSERT INTO events (calendar_id, title, all_day, start_ms, end_ms, start_date, end_date, tz,
		recurrence, rrule, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,0,0)`,
		e.CalendarID, e.Title, e.AllDay, nullMs(e.Start), nullMs(e.End), nullDate(e.StartDate), nullDate(e.EndDate), e.TZ, e.Recurrence, e.RRule); err != nil {
		f.T.Fatal(err)
	}
}

func nullMs(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func nullDate(d apptool.Date) any {
	if d == (apptool.Date{}) {
		return nil
	}
	return d.String()
}

func TestCustomRules(t *testing.T) {
	t.Parallel()
	tests := []struct{ rule, want string }{
		{"FREQ=WEEKLY;BYDAY=MO,WE;COUNT=5", "[2026-10-12T07:00:00+00:00 2026-10-14T07:00:00+00:00 2026-10-19T07:00:00+00:00 2026-10-21T07:00:00+00:00 2026-10-26T07:00:00+00:00]"},
		{"RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=FR", "[2026-10-16T07:00:00+00:00 2026-10-30T07:00:00+00:00]"},
		{"FREQ=DAILY;INTERVAL=10;UNTIL=20261025T000000Z", "[2026-10-12T07:00:00+00:00 2026-10-22T07:00:00+00:00]"},
		{"FREQ=MONTHLY;BYMONTHDAY=12,13", "[2026-10-12T07:00:00+00:00]"}, // not expandable: first occurrence only
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, "UTC", "2026-10-12T06:00")
			f.grant()
			start := time.Date(2026, 10, 12, 7, 0, 0, 0, time.UTC)
			f.insertSystem(&event{CalendarID: 1, Title: "Gym", Start: start, End: start.Add(time.Hour), TZ: "UTC", Recurrence: "custom", RRule: tt.rule})
			if got := fmt.Sprint(f.listStarts("2026-10-01", "2026-11-01")); got != tt.want {
				t.Fatalf("starts = %s\nwant     %s", got, tt.want)
			}
			r := f.OK("event_get", `{"id":"sys:2"}`)
			if r["recurrence"] != "custom" || r["rrule"] != tt.rule {
				t.Fatalf("event = %v", r)
			}
			if got := f.Fail("event_update", `{"id":"sys:2","title":"x"}`); got != fmt.Sprintf(`Event "sys:2" repeats by a custom rule (%s) that this app cannot edit; ask the user to change it in their calendar app.`, tt.rule) {
				t.Fatalf("update of a custom rule: %q", got)
			}
		})
	}
}

// Without the permission the provider is invisible and every tool naming
// it answers the exact sentence; with it, both storages work together.
func TestSystemStorage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "Asia/Shanghai", "2026-10-12T08:00")
	f.create(`{"title":"Local","start":"2026-10-13T09:00:00+08:00"}`)
	if r := f.OK("event_list", `{"from":"2026-01-01","to":"2026-12-31"}`); r["total"] != 1.0 {
		t.Fatalf("denied: %v", r)
	}
	for _, c := range []struct{ tool, args string }{
		{"event_get", `{"id":"sys:1"}`}, {"event_delete", `{"id":"sys:1"}`}, {"event_update", `{"id":"sys:1@20270101","title":"x"}`},
		{"event_create", `{"title":"x","start":"2026-10-13","calendar_id":"sys:1"}`}, {"event_search", `{"query":"x","calendar_id":"sys:1"}`},
		{"agenda_today", `{"calendar_id":"sys:2"}`}, {"calendar_update", `{"id":"sys:2","visible":true}`}, {"calendar_delete", `{"id":"sys:1"}`},
	} {
		if got := f.Fail(c.tool, c.args); got != PermissionSentence {
			t.Errorf("%s %s: %q", c.tool, c.args, got)
		}
	}
	f.grant()
	cals := f.OK("calendar_list", `{}`)
	if cals["total"] != 3.0 || cals["system_permission"] != "granted" {
		t.Fatalf("granted calendars: %v", cals)
	}
	holidays := cals["calendars"].([]any)[2].(map[string]any)
	if holidays["id"] != "sys:2" || holidays["writable"] != false || holidays["source"] != "google" || holidays["storage"] != "system" || holidays["account_type"] != "com.google" {
		t.Fatalf("holidays = %v", holidays)
	}
	if r := f.OK("event_list", `{"from":"2026-01-01","to":"2026-12-31"}`); r["total"] != 2.0 {
		t.Fatalf("granted events: %v", r)
	}
	if r := f.OK("event_get", `{"id":"sys:1@20270101"}`); r["title"] != "New Year's Day" || r["start"] != "2027-01-01" {
		t.Fatalf("holiday occurrence: %v", r)
	}
	checks := []struct{ tool, args, want string }{
		{"event_create", `{"title":"x","start":"2026-10-13T09:00:00+08:00","calendar_id":"sys:1","reminder_minutes":[1,2,3,4,5,6]}`, "Events in system calendars can have at most 5 reminders."},
		{"event_create", `{"title":"x","start":"2026-10-13","calendar_id":"sys:2"}`, `Calendar "Holidays" (sys:2) is read-only; pick a writable calendar from calendar_list.`},
		{"event_delete", `{"id":"sys:1"}`, `Event "sys:1" is in a read-only calendar.`},
		{"event_update", `{"id":"local:1","calendar_id":"sys:1"}`, "An event cannot move between this app's calendars and system calendars; create a new event instead."},
		{"calendar_delete", `{"id":"sys:1"}`, "System calendars cannot be deleted here; they belong to the phone's calendar accounts."},
		{"calendar_update", `{"id":"sys:1","name":"Mine"}`, "System calendars can only be shown or hidden here; rename or recolor them in their account."},
	}
	for _, c := range checks {
		if got := f.Fail(c.tool, c.args); got != c.want {
			t.Errorf("%s %s: %q, want %q", c.tool, c.args, got, c.want)
		}
	}
	r := f.OK("event_create", `{"title":"Phone event","start":"2026-10-13T11:00:00+08:00","calendar_id":"sys:1","reminder_minutes":[5]}`)
	if r["id"] != "sys:2" || r["calendar_id"] != "sys:1" {
		t.Fatalf("system create: %v", r)
	}
	if r := f.OK("calendar_update", `{"id":"sys:2","visible":false}`); r["visible"] != false {
		t.Fatalf("hide holidays: %v", r)
	}
	// Another app of the device sees the event in the shared provider.
	other, err := Open(context.Background(), t.TempDir(), &Options{Clock: func() time.Time { return f.Now }, Location: f.Loc, SystemDir: f.sys})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if _, err := other.Debug(context.Background(), "set", []string{"permission", "granted"}); err != nil {
		t.Fatal(err)
	}
	res := apptool.Run(context.Background(), mustTool(t, other.Tools(), "event_get"), []byte(`{"id":"sys:2"}`))
	if res.IsError {
		t.Fatalf("shared provider: %s", res.Text)
	}
	// Revoking hides it again.
	f.Debug("set", "permission", "denied")
	if got := f.Fail("event_get", `{"id":"sys:2"}`); got != PermissionSentence {
		t.Fatalf("after revoke: %q", got)
	}
}

func mustTool(t *testing.T, tools []apptool.Tool, name string) apptool.Tool {
	t.Helper()
	tl, ok := sampletest.Find(tools, name)
	if !ok {
		t.Fatalf("no tool %s", name)
	}
	return tl
}

// Busy time merges overlapping events, recurring ones and one that
// crossed midnight; on a spring-forward day the window is an hour short.
func TestFreeSlots(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "America/New_York", "2026-03-07T08:00")
	f.create(`{"title":"late","start":"2026-03-07T23:00:00-05:00","end":"2026-03-08T01:30:00-05:00"}`)
	f.create(`{"title":"a","start":"2026-03-08T09:00:00-04:00","end":"2026-03-08T10:00:00-04:00"}`)
	f.create(`{"title":"b","start":"2026-03-08T09:30:00-04:00","end":"2026-03-08T11:00:00-04:00"}`)
	f.create(`{"title":"c","start":"2026-03-08T11:00:00-04:00","end":"2026-03-08T11:30:00-04:00"}`)
	f.create(`{"title":"daily","start":"2026-03-01T13:00:00-05:00","end":"2026-03-01T14:00:00-05:00","recurrence":"daily"}`)
	f.create(`{"title":"all day","start":"2026-03-08"}`)
	r := f.OK("free_slots", `{"date":"2026-03-08","duration_minutes":45,"day_start":"00:00","day_end":"24:00"}`)
	want := `{"busy":[["2026-03-08T00:00:00-05:00","2026-03-08T01:30:00-05:00"],["2026-03-08T09:00:00-04:00","2026-03-08T11:30:00-04:00"],["2026-03-08T13:00:00-04:00","2026-03-08T14:00:00-04:00"]],` +
		`"slots":[["2026-03-08T01:30:00-05:00","2026-03-08T09:00:00-04:00",390],["2026-03-08T11:30:00-04:00","2026-03-08T13:00:00-04:00",90],["2026-03-08T14:00:00-04:00","2026-03-09T00:00:00-04:00",600]]}`
	if got := spans(r); got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	if r := f.OK("free_slots", `{"date":"2026-03-08","duration_minutes":45,"include_all_day":true}`); r["total"] != 0.0 {
		t.Fatalf("include_all_day: %v", r)
	}
}

func spans(r map[string]any) string {
	var busy [][]any
	for _, b := range r["busy"].([]any) {
		m := b.(map[string]any)
		busy = append(busy, []any{m["start"], m["end"]})
	}
	var slots [][]any
	for _, s := range r["slots"].([]any) {
		m := s.(map[string]any)
		slots = append(slots, []any{m["start"], m["end"], m["minutes"]})
	}
	out, _ := apptool.Compact(map[string]any{"busy": busy, "slots": slots})
	return out
}

// The next reminder of the app's own events is armed after every call.
func TestReminderScheduling(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "Asia/Shanghai", "2026-10-12T08:00")
	f.create(`{"title":"standup","start":"2026-10-12T09:30:00+08:00","end":"2026-10-12T09:45:00+08:00","recurrence":"daily","reminder_minutes":[5]}`)
	f.create(`{"title":"trip","start":"2026-10-13","reminder_minutes":[60]}`)
	check := func(id, fire string) {
		t.Helper()
		d := f.Debug("dump").(*Dump)
		if len(d.RemindersScheduled) != 1 || d.RemindersScheduled[0].EventID != id || d.RemindersScheduled[0].FireAt != fire || !d.RemindersScheduled[0].Registered {
			t.Fatalf("reminders = %+v, want %s at %s", d.RemindersScheduled, id, fire)
		}
	}
	check("local:1@20261012", "2026-10-12T09:25:00+08:00")
	f.Now = f.Now.Add(90 * time.Minute) // 09:30: today's stand-up reminder has fired
	f.OK("agenda_today", `{}`)
	// All-day reminders count back from 09:00 of the day; a stale
	// registration would show registered:false.
	check("local:2", "2026-10-13T08:00:00+08:00")
	f.OK("event_update", `{"id":"local:2","reminder_minutes":[]}`)
	check("local:1@20261013", "2026-10-13T09:25:00+08:00")
	r := f.Debug("reset").(*ResetResult)
	if r.Cleared != 2 || r.CalendarsRemaining != 1 || r.RemainingScheduled != 0 {
		t.Fatalf("reset = %+v", r)
	}
}

// List results stay inside the channel limit and page on.
func TestResultCap(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "UTC", "2026-10-12T08:00")
	desc := ""
	for len(desc) < 2000 {
		desc += `"长\`
	}
	if err := f.App.do(context.Background(), func(w *world) error {
		for i := 0; i < 200; i++ {
			e := &event{st: local, CalendarID: 1, Title: fmt.Sprintf("e%03d", i), Description: desc, TZ: "UTC", Recurrence: "none", Reminders: []int{},
				Start: f.Now.Add(time.Duration(i) * time.Minute), End: f.Now.Add(time.Duration(i+1) * time.Minute), CreatedAt: f.Now, UpdatedAt: f.Now}
			if err := insertEvent(w.ctx, w.lq, e); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"event_list", "event_search", "agenda_today"} {
		args := `{"limit":200,"query":"e"}`
		if tool == "agenda_today" {
			args = `{"limit":200}`
		}
		res := f.Call(tool, args)
		if res.IsError || apptool.WireCost(res.Structured) > apptool.MaxWireChars {
			t.Fatalf("%s: %d chars on the wire (isError=%v)", tool, apptool.WireCost(res.Structured), res.IsError)
		}
		r := f.OK(tool, args)
		n := r["count"].(float64)
		if n == 0 || n >= 200 || r["next_offset"] != n {
			t.Fatalf("%s: count %v next_offset %v", tool, n, r["next_offset"])
		}
	}
}

// A provider event in a zone this build does not know repeats in the
// device zone instead of failing every call.
func TestUnknownEventZone(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "Asia/Shanghai", "2026-10-12T06:00")
	f.grant()
	start := time.Date(2026, 10, 12, 1, 0, 0, 0, time.UTC) // 09:00 in Shanghai
	f.insertSystem(&event{CalendarID: 1, Title: "elsewhere", Start: start, End: start.Add(time.Hour), TZ: "Mars/Olympus_Mons", Recurrence: "daily"})
	if got := fmt.Sprint(f.listStarts("2026-10-12", "2026-10-13")); got != "[2026-10-12T09:00:00+08:00 2026-10-13T09:00:00+08:00]" {
		t.Fatalf("starts = %s", got)
	}
}
