package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"
)

// Event is one entry of a session's event log. Seq numbers start at 1 and
// have no gaps within a session; the engine assigns them.
type Event struct {
	SessionID string
	Seq       int64
	// TaskID is empty for session-level events.
	TaskID string
	Type   string
	// Body is a JSON object.
	Body json.RawMessage
	At   time.Time
}

const (
	insertEventSQL    = `INSERT INTO events (session_id, seq, task_id, type, body, at) VALUES (?,?,?,?,?,?)`
	insertToolCallSQL = `INSERT OR IGNORE INTO tool_calls (task_id, id, name) VALUES (?,?,?)`
	markDispatchedSQL = `UPDATE tool_calls SET dispatched_at = ? WHERE task_id = ? AND id = ?`
	markSettledSQL    = `UPDATE tool_calls SET settled_at = ?, outcome = ? WHERE task_id = ? AND id = ?`
)

func insertEvent(ctx context.Context, tx wtx, ev Event) error {
	_, err := tx.ExecContext(ctx, insertEventSQL, eventArgs(ev)...)
	return err
}

func eventArgs(ev Event) []any {
	body := string(ev.Body)
	if body == "" {
		body = "{}"
	}
	return []any{ev.SessionID, ev.Seq, ev.TaskID, ev.Type, body, ms(ev.At)}
}

// ToolCallMark is a change to a tool_calls row that commits together
// with an event.
type ToolCallMark struct {
	TaskID string
	ID     string
	// Name set: insert the row (the model asked for the call).
	Name string
	// Dispatched: set dispatched_at.
	Dispatched bool
	// Outcome set: set settled_at and the outcome.
	Outcome string
}

// AppendEvent commits ev, and mark when not nil, in one transaction.
func (s *Store) AppendEvent(ctx context.Context, ev Event, mark *ToolCallMark) error {
	if mark == nil {
		// One statement commits on its own: no transaction needed.
		if _, err := s.wStmts.lookup(insertEventSQL).ExecContext(ctx, eventArgs(ev)...); err != nil {
			return wrap("append event", err)
		}
		return nil
	}
	return s.inTx(ctx, "append event", func(tx wtx) error {
		if err := insertEvent(ctx, tx, ev); err != nil {
			return err
		}
		at := ms(ev.At)
		var err error
		switch {
		case mark.Name != "":
			_, err = tx.ExecContext(ctx, insertToolCallSQL, mark.TaskID, mark.ID, mark.Name)
		case mark.Dispatched:
			_, err = tx.ExecContext(ctx, markDispatchedSQL, at, mark.TaskID, mark.ID)
		case mark.Outcome != "":
			_, err = tx.ExecContext(ctx, markSettledSQL, at, mark.Outcome, mark.TaskID, mark.ID)
		}
		return err
	})
}

// Events returns up to limit events of the session with seq > after, in
// order.
func (s *Store) Events(ctx context.Context, sessionID string, after int64, limit int) ([]Event, error) {
	evs, err := queryEvents(ctx, s.query, `SELECT session_id, seq, task_id, type, body, at FROM events
		WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT ?`, sessionID, after, limit)
	if err != nil {
		return nil, wrap("events", err)
	}
	return evs, nil
}

// LastSeq returns the highest seq of the session's log (0 when empty).
func (s *Store) LastSeq(ctx context.Context, sessionID string) (int64, error) {
	var seq sql.NullInt64
	if err := s.queryRow(ctx, `SELECT MAX(seq) FROM events WHERE session_id = ?`, sessionID).Scan(&seq); err != nil {
		return 0, wrap("last seq", err)
	}
	return seq.Int64, nil
}

type queryFunc func(ctx context.Context, query string, args ...any) (*sql.Rows, error)

func queryEvents(ctx context.Context, q queryFunc, query string, args ...any) ([]Event, error) {
	rows, err := q(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var (
			ev   Event
			body string
			at   int64
		)
		if err := rows.Scan(&ev.SessionID, &ev.Seq, &ev.TaskID, &ev.Type, &body, &at); err != nil {
			return nil, err
		}
		ev.Body, ev.At = json.RawMessage(body), fromMS(at)
		out = append(out, ev)
	}
	return out, rows.Err()
}
