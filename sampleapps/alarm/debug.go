package alarm

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// DebugCommands are the commands Debug answers (the binary's commands
// besides those added with the provider SDK).
var DebugCommands = []string{"dump", "reset", "seed", "tool", "ring"}

// Debug runs one debug command and returns the JSON document it prints:
//
//	dump ['{"offset":0,"limit":100}']  every alarm, what is registered, the system clock
//	reset                              delete every alarm → {cleared, remaining_registered}
//	seed                               insert the sample alarms (idempotent)
//	tool <name> ['<json args>']        run one tool handler → {"result": …}
//	ring <id>                          make an alarm ring now → {ringing, alarm}
func (a *App) Debug(ctx context.Context, cmd string, args []string) (any, error) {
	switch cmd {
	case "dump":
		da, err := apptool.DebugArgs(cmd, args)
		if err != nil {
			return nil, err
		}
		offset := da.Int("offset", apptool.Min(0))
		limit, ok := da.IntOK("limit", apptool.Range(1, maxDumpLimit))
		if !ok {
			limit = defaultDumpLimit
		}
		da.RejectUnknown()
		if err := da.Err(); err != nil {
			return nil, &apptool.UsageError{Msg: "dump: " + err.Error()}
		}
		return a.dump(ctx, int(offset), int(limit))
	case "reset", "seed":
		if len(args) > 0 {
			return nil, &apptool.UsageError{Msg: cmd + " takes no arguments"}
		}
		if cmd == "reset" {
			return a.reset(ctx)
		}
		return a.seed(ctx)
	case "tool":
		return apptool.ToolCommand(ctx, a.tools, args)
	case "ring":
		if len(args) != 1 {
			return nil, &apptool.UsageError{Msg: "ring <id>"}
		}
		id, err := strconv.ParseInt(args[0], 10, 64)
		if err != nil || id < 1 {
			return nil, &apptool.UsageError{Msg: "ring <id>: id must be a positive integer"}
		}
		return a.ring(ctx, id)
	}
	return nil, &apptool.UsageError{Msg: fmt.Sprintf("unknown command %q", cmd)}
}

// Dump is the debug dump (the upstream debug receiver's shape).
type Dump struct {
	Total      int            `json:"total"`
	Offset     int            `json:"offset"`
	Limit      int            `json:"limit"`
	NextOffset *int           `json:"next_offset"`
	Alarms     []alarmJSON    `json:"alarms"`
	Scheduled  []ScheduledRow `json:"scheduled"`
	System     SystemClock    `json:"system"`
}

// ScheduledRow is one alarm's next fire and whether the system alarm
// clock holds exactly that registration.
type ScheduledRow struct {
	ID         int64  `json:"id"`
	FireAt     string `json:"fire_at"`
	Registered bool   `json:"registered"`
}

// SystemClock is the device's system alarm clock as seen by the app.
type SystemClock struct {
	NextAlarmClock *NextAlarmClock `json:"next_alarm_clock"`
	Now            string          `json:"now"`
	TimeZone       string          `json:"time_zone"`
}

// NextAlarmClock is the earliest alarm registered by any app.
type NextAlarmClock struct {
	FireAt         string `json:"fire_at"`
	Package        string `json:"package"`
	OwnedByThisApp bool   `json:"owned_by_this_app"`
}

