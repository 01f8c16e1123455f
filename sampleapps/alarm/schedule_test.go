package alarm

import (
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

func at(t *testing.T, loc *time.Location, s string) time.Time {
	t.Helper()
	v, err := time.ParseInLocation("2006-01-02T15:04", s, loc)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestNextFire(t *testing.T) {
	t.Parallel()
	utc := time.UTC
	sh := sampletest.Location(t, "Asia/Shanghai")
	ny := sampletest.Location(t, "America/New_York")
	berlin := sampletest.Location(t, "Europe/Berlin")
	tests := []struct {
		name  string
		loc   *time.Location
		now   string
		alarm alarm
		want  string // ISO, "" = never
	}{
		{"once later today", utc, "2026-10-12T06:00", alarm{Minute: 7 * 60, Enabled: true}, "2026-10-12T07:00:00+00:00"},
		{"once already passed goes to tomorrow", sh, "2026-10-12T08:00", alarm{Minute: 7 * 60, Enabled: true}, "2026-10-13T07:00:00+08:00"},
		{"exactly now is not next", sh, "2026-10-12T07:00", alarm{Minute: 7 * 60, Enabled: true}, "2026-10-13T07:00:00+08:00"},
		{"weekdays from friday evening", sh, "2026-10-16T20:00", alarm{Minute: 7 * 60, Days: weekdays, Enabled: true}, "2026-10-19T07:00:00+08:00"},
		{"weekends from monday", utc, "2026-10-12T06:00", alarm{Minute: 9 * 60, Days: weekends, Enabled: true}, "2026-10-17T09:00:00+00:00"},
		{"custom sunday only from sunday after", utc, "2026-10-18T10:00", alarm{Minute: 9 * 60, Days: dayBit(time.Sunday), Enabled: true}, "2026-10-25T09:00:00+00:00"},
		{"midnight", utc, "2026-12-31T23:59", alarm{Minute: 0, Enabled: true}, "2027-01-01T00:00:00+00:00"},
		{"disabled never", utc, "2026-10-12T06:00", alarm{Minute: 7 * 60}, ""},
		{"disabled but snoozed", utc, "2026-10-12T06:00", alarm{Minute: 7 * 60, SnoozedUntil: time.Date(2026, 10, 12, 6, 5, 0, 0, utc)}, "2026-10-12T06:05:00+00:00"},
		{"snooze before regular wins", utc, "2026-10-12T06:55", alarm{Minute: 7 * 60, Enabled: true, SnoozedUntil: time.Date(2026, 10, 12, 6, 58, 0, 0, utc)}, "2026-10-12T06:58:00+00:00"},
		{"regular before snooze wins", utc, "2026-10-12T06:55", alarm{Minute: 7 * 60, Enabled: true, SnoozedUntil: time.Date(2026, 10, 12, 7, 5, 0, 0, utc)}, "2026-10-12T07:00:00+00:00"},
		// 2026-03-08: New York springs forward at 02:00 to 03:00.
		{"ny gap fires when the gap ends", ny, "2026-03-07T23:00", alarm{Minute: 2*60 + 30, Enabled: true}, "2026-03-08T03:00:00-04:00"},
		{"ny day after the gap is normal", ny, "2026-03-08T04:00", alarm{Minute: 2*60 + 30, Enabled: true}, "2026-03-09T02:30:00-04:00"},
		// 2026-11-01: New York falls back at 02:00 to 01:00; 01:30 twice.
		{"ny overlap fires on the first pass", ny, "2026-10-31T23:00", alarm{Minute: 90, Enabled: true}, "2026-11-01T01:30:00-04:00"},
		{"ny overlap does not fire twice", ny, "2026-11-01T01:45", alarm{Minute: 90, Enabled: true, Days: everyDay}, "2026-11-02T01:30:00-05:00"},
		{"berlin gap weekly", berlin, "2026-03-28T12:00", alarm{Minute: 2*60 + 15, Enabled: true, Days: dayBit(time.Sunday)}, "2026-03-29T03:00:00+02:00"},
		{"daily across the ny fall back keeps wall time", ny, "2026-10-31T08:00", alarm{Minute: 7 * 60, Enabled: true, Days: everyDay}, "2026-11-01T07:00:00-05:00"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := at(t, tt.loc, tt.now)
			if tt.name == "ny overlap does not fire twice" {
				// 01:45 on the second pass (after the clock fell back).
				now = time.Date(2026, 11, 1, 6, 45, 0, 0, time.UTC)
			}
			got := tt.alarm.upcoming(now, tt.loc)
			s := ""
			if !got.IsZero() {
				s = apptool.ISO(got, tt.loc)
			}
			if s != tt.want {
				t.Fatalf("upcoming = %q, want %q", s, tt.want)
			}
		})
	}
}

func TestRepeatOf(t *testing.T) {
	t.Parallel()
	for days, want := range map[uint8]string{0: "once", everyDay: "daily", weekdays: "weekdays", weekends: "weekends", 1 | 1<<6: "custom"} {
		if got := repeatOf(days); got != want {
			t.Errorf("repeatOf(%b) = %s, want %s", days, got, want)
		}
	}
}

// advance replays what a phone would have done while nobody called the app.
func TestAdvance(t *testing.T) {
	t.Parallel()
	utc := time.UTC
	armed := time.Date(2026, 10, 12, 6, 0, 0, 0, utc)
	tests := []struct {
		name        string
		alarm       alarm
		now         time.Time
		ringing     bool
		enabled     bool
		ringStarted time.Time
	}{
		{"not due", alarm{Minute: 7 * 60, Enabled: true}, armed.Add(59 * time.Minute), false, true, time.Time{}},
		{"due rings", alarm{Minute: 7 * 60, Enabled: true}, armed.Add(61 * time.Minute), true, true, armed.Add(time.Hour)},
		{"last minute of the window", alarm{Minute: 7 * 60, Enabled: true}, armed.Add(time.Hour + RingWindow - time.Second), true, true, armed.Add(time.Hour)},
		{"unanswered once switches off", alarm{Minute: 7 * 60, Enabled: true}, armed.Add(time.Hour + RingWindow), false, false, time.Time{}},
		{"unanswered daily stays on", alarm{Minute: 7 * 60, Days: everyDay, Enabled: true}, armed.Add(2 * time.Hour), false, true, time.Time{}},
		{"days later daily rings today's", alarm{Minute: 7 * 60, Days: everyDay, Enabled: true}, armed.Add(72*time.Hour + 65*time.Minute), true, true, armed.Add(73 * time.Hour)},
		{"weeks later once is off", alarm{Minute: 7 * 60, Enabled: true}, armed.Add(21 * 24 * time.Hour), false, false, time.Time{}},
		{"snooze fire rings", alarm{Minute: 7 * 60, SnoozeMinutes: 10, SnoozedUntil: armed.Add(5 * time.Minute)}, armed.Add(6 * time.Minute), true, false, armed.Add(5 * time.Minute)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			al := tt.alarm
			al.ArmedFrom = armed
			al.advance(tt.now, utc)
			if al.ringing() != tt.ringing || al.Enabled != tt.enabled || !al.RingingSince.Equal(tt.ringStarted) {
				t.Fatalf("after advance: ringing=%v enabled=%v since=%v", al.ringing(), al.Enabled, al.RingingSince)
			}
			// Advancing again to the same instant changes nothing.
			if al.advance(tt.now, utc) {
				t.Fatal("second advance changed the alarm")
			}
		})
	}
}

