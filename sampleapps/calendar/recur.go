package calendar

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// Recurrences this app can create and edit; "custom" rules come only from
// the system provider and are read-only.
var recurrences = []string{"none", "daily", "weekly", "monthly", "yearly"}

// occurrence is one instance of a series.
type occurrence struct {
	ev  *event
	key string // YYYYMMDD of the start in the series' zone; "" when not recurring
	// Start and End are instants; for all-day events the start of the
	// first day and of the day after the last, in the device zone.
	Start, End time.Time
	// Date and Last are the days of an all-day occurrence.
	Date, Last apptool.Date
}

func (o occurrence) id() string {
	if o.key == "" {
		return o.ev.id()
	}
	return o.ev.id() + "@" + o.key
}

// maxSteps bounds the recurrence steps one expansion walks.
const maxSteps = 5000

// addMonths moves d by n months, clamping the day to the month's end
// (Jan 31 + 1 month = Feb 28; Feb 29 + 1 year = Feb 28).
func addMonths(d apptool.Date, n int) apptool.Date {
	m := int(d.Month) - 1 + n
	y := d.Year + m/12
	if m %= 12; m < 0 {
		m += 12
		y--
	}
	last := time.Date(y, time.Month(m+2), 0, 12, 0, 0, 0, time.UTC).Day()
	return apptool.Date{Year: y, Month: time.Month(m + 1), Day: min(d.Day, last)}
}

// stepDate is the date of the k-th instance of a standard recurrence.
func stepDate(base apptool.Date, rec string, k int) apptool.Date {
	switch rec {
	case "daily":
		return base.AddDays(k)
	case "weekly":
		return base.AddDays(7 * k)
	case "monthly":
		return addMonths(base, k)
	case "yearly":
		return addMonths(base, 12*k)
	}
	return base
}

// estimate is an index k whose instance starts no later than date d
// (never negative).
func estimate(base, d apptool.Date, rec string) int {
	days := base.DaysUntil(d)
	var k int
	switch rec {
	case "daily":
		k = days
	case "weekly":
		k = days / 7
	case "monthly":
		k = (d.Year-base.Year)*12 + int(d.Month-base.Month)
	case "yearly":
		k = d.Year - base.Year
	}
	return max(k-1, 0)
}

// at builds the occurrence that starts on date d (the series' zone for a
// timed event, the device zone for an all-day one).
func (w *world) at(e *event, d apptool.Date, recurring bool) occurrence {
	o := occurrence{ev: e}
	if recurring {
		o.key = fmt.Sprintf("%04d%02d%02d", d.Year, int(d.Month), d.Day)
	}
	if e.AllDay {
		span := e.StartDate.DaysUntil(e.EndDate)
		o.Date, o.Last = d, d.AddDays(span)
		o.Start, o.End = apptool.StartOfDay(d, w.loc), apptool.StartOfDay(o.Last.AddDays(1), w.loc)
		return o
	}
	zone := w.zone(e.TZ)
	base := e.Start.In(zone)
	o.Start = apptool.Wall(d, base.Hour(), base.Minute(), zone).Add(time.Duration(base.Second()) * time.Second)
	o.End = o.Start.Add(e.End.Sub(e.Start))
	return o
}

// baseDate is the first day of the series in the zone it repeats in.
func (w *world) baseDate(e *event) apptool.Date {
	if e.AllDay {
		return e.StartDate
	}
	return apptool.DateOf(e.Start, w.zone(e.TZ))
}

// expand returns the occurrences of e that overlap [from, to), in order,
// at most limit of them (limit <= 0: no limit besides maxSteps).
func (w *world) expand(e *event, from, to time.Time, limit int) []occurrence {
	var out []occurrence
	w.walk(e, from, to, func(o occurrence) bool {
		out = append(out, o)
		return limit <= 0 || len(out) < limit
	})
	return out
}

// walk calls fn, in order, for each occurrence of e overlapping [from, to)
// until fn returns false.
func (w *world) walk(e *event, from, to time.Time, fn func(occurrence) bool) {
	keep := func(o occurrence) bool {
		if o.End.After(from) && o.Start.Before(to) || o.Start.Equal(o.End) && !o.Start.Before(from) && o.Start.Before(to) {
			return fn(o)
		}
		return true
	}
	base := w.baseDate(e)
	switch e.Recurrence {
	case "none", "":
		keep(w.at(e, base, false))
		return
	case "custom":
		w.expandCustom(e, base, to, keep)
		return
	}
	// Start far enough back that an occurrence begun before from and still
	// running is found.
	first := w.at(e, base, true)
	k := estimate(base, apptool.DateOf(from.Add(-first.End.Sub(first.Start)), w.zone(e.TZ)), e.Recurrence)
	for steps := 0; steps < maxSteps; steps, k = steps+1, k+1 {
		o := w.at(e, stepDate(base, e.Recurrence, k), true)
		if !o.Start.Before(to) || !e.Until.IsZero() && o.Start.After(e.Until) {
			return
		}
		if !keep(o) {
			return
		}
	}
}

