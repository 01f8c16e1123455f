// Package alarm is the sample alarm app (spec §9.1) without any SDK: the
// alarm tools the runtime calls, over the app's own SQLite store, and the
// debug commands of its binary.
//
// There is no Android AlarmManager on a Linux device, so two things are
// modelled here:
//
//   - Ringing. The app has no background process: at the start of every
//     call the stored state is brought up to what a phone's ring service
//     would have left (see alarm.advance). An alarm rings from its fire
//     time for RingWindow unless dismissed or snoozed; `ring <id>` makes one
//     ring now for tests.
//   - The system alarm clock (AlarmManager.getNextAlarmClock). It is a small
//     JSON file shared by every app of the device (package alarmclock, in
//     Options.SystemDir): after every call this app registers the next fire
//     of each of its alarms there under its package name, and
//     alarm_system_next answers the earliest registered alarm of any app,
//     with owned_by_this_app true when that alarm is ours.
//
// Daylight-saving rule (apptool.Wall): an alarm whose clock time falls in a
// spring-forward gap (02:30 when 02:00 jumps to 03:00) fires at the first
// valid instant, the end of the gap (03:00 new time); a clock time that
// occurs twice on a fall-back day fires once, on its first pass.
package alarm

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/sqlitedb"
	"github.com/agentoslab/agentlab/sampleapps/alarm/internal/alarmclock"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/apptool/appdb"
)

// Plugin identity (spec §9.0: plugin name = MCP server name = app name).
const (
	Package = "org.agentos.sample.alarm"
	Plugin  = "alarm"
	Server  = "alarm"
	// Service is the MCP service named in plugin.json.
	Service = "org.agentos.sample.alarm.AlarmMcpService"
)

// Limits of the app.
const (
	MaxAlarms        = 500
	MaxLabel         = 60
	DefaultSnooze    = 10
	defaultDumpLimit = 100
	maxDumpLimit     = 500
)

// Options configure an App. The zero value works.
type Options struct {
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Location is the device time zone; nil means time.Local.
	Location *time.Location
	// Logger receives operational messages; nil discards them. Alarm
	// labels and tool arguments are never logged.
	Logger *slog.Logger
	// SystemDir is the directory shared by every app of the device that
	// holds the system alarm clock file; empty means <dataDir>/system
	// (a clock private to this app).
	SystemDir string
}

// App is an opened alarm app.
type App struct {
	db    *sql.DB
	now   func() time.Time
	loc   *time.Location
	log   *slog.Logger
	clock *alarmclock.Clock
	tools []apptool.Tool
	// mu orders this process's calls so that each registers its state in
	// the system clock in commit order.
	mu sync.Mutex
}

// Open opens (creating if needed) the alarm store <dataDir>/alarm.db.
func Open(ctx context.Context, dataDir string, opts *Options) (*App, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.SystemDir == "" {
		o.SystemDir = filepath.Join(dataDir, "system")
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("alarm: %w", err)
	}
	db, err := sqlitedb.Open(ctx, filepath.Join(dataDir, "alarm.db"), migrations)
	if err != nil {
		return nil, fmt.Errorf("alarm: %w", err)
	}
	a := &App{db: db, now: o.Clock, loc: o.Location, log: o.Logger, clock: alarmclock.New(o.SystemDir)}
	a.tools = a.buildTools()
	return a, nil
}

// Close closes the store.
func (a *App) Close() error { return a.db.Close() }

// Tools returns the app's tools in catalog order.
func (a *App) Tools() []apptool.Tool { return a.tools }

// state is the whole alarm table inside one transaction, advanced to now.
type state struct {
	ctx    context.Context
	q      appdb.Querier
	now    time.Time
	loc    *time.Location
	alarms []*alarm
	dirty  map[int64]bool
}

// do runs fn over the current state in one immediate transaction, saves
// what fn (or advancing the clock) changed, and registers the result in the
// system alarm clock. An error from fn rolls everything back.
func (a *App) do(ctx context.Context, fn func(s *state) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return appdb.Tx(ctx, a.db, func(q appdb.Querier) error {
		all, err := loadAlarms(ctx, q)
		if err != nil {
			return err
		}
		s := &state{ctx: ctx, q: q, now: a.now().Truncate(time.Second), loc: a.loc, alarms: all, dirty: map[int64]bool{}}
		for _, al := range all {
			if al.advance(s.now, s.loc) {
				s.dirty[al.ID] = true
			}
		}
		if err := fn(s); err != nil {
			return err
		}
		for _, al := range s.alarms {
			if s.dirty[al.ID] {
				if err := updateAlarm(ctx, q, al); err != nil {
					return err
				}
			}
		}
		// Registered while the write lock is held, so another process of
		// this app cannot interleave an older view.
		if err := a.clock.Set(Package, s.scheduled()); err != nil {
			a.log.Warn("alarm: system alarm clock not updated", "err", err)
		}
		return nil
	})
}

