package sms

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/agentoslab/agentlab/runtime/sqlitedb"
	"github.com/agentoslab/agentlab/sampleapps/apptool/appdb"
)

var migrations = []sqlitedb.Migration{{Version: 1, SQL: `
CREATE TABLE messages (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	address    TEXT    NOT NULL,
	thread_key TEXT    NOT NULL,
	body       TEXT    NOT NULL,
	type       TEXT    NOT NULL CHECK (type IN ('received', 'sent')),
	date       INTEGER NOT NULL
);
CREATE INDEX messages_thread ON messages (thread_key, date DESC, id DESC);
CREATE INDEX messages_date ON messages (date DESC, id DESC);
CREATE TABLE outbox (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	to_addr      TEXT    NOT NULL,
	to_key       TEXT    NOT NULL,
	text         TEXT    NOT NULL,
	parts        INTEGER NOT NULL,
	submitted_at INTEGER NOT NULL,
	message_id   INTEGER
);
CREATE TABLE drafts (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	to_addr    TEXT    NOT NULL,
	text       TEXT    NOT NULL,
	created_at INTEGER NOT NULL
);
CREATE TABLE settings (
	key   TEXT PRIMARY KEY,
	value TEXT NOT NULL
);
CREATE TABLE processed (
	message_id   INTEGER PRIMARY KEY,
	processed_at INTEGER NOT NULL
);
`}}

// ThreadKey is how messages are grouped into conversations and how
// sms_message_list matches an address: the last 10 digits of a number
// (so +86 137… and 137… are one thread), or the lower-cased text of an
// address without digits ("BANK").
func ThreadKey(address string) string {
	var digits []rune
	for _, r := range address {
		if r >= '0' && r <= '9' {
			digits = append(digits, r)
		}
	}
	if len(digits) == 0 {
		return strings.ToLower(strings.TrimSpace(address))
	}
	if len(digits) > 10 {
		digits = digits[len(digits)-10:]
	}
	return string(digits)
}

// message is one stored SMS.
type message struct {
	ID      int64
	Address string
	Body    string
	Type    string // received | sent
	Date    time.Time
}

const messageColumns = `id, address, body, type, date`

func scanMessages(rows *sql.Rows) ([]message, error) {
	defer rows.Close()
	var out []message
	for rows.Next() {
		var m message
		var date int64
		if err := rows.Scan(&m.ID, &m.Address, &m.Body, &m.Type, &date); err != nil {
			return nil, fmt.Errorf("scan message: %w", err)
		}
		m.Date = time.UnixMilli(date)
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("scan messages: %w", err)
	}
	return out, nil
}

func (a *App) queryMessages(ctx context.Context, q string, args ...any) ([]message, error) {
	rows, err := a.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("query messages: %w", err)
	}
	return scanMessages(rows)
}

func (a *App) insertMessage(ctx context.Context, db appdb.Querier, address, body, typ string, at time.Time) (int64, error) {
	res, err := db.ExecContext(ctx, `INSERT INTO messages (address, thread_key, body, type, date) VALUES (?, ?, ?, ?, ?)`,
		address, ThreadKey(address), body, typ, at.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("insert message: %w", err)
	}
	return res.LastInsertId()
}

// Modes of the app (spec §9.5): which SMS permissions the user granted.
const (
	ModeFull        = "full"         // read and send
	ModePartial     = "partial"      // read only: sending is not granted
	ModeComposeOnly = "compose_only" // nothing: only sms_compose works
)

// Settings are the user's settings of the app.
type Settings struct {
	Mode              string `json:"-"`
	MaskCodes         bool   `json:"mask_codes"`
	AllowShortNumbers bool   `json:"allow_short_numbers"`
	RateLimit         int    `json:"rate_limit"`
	// Instructions are the stored user instructions; "" means the default.
	Instructions string `json:"-"`
}

