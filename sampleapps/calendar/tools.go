package calendar

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// Annotation sets of spec §9.2.
var (
	readOnly    = apptool.Annotations{ReadOnlyHint: apptool.Bool(true), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
	plainWrite  = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
	idempotent  = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(true), OpenWorldHint: apptool.Bool(false)}
	destructive = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(true), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
)

var (
	limitProp = func(def int) apptool.Prop {
		return apptool.Prop{Name: "limit", Type: "integer", Minimum: apptool.Num(1), Maximum: apptool.Num(200),
			Description: "Page size, default " + strconv.Itoa(def) + ", at most 200."}
	}
	offsetProp  = apptool.Prop{Name: "offset", Type: "integer", Minimum: apptool.Num(0), Description: "How many to skip: pass next_offset of the previous page (default 0)."}
	calIDProp   = apptool.Prop{Name: "calendar_id", Type: "string", Description: `Only events of this calendar ("local:1", "sys:2"; see calendar_list).`}
	eventIDProp = apptool.Prop{Name: "id", Type: "string", Description: `Event id ("local:7") or occurrence id ("local:7@20261012") from event_list.`}
	colorProp   = apptool.Prop{Name: "color", Type: "string", Pattern: "^#[0-9A-Fa-f]{6}$", Description: `Color "#RRGGBB".`}
)

func eventProps(update bool) []apptool.Prop {
	var ps []apptool.Prop
	if update {
		ps = append(ps, eventIDProp)
	}
	return append(ps,
		apptool.Prop{Name: "title", Type: "string", MaxLength: MaxTitle, Description: "Event title, at most 500 characters."},
		apptool.Prop{Name: "start", Type: "string", Description: `Start: ISO-8601 with UTC offset, e.g. "2026-10-12T15:00:00+08:00" (without an offset the phone's zone is used), or a date "2026-10-12" for an all-day event.`},
		apptool.Prop{Name: "end", Type: "string", Description: "End in the same format. Default: start + 1 hour; for all-day events the start day. For all-day events end is the last day (inclusive)."},
		apptool.Prop{Name: "all_day", Type: "boolean", Description: "All-day event: only the dates count. Default: true when start is a plain date."},
		apptool.Prop{Name: "location", Type: "string", MaxLength: MaxLocation, Description: "Where, at most 500 characters."},
		apptool.Prop{Name: "description", Type: "string", MaxLength: MaxDescription, Description: "Notes, at most 10,000 characters."},
		apptool.Prop{Name: "calendar_id", Type: "string", Description: "Calendar to write to (default: the app's default calendar, is_default in calendar_list)."},
		apptool.Prop{Name: "reminder_minutes", Type: "array", Items: "integer", Description: "Minutes before the start to remind, e.g. [15] or [10, 60]; all-day events count back from 09:00 of the first day. 0-40320 each; at most 10, or 5 in system calendars."},
		apptool.Prop{Name: "recurrence", Type: "string", Enum: recurrences, Description: "Repeat: none, daily, weekly (same weekday), monthly (same day, clamped to the month's end) or yearly."},
		apptool.Prop{Name: "recurrence_until", Type: "string", Description: `Last day (inclusive) or last start instant of a repeating event; "" or omitted = forever.`},
		colorProp,
	)
}