func (s *state) find(id int64) (*alarm, error) {
	for _, al := range s.alarms {
		if al.ID == id {
			return al, nil
		}
	}
	return nil, apptool.Errorf("No alarm with id %d", id)
}

// touch marks al changed by the user.
func (s *state) touch(al *alarm) {
	al.UpdatedAt = s.now
	s.dirty[al.ID] = true
}

func (s *state) add(al *alarm) error {
	if len(s.alarms) >= MaxAlarms {
		return apptool.Errorf("There are already %d alarms, the most this app keeps; delete some first.", MaxAlarms)
	}
	al.CreatedAt, al.UpdatedAt, al.ArmedFrom = s.now, s.now, s.now
	if err := insertAlarm(s.ctx, s.q, al); err != nil {
		return err
	}
	s.alarms = append(s.alarms, al)
	return nil
}

func (s *state) remove(ids ...int64) error {
	if err := deleteAlarms(s.ctx, s.q, ids); err != nil {
		return err
	}
	gone := map[int64]bool{}
	for _, id := range ids {
		gone[id] = true
		delete(s.dirty, id)
	}
	kept := s.alarms[:0]
	for _, al := range s.alarms {
		if !gone[al.ID] {
			kept = append(kept, al)
		}
	}
	s.alarms = kept
	return nil
}

// scheduled is what this app registers in the system alarm clock: the
// next fire of every alarm that has one.
func (s *state) scheduled() []alarmclock.Entry {
	var out []alarmclock.Entry
	for _, al := range s.alarms {
		if f := al.upcoming(s.now, s.loc); !f.IsZero() {
			out = append(out, alarmclock.Entry{ID: strconv.FormatInt(al.ID, 10), FireAt: f})
		}
	}
	return out
}

// sorted returns the alarms soonest first, switched-off ones last (by
// clock time), ties by id.
func (s *state) sorted() []*alarm {
	out := append([]*alarm(nil), s.alarms...)
	next := map[int64]time.Time{}
	for _, al := range out {
		next[al.ID] = al.upcoming(s.now, s.loc)
	}
	sort.SliceStable(out, func(i, j int) bool {
		ni, nj := next[out[i].ID], next[out[j].ID]
		switch {
		case ni.IsZero() != nj.IsZero():
			return !ni.IsZero()
		case !ni.Equal(nj):
			return ni.Before(nj)
		case out[i].Minute != out[j].Minute:
			return out[i].Minute < out[j].Minute
		}
		return out[i].ID < out[j].ID
	})
	return out
}

// alarmJSON is the alarm object of every tool result.
type alarmJSON struct {
	ID            int64    `json:"id"`
	Time          string   `json:"time"`
	Label         string   `json:"label"`
	Days          []string `json:"days"`
	Repeat        string   `json:"repeat"`
	Enabled       bool     `json:"enabled"`
	Vibrate       bool     `json:"vibrate"`
	SnoozeMinutes int      `json:"snooze_minutes"`
	SnoozedUntil  *string  `json:"snoozed_until"`
	NextFireAt    *string  `json:"next_fire_at"`
	Ringing       bool     `json:"ringing"`
}

func (s *state) json(al *alarm) alarmJSON {
	out := alarmJSON{
		ID: al.ID, Time: apptool.Clock(al.Minute), Label: al.Label, Days: dayList(al.Days), Repeat: repeatOf(al.Days),
		Enabled: al.Enabled, Vibrate: al.Vibrate, SnoozeMinutes: al.SnoozeMinutes, Ringing: al.ringing(),
	}
	if !al.SnoozedUntil.IsZero() && al.SnoozedUntil.After(s.now) {
		out.SnoozedUntil = s.iso(al.SnoozedUntil)
	}
	if f := al.upcoming(s.now, s.loc); !f.IsZero() {
		out.NextFireAt = s.iso(f)
	}
	return out
}

func (s *state) iso(t time.Time) *string {
	v := apptool.ISO(t, s.loc)
	return &v
}

// minutesUntil rounds up, so an alarm due in 30 s "fires in 1 minute".
func minutesUntil(now, t time.Time) int64 {
	d := t.Sub(now)
	return int64((d + time.Minute - 1) / time.Minute)
}
