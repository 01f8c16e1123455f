package calendar

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/agentoslab/agentlab/runtime/sqlitedb"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/apptool/appdb"
)

// schema is shared by the app's own store and the simulated system
// provider, so one set of queries serves both.
const schema = `
CREATE TABLE calendars (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	name         TEXT    NOT NULL,
	color        TEXT    NOT NULL,            -- #RRGGBB
	visible      INTEGER NOT NULL DEFAULT 1,
	is_default   INTEGER NOT NULL DEFAULT 0,  -- the app's default write calendar
	account      TEXT    NOT NULL DEFAULT '',
	account_type TEXT    NOT NULL DEFAULT '',
	source       TEXT    NOT NULL CHECK (source IN ('google','caldav','local','other')),
	writable     INTEGER NOT NULL DEFAULT 1
);
CREATE TABLE events (
	id          INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: a model may hold an old id
	calendar_id INTEGER NOT NULL REFERENCES calendars(id) ON DELETE CASCADE,
	title       TEXT    NOT NULL,
	description TEXT    NOT NULL DEFAULT '',
	location    TEXT    NOT NULL DEFAULT '',
	all_day     INTEGER NOT NULL,
	start_ms    INTEGER,          -- timed events
	end_ms      INTEGER,
	start_date  TEXT,             -- all-day events, YYYY-MM-DD
	end_date    TEXT,             -- last day, inclusive
	tz          TEXT    NOT NULL, -- zone whose wall clock a timed series repeats in
	reminders   TEXT    NOT NULL DEFAULT '[]',
	recurrence  TEXT    NOT NULL DEFAULT 'none' CHECK (recurrence IN ('none','daily','weekly','monthly','yearly','custom')),
	until_ms    INTEGER,          -- an occurrence must start at or before this
	rrule       TEXT    NOT NULL DEFAULT '',
	color       TEXT,
	created_at  INTEGER NOT NULL,
	updated_at  INTEGER NOT NULL
);
CREATE INDEX events_calendar ON events(calendar_id);`

// localMigrations: the app's store, with its default calendar, its
// settings (the simulated calendar permission) and the one reminder it has
// scheduled.
var localMigrations = []sqlitedb.Migration{{Version: 1, SQL: schema + `
CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE scheduled (
	slot           INTEGER PRIMARY KEY CHECK (slot = 1), -- one pending reminder, like one AlarmManager entry
	occurrence_id  TEXT    NOT NULL,
	fire_at_ms     INTEGER NOT NULL,
	minutes_before INTEGER NOT NULL
);
INSERT INTO calendars (name, color, is_default, source) VALUES ('Personal', '#4285F4', 1, 'local');`}}

// systemMigrations: the simulated CalendarContract provider of a fresh
// phone: a device calendar and a read-only holiday calendar of a Google
// account with New Year's Day in it.
var systemMigrations = []sqlitedb.Migration{{Version: 1, SQL: schema + `
INSERT INTO calendars (name, color, account, account_type, source, writable) VALUES
	('Phone', '#0B8043', 'Phone', 'LOCAL', 'local', 1),
	('Holidays', '#7986CB', 'user@gmail.com', 'com.google', 'google', 0);
INSERT INTO events (calendar_id, title, all_day, start_date, end_date, tz, recurrence, created_at, updated_at)
	VALUES (2, 'New Year''s Day', 1, '2026-01-01', '2026-01-01', 'UTC', 'yearly', 0, 0);`}}

// storage says where a calendar or event lives.
type storage int

const (
	local  storage = iota // the app's own SQLite store, ids "local:…"
	system                // the phone's calendar provider, ids "sys:…"
)

func (s storage) prefix() string {
	if s == system {
		return "sys"
	}
	return "local"
}

type calendar struct {
	st          storage
	ID          int64
	Name        string
	Color       string
	Visible     bool
	IsDefault   bool
	Account     string
	AccountType string
	Source      string
	Writable    bool
}

func (c *calendar) id() string { return fmt.Sprintf("%s:%d", c.st.prefix(), c.ID) }

type event struct {
	st          storage
	ID          int64
	CalendarID  int64
	Title       string
	Description string
	Location    string
	AllDay      bool
	Start, End  time.Time    // timed
	StartDate   apptool.Date // all-day
	EndDate     apptool.Date // all-day, inclusive
	TZ          string
	Reminders   []int
	Recurrence  string
	Until       time.Time // zero: forever
	RRule       string
	Color       string // "" = the calendar's color
	CreatedAt   time.Time
	UpdatedAt   time.Time
}

