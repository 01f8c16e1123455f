// Package todo is the sample to-do app (spec §9.4) without any SDK: the
// to-do tools the runtime calls, over the app's own SQLite store, and the
// debug commands of its binary.
//
// A to-do has an 8-hex-character id, a status (todo, doing, done,
// shelved), a priority, an optional due date — all-day ("2026-10-12") or a
// moment with an offset — tags, and at most one level of subtasks.
// "Overdue", "today" and "this week" (Monday to Sunday) use the device
// time zone; an all-day due is overdue from the next local day.
package todo

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agentoslab/agentlab/runtime/sqlitedb"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/apptool/appdb"
)

// Plugin identity (spec §9.0: plugin name = MCP server name = app name).
const (
	Package = "org.agentos.sample.todo"
	Plugin  = "todo"
	Server  = "todo"
	// Service is the MCP service named in plugin.json.
	Service = "org.agentos.sample.todo.TodoMcpService"
)

// Limits of the app.
const (
	MaxTodos     = 5000
	MaxTitle     = 200
	MaxNotes     = 10000
	MaxTags      = 20
	MaxTag       = 40
	MaxQuery     = 200
	notesPreview = 200
	minDueYear   = 1970
	maxDueYear   = 2200
)

// Options configure an App. The zero value works.
type Options struct {
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Location is the device time zone; nil means time.Local.
	Location *time.Location
	// Logger receives operational messages; nil discards them. To-do
	// contents and tool arguments are never logged.
	Logger *slog.Logger
	// Rand is the source of to-do ids; nil means crypto/rand. Tests pass a
	// seeded source for stable ids.
	Rand io.Reader
}

// App is an opened to-do app.
type App struct {
	db    *sql.DB
	now   func() time.Time
	loc   *time.Location
	log   *slog.Logger
	rand  io.Reader
	tools []apptool.Tool
}

// Open opens (creating if needed) the to-do store <dataDir>/todo.db.
func Open(ctx context.Context, dataDir string, opts *Options) (*App, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Rand == nil {
		o.Rand = rand.Reader
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("todo: %w", err)
	}
	db, err := sqlitedb.Open(ctx, filepath.Join(dataDir, "todo.db"), migrations)
	if err != nil {
		return nil, fmt.Errorf("todo: %w", err)
	}
	a := &App{db: db, now: o.Clock, loc: o.Location, log: o.Logger, rand: o.Rand}
	a.tools = a.buildTools()
	return a, nil
}

// Close closes the store.
func (a *App) Close() error { return a.db.Close() }

// Tools returns the app's tools in catalog order.
func (a *App) Tools() []apptool.Tool { return a.tools }

// state is every to-do inside one transaction.
type state struct {
	ctx   context.Context
	q     appdb.Querier
	app   *App
	now   time.Time
	today apptool.Date
	loc   *time.Location
	todos []*todo
	byID  map[string]*todo
}

// do runs fn over the current to-dos in one immediate transaction; an
// error from fn rolls everything back.
func (a *App) do(ctx context.Context, fn func(s *state) error) error {
	return appdb.Tx(ctx, a.db, func(q appdb.Querier) error {
		all, err := loadTodos(ctx, q)
		if err != nil {
			return err
		}
		now := a.now().Truncate(time.Second)
		s := &state{ctx: ctx, q: q, app: a, now: now, today: apptool.DateOf(now, a.loc), loc: a.loc, todos: all, byID: map[string]*todo{}}
		for _, t := range all {
			s.byID[t.ID] = t
		}
		return fn(s)
	})
}

func (s *state) find(id string) (*todo, error) {
	if t, ok := s.byID[id]; ok {
		return t, nil
	}
	return nil, apptool.Errorf("No todo with id %q", id)
}

func (s *state) children(id string) []*todo {
	var out []*todo
	for _, t := range s.todos {
		if t.ParentID == id {
			out = append(out, t)
		}
	}
	return out
}

// newID draws a fresh 8-hex-character id.
func (s *state) newID() (string, error) {
	var b [4]byte
	for i := 0; i < 100; i++ {
		if _, err := io.ReadFull(s.app.rand, b[:]); err != nil {
			return "", fmt.Errorf("new id: %w", err)
		}
		id := hex.EncodeToString(b[:])
		if _, taken := s.byID[id]; !taken {
			return id, nil
		}
	}
	return "", fmt.Errorf("new id: no free id after 100 draws")
}

func (s *state) add(t *todo) error {
	if len(s.todos) >= MaxTodos {
		return apptool.Errorf("There are already %d todos, the most this app keeps; delete some first.", MaxTodos)
	}
	id, err := s.newID()
	if err != nil {
		return err
	}
	t.ID = id
	t.CreatedAt, t.UpdatedAt = s.now, s.now
	if t.Status == "done" {
		t.DoneAt = s.now
	}
	var seq int64
	for _, o := range s.todos {
		seq = max(seq, o.Seq)
	}
	t.Seq = seq + 1
	if err := insertTodo(s.ctx, s.q, t); err != nil {
		return err
	}
	s.todos = append(s.todos, t)
	s.byID[t.ID] = t
	return nil
}

// setStatus changes the status and keeps done_at: set on entering done,
// cleared on leaving it.
func (s *state) setStatus(t *todo, status string) {
	if t.Status == status {
		return
	}
	if status == "done" {
		t.DoneAt = s.now
	} else {
		t.DoneAt = time.Time{}
	}
	t.Status = status
}

func (s *state) save(t *todo) error {
	t.UpdatedAt = s.now
	return updateTodo(s.ctx, s.q, t)
}

// remove deletes t and its subtasks and returns how many went.
func (s *state) remove(t *todo) (int, error) {
	n := 1 + len(s.children(t.ID))
	if err := deleteTodo(s.ctx, s.q, t.ID); err != nil {
		return 0, err
	}
	kept := s.todos[:0]
	for _, o := range s.todos {
		if o.ID == t.ID || o.ParentID == t.ID {
			delete(s.byID, o.ID)
			continue
		}
		kept = append(kept, o)
	}
	s.todos = kept
	return n, nil
}
