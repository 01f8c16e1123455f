package notes

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/runtime/sqlitedb"
	"github.com/agentoslab/agentlab/sampleapps/apptool/appdb"
)

var migrations = []sqlitedb.Migration{{Version: 1, SQL: `
CREATE TABLE notes (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	title      TEXT    NOT NULL DEFAULT '',
	content    TEXT    NOT NULL DEFAULT '',
	tags       TEXT    NOT NULL DEFAULT '[]',
	color      TEXT    NOT NULL DEFAULT 'default',
	pinned     INTEGER NOT NULL DEFAULT 0,
	archived   INTEGER NOT NULL DEFAULT 0,
	trashed    INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE INDEX notes_order ON notes (trashed, archived, pinned DESC, updated_at DESC);
`}}

// note is one stored note.
type note struct {
	ID        int64
	Title     string
	Content   string
	Tags      []string
	Color     string
	Pinned    bool
	Archived  bool
	Trashed   bool
	CreatedAt time.Time
	UpdatedAt time.Time
}

const noteColumns = `id, title, content, tags, color, pinned, archived, trashed, created_at, updated_at`

type scanner interface{ Scan(dest ...any) error }

func scanNote(s scanner) (note, error) {
	var n note
	var tags string
	var created, updated int64
	if err := s.Scan(&n.ID, &n.Title, &n.Content, &tags, &n.Color, &n.Pinned, &n.Archived, &n.Trashed, &created, &updated); err != nil {
		return note{}, err
	}
	if err := json.Unmarshal([]byte(tags), &n.Tags); err != nil {
		return note{}, fmt.Errorf("note %d tags: %w", n.ID, err)
	}
	if n.Tags == nil {
		n.Tags = []string{}
	}
	n.CreatedAt = time.UnixMilli(created)
	n.UpdatedAt = time.UnixMilli(updated)
	return n, nil
}

func encodeTags(tags []string) string {
	if tags == nil {
		tags = []string{}
	}
	b, _ := json.Marshal(tags)
	return string(b)
}

// errNoNote is returned by getNote for an unknown id.
var errNoNote = errors.New("no such note")

func (a *App) getNote(ctx context.Context, q appdb.Querier, id int64) (note, error) {
	n, err := scanNote(q.QueryRowContext(ctx, `SELECT `+noteColumns+` FROM notes WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return note{}, errNoNote
	}
	if err != nil {
		return note{}, fmt.Errorf("get note %d: %w", id, err)
	}
	return n, nil
}

func (a *App) insertNote(ctx context.Context, q appdb.Querier, n note) (note, error) {
	now := a.clock()
	n.CreatedAt, n.UpdatedAt = now, now
	if n.Color == "" {
		n.Color = "default"
	}
	if n.Tags == nil {
		n.Tags = []string{}
	}
	res, err := q.ExecContext(ctx, `INSERT INTO notes (title, content, tags, color, pinned, archived, trashed, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		n.Title, n.Content, encodeTags(n.Tags), n.Color, n.Pinned, n.Archived, n.Trashed, now.UnixMilli(), now.UnixMilli())
	if err != nil {
		return note{}, fmt.Errorf("insert note: %w", err)
	}
	n.ID, err = res.LastInsertId()
	if err != nil {
		return note{}, fmt.Errorf("insert note: %w", err)
	}
	return n, nil
}

// saveNote writes every field of n and stamps updated_at.
func (a *App) saveNote(ctx context.Context, q appdb.Querier, n note) (note, error) {
	n.UpdatedAt = a.clock()
	_, err := q.ExecContext(ctx, `UPDATE notes SET title = ?, content = ?, tags = ?, color = ?, pinned = ?, archived = ?, trashed = ?, updated_at = ? WHERE id = ?`,
		n.Title, n.Content, encodeTags(n.Tags), n.Color, n.Pinned, n.Archived, n.Trashed, n.UpdatedAt.UnixMilli(), n.ID)
	if err != nil {
		return note{}, fmt.Errorf("save note %d: %w", n.ID, err)
	}
	return n, nil
}

func (a *App) deleteNote(ctx context.Context, q appdb.Querier, id int64) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM notes WHERE id = ?`, id); err != nil {
		return fmt.Errorf("delete note %d: %w", id, err)
	}
	return nil
}

// listFilter selects notes for note_list.
type listFilter struct {
	Tag      string
	Pinned   *bool
	Archived *bool // nil: both
	Trashed  bool
}

func (f listFilter) where() (string, []any) {
	conds := []string{"trashed = ?"}
	args := []any{f.Trashed}
	if f.Archived != nil {
		conds = append(conds, "archived = ?")
		args = append(args, *f.Archived)
	}
	if f.Pinned != nil {
		conds = append(conds, "pinned = ?")
		args = append(args, *f.Pinned)
	}
	if f.Tag != "" {
		conds = append(conds, "EXISTS (SELECT 1 FROM json_each(notes.tags) WHERE json_each.value = ?)")
		args = append(args, f.Tag)
	}
	return strings.Join(conds, " AND "), args
}

const noteOrder = ` ORDER BY pinned DESC, updated_at DESC, id DESC`

func (a *App) listNotes(ctx context.Context, f listFilter, limit, offset int64) ([]note, int64, error) {
	where, args := f.where()
	var total int64
	if err := a.db.QueryRowContext(ctx, `SELECT count(*) FROM notes WHERE `+where, args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count notes: %w", err)
	}
	notes, err := a.queryNotes(ctx, `SELECT `+noteColumns+` FROM notes WHERE `+where+noteOrder+` LIMIT ? OFFSET ?`, append(args, limit, offset)...)
	return notes, total, err
}

func (a *App) queryNotes(ctx context.Context, q string, args ...any) ([]note, error) {
	rows, err := a.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("query notes: %w", err)
	}
	defer rows.Close()
	var out []note
	for rows.Next() {
		n, err := scanNote(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("query notes: %w", err)
	}
	return out, nil
}

// allNotes returns every note (trashed too when withTrashed) in list order.
func (a *App) allNotes(ctx context.Context, withTrashed bool) ([]note, error) {
	q := `SELECT ` + noteColumns + ` FROM notes`
	if !withTrashed {
		q += ` WHERE trashed = 0`
	}
	return a.queryNotes(ctx, q+noteOrder)
}