// DefaultSettings are the settings of a fresh install.
var DefaultSettings = Settings{Mode: ModeFull, MaskCodes: true, AllowShortNumbers: false, RateLimit: 5}

func (a *App) settings(ctx context.Context) (Settings, error) {
	s := DefaultSettings
	rows, err := a.db.QueryContext(ctx, `SELECT key, value FROM settings`)
	if err != nil {
		return s, fmt.Errorf("read settings: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return s, fmt.Errorf("read settings: %w", err)
		}
		switch k {
		case "mode":
			s.Mode = v
		case "mask_codes":
			s.MaskCodes = v == "true"
		case "allow_short_numbers":
			s.AllowShortNumbers = v == "true"
		case "rate_limit":
			if n, err := strconv.Atoi(v); err == nil {
				s.RateLimit = n
			}
		case "instructions":
			s.Instructions = v
		}
	}
	return s, rows.Err()
}

// SettingKeys are the keys `set` accepts.
var SettingKeys = []string{"mode", "mask_codes", "allow_short_numbers", "rate_limit", "instructions"}

// normalizeSetting checks value for key and returns its stored form.
func normalizeSetting(key, value string) (string, string) {
	switch key {
	case "mode":
		if value == ModeFull || value == ModePartial || value == ModeComposeOnly {
			return value, ""
		}
		return "", "mode must be full, partial or compose_only."
	case "mask_codes", "allow_short_numbers":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return "", key + " must be true or false."
		}
		return strconv.FormatBool(b), ""
	case "rate_limit":
		n, err := strconv.Atoi(value)
		if err != nil || n < 1 || n > 30 {
			return "", "rate_limit must be a whole number from 1 to 30."
		}
		return strconv.Itoa(n), ""
	case "instructions":
		if msg := checkInstructions(value); msg != "" {
			return "", msg
		}
		return value, ""
	}
	return "", fmt.Sprintf("Unknown setting %q; the settings are %s.", key, strings.Join(SettingKeys, ", "))
}

func (a *App) setSetting(ctx context.Context, key, value string) error {
	if _, err := a.db.ExecContext(ctx, `INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value`, key, value); err != nil {
		return fmt.Errorf("set %s: %w", key, err)
	}
	return nil
}

// MaxLedger is how many processed message ids the app remembers; the
// oldest are forgotten first (and would be sent again).
const MaxLedger = 5000

// markProcessed records ids as sent to AgentOS and trims the ledger.
func (a *App) markProcessed(ctx context.Context, ids []int64) error {
	at := a.clock().UnixMilli()
	return appdb.Tx(ctx, a.db, func(q appdb.Querier) error {
		for _, id := range ids {
			if _, err := q.ExecContext(ctx, `INSERT INTO processed (message_id, processed_at) VALUES (?, ?)
				ON CONFLICT (message_id) DO UPDATE SET processed_at = excluded.processed_at`, id, at); err != nil {
				return fmt.Errorf("mark processed: %w", err)
			}
		}
		if _, err := q.ExecContext(ctx, `DELETE FROM processed WHERE message_id NOT IN
			(SELECT message_id FROM processed ORDER BY processed_at DESC, message_id DESC LIMIT ?)`, MaxLedger); err != nil {
			return fmt.Errorf("trim ledger: %w", err)
		}
		return nil
	})
}

func (a *App) processedSet(ctx context.Context, ids []int64) (map[int64]bool, error) {
	out := map[int64]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := a.db.QueryContext(ctx, `SELECT message_id FROM processed WHERE message_id IN (`+ph+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("read ledger: %w", err)
		}
		out[id] = true
	}
	return out, rows.Err()
}

func (a *App) count(ctx context.Context, q string, args ...any) (int, error) {
	var n int
	if err := a.db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("count: %w", err)
	}
	return n, nil
}

// cleanAddress strips control and format characters from an address
// given on the debug command line.
func cleanAddress(s string) string {
	return strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s))
}