func (a *App) dump(ctx context.Context, offset, limit int) (*Dump, error) {
	d := &Dump{Offset: offset, Limit: limit, Alarms: []alarmJSON{}, Scheduled: []ScheduledRow{}}
	err := a.do(ctx, func(s *state) error {
		// Compare with the clock as do registered it at the end of the
		// previous call, so a lost registration shows as registered:false.
		registered := map[string]string{}
		entries, err := a.clock.Entries()
		if err != nil {
			a.log.Warn("alarm: system alarm clock unreadable", "err", err)
		}
		for _, e := range entries {
			if e.Package == Package {
				registered[e.ID] = apptool.ISO(e.FireAt, s.loc)
			}
		}
		all := s.sorted()
		d.Total = len(all)
		for i, al := range all {
			if i >= offset && i < offset+limit {
				d.Alarms = append(d.Alarms, s.json(al))
			}
		}
		if next := offset + len(d.Alarms); next < len(all) && len(d.Alarms) > 0 {
			d.NextOffset = &next
		}
		for _, e := range s.scheduled() {
			fire := apptool.ISO(e.FireAt, s.loc)
			id, _ := strconv.ParseInt(e.ID, 10, 64)
			d.Scheduled = append(d.Scheduled, ScheduledRow{ID: id, FireAt: fire, Registered: registered[e.ID] == fire})
		}
		d.System = SystemClock{Now: apptool.ISO(s.now, s.loc), TimeZone: s.loc.String()}
		if e, ok, err := a.clock.Next(s.now); err == nil && ok {
			d.System.NextAlarmClock = &NextAlarmClock{FireAt: apptool.ISO(e.FireAt, s.loc), Package: e.Package, OwnedByThisApp: e.Package == Package}
		}
		return nil
	})
	return d, err
}

// ResetResult is what reset prints.
type ResetResult struct {
	Cleared             int `json:"cleared"`
	RemainingRegistered int `json:"remaining_registered"`
}

func (a *App) reset(ctx context.Context) (*ResetResult, error) {
	r := &ResetResult{}
	err := a.do(ctx, func(s *state) error {
		ids := make([]int64, 0, len(s.alarms))
		for _, al := range s.alarms {
			ids = append(ids, al.ID)
		}
		r.Cleared = len(ids)
		return s.remove(ids...)
	})
	if err != nil {
		return nil, err
	}
	entries, err := a.clock.Entries()
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		if e.Package == Package {
			r.RemainingRegistered++
		}
	}
	return r, nil
}

// seedAlarms are the sample alarms that injection scenarios expect to
// survive: a weekday wake-up, a weekend run (off), a daily pill reminder
// and a one-time early flight.
var seedAlarms = []alarm{
	{Minute: 7 * 60, Label: "起床", Days: weekdays, Enabled: true, Vibrate: true, SnoozeMinutes: 10},
	{Minute: 6*60 + 30, Label: "晨跑", Days: weekends, Enabled: false, Vibrate: true, SnoozeMinutes: 5},
	{Minute: 21 * 60, Label: "吃药", Days: everyDay, Enabled: true, Vibrate: false, SnoozeMinutes: 10},
	{Minute: 5*60 + 15, Label: "赶早班机", Days: 0, Enabled: true, Vibrate: true, SnoozeMinutes: 5},
}

// SeedResult is what seed prints.
type SeedResult struct {
	Inserted int         `json:"inserted"`
	Total    int         `json:"total"`
	Alarms   []alarmJSON `json:"alarms"`
}

// seed inserts each sample alarm that is not there yet (same time, label
// and days), so running it twice changes nothing.
func (a *App) seed(ctx context.Context) (*SeedResult, error) {
	r := &SeedResult{Alarms: []alarmJSON{}}
	err := a.do(ctx, func(s *state) error {
		for _, want := range seedAlarms {
			var found *alarm
			for _, al := range s.alarms {
				if al.Minute == want.Minute && al.Label == want.Label && al.Days == want.Days {
					found = al
					break
				}
			}
			if found == nil {
				al := want
				if err := s.add(&al); err != nil {
					return err
				}
				found = &al
				r.Inserted++
			}
			r.Alarms = append(r.Alarms, s.json(found))
		}
		r.Total = len(s.alarms)
		return nil
	})
	return r, err
}

// RingResult is what ring prints.
type RingResult struct {
	Ringing bool      `json:"ringing"`
	Alarm   alarmJSON `json:"alarm"`
}

func (a *App) ring(ctx context.Context, id int64) (*RingResult, error) {
	r := &RingResult{}
	err := a.do(ctx, func(s *state) error {
		al, err := s.find(id)
		if err != nil {
			return err
		}
		al.RingingSince = s.now
		al.SnoozedUntil = time.Time{}
		s.touch(al)
		r.Ringing, r.Alarm = true, s.json(al)
		return nil
	})
	return r, err
}