func (a *App) buildTools() []apptool.Tool {
	return []apptool.Tool{
		{
			Name: "calendar_list", Title: "List calendars", Annotations: readOnly,
			Description: "List calendars: id, name, color, visible, is_default (where event_create writes when calendar_id is omitted), account, account_type, source (google, caldav, local, other), writable, storage (app = this app's own, system = the phone's calendar accounts, shown only with the calendar permission; see system_permission) and event_count.",
			InputSchema: apptool.ObjectSchema(nil, limitProp(50), offsetProp),
			Handler:     a.calendarList,
		},
		{
			Name: "calendar_create", Title: "Create a calendar", Annotations: plainWrite,
			Description: "Create a calendar in this app (storage app, source local). Names are unique (case-insensitive), at most 60 characters. color is optional; a palette color is picked otherwise. Returns the new calendar.",
			InputSchema: apptool.ObjectSchema([]string{"name"}, apptool.Prop{Name: "name", Type: "string", MaxLength: MaxCalendarName, Description: "Calendar name."}, colorProp),
			Handler:     a.calendarCreate,
		},
		{
			Name: "calendar_update", Title: "Update a calendar", Annotations: idempotent,
			Description: "Rename a calendar of this app, change its color, or show or hide it in the app (hidden calendars stay readable here). System calendars can only be shown or hidden. Pass at least one field. Returns the calendar.",
			InputSchema: apptool.ObjectSchema([]string{"id"},
				apptool.Prop{Name: "id", Type: "string", Description: "Calendar id from calendar_list."},
				apptool.Prop{Name: "name", Type: "string", MaxLength: MaxCalendarName, Description: "New unique name."}, colorProp,
				apptool.Prop{Name: "visible", Type: "boolean", Description: "Whether the app shows the calendar."}),
			Handler: a.calendarUpdate,
		},
		{
			Name: "calendar_delete", Title: "Delete a calendar", Annotations: destructive,
			Description: "Delete a calendar of this app together with ALL its events. This cannot be undone. The default calendar and system calendars cannot be deleted. Returns {deleted, id, name, deleted_events}.",
			InputSchema: apptool.ObjectSchema([]string{"id"}, apptool.Prop{Name: "id", Type: "string", Description: "Calendar id from calendar_list."}),
			Handler:     a.calendarDelete,
		},
		{
			Name: "event_list", Title: "List events", Annotations: readOnly,
			Description: "List events overlapping a time range, by start time. Recurring events are expanded: each occurrence has its own id (\"<series_id>@YYYYMMDD\") and the shared series_id. from defaults to the start of today and to to 30 days later; a plain date as to includes that day; the range may span at most 731 days. Timed events carry ISO-8601 times with offset, all-day events dates (end = last day). query keeps events whose title, location or description contains it. Returns {from, to, time_zone, total, offset, limit, count, next_offset, events}; next_offset is null on the last page.",
			InputSchema: apptool.ObjectSchema(nil,
				apptool.Prop{Name: "from", Type: "string", Description: "Range start: ISO-8601 date-time or a date."},
				apptool.Prop{Name: "to", Type: "string", Description: "Range end (exclusive): ISO-8601 date-time, or a date (inclusive of that day)."},
				calIDProp, apptool.Prop{Name: "query", Type: "string", MaxLength: MaxQuery, Description: "Text to look for (case-insensitive)."},
				limitProp(50), offsetProp),
			Handler: a.eventList,
		},
		{
			Name: "event_get", Title: "Get an event", Annotations: readOnly,
			Description: "Get one event by series id (the series as created: its first occurrence) or by occurrence id from event_list.",
			InputSchema: apptool.ObjectSchema([]string{"id"}, eventIDProp),
			Handler:     a.eventGet,
		},
		{
			Name: "event_create", Title: "Create an event", Annotations: plainWrite,
			Description: "Create a calendar event: something that takes a stretch of time (a meeting, an appointment, a trip). Check event_list around that time first so you do not create a duplicate. Put a reminder in reminder_minutes (do not also create an alarm). Writes to the default calendar unless calendar_id is given. Returns the new event.",
			InputSchema: apptool.ObjectSchema([]string{"title", "start"}, eventProps(false)...),
			Handler:     a.eventCreate,
		},
		{
			Name: "event_update", Title: "Update an event", Annotations: idempotent,
			Description: "Change fields of an event; only what you pass changes, and at least one field is needed. For a recurring event the WHOLE series changes (an occurrence id also names its series). Changing start without end keeps the duration. \"\" clears location, description, recurrence_until or color. Events with a custom recurrence cannot be changed here, and an event cannot move between app and system calendars. Returns the updated event.",
			InputSchema: apptool.ObjectSchema([]string{"id"}, eventProps(true)...),
			Handler:     a.eventUpdate,
		},
		{
			Name: "event_delete", Title: "Delete an event", Annotations: destructive,
			Description: "Delete an event for good; for a recurring event the WHOLE series goes (an occurrence id also names its series). This cannot be undone. Returns {deleted, id, series_id, title, was_recurring}.",
			InputSchema: apptool.ObjectSchema([]string{"id"}, eventIDProp),
			Handler:     a.eventDelete,
		},
		{
			Name: "event_search", Title: "Search events", Annotations: readOnly,
			Description: "Search events of all time by text in title, location or description (case-insensitive). One result per series: its next occurrence (running or to come), else its last one. Upcoming results first (soonest first), then past ones (most recent first). Returns {query, total, offset, limit, count, next_offset, events}.",
			InputSchema: apptool.ObjectSchema([]string{"query"},
				apptool.Prop{Name: "query", Type: "string", MaxLength: MaxQuery, Description: "Text to look for."}, calIDProp, limitProp(50), offsetProp),
			Handler: a.eventSearch,
		},
		{
			Name: "agenda_today", Title: "Today's agenda", Annotations: readOnly,
			Description: "Today's events in the phone's time zone, all-day events first, then by start; recurring events expanded. Returns {date, time_zone, total, offset, limit, count, next_offset, events}.",
			InputSchema: apptool.ObjectSchema(nil, calIDProp, limitProp(50), offsetProp),
			Handler:     a.agendaToday,
		},
		{
			Name: "free_slots", Title: "Find free time", Annotations: readOnly,
			Description: "Free time slots of at least duration_minutes on one day, between day_start and day_end (HH:mm, default 09:00-18:00; day_end may be 24:00), in the phone's time zone. Busy time is every timed event (recurring ones expanded, events crossing midnight included); all-day events count only with include_all_day. Returns {date, time_zone, duration_minutes, window, busy, total, offset, count, next_offset, slots}.",
			InputSchema: apptool.ObjectSchema([]string{"date", "duration_minutes"},
				apptool.Prop{Name: "date", Type: "string", Description: `Day to look at, "YYYY-MM-DD".`},
				apptool.Prop{Name: "duration_minutes", Type: "integer", Minimum: apptool.Num(1), Maximum: apptool.Num(1440), Description: "Shortest useful slot, 1-1440 minutes."},
				apptool.Prop{Name: "day_start", Type: "string", Description: `Window start "HH:mm" (default "09:00").`},
				apptool.Prop{Name: "day_end", Type: "string", Description: `Window end "HH:mm" (default "18:00"; "24:00" = midnight).`},
				calIDProp,
				apptool.Prop{Name: "include_all_day", Type: "boolean", Description: "Count all-day events as busy all day (default false)."},
				offsetProp),
			Handler: a.freeSlots,
		},
	}
}

