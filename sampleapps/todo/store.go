package todo

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

var migrations = []sqlitedb.Migration{{Version: 1, SQL: `
CREATE TABLE todos (
	id         TEXT PRIMARY KEY CHECK (length(id) = 8),
	title      TEXT NOT NULL,
	notes      TEXT NOT NULL DEFAULT '',
	status     TEXT NOT NULL CHECK (status IN ('todo','doing','done','shelved')),
	priority   TEXT NOT NULL CHECK (priority IN ('high','medium','low')),
	due_date   TEXT,    -- YYYY-MM-DD of an all-day due
	due_at     INTEGER, -- unix ms of a timed due
	tags       TEXT NOT NULL DEFAULT '[]', -- JSON array of strings
	parent_id  TEXT REFERENCES todos(id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL, -- creation order
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL,
	done_at    INTEGER,
	CHECK (due_date IS NULL OR due_at IS NULL)
);
CREATE INDEX todos_parent ON todos(parent_id);`}}

// due is a to-do's due date: none, an all-day date, or a moment.
type due struct {
	Set    bool
	AllDay bool
	Date   apptool.Date // all-day
	At     time.Time    // timed
}

// date is the local date the due falls on.
func (d due) date(loc *time.Location) apptool.Date {
	if d.AllDay {
		return d.Date
	}
	return apptool.DateOf(d.At, loc)
}

// instant orders dues: an all-day due counts from the start of its day.
func (d due) instant(loc *time.Location) time.Time {
	if d.AllDay {
		return apptool.StartOfDay(d.Date, loc)
	}
	return d.At
}

// todo is one stored to-do.
type todo struct {
	ID        string
	Title     string
	Notes     string
	Status    string
	Priority  string
	Due       due
	Tags      []string
	ParentID  string
	Seq       int64
	CreatedAt time.Time
	UpdatedAt time.Time
	DoneAt    time.Time
}

func (t *todo) open() bool { return t.Status == "todo" || t.Status == "doing" }

const todoCols = `id, title, notes, status, priority, due_date, due_at, tags, parent_id, seq, created_at, updated_at, done_at`

func loadTodos(ctx context.Context, q appdb.Querier) ([]*todo, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+todoCols+` FROM todos ORDER BY seq`)
	if err != nil {
		return nil, fmt.Errorf("load todos: %w", err)
	}
	defer rows.Close()
	var out []*todo
	for rows.Next() {
		var t todo
		var dueDate, parent sql.NullString
		var dueAt, doneAt sql.NullInt64
		var tags string
		var created, updated int64
		if err := rows.Scan(&t.ID, &t.Title, &t.Notes, &t.Status, &t.Priority, &dueDate, &dueAt, &tags, &parent, &t.Seq,
			&created, &updated, &doneAt); err != nil {
			return nil, fmt.Errorf("load todos: %w", err)
		}
		switch {
		case dueDate.Valid:
			d, ok := apptool.ParseDate(dueDate.String)
			if !ok {
				return nil, fmt.Errorf("load todos: %s: bad due_date %q", t.ID, dueDate.String)
			}
			t.Due = due{Set: true, AllDay: true, Date: d}
		case dueAt.Valid:
			t.Due = due{Set: true, At: time.UnixMilli(dueAt.Int64)}
		}
		if err := json.Unmarshal([]byte(tags), &t.Tags); err != nil {
			return nil, fmt.Errorf("load todos: %s: tags: %w", t.ID, err)
		}
		t.ParentID = parent.String
		t.CreatedAt, t.UpdatedAt = time.UnixMilli(created), time.UnixMilli(updated)
		if doneAt.Valid {
			t.DoneAt = time.UnixMilli(doneAt.Int64)
		}
		out = append(out, &t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load todos: %w", err)
	}
	return out, nil
}

func columns(t *todo) []any {
	var dueDate, dueAt, parent, doneAt any
	if t.Due.Set && t.Due.AllDay {
		dueDate = t.Due.Date.String()
	} else if t.Due.Set {
		dueAt = t.Due.At.UnixMilli()
	}
	if t.ParentID != "" {
		parent = t.ParentID
	}
	if !t.DoneAt.IsZero() {
		doneAt = t.DoneAt.UnixMilli()
	}
	tags := t.Tags
	if tags == nil {
		tags = []string{}
	}
	tj, _ := json.Marshal(tags)
	return []any{t.Title, t.Notes, t.Status, t.Priority, dueDate, dueAt, string(tj), parent, t.UpdatedAt.UnixMilli(), doneAt}
}

func insertTodo(ctx context.Context, q appdb.Querier, t *todo) error {
	args := append([]any{t.ID, t.Seq, t.CreatedAt.UnixMilli()}, columns(t)...)
	_, err := q.ExecContext(ctx, `INSERT INTO todos (id, seq, created_at, title, notes, status, priority, due_date, due_at, tags,
		parent_id, updated_at, done_at) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)`, args...)
	if err != nil {
		return fmt.Errorf("insert todo: %w", err)
	}
	return nil
}

func updateTodo(ctx context.Context, q appdb.Querier, t *todo) error {
	_, err := q.ExecContext(ctx, `UPDATE todos SET title=?, notes=?, status=?, priority=?, due_date=?, due_at=?, tags=?,
		parent_id=?, updated_at=?, done_at=? WHERE id=?`, append(columns(t), t.ID)...)
	if err != nil {
		return fmt.Errorf("update todo %s: %w", t.ID, err)
	}
	return nil
}

// deleteTodo deletes a to-do; its subtasks go with it (ON DELETE CASCADE).
func deleteTodo(ctx context.Context, q appdb.Querier, id string) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM todos WHERE id=?`, id); err != nil {
		return fmt.Errorf("delete todo %s: %w", id, err)
	}
	return nil
}

func countTodos(ctx context.Context, q appdb.Querier) (int, error) {
	var n int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM todos`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count todos: %w", err)
	}
	return n, nil
}