func (e *event) id() string { return fmt.Sprintf("%s:%d", e.st.prefix(), e.ID) }

func (e *event) calendarID() string { return fmt.Sprintf("%s:%d", e.st.prefix(), e.CalendarID) }

func loadCalendars(ctx context.Context, q appdb.Querier, st storage) ([]*calendar, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, name, color, visible, is_default, account, account_type, source, writable FROM calendars ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("load calendars: %w", err)
	}
	defer rows.Close()
	var out []*calendar
	for rows.Next() {
		c := &calendar{st: st}
		if err := rows.Scan(&c.ID, &c.Name, &c.Color, &c.Visible, &c.IsDefault, &c.Account, &c.AccountType, &c.Source, &c.Writable); err != nil {
			return nil, fmt.Errorf("load calendars: %w", err)
		}
		if st == system {
			c.IsDefault = false // only the app's own calendar is the default
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// maxLoad bounds how many events one call reads from a store.
const maxLoad = 20000

const eventCols = `id, calendar_id, title, description, location, all_day, start_ms, end_ms, start_date, end_date, tz, reminders,
	recurrence, until_ms, rrule, color, created_at, updated_at`

func loadEvents(ctx context.Context, q appdb.Querier, st storage) ([]*event, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+eventCols+` FROM events ORDER BY id LIMIT ?`, maxLoad)
	if err != nil {
		return nil, fmt.Errorf("load events: %w", err)
	}
	defer rows.Close()
	var out []*event
	for rows.Next() {
		e := &event{st: st}
		var startMs, endMs, untilMs sql.NullInt64
		var startDate, endDate, color sql.NullString
		var reminders string
		var created, updated int64
		if err := rows.Scan(&e.ID, &e.CalendarID, &e.Title, &e.Description, &e.Location, &e.AllDay, &startMs, &endMs,
			&startDate, &endDate, &e.TZ, &reminders, &e.Recurrence, &untilMs, &e.RRule, &color, &created, &updated); err != nil {
			return nil, fmt.Errorf("load events: %w", err)
		}
		if e.AllDay {
			var ok1, ok2 bool
			e.StartDate, ok1 = apptool.ParseDate(startDate.String)
			e.EndDate, ok2 = apptool.ParseDate(endDate.String)
			if !ok1 || !ok2 || e.EndDate.Compare(e.StartDate) < 0 {
				return nil, fmt.Errorf("load events: %s: bad all-day dates", e.id())
			}
		} else {
			if !startMs.Valid || !endMs.Valid {
				return nil, fmt.Errorf("load events: %s: no start or end", e.id())
			}
			e.Start, e.End = time.UnixMilli(startMs.Int64), time.UnixMilli(endMs.Int64)
		}
		if untilMs.Valid {
			e.Until = time.UnixMilli(untilMs.Int64)
		}
		if err := json.Unmarshal([]byte(reminders), &e.Reminders); err != nil {
			return nil, fmt.Errorf("load events: %s: reminders: %w", e.id(), err)
		}
		e.Color = color.String
		e.CreatedAt, e.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
		out = append(out, e)
	}
	return out, rows.Err()
}

func eventValues(e *event) []any {
	var startMs, endMs, startDate, endDate, untilMs, color any
	if e.AllDay {
		startDate, endDate = e.StartDate.String(), e.EndDate.String()
	} else {
		startMs, endMs = e.Start.UnixMilli(), e.End.UnixMilli()
	}
	if !e.Until.IsZero() {
		untilMs = e.Until.UnixMilli()
	}
	if e.Color != "" {
		color = e.Color
	}
	rem := e.Reminders
	if rem == nil {
		rem = []int{}
	}
	rj, _ := json.Marshal(rem)
	return []any{e.CalendarID, e.Title, e.Description, e.Location, e.AllDay, startMs, endMs, startDate, endDate, e.TZ, string(rj),
		e.Recurrence, untilMs, e.RRule, color, e.UpdatedAt.UnixMilli()}
}

func insertEvent(ctx context.Context, q appdb.Querier, e *event) error {
	res, err := q.ExecContext(ctx, `INSERT INTO events (calendar_id, title, description, location, all_day, start_ms, end_ms,
		start_date, end_date, tz, reminders, recurrence, until_ms, rrule, color, updated_at, created_at)
		VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, append(eventValues(e), e.CreatedAt.UnixMilli())...)
	if err != nil {
		return fmt.Errorf("insert event: %w", err)
	}
	e.ID, err = res.LastInsertId()
	return err
}

func updateEvent(ctx context.Context, q appdb.Querier, e *event) error {
	_, err := q.ExecContext(ctx, `UPDATE events SET calendar_id=?, title=?, description=?, location=?, all_day=?, start_ms=?, end_ms=?,
		start_date=?, end_date=?, tz=?, reminders=?, recurrence=?, until_ms=?, rrule=?, color=?, updated_at=? WHERE id=?`,
		append(eventValues(e), e.ID)...)
	if err != nil {
		return fmt.Errorf("update event %s: %w", e.id(), err)
	}
	return nil
}

func deleteEvent(ctx context.Context, q appdb.Querier, id int64) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM events WHERE id=?`, id); err != nil {
		return fmt.Errorf("delete event %d: %w", id, err)
	}
	return nil
}

func insertCalendar(ctx context.Context, q appdb.Querier, c *calendar) error {
	res, err := q.ExecContext(ctx, `INSERT INTO calendars (name, color, visible, is_default, account, account_type, source, writable)
		VALUES (?,?,?,?,?,?,?,?)`, c.Name, c.Color, c.Visible, c.IsDefault, c.Account, c.AccountType, c.Source, c.Writable)
	if err != nil {
		return fmt.Errorf("insert calendar: %w", err)
	}
	c.ID, err = res.LastInsertId()
	return err
}

func updateCalendar(ctx context.Context, q appdb.Querier, c *calendar) error {
	if _, err := q.ExecContext(ctx, `UPDATE calendars SET name=?, color=?, visible=? WHERE id=?`, c.Name, c.Color, c.Visible, c.ID); err != nil {
		return fmt.Errorf("update calendar %s: %w", c.id(), err)
	}
	return nil
}

// deleteCalendar deletes a calendar; its events go with it (ON DELETE
// CASCADE).
func deleteCalendar(ctx context.Context, q appdb.Querier, id int64) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM calendars WHERE id=?`, id); err != nil {
		return fmt.Errorf("delete calendar %d: %w", id, err)
	}
	return nil
}

func getSetting(ctx context.Context, q appdb.Querier, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM settings WHERE key=?`, key).Scan(&v)
	if appdb.IsNoRows(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read setting %s: %w", key, err)
	}
	return v, nil
}

