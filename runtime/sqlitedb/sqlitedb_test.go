package sqlitedb

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

func TestOpenMigratesOnceAndRefusesNewer(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	v1 := []Migration{{1, "CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT)"}}
	db, err := Open(ctx, path, v1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("INSERT INTO a(v) VALUES('kept')"); err != nil {
		t.Fatal(err)
	}
	var mode string
	db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	if mode != "wal" {
		t.Errorf("journal_mode = %q, want wal", mode)
	}
	db.Close()

	v2 := append(v1, Migration{2, "ALTER TABLE a ADD COLUMN w TEXT DEFAULT 'x'"})
	db, err = Open(ctx, path, v2)
	if err != nil {
		t.Fatal(err)
	}
	var v, w string
	if err := db.QueryRow("SELECT v, w FROM a").Scan(&v, &w); err != nil || v != "kept" || w != "x" {
		t.Fatalf("after migration: %q %q %v", v, w, err)
	}
	db.Close()

	if _, err := Open(ctx, path, v1); err == nil {
		t.Fatal("an older binary opened a newer schema")
	}
}

func TestFailedMigrationLeavesVersion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.db")
	bad := []Migration{{1, "CREATE TABLE a(id INTEGER)"}, {2, "THIS IS NOT SQL"}}
	if _, err := Open(ctx, path, bad); err == nil {
		t.Fatal("bad migration accepted")
	}
	db, err := Open(ctx, path, bad[:1])
	if err != nil {
		t.Fatalf("version 1 must still open: %v", err)
	}
	db.Close()
}

func TestOpenPathWithURICharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a #1?b%20c")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "x.db")
	db, err := Open(context.Background(), path, []Migration{{1, "CREATE TABLE a(id INTEGER)"}})
	if err != nil {
		t.Fatal(err)
	}
	var mode string
	db.QueryRow("PRAGMA journal_mode").Scan(&mode)
	db.Close()
	if mode != "wal" {
		t.Errorf("journal_mode = %q: the DSN's query was lost", mode)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not at its path: %v", err)
	}
}
