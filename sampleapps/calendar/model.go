package calendar

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// parseID splits "local:12" or "sys:3[@20261012]".
func parseID(s string) (st storage, n int64, key string, ok bool) {
	s = strings.TrimSpace(s)
	s, key, _ = strings.Cut(s, "@")
	prefix, num, found := strings.Cut(s, ":")
	if !found {
		return 0, 0, "", false
	}
	switch prefix {
	case "local":
		st = local
	case "sys":
		st = system
	default:
		return 0, 0, "", false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != num {
		return 0, 0, "", false
	}
	return st, n, key, true
}

func (w *world) permission(st storage) error {
	if st == system && !w.granted {
		return apptool.Errorf("%s", PermissionSentence)
	}
	return nil
}

// calendar finds a calendar by its tool id.
func (w *world) calendar(id string) (*calendar, error) {
	st, n, key, ok := parseID(id)
	if ok && key == "" {
		if err := w.permission(st); err != nil {
			return nil, err
		}
		for _, c := range w.cals {
			if c.st == st && c.ID == n {
				return c, nil
			}
		}
	}
	return nil, apptool.Errorf("No calendar with id %q", id)
}

func (w *world) calendarOf(e *event) *calendar {
	for _, c := range w.cals {
		if c.st == e.st && c.ID == e.CalendarID {
			return c
		}
	}
	return nil
}

func (w *world) defaultCalendar() *calendar {
	for _, c := range w.cals {
		if c.st == local && c.IsDefault {
			return c
		}
	}
	for _, c := range w.cals {
		if c.st == local {
			return c
		}
	}
	return nil
}

// event finds a series by a series or occurrence id; key is the
// occurrence key ("" for a series id).
func (w *world) event(id string) (*event, string, error) {
	st, n, key, ok := parseID(id)
	if ok {
		if err := w.permission(st); err != nil {
			return nil, "", err
		}
		for _, e := range w.events {
			if e.st == st && e.ID == n {
				return e, key, nil
			}
		}
	}
	return nil, "", apptool.Errorf("No event with id %q", id)
}

// occurrenceOf resolves an occurrence key of e.
func (w *world) occurrenceOf(e *event, key string) (occurrence, error) {
	if key == "" {
		return w.at(e, w.baseDate(e), false), nil
	}
	var d apptool.Date
	if len(key) == 8 {
		d, _ = apptool.ParseDate(key[:4] + "-" + key[4:6] + "-" + key[6:])
	}
	if d.Valid() && e.Recurrence != "none" {
		o := w.at(e, d, true)
		for _, c := range w.expand(e, o.Start, o.Start.Add(time.Second), 0) {
			if c.key == key {
				return c, nil
			}
		}
	}
	return occurrence{}, apptool.Errorf("Event %q has no occurrence %q", e.id(), key)
}

func (w *world) eventCount(c *calendar) int {
	n := 0
	for _, e := range w.events {
		if e.st == c.st && e.CalendarID == c.ID {
			n++
		}
	}
	return n
}

// calendarJSON is the calendar object of the tools.
type calendarJSON struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Color       string `json:"color"`
	Visible     bool   `json:"visible"`
	IsDefault   bool   `json:"is_default"`
	Account     string `json:"account"`
	AccountType string `json:"account_type"`
	Source      string `json:"source"`
	Writable    bool   `json:"writable"`
	Storage     string `json:"storage"`
	EventCount  int    `json:"event_count"`
}

func (w *world) calendarJSON(c *calendar) calendarJSON {
	st := "app"
	if c.st == system {
		st = "system"
	}
	return calendarJSON{ID: c.id(), Name: c.Name, Color: c.Color, Visible: c.Visible, IsDefault: c.IsDefault, Account: c.Account,
		AccountType: c.AccountType, Source: c.Source, Writable: c.Writable, Storage: st, EventCount: w.eventCount(c)}
}

// eventJSON is the event object of the tools. Timed events carry ISO-8601
// times in the device zone; all-day events carry dates, end = last day.
type eventJSON struct {
	ID              string  `json:"id"`
	SeriesID        string  `json:"series_id"`
	CalendarID      string  `json:"calendar_id"`
	Title           string  `json:"title"`
	Start           string  `json:"start"`
	End             string  `json:"end"`
	AllDay          bool    `json:"all_day"`
	Location        string  `json:"location"`
	Description     string  `json:"description"`
	ReminderMinutes []int   `json:"reminder_minutes"`
	Recurrence      string  `json:"recurrence"`
	RecurrenceUntil *string `json:"recurrence_until"`
	RRule           string  `json:"rrule,omitempty"`
	Color           string  `json:"color"`
}

