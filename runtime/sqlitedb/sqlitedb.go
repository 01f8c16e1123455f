// Package sqlitedb opens SQLite databases (modernc.org/sqlite, pure Go) the
// way every part of the project wants them: WAL journal, a busy timeout,
// foreign keys on, and versioned migrations applied in one transaction each.
// The runtime's store and the sample apps' stores both use it.
package sqlitedb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Migration is one schema step. Version numbers start at 1 and have no gaps.
type Migration struct {
	Version int
	SQL     string
}

// Open opens (creating if needed) the database at path and applies the
// migrations not yet recorded in PRAGMA user_version. A database newer than
// the migrations known to this binary is refused, so an old binary never
// writes into a schema it does not understand.
func Open(ctx context.Context, path string, migrations []Migration) (*sql.DB, error) {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "busy_timeout(5000)", "foreign_keys(ON)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	// SQLite reads "file:" DSNs as URIs: escape the path so '?', '#' and
	// '%' in a directory name cannot cut it short.
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: path}).EscapedPath()+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	if err := migrate(ctx, db, migrations); err != nil {
		db.Close()
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	return db, nil
}

func migrate(ctx context.Context, db *sql.DB, migrations []Migration) error {
	var have int
	if err := db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&have); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if have > len(migrations) {
		return fmt.Errorf("schema version %d is newer than this program knows (%d)", have, len(migrations))
	}
	for i, m := range migrations {
		if m.Version != i+1 {
			panic(fmt.Sprintf("sqlitedb: migration %d has version %d", i, m.Version))
		}
		if m.Version <= have {
			continue
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migration %d: %w", m.Version, err)
		}
		if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", m.Version, err)
		}
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", m.Version)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %d: %w", m.Version, err)
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %d: %w", m.Version, err)
		}
	}
	return nil
}
