// Package sms is the sample SMS app (spec §9.5) without any SDK and
// without telephony: a seedable inbox, an outbox whose states advance
// with the clock, and drafts. The provider side is the six sms_* tools
// with every sending rule; the caller side ("schedule with AgentOS" per
// conversation) builds an injection-safe prompt from the messages not yet
// processed and runs it through the notes package's Agent seam.
package sms

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
	"github.com/agentoslab/agentlab/sampleapps/notes"
)

// Plugin identity (spec §9.0: plugin name = MCP server name = app name).
const (
	Package = "org.agentos.sample.sms"
	Plugin  = "sms"
	Server  = "sms"
	// Service is the MCP service named in plugin.json.
	Service = "org.agentos.sample.sms.SmsMcpService"
)

// Options configure an App. The zero value works.
type Options struct {
	// Clock returns the current time; nil means time.Now.
	Clock func() time.Time
	// Location is the device time zone; nil means time.Local.
	Location *time.Location
	// Language is the device language as a BCP 47 tag; empty means "en".
	Language string
	// Logger receives operational messages; nil discards them. Message
	// bodies, numbers and codes are never logged.
	Logger *slog.Logger
	// Agent runs "schedule with AgentOS"; nil means no AgentOS connection
	// is available and ask_agent says so.
	Agent notes.Agent
	// AskTimeout bounds one ask_agent run; zero means 150 s.
	AskTimeout time.Duration
}

// App is an opened SMS app.
type App struct {
	db       *sql.DB
	now      func() time.Time
	loc      *time.Location
	lang     string
	log      *slog.Logger
	agent    notes.Agent
	askLimit time.Duration
	rounds   *notes.Rounds
	tools    []apptool.Tool
}

// Open opens (creating if needed) the store <dataDir>/sms.db.
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
	db, err := sqlitedb.Open(ctx, filepath.Join(dataDir, "sms.db"), migrations)
	if err != nil {
		return nil, fmt.Errorf("sms: %w", err)
	}
	a := &App{db: db, now: o.Clock, loc: o.Location, lang: o.Language, log: o.Logger, agent: o.Agent, askLimit: o.AskTimeout, rounds: notes.NewRounds(dataDir)}
	a.tools = a.buildTools()
	return a, nil
}

// Close closes the store.
func (a *App) Close() error { return a.db.Close() }

// Tools returns the app's tools in catalog order.
func (a *App) Tools() []apptool.Tool { return a.tools }

func (a *App) clock() time.Time { return a.now().In(a.loc).Truncate(time.Millisecond) }

func (a *App) fmtTime(t time.Time) string { return apptool.ISO(t, a.loc) }