// occJSON renders one occurrence (id = occurrence id for a recurring
// series).
func (w *world) occJSON(o occurrence) eventJSON {
	e := o.ev
	out := eventJSON{ID: o.id(), SeriesID: e.id(), CalendarID: e.calendarID(), Title: e.Title, AllDay: e.AllDay, Location: e.Location,
		Description: e.Description, ReminderMinutes: append([]int{}, e.Reminders...), Recurrence: e.Recurrence, Color: e.Color}
	if e.AllDay {
		out.Start, out.End = o.Date.String(), o.Last.String()
	} else {
		out.Start, out.End = w.iso(o.Start), w.iso(o.End)
	}
	if !e.Until.IsZero() {
		u := w.iso(e.Until)
		out.RecurrenceUntil = &u
	}
	if e.Recurrence == "custom" {
		out.RRule = e.RRule
	}
	if out.Color == "" {
		if c := w.calendarOf(e); c != nil {
			out.Color = c.Color
		}
	}
	return out
}

// seriesJSON renders a series as its first occurrence under the series id.
func (w *world) seriesJSON(e *event) eventJSON {
	return w.occJSON(w.at(e, w.baseDate(e), false))
}

// sortOccurrences orders by start; on a tie all-day first, then by id.
func sortOccurrences(list []occurrence) {
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if !a.Start.Equal(b.Start) {
			return a.Start.Before(b.Start)
		}
		if a.ev.AllDay != b.ev.AllDay {
			return a.ev.AllDay
		}
		return a.id() < b.id()
	})
}

// matches is the case-insensitive substring filter of event_list and
// event_search over title, location and description.
func matches(e *event, query string) bool {
	if query == "" {
		return true
	}
	q := strings.ToLower(query)
	return strings.Contains(strings.ToLower(e.Title), q) || strings.Contains(strings.ToLower(e.Location), q) ||
		strings.Contains(strings.ToLower(e.Description), q)
}

// anchor is what reminder minutes count back from: the start, or 09:00 of
// the first day of an all-day event.
func (w *world) anchor(o occurrence) time.Time {
	if o.ev.AllDay {
		return apptool.Wall(o.Date, 9, 0, w.loc)
	}
	return o.Start
}

// nextReminder is the earliest reminder of the app's own events that is
// still to fire, or nil. (Reminders of provider events are delivered by the
// phone's calendar, not by this app.)
func (w *world) nextReminder() *scheduledReminder {
	var best *scheduledReminder
	for _, e := range w.events {
		if e.st != local || len(e.Reminders) == 0 {
			continue
		}
		lead := time.Duration(slicesMax(e.Reminders)) * time.Minute
		w.walk(e, w.now, farFuture, func(o occurrence) bool {
			a := w.anchor(o)
			if best != nil && a.Add(-lead).After(best.FireAt) {
				return false
			}
			for _, m := range e.Reminders {
				f := a.Add(-time.Duration(m) * time.Minute)
				if f.After(w.now) && (best == nil || f.Before(best.FireAt) || f.Equal(best.FireAt) && o.id() < best.OccurrenceID) {
					best = &scheduledReminder{OccurrenceID: o.id(), FireAt: f, MinutesBefore: m}
				}
			}
			// Occurrences later than lead past the first future anchor
			// cannot fire sooner.
			return best == nil || !a.Add(-lead).After(best.FireAt)
		})
	}
	return best
}

func slicesMax(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// reschedule re-arms the one pending reminder when it changed.
func (w *world) reschedule() error {
	want := w.nextReminder()
	have, err := getScheduled(w.ctx, w.lq)
	if err != nil {
		return err
	}
	if want == nil && have == nil || want != nil && have != nil && *want == *have && want.FireAt.Equal(have.FireAt) {
		return nil
	}
	return setScheduled(w.ctx, w.lq, want)
}

var palette = []string{"#4285F4", "#DB4437", "#F4B400", "#0F9D58", "#AB47BC", "#00ACC1", "#FF7043", "#9E9D24"}

// parseColor accepts #RRGGBB (any case) and returns it upper-case.
func parseColor(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if len(s) != 7 || s[0] != '#' {
		return "", false
	}
	for _, c := range s[1:] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return "", false
		}
	}
	return strings.ToUpper(s), true
}

// pageInfo is the paging part of every list result.
type pageInfo struct {
	Total      int  `json:"total"`
	Offset     int  `json:"offset"`
	Limit      int  `json:"limit"`
	Count      int  `json:"count"`
	NextOffset *int `json:"next_offset"`
}

// fit renders the page [offset, offset+limit) of n items and cuts it to
// the channel size; build wraps the rendered items with their page info.
func fit[T any](n, offset, limit int, render func(i int) T, build func(items []T, p pageInfo) any) any {
	var items []T
	for i := offset; i < n && i < offset+limit; i++ {
		items = append(items, render(i))
	}
	wrap := func(k int) any {
		p := pageInfo{Total: n, Offset: offset, Limit: limit, Count: k}
		if next := offset + k; next < n {
			p.NextOffset = &next
		}
		return build(append([]T{}, items[:k]...), p)
	}
	return wrap(apptool.Fit(len(items), wrap))
}

func fmtKey(d apptool.Date) string { return fmt.Sprintf("%04d%02d%02d", d.Year, int(d.Month), d.Day) }
