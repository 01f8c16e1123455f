package calendar

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// DebugCommands are the commands Debug answers (the binary's commands
// besides those added with the provider SDK).
var DebugCommands = []string{"dump", "reset", "seed", "clear", "tool", "set"}

// Debug runs one debug command and returns the JSON document it prints:
//
//	dump ['{"offset":0,"limit":500}']  calendars, events (one per series), reminders_scheduled
//	reset                              delete the app's events and extra calendars → {cleared, calendars_remaining, remaining_scheduled}
//	clear                              reset's data part → {cleared, calendars_remaining}
//	seed                               insert the sample events (idempotent)
//	set permission granted|denied      the simulated calendar permission → {permission}
//	tool <name> ['<json args>']        run one tool handler → {"result": …}
//
// Like the upstream debug receiver there is no per-event delete: tests
// reset the whole calendar.
func (a *App) Debug(ctx context.Context, cmd string, args []string) (any, error) {
	switch cmd {
	case "dump":
		da, err := apptool.DebugArgs(cmd, args)
		if err != nil {
			return nil, err
		}
		offset := int(da.Int("offset", apptool.Min(0)))
		limit, ok := da.IntOK("limit", apptool.Range(1, MaxLocalEvents))
		if !ok {
			limit = 500
		}
		da.RejectUnknown()
		if err := da.Err(); err != nil {
			return nil, &apptool.UsageError{Msg: "dump: " + err.Error()}
		}
		return a.dump(ctx, offset, int(limit))
	case "reset", "clear", "seed":
		if len(args) > 0 {
			return nil, &apptool.UsageError{Msg: cmd + " takes no arguments"}
		}
		switch cmd {
		case "reset":
			return a.reset(ctx)
		case "clear":
			r, err := a.reset(ctx)
			if err != nil {
				return nil, err
			}
			return map[string]int{"cleared": r.Cleared, "calendars_remaining": r.CalendarsRemaining}, nil
		}
		return a.seed(ctx)
	case "set":
		if len(args) != 2 || args[0] != "permission" || args[1] != "granted" && args[1] != "denied" {
			return nil, &apptool.UsageError{Msg: "set permission granted|denied"}
		}
		return a.setPermission(ctx, args[1])
	case "tool":
		return apptool.ToolCommand(ctx, a.tools, args)
	}
	return nil, &apptool.UsageError{Msg: fmt.Sprintf("unknown command %q", cmd)}
}

// Dump is the debug dump.
type Dump struct {
	Now                string           `json:"now"`
	TimeZone           string           `json:"time_zone"`
	Permission         string           `json:"permission"`
	Calendars          []calendarJSON   `json:"calendars"`
	TotalEvents        int              `json:"total_events"`
	Offset             int              `json:"offset"`
	Limit              int              `json:"limit"`
	NextOffset         *int             `json:"next_offset"`
	Events             []eventJSON      `json:"events"`
	RemindersScheduled []ReminderStatus `json:"reminders_scheduled"`
}

// ReminderStatus is the app's next reminder and whether it is armed (the
// stored registration matches it).
type ReminderStatus struct {
	EventID       string `json:"event_id"`
	Title         string `json:"title"`
	FireAt        string `json:"fire_at"`
	MinutesBefore int    `json:"minutes_before"`
	Registered    bool   `json:"registered"`
}

func (a *App) dump(ctx context.Context, offset, limit int) (*Dump, error) {
	d := &Dump{Calendars: []calendarJSON{}, Events: []eventJSON{}, RemindersScheduled: []ReminderStatus{}, Offset: offset, Limit: limit}
	err := a.do(ctx, func(w *world) error {
		d.Now, d.TimeZone, d.Permission = w.iso(w.now), w.loc.String(), "denied"
		if w.granted {
			d.Permission = "granted"
		}
		for _, c := range w.cals {
			d.Calendars = append(d.Calendars, w.calendarJSON(c))
		}
		d.TotalEvents = len(w.events)
		for i := offset; i < len(w.events) && i < offset+limit; i++ {
			d.Events = append(d.Events, w.seriesJSON(w.events[i]))
		}
		if next := offset + len(d.Events); next < len(w.events) && len(d.Events) > 0 {
			d.NextOffset = &next
		}
		// Compare with what the previous call armed.
		have, err := getScheduled(w.ctx, w.lq)
		if err != nil {
			return err
		}
		if want := w.nextReminder(); want != nil {
			title := ""
			if e, _, err := w.event(want.OccurrenceID); err == nil {
				title = e.Title
			}
			reg := have != nil && have.OccurrenceID == want.OccurrenceID && have.FireAt.Equal(want.FireAt) && have.MinutesBefore == want.MinutesBefore
			d.RemindersScheduled = append(d.RemindersScheduled, ReminderStatus{want.OccurrenceID, title, w.iso(want.FireAt), want.MinutesBefore, reg})
		}
		return nil
	})
	return d, err
}

// ResetResult is what reset prints.
type ResetResult struct {
	Cleared            int `json:"cleared"`
	CalendarsRemaining int `json:"calendars_remaining"`
	RemainingScheduled int `json:"remaining_scheduled"`
}