func parse(raw json.RawMessage) (*apptool.Args, error) { return apptool.ParseArgs(raw) }

func readPage(args *apptool.Args, def int) (offset, limit int) {
	l, ok := args.IntOK("limit", apptool.Range(1, 200))
	if !ok {
		l = int64(def)
	}
	return int(args.Int("offset", apptool.Min(0))), int(l)
}

// run finishes reading (unknown parameters), checks the arguments, and
// runs fn in one call of the app.
func (a *App) run(ctx context.Context, args *apptool.Args, fn func(w *world) (any, error)) (any, error) {
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	var out any
	err := a.do(ctx, func(w *world) error {
		var err error
		out, err = fn(w)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ---- calendars ----

func (a *App) calendarList(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	offset, limit := readPage(args, 50)
	return a.run(ctx, args, func(w *world) (any, error) {
		perm := "denied"
		if w.granted {
			perm = "granted"
		}
		type result struct {
			SystemPermission string `json:"system_permission"`
			pageInfo
			Calendars []calendarJSON `json:"calendars"`
		}
		return fit(len(w.cals), offset, limit, func(i int) calendarJSON { return w.calendarJSON(w.cals[i]) },
			func(items []calendarJSON, p pageInfo) any { return result{perm, p, items} }), nil
	})
}

func (a *App) calendarCreate(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	name := strings.TrimSpace(args.String("name", apptool.Required, apptool.NonEmpty, apptool.MaxLen(MaxCalendarName)))
	color := readColor(args)
	return a.run(ctx, args, func(w *world) (any, error) {
		n := 0
		for _, c := range w.cals {
			if c.st != local {
				continue
			}
			n++
			if strings.EqualFold(c.Name, name) {
				return nil, apptool.Errorf("A calendar named %q already exists.", c.Name)
			}
		}
		if n >= MaxLocalCalendars {
			return nil, apptool.Errorf("This app already has %d calendars, the most it keeps.", MaxLocalCalendars)
		}
		if color == "" {
			color = palette[n%len(palette)]
		}
		c := &calendar{st: local, Name: name, Color: color, Visible: true, Source: "local", Writable: true}
		if err := insertCalendar(w.ctx, w.lq, c); err != nil {
			return nil, err
		}
		w.cals = append(w.cals, c)
		return w.calendarJSON(c), nil
	})
}

// readColor reads an optional "color"; "" (a clear) is returned as "".
func readColor(args *apptool.Args) string {
	s, ok := args.StringOK("color")
	if !ok || s == "" {
		return ""
	}
	c, valid := parseColor(s)
	if !valid {
		args.Fail(`Parameter "color" must be a color "#RRGGBB", e.g. "#4285F4".`)
	}
	return c
}

func (a *App) calendarUpdate(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id := args.String("id", apptool.Required, apptool.NonEmpty)
	name, hasName := args.StringOK("name", apptool.NonEmpty, apptool.MaxLen(MaxCalendarName))
	_, hasColor := args.StringOK("color")
	color := readColor(args)
	visible, hasVisible := args.BoolOK("visible")
	if args.Err() == nil && !hasName && !hasColor && !hasVisible {
		args.RejectUnknown()
		args.Fail("Nothing to update: pass at least one of name, color, visible.")
	}
	if hasColor && color == "" {
		args.Fail(`Parameter "color" must be a color "#RRGGBB", e.g. "#4285F4".`)
	}
	return a.run(ctx, args, func(w *world) (any, error) {
		c, err := w.calendar(id)
		if err != nil {
			return nil, err
		}
		if c.st == system && (hasName || hasColor) {
			return nil, apptool.Errorf("System calendars can only be shown or hidden here; rename or recolor them in their account.")
		}
		if hasName {
			name = strings.TrimSpace(name)
			for _, o := range w.cals {
				if o != c && o.st == local && strings.EqualFold(o.Name, name) {
					return nil, apptool.Errorf("A calendar named %q already exists.", o.Name)
				}
			}
			c.Name = name
		}
		if hasColor {
			c.Color = color
		}
		if hasVisible {
			c.Visible = visible
		}
		if err := updateCalendar(w.ctx, w.q(c.st), c); err != nil {
			return nil, err
		}
		return w.calendarJSON(c), nil
	})
}

func (a *App) calendarDelete(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id := args.String("id", apptool.Required, apptool.NonEmpty)
	return a.run(ctx, args, func(w *world) (any, error) {
		c, err := w.calendar(id)
		if err != nil {
			return nil, err
		}
		switch {
		case c.st == system:
			return nil, apptool.Errorf("System calendars cannot be deleted here; they belong to the phone's calendar accounts.")
		case c.IsDefault:
			return nil, apptool.Errorf("The default calendar cannot be deleted.")
		}
		n := w.eventCount(c)
		if err := deleteCalendar(w.ctx, w.lq, c.ID); err != nil {
			return nil, err
		}
		w.dropEvents(func(e *event) bool { return e.st == local && e.CalendarID == c.ID })
		w.dropCalendar(c)
		return struct {
			Deleted       bool   `json:"deleted"`
			ID            string `json:"id"`
			Name          string `json:"name"`
			DeletedEvents int    `json:"deleted_events"`
		}{true, c.id(), c.Name, n}, nil
	})
}

func (w *world) dropEvents(gone func(*event) bool) {
	kept := w.events[:0]
	for _, e := range w.events {
		if !gone(e) {
			kept = append(kept, e)
		}
	}
	w.events = kept
}

func (w *world) dropCalendar(c *calendar) {
	kept := w.cals[:0]
	for _, o := range w.cals {
		if o != c {
			kept = append(kept, o)
		}
	}
	w.cals = kept
}

// ---- listing ----

// rangeArgs reads from/to of event_list.
type rangeArgs struct {
	from, to       apptool.Moment
	hasFrom, hasTo bool
}

func (a *App) readMoment(args *apptool.Args, name string) (apptool.Moment, bool) {
	s, ok := args.StringOK(name)
	if !ok || strings.TrimSpace(s) == "" {
		return apptool.Moment{}, false
	}
	m, err := apptool.ParseMoment(s, a.loc, false)
	if err != nil {
		args.Fail(`Parameter %q must be an ISO-8601 date-time such as "2026-10-12T15:00:00+08:00" or a date "2026-10-12".`, name)
		return apptool.Moment{}, false
	}
	if m.Date.Year < minYear || m.Date.Year > maxYear {
		args.Fail(`Parameter %q must be between the years 1970 and 2200.`, name)
		return apptool.Moment{}, false
	}
	return m, true
}

// filterCalendar resolves an optional calendar_id (permission included).
func (w *world) filterCalendar(id string) (*calendar, error) {
	if id == "" {
		return nil, nil
	}
	return w.calendar(id)
}

func (w *world) occurrencesIn(cal *calendar, from, to time.Time, query string) []occurrence {
	var out []occurrence
	for _, e := range w.events {
		if cal != nil && (e.st != cal.st || e.CalendarID != cal.ID) || !matches(e, query) {
			continue
		}
		out = append(out, w.expand(e, from, to, 0)...)
	}
	sortOccurrences(out)
	return out
}

func (a *App) eventList(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	from, hasFrom := a.readMoment(args, "from")
	to, hasTo := a.readMoment(args, "to")
	calID := strings.TrimSpace(args.String("calendar_id"))
	query := strings.TrimSpace(args.String("query", apptool.MaxLen(MaxQuery)))
	offset, limit := readPage(args, 50)
	return a.run(ctx, args, func(w *world) (any, error) {
		start := apptool.StartOfDay(w.today, w.loc)
		if hasFrom {
			start = from.Time
		}
		end := start.AddDate(0, 0, 30)
		if hasTo {
			end = to.Time
			if to.DateOnly {
				end = apptool.StartOfDay(to.Date.AddDays(1), w.loc)
			}
		}
		switch {
		case !end.After(start):
			return nil, apptool.Errorf(`Parameter "to" must be later than "from".`)
		case end.Sub(start) > maxRangeDays*24*time.Hour:
			return nil, apptool.Errorf("The range from \"from\" to \"to\" may span at most %d days.", maxRangeDays)
		}
		cal, err := w.filterCalendar(calID)
		if err != nil {
			return nil, err
		}
		all := w.occurrencesIn(cal, start, end, query)
		type result struct {
			From     string `json:"from"`
			To       string `json:"to"`
			TimeZone string `json:"time_zone"`
			pageInfo
			Events []eventJSON `json:"events"`
		}
		return fit(len(all), offset, limit, func(i int) eventJSON { return w.occJSON(all[i]) },
			func(items []eventJSON, p pageInfo) any {
				return result{w.iso(start), w.iso(end), w.loc.String(), p, items}
			}), nil
	})
}

func (a *App) eventGet(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id := args.String("id", apptool.Required, apptool.NonEmpty)
	return a.run(ctx, args, func(w *world) (any, error) {
		e, key, err := w.event(id)
		if err != nil {
			return nil, err
		}
		o, err := w.occurrenceOf(e, key)
		if err != nil {
			return nil, err
		}
		return w.occJSON(o), nil
	})
}

func (a *App) eventSearch(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	query := strings.TrimSpace(args.String("query", apptool.Required, apptool.NonEmpty, apptool.MaxLen(MaxQuery)))
	calID := strings.TrimSpace(args.String("calendar_id"))
	offset, limit := readPage(args, 50)
	return a.run(ctx, args, func(w *world) (any, error) {
		cal, err := w.filterCalendar(calID)
		if err != nil {
			return nil, err
		}
		var upcoming, past []occurrence
		for _, e := range w.events {
			if cal != nil && (e.st != cal.st || e.CalendarID != cal.ID) || !matches(e, query) {
				continue
			}
			if o, ok := w.next(e, w.now); ok {
				upcoming = append(upcoming, o)
			} else {
				past = append(past, w.last(e))
			}
		}
		sortOccurrences(upcoming)
		sortOccurrences(past)
		for i, j := 0, len(past)-1; i < j; i, j = i+1, j-1 {
			past[i], past[j] = past[j], past[i]
		}
		all := append(upcoming, past...)
		type result struct {
			Query string `json:"query"`
			pageInfo
			Events []eventJSON `json:"events"`
		}
		return fit(len(all), offset, limit, func(i int) eventJSON { return w.occJSON(all[i]) },
			func(items []eventJSON, p pageInfo) any { return result{query, p, items} }), nil
	})
}

func (a *App) agendaToday(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	calID := strings.TrimSpace(args.String("calendar_id"))
	offset, limit := readPage(args, 50)
	return a.run(ctx, args, func(w *world) (any, error) {
		cal, err := w.filterCalendar(calID)
		if err != nil {
			return nil, err
		}
		all := w.occurrencesIn(cal, apptool.StartOfDay(w.today, w.loc), apptool.StartOfDay(w.today.AddDays(1), w.loc), "")
		sort.SliceStable(all, func(i, j int) bool { return all[i].ev.AllDay && !all[j].ev.AllDay })
		type result struct {
			Date     string `json:"date"`
			TimeZone string `json:"time_zone"`
			pageInfo
			Events []eventJSON `json:"events"`
		}
		return fit(len(all), offset, limit, func(i int) eventJSON { return w.occJSON(all[i]) },
			func(items []eventJSON, p pageInfo) any { return result{w.today.String(), w.loc.String(), p, items} }), nil
	})
}

// ---- writing events ----

// eventInput is what event_create and event_update read, with presence.
type eventInput struct {
	title, location, description, calendarID, recurrence, color string
	start, end, until                                           apptool.Moment
	allDay                                                      bool
	reminders                                                   []int
	hasTitle, hasLocation, hasDescription, hasCalendar          bool
	hasStart, hasEnd, hasAllDay, hasReminders, hasRecurrence    bool
	hasUntil, clearUntil, hasColor                              bool
}

func (a *App) readEvent(args *apptool.Args, create bool) eventInput {
	var in eventInput
	title := []apptool.Opt{apptool.NonEmpty, apptool.MaxLen(MaxTitle)}
	start := []apptool.Opt{}
	if create {
		title = append(title, apptool.Required)
		start = append(start, apptool.Required)
	}
	in.title, in.hasTitle = args.StringOK("title", title...)
	in.title = strings.TrimSpace(in.title)
	if s, ok := args.StringOK("start", start...); ok && strings.TrimSpace(s) == "" {
		args.Fail(`Parameter "start" must not be empty.`)
	}
	in.start, in.hasStart = a.readMoment(args, "start")
	in.end, in.hasEnd = a.readMoment(args, "end")
	in.allDay, in.hasAllDay = args.BoolOK("all_day")
	in.location, in.hasLocation = args.StringOK("location", apptool.MaxLen(MaxLocation))
	in.description, in.hasDescription = args.StringOK("description", apptool.MaxLen(MaxDescription))
	in.calendarID, in.hasCalendar = args.StringOK("calendar_id")
	in.calendarID = strings.TrimSpace(in.calendarID)
	if list, ok := args.Ints("reminder_minutes", apptool.Range(0, MaxReminderMin)); ok {
		seen := map[int]bool{}
		in.reminders = []int{}
		for _, m := range list {
			if !seen[int(m)] {
				seen[int(m)] = true
				in.reminders = append(in.reminders, int(m))
			}
		}
		sort.Ints(in.reminders)
		in.hasReminders = true
		if len(in.reminders) > MaxReminders {
			args.Fail(`Parameter "reminder_minutes" may hold at most %d reminders.`, MaxReminders)
		}
	}
	in.recurrence, in.hasRecurrence = args.StringOK("recurrence")
	if in.hasRecurrence && !contains(recurrences, in.recurrence) {
		if in.recurrence == "custom" {
			args.Fail(`Parameter "recurrence" cannot be "custom": custom rules are read-only here; use none, daily, weekly, monthly or yearly.`)
		} else {
			args.Fail(`Parameter "recurrence" must be one of none, daily, weekly, monthly, yearly.`)
		}
	}
	if s, ok := args.StringOK("recurrence_until"); ok {
		in.hasUntil = true
		if strings.TrimSpace(s) == "" {
			in.clearUntil = true
		} else {
			in.until, _ = a.readMoment(args, "recurrence_until")
		}
	}
	_, in.hasColor = args.StringOK("color")
	in.color = readColor(args)
	if create && in.hasColor && in.color == "" {
		in.hasColor = false
	}
	return in
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// apply builds e's new state from in; e is a copy the caller saves.
func (w *world) apply(e *event, in eventInput, create bool) error {
	if in.hasTitle {
		e.Title = in.title
	}
	if in.hasLocation {
		e.Location = in.location
	}
	if in.hasDescription {
		e.Description = in.description
	}
	if in.hasColor {
		e.Color = in.color
	}
	if in.hasRecurrence {
		e.Recurrence = in.recurrence
	}
	if in.hasReminders {
		e.Reminders = in.reminders
	}
	if e.st == system && len(e.Reminders) > MaxSystemRems {
		return apptool.Errorf("Events in system calendars can have at most %d reminders.", MaxSystemRems)
	}
	wasAllDay := e.AllDay
	switch {
	case in.hasAllDay:
		e.AllDay = in.allDay
	case create || in.hasStart:
		e.AllDay = in.hasStart && in.start.DateOnly
	}
	if e.AllDay {
		if err := w.applyAllDay(e, in, create, wasAllDay); err != nil {
			return err
		}
	} else if err := w.applyTimed(e, in, create, wasAllDay); err != nil {
		return err
	}
	switch {
	case e.Recurrence == "none" && in.hasUntil && !in.clearUntil:
		return apptool.Errorf(`Parameter "recurrence_until" only applies to a repeating event; set "recurrence" as well.`)
	case e.Recurrence == "none":
		e.Until = time.Time{}
	case in.clearUntil:
		e.Until = time.Time{}
	case in.hasUntil:
		u := in.until.Time
		if in.until.DateOnly {
			u = apptool.StartOfDay(in.until.Date.AddDays(1), w.zone(e.TZ)).Add(-time.Second)
		}
		e.Until = u
	}
	if !e.Until.IsZero() && e.Until.Before(w.at(e, w.baseDate(e), false).Start) {
		return apptool.Errorf(`Parameter "recurrence_until" must not be before the event starts.`)
	}
	return nil
}

func (w *world) applyAllDay(e *event, in eventInput, create, wasAllDay bool) error {
	oldStart, oldEnd := e.StartDate, e.EndDate
	if !wasAllDay && !create {
		z := w.zone(e.TZ)
		oldStart, oldEnd = apptool.DateOf(e.Start, z), apptool.DateOf(e.End.Add(-time.Nanosecond), z)
		if oldEnd.Compare(oldStart) < 0 {
			oldEnd = oldStart
		}
	}
	start := oldStart
	if in.hasStart {
		start = in.start.Date
	}
	end := start
	switch {
	case in.hasEnd:
		end = in.end.Date
		// A date-time end at exactly midnight after the first day is an
		// exclusive end: the event ends the day before.
		if !in.end.DateOnly && in.end.Hour == 0 && in.end.Min == 0 && in.end.Sec == 0 && end.Compare(start) > 0 {
			end = end.AddDays(-1)
		}
	case !create:
		end = start.AddDays(oldStart.DaysUntil(oldEnd))
	}
	if end.Compare(start) < 0 {
		return apptool.Errorf(`Parameter "end" must not be before "start".`)
	}
	if start.DaysUntil(end) > 366 {
		return apptool.Errorf("An event may last at most 366 days.")
	}
	e.StartDate, e.EndDate = start, end
	e.Start, e.End = time.Time{}, time.Time{}
	if create || !wasAllDay {
		e.TZ = w.loc.String()
	}
	return nil
}

func (w *world) applyTimed(e *event, in eventInput, create, wasAllDay bool) error {
	if in.hasStart && in.start.DateOnly {
		return apptool.Errorf(`Parameter "start" needs a time (e.g. "2026-10-12T15:00:00+08:00") unless "all_day" is true.`)
	}
	if in.hasEnd && in.end.DateOnly {
		return apptool.Errorf(`Parameter "end" needs a time (e.g. "2026-10-12T16:00:00+08:00") unless "all_day" is true.`)
	}
	oldStart, oldDur := e.Start, e.End.Sub(e.Start)
	if wasAllDay && !create {
		oldStart, oldDur = apptool.Wall(e.StartDate, 9, 0, w.loc), time.Hour
	}
	start := oldStart
	if in.hasStart {
		start = in.start.Time
	}
	end := start.Add(time.Hour)
	switch {
	case in.hasEnd:
		end = in.end.Time
	case !create:
		end = start.Add(oldDur)
	}
	if end.Before(start) {
		return apptool.Errorf(`Parameter "end" must not be before "start".`)
	}
	if end.Sub(start) > 366*24*time.Hour {
		return apptool.Errorf("An event may last at most 366 days.")
	}
	if y := apptool.DateOf(end, w.loc).Year; y > maxYear {
		return apptool.Errorf(`Parameter "end" must be between the years 1970 and 2200.`)
	}
	if create || in.hasStart || wasAllDay {
		e.TZ = w.loc.String()
	}
	e.Start, e.End = start.Truncate(time.Second), end.Truncate(time.Second)
	e.StartDate, e.EndDate = apptool.Date{}, apptool.Date{}
	return nil
}

// writable resolves the calendar an event is written to.
func (w *world) writable(id string) (*calendar, error) {
	c := w.defaultCalendar()
	if id != "" {
		var err error
		if c, err = w.calendar(id); err != nil {
			return nil, err
		}
	}
	if c == nil {
		return nil, errors.New("no default calendar")
	}
	if !c.Writable {
		return nil, apptool.Errorf("Calendar %q (%s) is read-only; pick a writable calendar from calendar_list.", c.Name, c.id())
	}
	return c, nil
}

func (a *App) eventCreate(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	in := a.readEvent(args, true)
	return a.run(ctx, args, func(w *world) (any, error) {
		c, err := w.writable(in.calendarID)
		if err != nil {
			return nil, err
		}
		if c.st == local {
			n := 0
			for _, e := range w.events {
				if e.st == local {
					n++
				}
			}
			if n >= MaxLocalEvents {
				return nil, apptool.Errorf("This app already keeps %d events, the most it can; delete old ones first.", MaxLocalEvents)
			}
		}
		e := &event{st: c.st, CalendarID: c.ID, Recurrence: "none", Reminders: []int{}, CreatedAt: w.now, UpdatedAt: w.now}
		if err := w.apply(e, in, true); err != nil {
			return nil, err
		}
		if err := insertEvent(w.ctx, w.q(c.st), e); err != nil {
			return nil, err
		}
		w.events = append(w.events, e)
		return w.seriesJSON(e), nil
	})
}

func (a *App) eventUpdate(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id := args.String("id", apptool.Required, apptool.NonEmpty)
	in := a.readEvent(args, false)
	if args.Err() == nil && !(in.hasTitle || in.hasStart || in.hasEnd || in.hasAllDay || in.hasLocation || in.hasDescription ||
		in.hasCalendar || in.hasReminders || in.hasRecurrence || in.hasUntil || in.hasColor) {
		args.RejectUnknown()
		args.Fail("Nothing to update: pass at least one field besides id.")
	}
	return a.run(ctx, args, func(w *world) (any, error) {
		e, _, err := w.event(id)
		if err != nil {
			return nil, err
		}
		if e.Recurrence == "custom" {
			return nil, apptool.Errorf("Event %q repeats by a custom rule (%s) that this app cannot edit; ask the user to change it in their calendar app.", e.id(), e.RRule)
		}
		if cur := w.calendarOf(e); cur == nil || !cur.Writable {
			return nil, apptool.Errorf("Event %q is in a read-only calendar.", e.id())
		}
		next := *e
		next.Reminders = append([]int{}, e.Reminders...)
		if in.hasCalendar && in.calendarID != "" {
			c, err := w.writable(in.calendarID)
			if err != nil {
				return nil, err
			}
			if c.st != e.st {
				return nil, apptool.Errorf("An event cannot move between this app's calendars and system calendars; create a new event instead.")
			}
			next.CalendarID = c.ID
		}
		if err := w.apply(&next, in, false); err != nil {
			return nil, err
		}
		next.UpdatedAt = w.now
		if err := updateEvent(w.ctx, w.q(e.st), &next); err != nil {
			return nil, err
		}
		*e = next
		return w.seriesJSON(e), nil
	})
}

func (a *App) eventDelete(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id := args.String("id", apptool.Required, apptool.NonEmpty)
	return a.run(ctx, args, func(w *world) (any, error) {
		e, _, err := w.event(id)
		if err != nil {
			return nil, err
		}
		if c := w.calendarOf(e); c == nil || !c.Writable {
			return nil, apptool.Errorf("Event %q is in a read-only calendar.", e.id())
		}
		if err := deleteEvent(w.ctx, w.q(e.st), e.ID); err != nil {
			return nil, err
		}
		w.dropEvents(func(o *event) bool { return o == e })
		return struct {
			Deleted      bool   `json:"deleted"`
			ID           string `json:"id"`
			SeriesID     string `json:"series_id"`
			Title        string `json:"title"`
			WasRecurring bool   `json:"was_recurring"`
		}{true, strings.TrimSpace(id), e.id(), e.Title, e.Recurrence != "none"}, nil
	})
}

// ---- free slots ----

type span struct{ start, end time.Time }

// mergeSpans clips busy intervals to [lo, hi) and merges overlapping or
// touching ones.
func mergeSpans(busy []span, lo, hi time.Time) []span {
	var clipped []span
	for _, s := range busy {
		if s.start.Before(lo) {
			s.start = lo
		}
		if s.end.After(hi) {
			s.end = hi
		}
		if s.end.After(s.start) {
			clipped = append(clipped, s)
		}
	}
	sort.Slice(clipped, func(i, j int) bool { return clipped[i].start.Before(clipped[j].start) })
	var out []span
	for _, s := range clipped {
		if n := len(out); n > 0 && !s.start.After(out[n-1].end) {
			if s.end.After(out[n-1].end) {
				out[n-1].end = s.end
			}
			continue
		}
		out = append(out, s)
	}
	return out
}

// gaps are the stretches of [lo, hi) outside merged busy spans that last
// at least min.
func gaps(merged []span, lo, hi time.Time, min time.Duration) []span {
	var out []span
	cur := lo
	for _, b := range append(merged, span{hi, hi}) {
		if b.start.Sub(cur) >= min {
			out = append(out, span{cur, b.start})
		}
		if b.end.After(cur) {
			cur = b.end
		}
	}
	return out
}

const slotsPage = 50

func (a *App) freeSlots(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	dateS := args.String("date", apptool.Required)
	date, okDate := apptool.ParseDate(strings.TrimSpace(dateS))
	if args.Err() == nil && (!okDate || date.Year < minYear || date.Year > maxYear) {
		args.Fail(`Parameter "date" must be a date "YYYY-MM-DD" between the years 1970 and 2200.`)
	}
	minutes := args.Int("duration_minutes", apptool.Required, apptool.Range(1, 1440))
	clock := func(name, def string) int {
		s, ok := args.StringOK(name)
		if !ok {
			s = def
		}
		m, valid := apptool.ParseClock(s, name == "day_end")
		if !valid {
			args.Fail(`Parameter %q must be a clock time "HH:mm", e.g. %q.`, name, def)
		}
		return m
	}
	dayStart, dayEnd := clock("day_start", "09:00"), clock("day_end", "18:00")
	if args.Err() == nil && dayEnd <= dayStart {
		args.Fail(`Parameter "day_end" must be later than "day_start".`)
	}
	calID := strings.TrimSpace(args.String("calendar_id"))
	includeAllDay := args.Bool("include_all_day", false)
	offset := int(args.Int("offset", apptool.Min(0)))
	return a.run(ctx, args, func(w *world) (any, error) {
		cal, err := w.filterCalendar(calID)
		if err != nil {
			return nil, err
		}
		lo, hi := apptool.Wall(date, dayStart/60, dayStart%60, w.loc), apptool.Wall(date, dayEnd/60, dayEnd%60, w.loc)
		if !hi.After(lo) {
			// Both ends fell into one DST gap.
			return nil, apptool.Errorf("The window from day_start to day_end does not exist on %s in %s.", date, w.loc)
		}
		var busy []span
		for _, o := range w.occurrencesIn(cal, lo, hi, "") {
			if o.ev.AllDay && !includeAllDay {
				continue
			}
			busy = append(busy, span{o.Start, o.End})
		}
		merged := mergeSpans(busy, lo, hi)
		free := gaps(merged, lo, hi, time.Duration(minutes)*time.Minute)
		type spanJSON struct {
			Start string `json:"start"`
			End   string `json:"end"`
		}
		type slotJSON struct {
			Start   string `json:"start"`
			End     string `json:"end"`
			Minutes int    `json:"minutes"`
		}
		type result struct {
			Date            string     `json:"date"`
			TimeZone        string     `json:"time_zone"`
			DurationMinutes int        `json:"duration_minutes"`
			Window          spanJSON   `json:"window"`
			Busy            []spanJSON `json:"busy"`
			pageInfo
			Slots []slotJSON `json:"slots"`
		}
		busyJSON := []spanJSON{}
		for _, b := range merged {
			busyJSON = append(busyJSON, spanJSON{w.iso(b.start), w.iso(b.end)})
		}
		return fit(len(free), offset, slotsPage, func(i int) slotJSON {
			return slotJSON{w.iso(free[i].start), w.iso(free[i].end), int(free[i].end.Sub(free[i].start) / time.Minute)}
		}, func(items []slotJSON, p pageInfo) any {
			return result{date.String(), w.loc.String(), int(minutes), spanJSON{w.iso(lo), w.iso(hi)}, busyJSON, p, items}
		}), nil
	})
}