// A one-time alarm through ring, snooze, ring again and dismiss, seen
// through the tools with a moving clock.
func TestRingLifecycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "Asia/Shanghai", "2026-10-12T06:59")
	f.OK("alarm_create", `{"time":"07:00","snooze_minutes":5}`)
	f.OK("alarm_create", `{"time":"08:00","days":["mon","tue","wed","thu","fri","sat","sun"]}`)
	if r := f.OK("alarm_get", `{"id":1}`); r["ringing"] != false {
		t.Fatalf("ringing before time: %v", r)
	}
	f.Now = f.Now.Add(3 * time.Minute) // 07:02
	r := f.OK("alarm_get", `{"id":1}`)
	if r["ringing"] != true || r["next_fire_at"] != nil || r["enabled"] != true {
		t.Fatalf("at 07:02: %v", r)
	}
	if got := f.Fail("alarm_dismiss", `{"id":2}`); got != "Alarm 2 is not ringing right now." {
		t.Fatalf("dismiss other: %q", got)
	}
	r = f.OK("alarm_snooze", `{}`)
	if r["snoozed_until"] != "2026-10-12T07:07:00+08:00" || r["ringing"] != false || r["next_fire_at"] != "2026-10-12T07:07:00+08:00" {
		t.Fatalf("snooze: %v", r)
	}
	if n := f.OK("alarm_next", `{}`); n["fires_in_minutes"] != 5.0 || n["alarm"].(map[string]any)["id"] != 1.0 {
		t.Fatalf("alarm_next while snoozed: %v", n)
	}
	f.Now = f.Now.Add(6 * time.Minute) // 07:08: the snooze rang at 07:07
	if r := f.OK("alarm_get", `{"id":1}`); r["ringing"] != true || r["snoozed_until"] != nil {
		t.Fatalf("snooze did not ring: %v", r)
	}
	d := f.OK("alarm_dismiss", `{}`)
	al := d["alarm"].(map[string]any)
	if d["dismissed"] != true || al["enabled"] != false || al["next_fire_at"] != nil || al["ringing"] != false {
		t.Fatalf("dismiss: %v", d)
	}
	if got := f.Fail("alarm_snooze", `{}`); got != "No alarm is ringing right now." {
		t.Fatalf("snooze after dismiss: %q", got)
	}
	// The daily 08:00 alarm rings and nobody answers: after the window it
	// is quiet and armed for tomorrow.
	f.Now = time.Date(2026, 10, 12, 0, 5, 0, 0, time.UTC) // 08:05 Shanghai
	if r := f.OK("alarm_get", `{"id":2}`); r["ringing"] != true {
		t.Fatalf("08:05: %v", r)
	}
	f.Now = f.Now.Add(RingWindow)
	if r := f.OK("alarm_get", `{"id":2}`); r["ringing"] != false || r["next_fire_at"] != "2026-10-13T08:00:00+08:00" || r["enabled"] != true {
		t.Fatalf("after the window: %v", r)
	}
}

