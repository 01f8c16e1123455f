package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Session states.
const (
	SessionOpen   = "open"
	SessionClosed = "closed"
)

// Session is one row of the sessions table.
type Session struct {
	ID         string
	OwnerKey   string
	CallerKind string
	CallerUID  int
	Cwd        string
	Title      string
	// ToolScope is the stored JSON array, nil when the session has no
	// toolScope. It is returned as stored, readable or not.
	ToolScope  []byte
	Mode       string
	ModelID    string
	ForkedFrom string
	State      string
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// ms converts a time to the stored unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

func fromMS(v int64) time.Time { return time.UnixMilli(v).UTC() }

func fromNullMS(v sql.NullInt64) time.Time {
	if !v.Valid {
		return time.Time{}
	}
	return fromMS(v.Int64)
}

func nullMS(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: ms(t), Valid: true}
}

func nullString(s string) sql.NullString { return sql.NullString{String: s, Valid: s != ""} }

func nullBytes(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// CreateSession inserts s and its first event (session.created) in one
// transaction. created.Seq must be 1.
func (s *Store) CreateSession(ctx context.Context, sess Session, created Event) error {
	return s.inTx(ctx, "create session", func(tx wtx) error {
		if err := insertSession(ctx, tx, sess); err != nil {
			return err
		}
		return insertEvent(ctx, tx, created)
	})
}

func insertSession(ctx context.Context, tx wtx, sess Session) error {
	_, err := tx.ExecContext(ctx, insertSessionSQL,
		sess.ID, sess.OwnerKey, sess.CallerKind, sess.CallerUID, sess.Cwd, sess.Title,
		nullBytes(sess.ToolScope), sess.Mode, sess.ModelID, nullString(sess.ForkedFrom), sess.State,
		ms(sess.CreatedAt), ms(sess.UpdatedAt))
	return err
}

const sessionCols = `id, owner_key, caller_kind, caller_uid, cwd, title, tool_scope, mode, model_id,
	forked_from, state, created_at, updated_at`

const insertSessionSQL = `INSERT INTO sessions (` + sessionCols + `) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`

func scanSession(row interface{ Scan(...any) error }) (Session, error) {
	var (
		s          Session
		scope      sql.NullString
		forkedFrom sql.NullString
		created    int64
		updated    int64
	)
	err := row.Scan(&s.ID, &s.OwnerKey, &s.CallerKind, &s.CallerUID, &s.Cwd, &s.Title, &scope, &s.Mode,
		&s.ModelID, &forkedFrom, &s.State, &created, &updated)
	if err != nil {
		return Session{}, err
	}
	if scope.Valid {
		s.ToolScope = []byte(scope.String)
	}
	s.ForkedFrom = forkedFrom.String
	s.CreatedAt, s.UpdatedAt = fromMS(created), fromMS(updated)
	return s, nil
}

// Session returns the session id, or ErrNotFound.
func (s *Store) Session(ctx context.Context, id string) (Session, error) {
	sess, err := scanSession(s.queryRow(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, ErrNotFound
	}
	if err != nil {
		return Session{}, wrap("session", err)
	}
	return sess, nil
}

// ListQuery selects sessions for ListSessions.
type ListQuery struct {
	// OwnerKey restricts the list to one owner; empty lists every owner.
	OwnerKey string
	// Cwd, when set, keeps only sessions with exactly this cwd.
	Cwd *string
	// Limit bounds the result; zero means 200.
	Limit int
}

// ListSessions returns sessions, most recent activity first.
func (s *Store) ListSessions(ctx context.Context, q ListQuery) ([]Session, error) {
	var (
		where []string
		args  []any
	)
	if q.OwnerKey != "" {
		where = append(where, "owner_key = ?")
		args = append(args, q.OwnerKey)
	}
	if q.Cwd != nil {
		where = append(where, "cwd = ?")
		args = append(args, *q.Cwd)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 200
	}
	query := `SELECT ` + sessionCols + ` FROM sessions`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}
	query += " ORDER BY updated_at DESC, id DESC LIMIT ?"
	args = append(args, limit)
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, wrap("list sessions", err)
	}
	defer rows.Close()
	var out []Session
	for rows.Next() {
		sess, err := scanSession(rows)
		if err != nil {
			return nil, wrap("list sessions", err)
		}
		out = append(out, sess)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("list sessions", err)
	}
	return out, nil
}

