package alarm

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// Annotation sets of spec §9.1.
var (
	readOnly    = apptool.Annotations{ReadOnlyHint: apptool.Bool(true), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
	plainWrite  = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
	idempotent  = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(true), OpenWorldHint: apptool.Bool(false)}
	destructive = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(true), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
)

var (
	idProp   = apptool.Prop{Name: "id", Type: "integer", Description: "Alarm id, as returned by alarm_list or alarm_create.", Minimum: apptool.Num(1)}
	timeProp = apptool.Prop{Name: "time", Type: "string", Pattern: `^([01]?\d|2[0-3]):[0-5]\d$`,
		Description: `Local 24-hour clock time "HH:mm", e.g. "07:30"; "7 pm" is "19:00". Never a date.`}
	labelProp = apptool.Prop{Name: "label", Type: "string", MaxLength: MaxLabel, Description: `Short name shown when it rings, e.g. "Wake up" (at most 60 characters; "" clears it).`}
	daysProp  = apptool.Prop{Name: "days", Type: "array", Items: "string", ItemsEnum: dayNames[:],
		Description: `Days to repeat on, from "mon","tue","wed","thu","fri","sat","sun". Empty or omitted = ring once, at the next time the clock shows "time", then switch off.`}
	enabledProp = apptool.Prop{Name: "enabled", Type: "boolean", Description: "Whether the alarm is switched on (default true)."}
	vibrateProp = apptool.Prop{Name: "vibrate", Type: "boolean", Description: "Vibrate while ringing (default true)."}
	snoozeProp  = apptool.Prop{Name: "snooze_minutes", Type: "integer", Minimum: apptool.Num(1), Maximum: apptool.Num(60),
		Description: "Minutes a snooze lasts, 1-60 (default 10)."}
)

