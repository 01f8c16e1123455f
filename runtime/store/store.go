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
	"sync"
	"time"

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

	// Prepared statements by query text, per database. Queries are a small
	// fixed set; preparing once keeps SQL parsing off the hot path.
	wStmts, rStmts stmtCache

	// The checkpointer copies the WAL into the database in the background,
	// so the fsyncs of a checkpoint never land on a write the engine waits for.
	stopCheckpoints chan struct{}
	checkpointsDone chan struct{}
}

// checkpointEvery is how often the background checkpointer runs.
const checkpointEvery = time.Second

type stmtCache struct {
	mu sync.Mutex // guards m
	m  map[string]*sql.Stmt
}

func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.m[query]; ok {
		return st, nil
	}
	st, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if c.m == nil {
		c.m = map[string]*sql.Stmt{}
	}
	c.m[query] = st
	return st, nil
}

// lookup returns an already prepared statement, or nil.
func (c *stmtCache) lookup(query string) *sql.Stmt {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[query]
}

func (c *stmtCache) close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, st := range c.m {
		errs = append(errs, st.Close())
	}
	c.m = nil
	return errors.Join(errs...)
}

// query runs a read through a prepared statement.
func (s *Store) query(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := s.rStmts.get(ctx, s.r, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

// queryRow is query for one row.
func (s *Store) queryRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := s.rStmts.get(ctx, s.r, query)
	if err != nil {
		// Let Scan report the error: run the query unprepared.
		return s.r.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// wtx is a write transaction that runs its statements prepared.
type wtx struct {
	*sql.Tx
	s *Store
}

// hotWrites are the statements of the event log and task moves.
var hotWrites = []string{insertEventSQL, insertToolCallSQL, markDispatchedSQL, markSettledSQL, insertTaskSQL,
	touchTitleSQL, transitionStartedSQL, transitionEndedSQL, touchSessionSQL, insertSessionSQL}

// ExecContext runs a prepared hot statement, or query as is.
func (t wtx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := t.s.wStmts.lookup(query); st != nil {
		return t.Tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.Tx.ExecContext(ctx, query, args...)
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
	// Checkpoints run in the background instead (see checkpoints); if the
	// writer connection is ever replaced, SQLite's automatic checkpoint
	// comes back on that connection, which is slower but still correct.
	if _, err := w.ExecContext(ctx, "PRAGMA wal_autocheckpoint = 0"); err != nil {
		w.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	r, err := sqlitedb.Open(ctx, path, migrations)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("store: %w", err)
	}
	r.SetMaxOpenConns(maxReaders)
	r.SetMaxIdleConns(2)
	s := &Store{w: w, r: r}
	// Writes are prepared here, before any transaction holds the single
	// writer connection (preparing inside one would wait for itself).
	for _, q := range hotWrites {
		if _, err := s.wStmts.get(ctx, w, q); err != nil {
			s.r.Close()
			s.w.Close()
			return nil, fmt.Errorf("store: prepare: %w", err)
		}
	}
	s.stopCheckpoints, s.checkpointsDone = make(chan struct{}), make(chan struct{})
	go s.checkpoints()
	return s, nil
}

// checkpoints runs a passive checkpoint every checkpointEvery until Close.
func (s *Store) checkpoints() {
	defer close(s.checkpointsDone)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-s.stopCheckpoints:
			return
		case <-t.C:
			// Errors (busy) are harmless: the next tick tries again.
			s.r.Exec("PRAGMA wal_checkpoint(PASSIVE)")
		}
	}
}

// Close stops the checkpointer, checkpoints once more and closes the
// database. Writes have already committed when their methods returned.
func (s *Store) Close() error {
	close(s.stopCheckpoints)
	<-s.checkpointsDone
	s.r.Exec("PRAGMA wal_checkpoint(PASSIVE)")
	errs := []error{s.rStmts.close(), s.wStmts.close(), s.r.Close(), s.w.Close()}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

// inTx runs fn in one write transaction and commits it.
func (s *Store) inTx(ctx context.Context, op string, fn func(tx wtx) error) error {
	sqlTx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: %s: %w", op, err)
	}
	tx := wtx{sqlTx, s}
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
