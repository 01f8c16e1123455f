package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// TaskState is a task's persisted state. Which moves between states are
// legal is decided by the engine; the store only guards against a row
// having moved since the caller read it.
type TaskState string

const (
	TaskQueued           TaskState = "queued"
	TaskRunning          TaskState = "running"
	TaskCompleted        TaskState = "completed"
	TaskCancelled        TaskState = "cancelled"
	TaskFailed           TaskState = "failed"
	TaskRecoveryRequired TaskState = "recovery_required"
	TaskAbandoned        TaskState = "abandoned"
	TaskExpired          TaskState = "expired"
)

// Task is one row of the tasks table.
type Task struct {
	ID        string
	SessionID string
	OwnerKey  string
	CallerUID int
	State     TaskState
	// Content is the prompt's content array exactly as the client sent it.
	Content    json.RawMessage
	StopReason string
	// Error is the ErrorInfo JSON of a failed or recovery task, else nil.
	Error     json.RawMessage
	FirstSeq  int64
	CreatedAt time.Time
	StartedAt time.Time
	EndedAt   time.Time
}

const taskCols = `id, session_id, owner_key, caller_uid, state, content, stop_reason, error, first_seq,
	created_at, started_at, ended_at`

const (
	insertTaskSQL = `INSERT INTO tasks (` + taskCols + `) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)`
	touchTitleSQL = `UPDATE sessions SET updated_at = ?,
		title = CASE WHEN title = '' THEN ? ELSE title END WHERE id = ?`
	transitionSQL = `UPDATE tasks SET state = ?, %s = ?,
		stop_reason = CASE WHEN ? = '' THEN stop_reason ELSE ? END,
		error = COALESCE(?, error)
		WHERE id = ? AND state = ?`
	touchSessionSQL = `UPDATE sessions SET updated_at = ? WHERE id = ?`
)

var (
	transitionStartedSQL = fmt.Sprintf(transitionSQL, "started_at")
	transitionEndedSQL   = fmt.Sprintf(transitionSQL, "ended_at")
)

func scanTask(row interface{ Scan(...any) error }) (Task, error) {
	var (
		t              Task
		content        string
		errInfo        sql.NullString
		created        int64
		started, ended sql.NullInt64
		state          string
	)
	err := row.Scan(&t.ID, &t.SessionID, &t.OwnerKey, &t.CallerUID, &state, &content, &t.StopReason, &errInfo,
		&t.FirstSeq, &created, &started, &ended)
	if err != nil {
		return Task{}, err
	}
	t.State = TaskState(state)
	t.Content = json.RawMessage(content)
	if errInfo.Valid {
		t.Error = json.RawMessage(errInfo.String)
	}
	t.CreatedAt, t.StartedAt, t.EndedAt = fromMS(created), fromNullMS(started), fromNullMS(ended)
	return t, nil
}

func insertTask(ctx context.Context, tx wtx, t Task) error {
	var errInfo any
	if t.Error != nil {
		errInfo = string(t.Error)
	}
	_, err := tx.ExecContext(ctx, insertTaskSQL,
		t.ID, t.SessionID, t.OwnerKey, t.CallerUID, string(t.State), string(t.Content), t.StopReason, errInfo,
		t.FirstSeq, ms(t.CreatedAt), nullMS(t.StartedAt), nullMS(t.EndedAt))
	return err
}

// NewTask is what CreateTask writes: the task row (state queued), its
// task.queued event, and the session's activity time and — when the
// session has none yet — title.
type NewTask struct {
	Task   Task
	Queued Event
	Title  string
}

// CreateTask inserts a queued task with its first event in one transaction.
func (s *Store) CreateTask(ctx context.Context, n NewTask) error {
	return s.inTx(ctx, "create task", func(tx wtx) error {
		if err := insertTask(ctx, tx, n.Task); err != nil {
			return err
		}
		if err := insertEvent(ctx, tx, n.Queued); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, touchTitleSQL, ms(n.Task.CreatedAt), n.Title, n.Task.SessionID)
		if err != nil {
			return err
		}
		if c, _ := res.RowsAffected(); c == 0 {
			return ErrNotFound
		}
		return nil
	})
}