// SessionChange names the session fields to change; nil fields stay.
type SessionChange struct {
	Mode    *string
	ModelID *string
	State   *string
	// Touch, when not zero, sets updated_at.
	Touch time.Time
}

// UpdateSession applies c to session id.
func (s *Store) UpdateSession(ctx context.Context, id string, c SessionChange) error {
	var (
		sets []string
		args []any
	)
	if c.Mode != nil {
		sets, args = append(sets, "mode = ?"), append(args, *c.Mode)
	}
	if c.ModelID != nil {
		sets, args = append(sets, "model_id = ?"), append(args, *c.ModelID)
	}
	if c.State != nil {
		sets, args = append(sets, "state = ?"), append(args, *c.State)
	}
	if !c.Touch.IsZero() {
		sets, args = append(sets, "updated_at = ?"), append(args, ms(c.Touch))
	}
	if len(sets) == 0 {
		return nil
	}
	args = append(args, id)
	return s.inTx(ctx, "update session", func(tx wtx) error {
		res, err := tx.ExecContext(ctx, `UPDATE sessions SET `+strings.Join(sets, ", ")+` WHERE id = ?`, args...)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// DeleteSession removes the session with its tasks, tool calls and events.
func (s *Store) DeleteSession(ctx context.Context, id string) error {
	return s.inTx(ctx, "delete session", func(tx wtx) error {
		// Children first: the cascade would do it, but explicit deletes keep
		// the work visible and independent of the foreign_keys pragma.
		for _, q := range []string{
			`DELETE FROM tool_calls WHERE task_id IN (SELECT id FROM tasks WHERE session_id = ?)`,
			`DELETE FROM events WHERE session_id = ?`,
			`DELETE FROM tasks WHERE session_id = ?`,
		} {
			if _, err := tx.ExecContext(ctx, q, id); err != nil {
				return err
			}
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// ForkSpec describes a fork: a new session that starts with copies of the
// source's finished tasks and their events.
type ForkSpec struct {
	Source string
	// Session is the new session; Created its session.created event (seq 1).
	Session Session
	Created Event
	// Finished are the task states that are copied.
	Finished []TaskState
	// SkipTypePrefixes are event types not copied ("consent.", "hook.").
	SkipTypePrefixes []string
	// NewTaskID makes the id of each copied task.
	NewTaskID func() string
}

// Fork creates spec.Session with copies of the source's finished tasks and
// their events (renumbered after the created event), in one transaction.
// It returns the number of tasks copied.
func (s *Store) Fork(ctx context.Context, spec ForkSpec) (int, error) {
	copied := 0
	err := s.inTx(ctx, "fork session", func(tx wtx) error {
		if err := insertSession(ctx, tx, spec.Session); err != nil {
			return err
		}
		if err := insertEvent(ctx, tx, spec.Created); err != nil {
			return err
		}
		states := make([]any, 0, len(spec.Finished)+1)
		states = append(states, spec.Source)
		for _, st := range spec.Finished {
			states = append(states, string(st))
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+taskCols+` FROM tasks WHERE session_id = ? AND state IN (`+
			placeholders(len(spec.Finished))+`) ORDER BY first_seq`, states...)
		if err != nil {
			return err
		}
		var tasks []Task
		for rows.Next() {
			t, err := scanTask(rows)
			if err != nil {
				rows.Close()
				return err
			}
			tasks = append(tasks, t)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		seq := spec.Created.Seq
		for _, t := range tasks {
			evs, err := queryEvents(ctx, tx.QueryContext, `SELECT session_id, seq, task_id, type, body, at FROM events
				WHERE session_id = ? AND task_id = ? ORDER BY seq`, spec.Source, t.ID)
			if err != nil {
				return err
			}
			newID := spec.NewTaskID()
			nt := t
			nt.ID, nt.SessionID = newID, spec.Session.ID
			nt.FirstSeq = seq + 1
			if err := insertTask(ctx, tx, nt); err != nil {
				return err
			}
			for _, ev := range evs {
				if hasAnyPrefix(ev.Type, spec.SkipTypePrefixes) {
					continue
				}
				seq++
				ev.SessionID, ev.TaskID, ev.Seq = spec.Session.ID, newID, seq
				if err := insertEvent(ctx, tx, ev); err != nil {
					return err
				}
			}
			copied++
		}
		return nil
	})
	return copied, err
}

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

func placeholders(n int) string {
	if n <= 0 {
		return "NULL"
	}
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func wrap(op string, err error) error { return fmt.Errorf("store: %s: %w", op, err) }