// Changing the schedule of a ringing alarm stops it; changing its label
// does not.
func TestUpdateWhileRinging(t *testing.T) {
	t.Parallel()
	f := newFixture(t, "UTC", "2026-10-12T06:00")
	f.OK("alarm_create", `{"time":"09:00","days":["mon"]}`)
	f.Debug("ring", "1")
	if r := f.OK("alarm_update", `{"id":1,"label":"Standup"}`); r["ringing"] != true {
		t.Fatalf("label change stopped the ring: %v", r)
	}
	if r := f.OK("alarm_update", `{"id":1,"time":"09:30"}`); r["ringing"] != false || r["next_fire_at"] != "2026-10-12T09:30:00+00:00" {
		t.Fatalf("time change: %v", r)
	}
	f.Debug("ring", "1")
	if r := f.OK("alarm_set_enabled", `{"id":1,"enabled":false}`); r["ringing"] != false || r["next_fire_at"] != nil {
		t.Fatalf("switch off: %v", r)
	}
	// Switching a ringing repeating alarm's ring off by dismissing keeps it on.
	f.OK("alarm_set_enabled", `{"id":1,"enabled":true}`)
	f.Debug("ring", "1")
	if d := f.OK("alarm_dismiss", `{"id":1}`); d["alarm"].(map[string]any)["enabled"] != true {
		t.Fatalf("dismiss of a repeating alarm: %v", d)
	}
}
