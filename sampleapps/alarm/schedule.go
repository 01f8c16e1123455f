package alarm

import (
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// RingWindow is how long an alarm rings when nobody answers it. A fire
// time that passed less than RingWindow ago and was not dismissed or
// snoozed is "ringing"; after that the ring ends as if dismissed.
const RingWindow = 10 * time.Minute

// catchUp bounds how far back advance replays missed fires: only the
// latest ring can still matter, and a week plus a day covers every
// repeat pattern.
const catchUp = 8 * 24 * time.Hour

// dayNames are the day codes of the tools, Monday first (bit i of days).
var dayNames = [7]string{"mon", "tue", "wed", "thu", "fri", "sat", "sun"}

const (
	everyDay = 0x7f
	weekdays = 0x1f
	weekends = 0x60
)

func dayBit(w time.Weekday) uint8 { return 1 << ((int(w) + 6) % 7) }

// repeatOf derives the repeat kind from the day set.
func repeatOf(days uint8) string {
	switch days {
	case 0:
		return "once"
	case everyDay:
		return "daily"
	case weekdays:
		return "weekdays"
	case weekends:
		return "weekends"
	}
	return "custom"
}

func dayList(days uint8) []string {
	out := []string{}
	for i, n := range dayNames {
		if days&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// alarm is one stored alarm and its ringing state.
//
// The app has no background process, so the state is brought up to date
// lazily (advance) at the start of every call, exactly as the ring service
// of a phone would have left it: a fire that came due starts a ring, and a
// ring nobody answered ends after RingWindow.
type alarm struct {
	ID            int64
	Minute        int // minute of the day, local wall clock
	Label         string
	Days          uint8 // bit 0 = Monday … bit 6 = Sunday; 0 = once
	Enabled       bool
	Vibrate       bool
	SnoozeMinutes int
	// SnoozedUntil is the pending snooze fire (zero: none).
	SnoozedUntil time.Time
	// ArmedFrom: the alarm fires only at instants strictly after it. It
	// moves forward when a ring ends and when the schedule changes, so a
	// fire is never rung twice and an edit never rings a past time.
	ArmedFrom time.Time
	// RingingSince is when the current ring began (zero: not ringing).
	RingingSince time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

func (a *alarm) once() bool    { return a.Days == 0 }
func (a *alarm) ringing() bool { return !a.RingingSince.IsZero() }

// regularAfter is the first time strictly after t at which the alarm's
// clock time comes round on one of its days (any day when once), with the
// DST rule of apptool.Wall: a time inside a spring-forward gap fires when
// the gap ends, a time inside a fall-back overlap fires on its first pass.
func (a *alarm) regularAfter(t time.Time, loc *time.Location) time.Time {
	start := apptool.DateOf(t, loc).AddDays(-1)
	for i := 0; i < 10; i++ {
		d := start.AddDays(i)
		if a.Days != 0 && a.Days&dayBit(d.Weekday()) == 0 {
			continue
		}
		if f := apptool.Wall(d, a.Minute/60, a.Minute%60, loc); f.After(t) {
			return f
		}
	}
	return time.Time{} // unreachable: some day of the next week matches
}

// nextFire is the first fire strictly after t: the regular schedule when
// enabled, or a pending snooze, whichever comes first; zero when neither.
func (a *alarm) nextFire(t time.Time, loc *time.Location) time.Time {
	var best time.Time
	if a.Enabled {
		best = a.regularAfter(t, loc)
	}
	if s := a.SnoozedUntil; !s.IsZero() && s.After(t) && (best.IsZero() || s.Before(best)) {
		best = s
	}
	return best
}

// advance brings the ringing state up to now and reports whether it
// changed anything.
func (a *alarm) advance(now time.Time, loc *time.Location) bool {
	changed := false
	from := a.ArmedFrom
	if floor := now.Add(-catchUp); from.Before(floor) {
		from = floor
	}
	if !a.SnoozedUntil.IsZero() && !a.SnoozedUntil.After(from) && !a.ringing() {
		a.SnoozedUntil = time.Time{}
		changed = true
	}
	for i := 0; i < 64; i++ {
		if a.ringing() {
			end := a.RingingSince.Add(RingWindow)
			if now.Before(end) {
				return changed
			}
			a.stopRinging(end)
			from = end
			changed = true
			continue
		}
		f := a.nextFire(from, loc)
		if f.IsZero() || f.After(now) {
			return changed
		}
		a.RingingSince = f
		a.SnoozedUntil = time.Time{}
		changed = true
	}
	return changed
}

// stopRinging ends a ring at t (a dismissal, or nobody answered). A
// one-time alarm switches itself off once it has rung.
func (a *alarm) stopRinging(t time.Time) {
	a.RingingSince = time.Time{}
	a.SnoozedUntil = time.Time{}
	a.ArmedFrom = t
	if a.once() {
		a.Enabled = false
	}
}

// snooze silences the ring and fires again SnoozeMinutes after now. A
// one-time alarm stays on until its snooze has rung.
func (a *alarm) snooze(now time.Time) {
	a.RingingSince = time.Time{}
	a.ArmedFrom = now
	a.SnoozedUntil = now.Add(time.Duration(a.SnoozeMinutes) * time.Minute)
}

// rearm restarts the schedule from now after its time, days or switch
// changed: any ring or snooze in progress ends.
func (a *alarm) rearm(now time.Time) {
	a.RingingSince = time.Time{}
	a.SnoozedUntil = time.Time{}
	a.ArmedFrom = now
}

// upcoming is when the alarm fires next as seen at now (zero: never). A
// ringing one-time alarm has nothing after the ring: it switches off.
func (a *alarm) upcoming(now time.Time, loc *time.Location) time.Time {
	if a.ringing() && a.once() {
		return time.Time{}
	}
	from := now
	if a.ArmedFrom.After(from) {
		from = a.ArmedFrom
	}
	return a.nextFire(from, loc)
}
