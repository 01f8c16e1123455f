package apptool

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/runtime/platform"
)

// ISOLayout is the sample apps' time format (spec §9.0): seconds and a
// numeric offset, never "Z", e.g. 2026-10-12T15:00:00+08:00.
const ISOLayout = "2006-01-02T15:04:05-07:00"

// ISO formats t in loc with ISOLayout.
func ISO(t time.Time, loc *time.Location) string { return t.In(loc).Format(ISOLayout) }

// Date is a calendar date without a time zone.
type Date struct {
	Year  int
	Month time.Month
	Day   int
}

// DateOf returns the date t shows in loc.
func DateOf(t time.Time, loc *time.Location) Date {
	y, m, d := t.In(loc).Date()
	return Date{y, m, d}
}

// ParseDate parses YYYY-MM-DD (a real date of years 0001–9999).
func ParseDate(s string) (Date, bool) {
	if len(s) != 10 || s[4] != '-' || s[7] != '-' {
		return Date{}, false
	}
	y, ok1 := digits(s[0:4])
	m, ok2 := digits(s[5:7])
	d, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || y < 1 {
		return Date{}, false
	}
	date := Date{y, time.Month(m), d}
	if !date.Valid() {
		return Date{}, false
	}
	return date, true
}

// Valid reports whether d names a real day.
func (d Date) Valid() bool {
	if d.Month < 1 || d.Month > 12 || d.Day < 1 {
		return false
	}
	t := time.Date(d.Year, d.Month, d.Day, 12, 0, 0, 0, time.UTC)
	return t.Day() == d.Day && t.Month() == d.Month
}

func (d Date) String() string { return fmt.Sprintf("%04d-%02d-%02d", d.Year, int(d.Month), d.Day) }

// noon is d at 12:00 UTC, a DST-free anchor for date arithmetic.
func (d Date) noon() time.Time { return time.Date(d.Year, d.Month, d.Day, 12, 0, 0, 0, time.UTC) }

// AddDays returns d moved by n days.
func (d Date) AddDays(n int) Date {
	t := d.noon().AddDate(0, 0, n)
	return Date{t.Year(), t.Month(), t.Day()}
}

// Weekday returns d's day of the week.
func (d Date) Weekday() time.Weekday { return d.noon().Weekday() }

// DaysUntil returns the number of days from d to e (negative if e is earlier).
func (d Date) DaysUntil(e Date) int { return int(e.noon().Sub(d.noon()).Hours() / 24) }

// Compare returns -1, 0 or +1 as d is before, equal to or after e.
func (d Date) Compare(e Date) int {
	switch {
	case d == e:
		return 0
	case d.Year < e.Year || d.Year == e.Year && (d.Month < e.Month || d.Month == e.Month && d.Day < e.Day):
		return -1
	default:
		return 1
	}
}

// Wall returns the instant at which the wall clock in loc reads hour:min
// on date d, with the rule every sample app uses for daylight-saving
// changes:
//
//   - in a gap (spring forward, e.g. 02:30 does not exist) the answer is
//     the first instant after the gap, the moment the clock jumps (03:00
//     new time): the first instant at which the wall clock has passed the
//     requested time;
//   - in an overlap (fall back, e.g. 01:30 happens twice) the answer is
//     the earlier of the two instants, so an alarm rings once, on the first
//     pass.
//
// hour may be 24 (with min 0): the midnight that ends d.
func Wall(d Date, hour, min int, loc *time.Location) time.Time {
	if hour == 24 {
		return Wall(d.AddDays(1), 0, min, loc)
	}
	asUTC := time.Date(d.Year, d.Month, d.Day, hour, min, 0, 0, time.UTC)
	guess := time.Date(d.Year, d.Month, d.Day, hour, min, 0, 0, loc)
	var best time.Time
	found := false
	// The offsets in force a day either side cover both sides of any
	// transition near this wall time; keep each that reproduces the wall
	// clock and take the earliest.
	for _, probe := range []time.Time{asUTC.Add(-26 * time.Hour), guess, asUTC.Add(26 * time.Hour)} {
		_, off := probe.In(loc).Zone()
		c := asUTC.Add(-time.Duration(off) * time.Second).In(loc)
		if c.Hour() == hour && c.Minute() == min && DateOf(c, loc) == d && (!found || c.Before(best)) {
			best, found = c, true
		}
	}
	if found {
		return best
	}
	// A gap: the transition is where the zone of guess begins (guess reads
	// later than asked) or ends (guess reads earlier).
	start, end := guess.ZoneBounds()
	got := guess.In(loc)
	if DateOf(got, loc).Compare(d) > 0 || DateOf(got, loc) == d && got.Hour()*60+got.Minute() > hour*60+min {
		if !start.IsZero() {
			return start.In(loc)
		}
	} else if !end.IsZero() {
		return end.In(loc)
	}
	return got
}

// StartOfDay returns the first instant of d in loc (midnight, or the end of
// a gap when midnight does not exist that day).
func StartOfDay(d Date, loc *time.Location) time.Time { return Wall(d, 0, 0, loc) }

// Moment is a parsed date or date-time argument.
type Moment struct {
	// Date is the calendar date as written.
	Date Date
	// DateOnly is true for "YYYY-MM-DD".
	DateOnly bool
	// HasOffset is true when the text carried "Z" or a numeric offset.
	HasOffset bool
	// Hour, Min, Sec are the wall time as written (zero for DateOnly).
	Hour, Min, Sec int
	// Time is the instant: the written offset, else the location passed
	// to ParseMoment; for DateOnly the start of that day in that location.
	Time time.Time
}

