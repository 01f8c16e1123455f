// Package calendar is the sample calendar app (spec §9.2) without any SDK:
// the calendar and event tools the runtime calls and the debug commands of
// its binary.
//
// Events live in two storages, as on a phone:
//
//   - the app's own SQLite store (<dataDir>/calendar.db), ids "local:…",
//     with a default calendar that cannot be deleted;
//   - the phone's calendar provider (Android's CalendarContract), which on a
//     Linux device is simulated by a second SQLite file shared by every app
//     (<SystemDir>/calendar_provider.db), ids "sys:…". The app may use it
//     only with the calendar permission, which is off until the user grants
//     it (the debug command "set permission granted"). Without it every
//     tool naming a "sys:" id answers PermissionSentence, and lists show
//     the app's own calendars only.
//
// Recurring events are stored once per series and expanded into
// occurrences ("<series id>@YYYYMMDD") when listed; a timed series repeats
// at the same wall-clock time in its zone (DST rule of apptool.Wall), an
// all-day series on dates in the device zone. Custom RRULEs (from the
// provider) are read-only. Results are cut to the channel's 65,536
// characters and page with next_offset.
package calendar

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/sqlitedb"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/apptool/appdb"
)

// Plugin identity (spec §9.0: plugin name = MCP server name = app name).
const (
	Package = "org.agentos.sample.calendar"
	Plugin  = "calendar"
	Server  = "calendar"
	// Service is the MCP service named in plugin.json.
	Service = "org.agentos.sample.calendar.CalendarMcpService"
)

// PermissionSentence is the error of every system-storage call made
// without the calendar permission (spec §9.2).
const PermissionSentence = "Calendar permission not granted; ask the user to grant it in the Calendar app"

// Limits of the app.
const (
	MaxLocalEvents    = 5000
	MaxLocalCalendars = 50
	MaxTitle          = 500
	MaxLocation       = 500
	MaxDescription    = 10000
	MaxCalendarName   = 60
	MaxQuery          = 200
	MaxReminders      = 10
	MaxSystemRems     = 5
	MaxReminderMin    = 40320 // four weeks
	maxRangeDays      = 731
	minYear, maxYear  = 1970, 2200
)

// Options configure an App. The zero value works.
type Options struct {
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Location is the device time zone; nil means time.Local.
	Location *time.Location
	// Logger receives operational messages; nil discards them. Event
	// contents and tool arguments are never logged.
	Logger *slog.Logger
	// SystemDir is the directory shared by every app of the device that
	// holds the simulated calendar provider; empty means <dataDir>/system.
	SystemDir string
}

// App is an opened calendar app.
type App struct {
	local *sql.DB
	sys   *sql.DB
	now   func() time.Time
	loc   *time.Location
	log   *slog.Logger
	tools []apptool.Tool

	zmu   sync.Mutex
	zones map[string]*time.Location // guarded by zmu
}

// Open opens (creating if needed) the app's store and the simulated
// provider.
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
		return nil, fmt.Errorf("calendar: %w", err)
	}
	if err := apptool.SharedDir(o.SystemDir); err != nil {
		return nil, fmt.Errorf("calendar: %w", err)
	}
	local, err := sqlitedb.Open(ctx, filepath.Join(dataDir, "calendar.db"), localMigrations)
	if err != nil {
		return nil, fmt.Errorf("calendar: %w", err)
	}
	provider := filepath.Join(o.SystemDir, "calendar_provider.db")
	sys, err := sqlitedb.Open(ctx, provider, systemMigrations)
	if err != nil {
		local.Close()
		return nil, fmt.Errorf("calendar: provider: %w", err)
	}
	// Every app uid of the device opens the provider; SQLite gives the
	// -wal and -shm files it creates later the database file's mode.
	apptool.ShareFiles(provider, provider+"-wal", provider+"-shm")
	a := &App{local: local, sys: sys, now: o.Clock, loc: o.Location, log: o.Logger, zones: map[string]*time.Location{}}
	a.tools = a.buildTools()
	return a, nil
}

// Close closes both stores.
func (a *App) Close() error {
	err1 := a.local.Close()
	err2 := a.sys.Close()
	if err1 != nil {
		return err1
	}
	return err2
}

// Tools returns the app's tools in catalog order.
func (a *App) Tools() []apptool.Tool { return a.tools }

// world is everything the app can see inside one call.
type world struct {
	ctx     context.Context
	app     *App
	now     time.Time
	today   apptool.Date
	loc     *time.Location
	granted bool
	lq, sq  appdb.Querier // sq is nil without the permission
	cals    []*calendar
	events  []*event
}

// do runs fn over both storages, each in an immediate transaction (the
// app's store first, then the provider when the permission is granted),
// and then re-arms the app's next reminder. An error from fn rolls both
// back.
func (a *App) do(ctx context.Context, fn func(w *world) error) error {
	return appdb.Tx(ctx, a.local, func(lq appdb.Querier) error {
		perm, err := getSetting(ctx, lq, "calendar_permission")
		if err != nil {
			return err
		}
		now := a.now().Truncate(time.Second)
		w := &world{ctx: ctx, app: a, now: now, today: apptool.DateOf(now, a.loc), loc: a.loc, granted: perm == "granted", lq: lq}
		run := func() error {
			if err := w.load(); err != nil {
				return err
			}
			if err := fn(w); err != nil {
				return err
			}
			return w.reschedule()
		}
		if !w.granted {
			return run()
		}
		return appdb.Tx(ctx, a.sys, func(sq appdb.Querier) error {
			w.sq = sq
			return run()
		})
	})
}

func (w *world) load() error {
	for _, st := range w.storages() {
		cals, err := loadCalendars(w.ctx, w.q(st), st)
		if err != nil {
			return err
		}
		evs, err := loadEvents(w.ctx, w.q(st), st)
		if err != nil {
			return err
		}
		w.cals = append(w.cals, cals...)
		w.events = append(w.events, evs...)
	}
	return nil
}

// storages are those the app may read now.
func (w *world) storages() []storage {
	if w.granted {
		return []storage{local, system}
	}
	return []storage{local}
}

func (w *world) q(st storage) appdb.Querier {
	if st == system {
		return w.sq
	}
	return w.lq
}

// zone resolves an event's zone name (cached); unknown names fall back to
// the device zone.
func (w *world) zone(name string) *time.Location {
	a := w.app
	if name == "" || name == a.loc.String() {
		return a.loc
	}
	a.zmu.Lock()
	defer a.zmu.Unlock()
	if z, ok := a.zones[name]; ok {
		return z
	}
	z, err := time.LoadLocation(name)
	if err != nil {
		// Written by another calendar app, or a zone this build lacks:
		// repeat in the device zone rather than fail every call.
		a.log.Warn("calendar: unknown event time zone; using the device zone", "zone", name)
		z = a.loc
	}
	a.zones[name] = z
	return z
}

func (w *world) iso(t time.Time) string { return apptool.ISO(t, w.loc) }
