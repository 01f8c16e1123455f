package appdb

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"sync"
	"testing"

	"github.com/agentoslab/agentlab/runtime/sqlitedb"
)

func open(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sqlitedb.Open(context.Background(), path, []sqlitedb.Migration{{Version: 1, SQL: `CREATE TABLE n (v INTEGER NOT NULL)`}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, db *sql.DB) int {
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM n`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestTxCommitsAndRollsBack(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	if err := Tx(ctx, db, func(q Querier) error {
		_, err := q.ExecContext(ctx, `INSERT INTO n VALUES (1)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	if err := Tx(ctx, db, func(q Querier) error {
		if _, err := q.ExecContext(ctx, `INSERT INTO n VALUES (2)`); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	func() {
		defer func() { _ = recover() }()
		_ = Tx(ctx, db, func(q Querier) error {
			_, _ = q.ExecContext(ctx, `INSERT INTO n VALUES (3)`)
			panic("bug")
		})
	}()
	if n := count(t, db); n != 1 {
		t.Fatalf("rows = %d, want 1", n)
	}
}

// Two handles on one file stand in for the app's server and its debug
// command: read-then-write transactions from both never fail with BUSY.
func TestTxConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "b.db")
	a, b := open(t, path), open(t, path)
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 0; i < 20; i++ {
		for _, db := range []*sql.DB{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- Tx(ctx, db, func(q Querier) error {
					var n int
					if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM n`).Scan(&n); err != nil {
						return err
					}
					_, err := q.ExecContext(ctx, `INSERT INTO n VALUES (?)`, n)
					return err
				})
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := count(t, a); n != 40 {
		t.Fatalf("rows = %d", n)
	}
}