// ErrBadMoment is returned (wrapped) by ParseMoment for text it cannot read.
var ErrBadMoment = errors.New("not a date or ISO-8601 date-time")

// ErrNoOffset is returned by ParseMoment when a date-time has no offset and
// requireOffset is set.
var ErrNoOffset = errors.New("date-time has no UTC offset")

// ParseMoment reads "YYYY-MM-DD" or an ISO-8601 date-time
// "YYYY-MM-DDTHH:MM[:SS[.fff]]" followed by "Z", "±HH:MM" or "±HHMM". A
// date-time without an offset is read in loc unless requireOffset is set.
func ParseMoment(s string, loc *time.Location, requireOffset bool) (Moment, error) {
	s = strings.TrimSpace(s)
	if d, ok := ParseDate(s); ok {
		return Moment{Date: d, DateOnly: true, Time: StartOfDay(d, loc)}, nil
	}
	if len(s) < 16 || (s[10] != 'T' && s[10] != 't' && s[10] != ' ') {
		return Moment{}, ErrBadMoment
	}
	d, ok := ParseDate(s[:10])
	if !ok {
		return Moment{}, ErrBadMoment
	}
	rest := s[11:]
	m := Moment{Date: d}
	var ok1, ok2 bool
	if len(rest) < 5 || rest[2] != ':' {
		return Moment{}, ErrBadMoment
	}
	m.Hour, ok1 = digits(rest[0:2])
	m.Min, ok2 = digits(rest[3:5])
	if !ok1 || !ok2 || m.Hour > 23 || m.Min > 59 {
		return Moment{}, ErrBadMoment
	}
	rest = rest[5:]
	nanos := 0
	if len(rest) >= 3 && rest[0] == ':' {
		sec, ok := digits(rest[1:3])
		if !ok || sec > 59 {
			return Moment{}, ErrBadMoment
		}
		m.Sec = sec
		rest = rest[3:]
		if len(rest) > 1 && (rest[0] == '.' || rest[0] == ',') {
			i := 1
			for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
				i++
			}
			if i == 1 || i > 10 {
				return Moment{}, ErrBadMoment
			}
			frac := rest[1:i] + strings.Repeat("0", 9-(i-1))
			nanos, _ = strconv.Atoi(frac)
			rest = rest[i:]
		}
	}
	zone := loc
	switch {
	case rest == "":
		if requireOffset {
			return Moment{}, ErrNoOffset
		}
	case rest == "Z" || rest == "z":
		zone, m.HasOffset = time.UTC, true
	case rest[0] == '+' || rest[0] == '-':
		hh, mm, ok := parseOffset(rest[1:])
		if !ok {
			return Moment{}, ErrBadMoment
		}
		off := hh*3600 + mm*60
		if rest[0] == '-' {
			off = -off
		}
		zone, m.HasOffset = time.FixedZone("", off), true
	default:
		return Moment{}, ErrBadMoment
	}
	if m.HasOffset {
		m.Time = time.Date(d.Year, d.Month, d.Day, m.Hour, m.Min, m.Sec, nanos, zone)
	} else {
		m.Time = Wall(d, m.Hour, m.Min, zone).Add(time.Duration(m.Sec)*time.Second + time.Duration(nanos))
	}
	return m, nil
}

func parseOffset(s string) (hh, mm int, ok bool) {
	switch len(s) {
	case 5:
		if s[2] != ':' {
			return 0, 0, false
		}
		s = s[:2] + s[3:]
	case 4:
	case 2:
		s += "00"
	default:
		return 0, 0, false
	}
	hh, ok1 := digits(s[:2])
	mm, ok2 := digits(s[2:])
	if !ok1 || !ok2 || hh > 18 || mm > 59 {
		return 0, 0, false
	}
	return hh, mm, true
}

// digits parses a fixed-width run of ASCII digits.
func digits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, len(s) > 0
}

// ParseClock reads a clock time "H:mm" or "HH:mm" (00:00–23:59); with
// allow24 "24:00" is accepted too. It returns minutes since midnight.
func ParseClock(s string, allow24 bool) (int, bool) {
	s = strings.TrimSpace(s)
	i := strings.IndexByte(s, ':')
	if i < 1 || i > 2 || len(s) != i+3 {
		return 0, false
	}
	h, ok1 := digits(s[:i])
	m, ok2 := digits(s[i+1:])
	if !ok1 || !ok2 || m > 59 {
		return 0, false
	}
	if h == 24 && m == 0 && allow24 {
		return 24 * 60, true
	}
	if h > 23 {
		return 0, false
	}
	return h*60 + m, true
}

// Clock formats minutes since midnight as HH:mm.
func Clock(minutes int) string { return fmt.Sprintf("%02d:%02d", minutes/60, minutes%60) }

// DeviceLocation returns the device's time zone with its IANA name when it
// can be found (on Android the platform's: $TZ or persist.sys.timezone;
// elsewhere $TZ, then the /etc/localtime link), so results can say
// "Asia/Shanghai" rather than "Local"; otherwise time.Local.
func DeviceLocation() *time.Location {
	if p := platform.Current(); p.Android() {
		return p.Location()
	}
	name := os.Getenv("TZ")
	if name == "" {
		if target, err := os.Readlink("/etc/localtime"); err == nil {
			if _, after, ok := strings.Cut(target, "zoneinfo/"); ok {
				name = after
			}
		}
	}
	if name != "" && name != "Local" {
		if loc, err := time.LoadLocation(strings.TrimPrefix(name, ":")); err == nil {
			return loc
		}
	}
	return time.Local
}