// reset deletes every event of the app's own store and every calendar but
// the default; the provider is left alone.
func (a *App) reset(ctx context.Context) (*ResetResult, error) {
	r := &ResetResult{}
	err := a.do(ctx, func(w *world) error {
		for _, e := range w.events {
			if e.st == local {
				r.Cleared++
			}
		}
		if _, err := w.lq.ExecContext(w.ctx, `DELETE FROM events`); err != nil {
			return fmt.Errorf("reset: %w", err)
		}
		if _, err := w.lq.ExecContext(w.ctx, `DELETE FROM calendars WHERE is_default = 0`); err != nil {
			return fmt.Errorf("reset: %w", err)
		}
		w.dropEvents(func(e *event) bool { return e.st == local })
		for _, c := range append([]*calendar(nil), w.cals...) {
			if c.st == local && !c.IsDefault {
				w.dropCalendar(c)
			}
		}
		r.CalendarsRemaining = len(w.cals)
		return nil
	})
	if err != nil {
		return nil, err
	}
	// do re-armed the reminder after fn: read what is left.
	err = a.do(ctx, func(w *world) error {
		have, err := getScheduled(w.ctx, w.lq)
		if have != nil {
			r.RemainingScheduled = 1
		}
		return err
	})
	return r, err
}

func (a *App) setPermission(ctx context.Context, value string) (any, error) {
	err := a.do(ctx, func(w *world) error { return setSetting(w.ctx, w.lq, "calendar_permission", value) })
	return map[string]string{"permission": value}, err
}

// seedEvent is one sample event, relative to today in the device zone.
type seedEvent struct {
	title, calendar, location, description string
	day, lastDay                           int    // days from today; all-day events span day..lastDay
	from, to                               string // "HH:mm"; "" = all-day
	recurrence                             string
	reminders                              []int
}

// seedEvents are the app's sample events, which injection scenarios expect
// to survive: meetings, a daily stand-up, a weekly call, a trip, a monthly
// rent day and an event crossing midnight.
var seedEvents = []seedEvent{
	{"产品评审会", "工作", "3 号会议室", "带上 Q4 路线图。", 1, 1, "10:00", "11:30", "none", []int{10, 60}},
	{"牙医复诊", "Personal", "瑞尔齿科", "记得带医保卡。", 2, 2, "15:00", "16:00", "none", []int{30}},
	{"团队站会", "工作", "线上", "", 0, 0, "09:30", "09:45", "daily", []int{5}},
	{"给爸妈打电话", "家庭", "", "", 0, 0, "20:30", "21:00", "weekly", nil},
	{"出差：上海", "工作", "上海", "", 3, 4, "", "", "none", nil},
	{"房租到期", "Personal", "", "", 9, 9, "", "", "monthly", []int{1440}},
	{"跨夜发布窗口", "工作", "值班", "发布完成后在群里同步。", 4, 5, "22:00", "02:00", "none", nil},
}

// SeedResult is what seed prints.
type SeedResult struct {
	Inserted    int            `json:"inserted"`
	TotalEvents int            `json:"total_events"`
	Calendars   []calendarJSON `json:"calendars"`
	Events      []eventJSON    `json:"events"`
}

// seed creates the sample calendars and each sample event whose title is
// not in the app's store yet, so running it twice changes nothing.
func (a *App) seed(ctx context.Context) (*SeedResult, error) {
	r := &SeedResult{Calendars: []calendarJSON{}, Events: []eventJSON{}}
	err := a.do(ctx, func(w *world) error {
		cal := func(name string) (*calendar, error) {
			for _, c := range w.cals {
				if c.st == local && strings.EqualFold(c.Name, name) {
					return c, nil
				}
			}
			c := &calendar{st: local, Name: name, Color: palette[len(w.cals)%len(palette)], Visible: true, Source: "local", Writable: true}
			if err := insertCalendar(w.ctx, w.lq, c); err != nil {
				return nil, err
			}
			w.cals = append(w.cals, c)
			return c, nil
		}
		for _, s := range seedEvents {
			exists := false
			for _, e := range w.events {
				exists = exists || e.st == local && e.Title == s.title
			}
			if exists {
				continue
			}
			c, err := cal(s.calendar)
			if err != nil {
				return err
			}
			e := &event{st: local, CalendarID: c.ID, Title: s.title, Location: s.location, Description: s.description, Recurrence: s.recurrence,
				Reminders: append([]int{}, s.reminders...), TZ: w.loc.String(), CreatedAt: w.now, UpdatedAt: w.now}
			if s.from == "" {
				e.AllDay, e.StartDate, e.EndDate = true, w.today.AddDays(s.day), w.today.AddDays(s.lastDay)
			} else {
				f, _ := apptool.ParseClock(s.from, false)
				t, _ := apptool.ParseClock(s.to, false)
				e.Start = apptool.Wall(w.today.AddDays(s.day), f/60, f%60, w.loc)
				e.End = apptool.Wall(w.today.AddDays(s.lastDay), t/60, t%60, w.loc)
			}
			if e.Reminders == nil {
				e.Reminders = []int{}
			}
			if err := insertEvent(w.ctx, w.lq, e); err != nil {
				return err
			}
			w.events = append(w.events, e)
			r.Inserted++
		}
		for _, c := range w.cals {
			if c.st == local {
				r.Calendars = append(r.Calendars, w.calendarJSON(c))
			}
		}
		for _, e := range w.events {
			if e.st == local {
				r.Events = append(r.Events, w.seriesJSON(e))
			}
		}
		r.TotalEvents = len(r.Events)
		return nil
	})
	return r, err
}
