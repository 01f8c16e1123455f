// Package store is the runtime's durable state in SQLite (modernc.org/sqlite
// through runtime/sqlitedb, WAL journal): sessions, tasks, tool calls and
// the per-session event log (spec §2.5–§2.7).
//
// Every write is one transaction that has committed when the method
// returns, so the engine acts on a fact only after it would survive a
// crash. Writes go through a single writer connection (SQLite allows one
// writer at a time; one connection avoids busy waits between sessions),
// reads through a small pool that sees every committed write.
//
// The store keeps values as they were written. Interpreting them — an
// unreadable toolScope meaning "no tools", an unknown mode meaning chat,
// which task-state moves are legal — is the engine's job.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/agentoslab/agentlab/runtime/sqlitedb"
)

// ErrNotFound reports a missing session or task.
var ErrNotFound = errors.New("store: not found")

// ErrConflict reports that a task was not in the state a transition
// expected, so nothing was written.
var ErrConflict = errors.New("store: state conflict")

// Store is an open runtime database. It is safe for concurrent use.
type Store struct {
	w *sql.DB // one connection: every write
	r *sql.DB // pool: reads

	appendStmt *sql.Stmt // hot path of the event log, on w
}

// maxReaders bounds the read pool; replays and lists are short.
const maxReaders = 4

// Open opens (creating and migrating if needed) the database at path.
func Open(ctx context.Context, path string) (*Store, error) {
	w, err := sqlitedb.Open(ctx, path, migrations)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	r, err := sqlitedb.Open(ctx, path, migrations)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	r.SetMaxOpenConns(maxReaders)
	r.SetMaxIdleConns(2)
	s := &Store{w: w, r: r}
	s.appendStmt, err = w.PrepareContext(ctx, insertEventSQL)
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("store: prepare: %w", err)
	}
	return s, nil
}

// Close closes the database. Pending writes have already committed.
func (s *Store) Close() error {
	var errs []error
	if s.appendStmt != nil {
		errs = append(errs, s.appendStmt.Close())
	}
	errs = append(errs, s.r.Close(), s.w.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// inTx runs fn in one write transaction and commits it.
func (s *Store) inTx(ctx context.Context, op string, fn func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
			return err
		}
		return fmt.Errorf("store: %s: %w", op, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: %s: commit: %w", op, err)
	}
	return nil
}

var migrations = []sqlitedb.Migration{
	{Version: 1, SQL: `
CREATE TABLE sessions (
	id          TEXT PRIMARY KEY,
	owner_key   TEXT NOT NULL,
	caller_kind TEXT NOT NULL,
	caller_uid  INTEGER NOT NULL,
	cwd         TEXT NOT NULL,
	title       TEXT NOT NULL DEFAULT '',
	tool_scope  TEXT,             -- JSON array; NULL = no toolScope
	mode        TEXT NOT NULL,
	model_id    TEXT NOT NULL DEFAULT '',
	forked_from TEXT,
	state       TEXT NOT NULL,    -- open | closed
	created_at  INTEGER NOT NULL, -- unix ms
	updated_at  INTEGER NOT NULL
);
CREATE INDEX sessions_by_owner ON sessions(owner_key, updated_at DESC);
CREATE INDEX sessions_by_activity ON sessions(updated_at DESC);

CREATE TABLE tasks (
	id          TEXT PRIMARY KEY,
	session_id  TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	owner_key   TEXT NOT NULL,
	caller_uid  INTEGER NOT NULL,
	state       TEXT NOT NULL,
	content     TEXT NOT NULL,    -- the prompt's content array, verbatim
	stop_reason TEXT NOT NULL DEFAULT '',
	error       TEXT,             -- ErrorInfo JSON
	first_seq   INTEGER NOT NULL, -- seq of its task.queued event
	created_at  INTEGER NOT NULL,
	started_at  INTEGER,
	ended_at    INTEGER
);
CREATE INDEX tasks_by_session ON tasks(session_id, first_seq);
CREATE INDEX tasks_by_state ON tasks(state);

CREATE TABLE tool_calls (
	task_id       TEXT NOT NULL REFERENCES tasks(id) ON DELETE CASCADE,
	id            TEXT NOT NULL,
	name          TEXT NOT NULL,
	dispatched_at INTEGER,
	settled_at    INTEGER,
	outcome       TEXT NOT NULL DEFAULT '',
	PRIMARY KEY (task_id, id)
) WITHOUT ROWID;

CREATE TABLE events (
	session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	task_id    TEXT NOT NULL DEFAULT '',
	type       TEXT NOT NULL,
	body       TEXT NOT NULL,
	at         INTEGER NOT NULL,
	PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
`},
}