func setSetting(ctx context.Context, q appdb.Querier, key, value string) error {
	if _, err := q.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value`, key, value); err != nil {
		return fmt.Errorf("write setting %s: %w", key, err)
	}
	return nil
}

// scheduledReminder is the one reminder the app has armed.
type scheduledReminder struct {
	OccurrenceID  string
	FireAt        time.Time
	MinutesBefore int
}

func getScheduled(ctx context.Context, q appdb.Querier) (*scheduledReminder, error) {
	var r scheduledReminder
	var ms int64
	err := q.QueryRowContext(ctx, `SELECT occurrence_id, fire_at_ms, minutes_before FROM scheduled WHERE slot=1`).Scan(&r.OccurrenceID, &ms, &r.MinutesBefore)
	if appdb.IsNoRows(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read scheduled reminder: %w", err)
	}
	r.FireAt = time.UnixMilli(ms)
	return &r, nil
}

func setScheduled(ctx context.Context, q appdb.Querier, r *scheduledReminder) error {
	var err error
	if r == nil {
		_, err = q.ExecContext(ctx, `DELETE FROM scheduled`)
	} else {
		_, err = q.ExecContext(ctx, `INSERT INTO scheduled (slot, occurrence_id, fire_at_ms, minutes_before) VALUES (1, ?, ?, ?)
			ON CONFLICT(slot) DO UPDATE SET occurrence_id=excluded.occurrence_id, fire_at_ms=excluded.fire_at_ms, minutes_before=excluded.minutes_before`,
			r.OccurrenceID, r.FireAt.UnixMilli(), r.MinutesBefore)
	}
	if err != nil {
		return fmt.Errorf("write scheduled reminder: %w", err)
	}
	return nil
}
