// Package appdb runs a sample app's SQLite work in one transaction that
// takes the write lock up front (BEGIN IMMEDIATE). The app's MCP server and
// its debug command line are separate processes on one database; a
// deferred transaction that reads and then writes can fail at once with
// SQLITE_BUSY when the other process wrote in between, while an immediate
// one waits out the busy timeout instead.
package appdb

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
)

// Querier is what a transaction body may use.
type Querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Tx runs fn in an immediate transaction on its own connection. It commits
// when fn returns nil and rolls back otherwise, so a failed call leaves the
// database as it was. fn's error is returned unchanged.
func Tx(ctx context.Context, db *sql.DB, fn func(q Querier) error) (err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	done := false
	defer func() {
		if done {
			return
		}
		// A panic or an error: undo, on a context that is not cancelled, and
		// drop the connection if even that fails so it never returns to the
		// pool inside a transaction.
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	if err := fn(conn); err != nil {
		return err
	}
	if _, err := conn.ExecContext(ctx, "COMMIT"); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	done = true
	return nil
}

// ErrNoRows is sql.ErrNoRows, re-exported so callers need not import
// database/sql to match it.
var ErrNoRows = sql.ErrNoRows

// IsNoRows reports whether err is sql.ErrNoRows.
func IsNoRows(err error) bool { return errors.Is(err, sql.ErrNoRows) }
