// Package notes is the sample notes app (spec §9.3) without any SDK: the
// provider side (the note tools the runtime calls, over the app's own
// SQLite store) and the caller side ("schedule with AgentOS": the prompt
// builder, the Agent seam, and the run report).
//
// The provider SDK shell (sampleapps/internal/shell) registers Tools();
// the caller SDK shell (sampleapps/internal/gateway) is the Agent in
// Options. Debug holds the commands of the app's binary;
// Rounds lets its one-shot processes watch and stop a running round.
package notes

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/agentoslab/agentlab/runtime/sqlitedb"
	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// Plugin identity (spec §9.0: plugin name = MCP server name = app name).
const (
	Package = "org.agentos.sample.notes"
	Plugin  = "notes"
	Server  = "notes"
	// Service is the MCP service named in plugin.json.
	Service = "org.agentos.sample.notes.NotesMcpService"
)

// Options configure an App. The zero value works.
type Options struct {
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Location is the device time zone; nil means time.Local.
	Location *time.Location
	// Language is the device language as a BCP 47 tag ("zh-CN"); empty
	// means "en".
	Language string
	// Logger receives operational messages; nil discards them. Note
	// contents are never logged.
	Logger *slog.Logger
	// Agent runs "schedule with AgentOS"; nil means no AgentOS connection
	// is available and ask_agent says so. The caller SDK shell sets it.
	Agent Agent
	// AskTimeout bounds one ask_agent run; zero means 150 s.
	AskTimeout time.Duration
}

// App is an opened notes app.
type App struct {
	db       *sql.DB
	now      func() time.Time
	loc      *time.Location
	lang     string
	log      *slog.Logger
	agent    Agent
	askLimit time.Duration
	rounds   *Rounds
	tools    []apptool.Tool
}

// Open opens (creating if needed) the notes store <dataDir>/notes.db.
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
	if o.Language == "" {
		o.Language = "en"
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.AskTimeout <= 0 {
		o.AskTimeout = 150 * time.Second
	}
	db, err := sqlitedb.Open(ctx, filepath.Join(dataDir, "notes.db"), migrations)
	if err != nil {
		return nil, fmt.Errorf("notes: %w", err)
	}
	a := &App{db: db, now: o.Clock, loc: o.Location, lang: o.Language, log: o.Logger, agent: o.Agent, askLimit: o.AskTimeout, rounds: NewRounds(dataDir)}
	a.tools = a.buildTools()
	return a, nil
}

// Close closes the store.
func (a *App) Close() error { return a.db.Close() }

// Tools returns the app's tools in catalog order.
func (a *App) Tools() []apptool.Tool { return a.tools }

// clock returns the current time in the device zone, to the millisecond
// (the store's resolution).
func (a *App) clock() time.Time { return a.now().In(a.loc).Truncate(time.Millisecond) }