// rule is the part of an RRULE this app can expand.
type rule struct {
	freq     string
	interval int
	count    int
	until    time.Time
	byDay    []time.Weekday
}

var weekdayCodes = map[string]time.Weekday{"MO": time.Monday, "TU": time.Tuesday, "WE": time.Wednesday, "TH": time.Thursday,
	"FR": time.Friday, "SA": time.Saturday, "SU": time.Sunday}

// parseRule reads FREQ, INTERVAL, COUNT, UNTIL and (weekly) BYDAY; any
// other part makes the rule unexpandable (ok=false), and the series then
// shows only its first occurrence.
func parseRule(s string) (r rule, ok bool) {
	r.interval = 1
	for _, part := range strings.Split(strings.TrimPrefix(strings.TrimSpace(s), "RRULE:"), ";") {
		k, v, found := strings.Cut(part, "=")
		if !found {
			return r, false
		}
		switch strings.ToUpper(k) {
		case "FREQ":
			r.freq = strings.ToLower(v)
			if r.freq != "daily" && r.freq != "weekly" && r.freq != "monthly" && r.freq != "yearly" {
				return r, false
			}
		case "INTERVAL":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > 1000 {
				return r, false
			}
			r.interval = n
		case "COUNT":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return r, false
			}
			r.count = n
		case "UNTIL":
			for _, layout := range []string{"20060102T150405Z", "20060102T150405", "20060102"} {
				if t, err := time.Parse(layout, v); err == nil {
					r.until = t
					if layout == "20060102" {
						r.until = t.Add(24*time.Hour - time.Second)
					}
					break
				}
			}
			if r.until.IsZero() {
				return r, false
			}
		case "BYDAY":
			for _, code := range strings.Split(v, ",") {
				wd, known := weekdayCodes[strings.ToUpper(code)]
				if !known {
					return r, false
				}
				r.byDay = append(r.byDay, wd)
			}
		case "WKST":
			if strings.ToUpper(v) != "MO" {
				return r, false
			}
		default:
			return r, false
		}
	}
	if r.freq == "" || len(r.byDay) > 0 && r.freq != "weekly" {
		return r, false
	}
	sort.Slice(r.byDay, func(i, j int) bool { return (r.byDay[i]+6)%7 < (r.byDay[j]+6)%7 })
	return r, true
}

// expandCustom walks a custom rule from the series start (COUNT counts
// from there) until to, keep says stop, or maxSteps.
func (w *world) expandCustom(e *event, base apptool.Date, to time.Time, keep func(occurrence) bool) {
	r, ok := parseRule(e.RRule)
	if !ok {
		keep(w.at(e, base, false))
		return
	}
	n := 0
	emit := func(d apptool.Date) bool {
		o := w.at(e, d, true)
		if !o.Start.Before(to) || !r.until.IsZero() && o.Start.After(r.until) || !e.Until.IsZero() && o.Start.After(e.Until) ||
			r.count > 0 && n >= r.count {
			return false
		}
		n++
		return keep(o)
	}
	if r.freq == "weekly" && len(r.byDay) > 0 {
		monday := base.AddDays(-((int(base.Weekday()) + 6) % 7))
		for week := 0; week < maxSteps; week += r.interval {
			for _, wd := range r.byDay {
				d := monday.AddDays(7*week + (int(wd)+6)%7)
				if d.Compare(base) < 0 {
					continue
				}
				if !emit(d) {
					return
				}
			}
		}
		return
	}
	for k := 0; k < maxSteps; k++ {
		if !emit(stepDate(base, r.freq, k*r.interval)) {
			return
		}
	}
}

// next is the first occurrence still running or to come at now, if any.
func (w *world) next(e *event, now time.Time) (occurrence, bool) {
	if list := w.expand(e, now, farFuture, 1); len(list) > 0 {
		return list[0], true
	}
	return occurrence{}, false
}

// last is the final occurrence of a series that has ended.
func (w *world) last(e *event) occurrence {
	first := w.at(e, w.baseDate(e), e.Recurrence != "none" && e.Recurrence != "")
	end := e.Until
	if end.IsZero() || e.Recurrence == "custom" {
		all := w.expand(e, first.Start, farFuture, 0)
		if len(all) == 0 {
			return first
		}
		return all[len(all)-1]
	}
	list := w.expand(e, end.AddDate(-1, 0, -1), end.Add(time.Second), 0)
	if len(list) == 0 {
		return first
	}
	return list[len(list)-1]
}

// farFuture bounds open-ended searches.
var farFuture = time.Date(2201, 1, 1, 0, 0, 0, 0, time.UTC)