func (a *App) buildTools() []apptool.Tool {
	return []apptool.Tool{
		{
			Name: "alarm_list", Title: "List alarms", Annotations: readOnly,
			Description: "List the alarms of the Alarm app, soonest to ring first, switched-off alarms last. Each alarm has id, time (local HH:mm), label, days, repeat, enabled, vibrate, snooze_minutes, snoozed_until, next_fire_at (ISO-8601 with offset, null when it will not ring) and ringing. Returns {count, alarms}.",
			InputSchema: apptool.ObjectSchema(nil, apptool.Prop{Name: "enabled_only", Type: "boolean", Description: "Leave out switched-off alarms (default false)."}),
			Handler:     a.alarmList,
		},
		{
			Name: "alarm_get", Title: "Get an alarm", Annotations: readOnly,
			Description: "Get one alarm by id, with when it rings next (next_fire_at) and whether it is ringing right now.",
			InputSchema: apptool.ObjectSchema([]string{"id"}, idProp),
			Handler:     a.alarmGet,
		},
		{
			Name: "alarm_create", Title: "Create an alarm", Annotations: plainWrite,
			Description: "Create an alarm that rings on this phone at a clock time. Use it only when the user wants something to ring (\"wake me at 7\"); a reminder for a meeting belongs on the calendar event instead. Check alarm_list first so you do not create a duplicate. Returns the new alarm; tell the user its next_fire_at in plain words so they can check the day.",
			InputSchema: apptool.ObjectSchema([]string{"time"}, timeProp, labelProp, daysProp, enabledProp, vibrateProp, snoozeProp),
			Handler:     a.alarmCreate,
		},
		{
			Name: "alarm_update", Title: "Update an alarm", Annotations: idempotent,
			Description: "Change an existing alarm; only the fields you pass change, and at least one is needed. days replaces the whole repeat set ([] = ring once). Changing time, days or enabled ends any ring or snooze in progress. Returns the updated alarm.",
			InputSchema: apptool.ObjectSchema([]string{"id"}, idProp, timeProp, labelProp, daysProp, enabledProp, vibrateProp, snoozeProp),
			Handler:     a.alarmUpdate,
		},
		{
			Name: "alarm_set_enabled", Title: "Switch an alarm on or off", Annotations: idempotent,
			Description: "Switch an alarm on or off without deleting it. Switching off also stops a ring or snooze in progress. Returns the alarm with its next_fire_at.",
			InputSchema: apptool.ObjectSchema([]string{"id", "enabled"}, idProp, apptool.Prop{Name: "enabled", Type: "boolean", Description: "true switches the alarm on, false switches it off."}),
			Handler:     a.alarmSetEnabled,
		},
		{
			Name: "alarm_delete", Title: "Delete an alarm", Annotations: destructive,
			Description: "Delete an alarm for good. This cannot be undone; to keep it but stop it ringing use alarm_set_enabled. Returns {deleted: true, alarm}.",
			InputSchema: apptool.ObjectSchema([]string{"id"}, idProp),
			Handler:     a.alarmDelete,
		},
		{
			Name: "alarm_next", Title: "Next alarm", Annotations: readOnly,
			Description: "Which of this app's alarms rings next: {alarm, next_fire_at, fires_in_minutes}, or JSON null when none will ring. For alarms set by other clock apps use alarm_system_next.",
			InputSchema: apptool.ObjectSchema(nil),
			Handler:     a.alarmNext,
		},
		{
			Name: "alarm_dismiss", Title: "Dismiss the ringing alarm", Annotations: plainWrite,
			Description: "Stop the alarm that is ringing right now, like tapping Dismiss. id is optional; when given it must be a ringing alarm. A repeating alarm stays on for its next day; a one-time alarm switches off. Fails if nothing is ringing. Returns {dismissed: true, alarm}.",
			InputSchema: apptool.ObjectSchema(nil, apptool.Prop{Name: "id", Type: "integer", Minimum: apptool.Num(1), Description: "The ringing alarm to stop (default: the one that started ringing last)."}),
			Handler:     a.alarmDismiss,
		},
		{
			Name: "alarm_snooze", Title: "Snooze the ringing alarm", Annotations: plainWrite,
			Description: "Silence the alarm that is ringing right now and let it ring again after its snooze_minutes. id is optional; when given it must be a ringing alarm. Fails if nothing is ringing. Returns the alarm with snoozed_until.",
			InputSchema: apptool.ObjectSchema(nil, apptool.Prop{Name: "id", Type: "integer", Minimum: apptool.Num(1), Description: "The ringing alarm to snooze (default: the one that started ringing last)."}),
			Handler:     a.alarmSnooze,
		},
		{
			Name: "alarm_system_next", Title: "Next alarm of the phone", Annotations: readOnly,
			Description: "The next alarm of any alarm app on this phone, as the status bar shows it: {next_fire_at, fires_in_minutes, owned_by_this_app}, or JSON null when no app has an alarm set. When owned_by_this_app is false another clock app set it, and these tools cannot list, change or delete it.",
			InputSchema: apptool.ObjectSchema(nil),
			Handler:     a.alarmSystemNext,
		},
	}
}

// fields are the alarm fields shared by create and update, as read from
// the arguments.
type fields struct {
	minute                 int
	hasTime                bool
	label                  string
	hasLabel               bool
	days                   uint8
	hasDays                bool
	enabled, vibrate       bool
	hasEnabled, hasVibrate bool
	snooze                 int
	hasSnooze              bool
}

func readFields(args *apptool.Args, timeRequired bool) fields {
	var f fields
	var opts []apptool.Opt
	if timeRequired {
		opts = append(opts, apptool.Required)
	}
	if s, ok := args.StringOK("time", opts...); ok {
		m, valid := apptool.ParseClock(s, false)
		if !valid || strings.TrimSpace(s) != s {
			args.Fail(`Parameter "time" must be a 24-hour clock time "HH:mm", e.g. "07:30".`)
		}
		f.minute, f.hasTime = m, true
	}
	f.label, f.hasLabel = args.StringOK("label", apptool.MaxLen(MaxLabel))
	if list, ok := args.Strings("days"); ok {
		f.hasDays = true
		for _, d := range list {
			i := dayIndex(d)
			if i < 0 {
				args.Fail(`Items of "days" must be one of mon, tue, wed, thu, fri, sat, sun.`)
				break
			}
			f.days |= 1 << i
		}
	}
	f.enabled, f.hasEnabled = args.BoolOK("enabled")
	f.vibrate, f.hasVibrate = args.BoolOK("vibrate")
	if n, ok := args.IntOK("snooze_minutes", apptool.Range(1, 60)); ok {
		f.snooze, f.hasSnooze = int(n), true
	}
	return f
}

