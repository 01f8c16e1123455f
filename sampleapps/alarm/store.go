package alarm

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/agentoslab/agentlab/runtime/sqlitedb"
	"github.com/agentoslab/agentlab/sampleapps/apptool/appdb"
)

var migrations = []sqlitedb.Migration{{Version: 1, SQL: `
CREATE TABLE alarms (
	id             INTEGER PRIMARY KEY AUTOINCREMENT, -- never reused: a model may hold an old id
	minute_of_day  INTEGER NOT NULL CHECK (minute_of_day BETWEEN 0 AND 1439),
	label          TEXT    NOT NULL DEFAULT '',
	days           INTEGER NOT NULL DEFAULT 0 CHECK (days BETWEEN 0 AND 127),
	enabled        INTEGER NOT NULL,
	vibrate        INTEGER NOT NULL,
	snooze_minutes INTEGER NOT NULL CHECK (snooze_minutes BETWEEN 1 AND 60),
	snoozed_until  INTEGER,          -- unix ms
	armed_from     INTEGER NOT NULL, -- unix ms
	ringing_since  INTEGER,          -- unix ms
	created_at     INTEGER NOT NULL,
	updated_at     INTEGER NOT NULL
);`}}

const alarmCols = `id, minute_of_day, label, days, enabled, vibrate, snooze_minutes, snoozed_until, armed_from, ringing_since, created_at, updated_at`

func loadAlarms(ctx context.Context, q appdb.Querier) ([]*alarm, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+alarmCols+` FROM alarms ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("load alarms: %w", err)
	}
	defer rows.Close()
	var out []*alarm
	for rows.Next() {
		var a alarm
		var snoozed, ringing sql.NullInt64
		var armed, created, updated int64
		if err := rows.Scan(&a.ID, &a.Minute, &a.Label, &a.Days, &a.Enabled, &a.Vibrate, &a.SnoozeMinutes,
			&snoozed, &armed, &ringing, &created, &updated); err != nil {
			return nil, fmt.Errorf("load alarms: %w", err)
		}
		a.SnoozedUntil, a.RingingSince = fromNull(snoozed), fromNull(ringing)
		a.ArmedFrom, a.CreatedAt, a.UpdatedAt = time.UnixMilli(armed), time.UnixMilli(created), time.UnixMilli(updated)
		out = append(out, &a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load alarms: %w", err)
	}
	return out, nil
}

func insertAlarm(ctx context.Context, q appdb.Querier, a *alarm) error {
	res, err := q.ExecContext(ctx, `INSERT INTO alarms (minute_of_day, label, days, enabled, vibrate, snooze_minutes,
		snoozed_until, armed_from, ringing_since, created_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?,?,?)`,
		a.Minute, a.Label, a.Days, a.Enabled, a.Vibrate, a.SnoozeMinutes,
		toNull(a.SnoozedUntil), a.ArmedFrom.UnixMilli(), toNull(a.RingingSince), a.CreatedAt.UnixMilli(), a.UpdatedAt.UnixMilli())
	if err != nil {
		return fmt.Errorf("insert alarm: %w", err)
	}
	if a.ID, err = res.LastInsertId(); err != nil {
		return fmt.Errorf("insert alarm: %w", err)
	}
	return nil
}

func updateAlarm(ctx context.Context, q appdb.Querier, a *alarm) error {
	_, err := q.ExecContext(ctx, `UPDATE alarms SET minute_of_day=?, label=?, days=?, enabled=?, vibrate=?, snooze_minutes=?,
		snoozed_until=?, armed_from=?, ringing_since=?, updated_at=? WHERE id=?`,
		a.Minute, a.Label, a.Days, a.Enabled, a.Vibrate, a.SnoozeMinutes,
		toNull(a.SnoozedUntil), a.ArmedFrom.UnixMilli(), toNull(a.RingingSince), a.UpdatedAt.UnixMilli(), a.ID)
	if err != nil {
		return fmt.Errorf("update alarm %d: %w", a.ID, err)
	}
	return nil
}

func deleteAlarms(ctx context.Context, q appdb.Querier, ids []int64) error {
	for _, id := range ids {
		if _, err := q.ExecContext(ctx, `DELETE FROM alarms WHERE id=?`, id); err != nil {
			return fmt.Errorf("delete alarm %d: %w", id, err)
		}
	}
	return nil
}

func toNull(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixMilli()
}

func fromNull(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return time.UnixMilli(n.Int64)
}