// Transition moves a task from one state to another.
type Transition struct {
	TaskID string
	From   TaskState
	To     TaskState
	At     time.Time
	// StopReason and Error are recorded when set.
	StopReason string
	Error      json.RawMessage
	// Started marks the move into running (started_at = At); otherwise a
	// terminal or recovery move sets ended_at = At.
	Started bool
}

// TransitionTask applies tr and appends ev (when not nil) in one
// transaction, and marks the session active at tr.At. It returns
// ErrConflict when the task is not in tr.From.
func (s *Store) TransitionTask(ctx context.Context, tr Transition, ev *Event) error {
	return s.inTx(ctx, "transition task", func(tx wtx) error {
		var errInfo any
		if tr.Error != nil {
			errInfo = string(tr.Error)
		}
		q := transitionEndedSQL
		if tr.Started {
			q = transitionStartedSQL
		}
		res, err := tx.ExecContext(ctx, q,
			string(tr.To), ms(tr.At), tr.StopReason, tr.StopReason, errInfo, tr.TaskID, string(tr.From))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return ErrConflict
		}
		if ev != nil {
			if err := insertEvent(ctx, tx, *ev); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, touchSessionSQL, ms(tr.At), ev.SessionID); err != nil {
				return err
			}
		}
		return nil
	})
}

// Task returns task id, or ErrNotFound.
func (s *Store) Task(ctx context.Context, id string) (Task, error) {
	t, err := scanTask(s.queryRow(ctx, `SELECT `+taskCols+` FROM tasks WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, ErrNotFound
	}
	if err != nil {
		return Task{}, wrap("task", err)
	}
	return t, nil
}

// TaskQuery selects tasks for Tasks.
type TaskQuery struct {
	// SessionID restricts the result to one session when set.
	SessionID string
	// States restricts the result to these states when set.
	States []TaskState
}

// Tasks returns the tasks matching q, oldest first (by creation).
func (s *Store) Tasks(ctx context.Context, q TaskQuery) ([]Task, error) {
	query := `SELECT ` + taskCols + ` FROM tasks WHERE 1=1`
	var args []any
	if q.SessionID != "" {
		query += " AND session_id = ?"
		args = append(args, q.SessionID)
	}
	if len(q.States) > 0 {
		query += " AND state IN (" + placeholders(len(q.States)) + ")"
		for _, st := range q.States {
			args = append(args, string(st))
		}
	}
	query += " ORDER BY created_at, id"
	rows, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, wrap("tasks", err)
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, wrap("tasks", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("tasks", err)
	}
	return out, nil
}

// ReplayStart returns the first_seq of the turns-th most recent task of
// the session (the first event a replay of the last turns turns sends),
// or 1 when the session has fewer tasks.
func (s *Store) ReplayStart(ctx context.Context, sessionID string, turns int) (int64, error) {
	var seq sql.NullInt64
	err := s.queryRow(ctx, `SELECT MIN(first_seq) FROM (SELECT first_seq FROM tasks
		WHERE session_id = ? ORDER BY first_seq DESC LIMIT ?)`, sessionID, turns).Scan(&seq)
	if err != nil {
		return 0, wrap("replay start", err)
	}
	if !seq.Valid {
		return 1, nil
	}
	return seq.Int64, nil
}

// ToolCall is one row of the tool_calls table.
type ToolCall struct {
	TaskID       string
	ID           string
	Name         string
	DispatchedAt time.Time
	SettledAt    time.Time
	Outcome      string
}

// ToolCalls returns the tool calls of a task in id order.
func (s *Store) ToolCalls(ctx context.Context, taskID string) ([]ToolCall, error) {
	rows, err := s.query(ctx, `SELECT task_id, id, name, dispatched_at, settled_at, outcome
		FROM tool_calls WHERE task_id = ? ORDER BY id`, taskID)
	if err != nil {
		return nil, wrap("tool calls", err)
	}
	defer rows.Close()
	var out []ToolCall
	for rows.Next() {
		var (
			c                   ToolCall
			dispatched, settled sql.NullInt64
		)
		if err := rows.Scan(&c.TaskID, &c.ID, &c.Name, &dispatched, &settled, &c.Outcome); err != nil {
			return nil, wrap("tool calls", err)
		}
		c.DispatchedAt, c.SettledAt = fromNullMS(dispatched), fromNullMS(settled)
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("tool calls", err)
	}
	return out, nil
}