func dayIndex(s string) int {
	s = strings.ToLower(strings.TrimSpace(s))
	for i, n := range dayNames {
		if s == n {
			return i
		}
	}
	return -1
}

func parse(raw json.RawMessage) (*apptool.Args, error) { return apptool.ParseArgs(raw) }

func (a *App) alarmList(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	enabledOnly := args.Bool("enabled_only", false)
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	type result struct {
		Count  int         `json:"count"`
		Alarms []alarmJSON `json:"alarms"`
	}
	out := result{Alarms: []alarmJSON{}}
	err = a.do(ctx, func(s *state) error {
		for _, al := range s.sorted() {
			if enabledOnly && !al.Enabled {
				continue
			}
			out.Alarms = append(out.Alarms, s.json(al))
		}
		out.Count = len(out.Alarms)
		return nil
	})
	return out, err
}

// withID runs fn on the alarm named by the required "id" argument.
func (a *App) withID(ctx context.Context, raw json.RawMessage, fn func(s *state, al *alarm) (any, error)) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id := args.Int("id", apptool.Required, apptool.Min(1))
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	var out any
	err = a.do(ctx, func(s *state) error {
		al, err := s.find(id)
		if err != nil {
			return err
		}
		out, err = fn(s, al)
		return err
	})
	return out, err
}

func (a *App) alarmGet(ctx context.Context, raw json.RawMessage) (any, error) {
	return a.withID(ctx, raw, func(s *state, al *alarm) (any, error) { return s.json(al), nil })
}

func (a *App) alarmCreate(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	f := readFields(args, true)
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	al := &alarm{Minute: f.minute, Label: f.label, Days: f.days, Enabled: true, Vibrate: true, SnoozeMinutes: DefaultSnooze}
	if f.hasEnabled {
		al.Enabled = f.enabled
	}
	if f.hasVibrate {
		al.Vibrate = f.vibrate
	}
	if f.hasSnooze {
		al.SnoozeMinutes = f.snooze
	}
	var out alarmJSON
	err = a.do(ctx, func(s *state) error {
		if err := s.add(al); err != nil {
			return err
		}
		out = s.json(al)
		return nil
	})
	return out, err
}

func (a *App) alarmUpdate(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id := args.Int("id", apptool.Required, apptool.Min(1))
	f := readFields(args, false)
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	if !f.hasTime && !f.hasLabel && !f.hasDays && !f.hasEnabled && !f.hasVibrate && !f.hasSnooze {
		return nil, apptool.Errorf("Nothing to update: pass at least one of time, label, days, enabled, vibrate, snooze_minutes.")
	}
	var out alarmJSON
	err = a.do(ctx, func(s *state) error {
		al, err := s.find(id)
		if err != nil {
			return err
		}
		schedule := f.hasTime && f.minute != al.Minute || f.hasDays && f.days != al.Days || f.hasEnabled && f.enabled != al.Enabled
		if f.hasTime {
			al.Minute = f.minute
		}
		if f.hasLabel {
			al.Label = f.label
		}
		if f.hasDays {
			al.Days = f.days
		}
		if f.hasEnabled {
			al.Enabled = f.enabled
		}
		if f.hasVibrate {
			al.Vibrate = f.vibrate
		}
		if f.hasSnooze {
			al.SnoozeMinutes = f.snooze
		}
		if schedule {
			al.rearm(s.now)
		}
		s.touch(al)
		out = s.json(al)
		return nil
	})
	return out, err
}

func (a *App) alarmSetEnabled(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id := args.Int("id", apptool.Required, apptool.Min(1))
	enabled, _ := args.BoolOK("enabled", apptool.Required)
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	var out alarmJSON
	err = a.do(ctx, func(s *state) error {
		al, err := s.find(id)
		if err != nil {
			return err
		}
		if al.Enabled != enabled {
			al.Enabled = enabled
			al.rearm(s.now)
			s.touch(al)
		}
		out = s.json(al)
		return nil
	})
	return out, err
}

func (a *App) alarmDelete(ctx context.Context, raw json.RawMessage) (any, error) {
	return a.withID(ctx, raw, func(s *state, al *alarm) (any, error) {
		snap := s.json(al)
		snap.NextFireAt, snap.Ringing = nil, false
		if err := s.remove(al.ID); err != nil {
			return nil, err
		}
		return struct {
			Deleted bool      `json:"deleted"`
			Alarm   alarmJSON `json:"alarm"`
		}{true, snap}, nil
	})
}

func (a *App) alarmNext(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	type result struct {
		Alarm          alarmJSON `json:"alarm"`
		NextFireAt     string    `json:"next_fire_at"`
		FiresInMinutes int64     `json:"fires_in_minutes"`
	}
	var out *result
	err = a.do(ctx, func(s *state) error {
		for _, al := range s.sorted() {
			if f := al.upcoming(s.now, s.loc); !f.IsZero() {
				out = &result{Alarm: s.json(al), NextFireAt: apptool.ISO(f, s.loc), FiresInMinutes: minutesUntil(s.now, f)}
			}
			break
		}
		return nil
	})
	if err != nil || out == nil {
		return nil, err
	}
	return out, nil
}

// ringing picks the ringing alarm a dismiss or snooze acts on.
func (s *state) ringingAlarm(id int64, hasID bool) (*alarm, error) {
	if hasID {
		al, err := s.find(id)
		if err != nil {
			return nil, err
		}
		if !al.ringing() {
			return nil, apptool.Errorf("Alarm %d is not ringing right now.", id)
		}
		return al, nil
	}
	var latest *alarm
	for _, al := range s.alarms {
		if al.ringing() && (latest == nil || !al.RingingSince.Before(latest.RingingSince)) {
			latest = al
		}
	}
	if latest == nil {
		return nil, apptool.Errorf("No alarm is ringing right now.")
	}
	return latest, nil
}

func (a *App) ringAction(ctx context.Context, raw json.RawMessage, act func(s *state, al *alarm) any) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id, hasID := args.IntOK("id", apptool.Min(1))
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	var out any
	err = a.do(ctx, func(s *state) error {
		al, err := s.ringingAlarm(id, hasID)
		if err != nil {
			return err
		}
		out = act(s, al)
		return nil
	})
	return out, err
}

func (a *App) alarmDismiss(ctx context.Context, raw json.RawMessage) (any, error) {
	return a.ringAction(ctx, raw, func(s *state, al *alarm) any {
		al.stopRinging(s.now)
		s.touch(al)
		return struct {
			Dismissed bool      `json:"dismissed"`
			Alarm     alarmJSON `json:"alarm"`
		}{true, s.json(al)}
	})
}

func (a *App) alarmSnooze(ctx context.Context, raw json.RawMessage) (any, error) {
	return a.ringAction(ctx, raw, func(s *state, al *alarm) any {
		al.snooze(s.now)
		s.touch(al)
		return s.json(al)
	})
}

func (a *App) alarmSystemNext(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	type result struct {
		NextFireAt     string `json:"next_fire_at"`
		FiresInMinutes int64  `json:"fires_in_minutes"`
		OwnedByThisApp bool   `json:"owned_by_this_app"`
	}
	var out *result
	err = a.do(ctx, func(s *state) error {
		// do registers this app's alarms after fn; register them first
		// here so the answer includes this call's view.
		if err := a.clock.Set(Package, s.scheduled()); err != nil {
			return err
		}
		e, ok, err := a.clock.Next(s.now)
		if err != nil {
			return err
		}
		if ok {
			out = &result{NextFireAt: apptool.ISO(e.FireAt, s.loc), FiresInMinutes: minutesUntil(s.now, e.FireAt), OwnedByThisApp: e.Package == Package}
		}
		return nil
	})
	if err != nil || out == nil {
		return nil, err
	}
	return out, nil
}
