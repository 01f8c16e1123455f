package sms

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/apptool/appdb"
)

// Reading limits (spec §9.5).
const (
	MaxBody         = 1000  // code points of a body in read results
	ResultBudget    = 24000 // characters of one read result, about
	snippetChars    = 100
	MaxQuery        = 100
	MaxAddress      = 64
	MaxComposeText  = 1000
	DefaultThreads  = 20
	MaxThreads      = 50
	DefaultMessages = 50
	MaxMessages     = 100
	DefaultSearch   = 20
	MaxSearch       = 50
	sendStep        = 2 * time.Second // one part leaves the phone every sendStep
	deliverDelay    = 3 * time.Second // a part is delivered this long after it was sent
)

// Sentences for a missing permission (modes partial and compose_only).
const (
	NoPermission     = "SMS permission is not granted; ask the user to grant it in the SMS app. Until then only sms_compose works."
	NoSendPermission = "Permission to send SMS is not granted; ask the user to grant it in the SMS app, or use sms_compose to open a draft the user can send."
)

// Annotation sets, every hint explicit; only sms_send reaches outside the
// phone (openWorldHint).
var (
	readOnly    = apptool.Annotations{ReadOnlyHint: apptool.Bool(true), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
	write       = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
	destructive = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(true), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(true)}
)

func schema(props string, required ...string) json.RawMessage {
	req := "[]"
	if len(required) > 0 {
		req = `["` + strings.Join(required, `","`) + `"]`
	}
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + req + `,"additionalProperties":false}`)
}

func (a *App) buildTools() []apptool.Tool {
	paging := func(def, max int) string {
		return fmt.Sprintf(`"limit":{"type":"integer","minimum":1,"maximum":%d,"default":%d},"offset":{"type":"integer","minimum":0,"default":0}`, max, def)
	}
	tools := []apptool.Tool{
		{
			Name:  "sms_thread_list",
			Title: "List SMS conversations",
			Description: "List SMS conversations, most recent first: address, message count, date and a short snippet of the last message. " +
				"Verification codes are masked as ••••••. Pages with limit (default 20, max 50) and offset.",
			InputSchema: schema(paging(DefaultThreads, MaxThreads)),
			Handler:     a.threadList,
		},
		{
			Name:  "sms_message_list",
			Title: "Read an SMS conversation",
			Description: "Read the messages exchanged with one address, newest first. The address matches on its last 10 digits, so +8613700000001 and 13700000001 are the same. " +
				"since and until (ISO-8601 with offset, or YYYY-MM-DD) narrow the time range. Bodies longer than 1000 characters are cut (truncated=true); verification codes are masked (code_masked=true).",
			InputSchema: schema(fmt.Sprintf(`"address":{"type":"string","minLength":1,"maxLength":%d},`, MaxAddress)+
				`"since":{"type":"string","description":"Oldest date, ISO-8601 with offset or YYYY-MM-DD."},"until":{"type":"string","description":"Newest date (exclusive), ISO-8601 with offset or YYYY-MM-DD."},`+
				paging(DefaultMessages, MaxMessages), "address"),
			Handler: a.messageList,
		},
		{
			Name:        "sms_search",
			Title:       "Search SMS",
			Description: "Find messages whose text or address contains query (case-insensitive), newest first. limit default 20, max 50. Masked verification codes cannot be searched for.",
			InputSchema: schema(fmt.Sprintf(`"query":{"type":"string","minLength":1,"maxLength":%d},"limit":{"type":"integer","minimum":1,"maximum":%d,"default":%d}`, MaxQuery, MaxSearch, DefaultSearch), "query"),
			Handler:     a.search,
		},
		{
			Name:  "sms_send",
			Title: "Send an SMS",
			Description: "Send one SMS to one phone number. The user must approve every send. Rules: exactly one recipient; text at most 500 characters, plain visible text on one line; " +
				"short and service numbers (fewer than 7 digits, or starting 10, 95, 96, 106) are refused unless the user allowed them in the SMS app; at most 5 sends per 10 minutes; " +
				"the same text to the same number within 2 minutes is not sent again (deduplicated=true). Returns id, parts and state queued: check delivery with sms_send_status. " +
				"To let the user review and send a text themselves, use sms_compose instead.",
			InputSchema: schema(fmt.Sprintf(`"to":{"type":"string","minLength":3,"maxLength":%d,"description":"One phone number, such as +8613700000001."},"text":{"type":"string","minLength":1,"maxLength":%d}`, MaxAddress, MaxSendText), "to", "text"),
			Handler:     a.send,
		},
		{
			Name:        "sms_send_status",
			Title:       "Check an sent SMS",
			Description: "Delivery state of a message sent with sms_send: queued, sent, delivered or failed, with sent_parts and delivered_parts out of parts, and error when it failed.",
			InputSchema: schema(`"id":{"type":"integer","minimum":1,"description":"The id sms_send returned."}`, "id"),
			Handler:     a.sendStatus,
		},
		{
			Name:  "sms_compose",
			Title: "Open an SMS draft",
			Description: "Open the SMS composer with a number and text filled in. Nothing is sent: the user reads the draft and sends it themselves. " +
				"Works even when the app may not send SMS.",
			InputSchema: schema(fmt.Sprintf(`"to":{"type":"string","maxLength":%d},"text":{"type":"string","maxLength":%d}`, MaxAddress, MaxComposeText)),
			Handler:     a.compose,
		},
	}
	ann := map[string]apptool.Annotations{
		"sms_thread_list": readOnly, "sms_message_list": readOnly, "sms_search": readOnly,
		"sms_send": destructive, "sms_send_status": readOnly, "sms_compose": write,
	}
	for i := range tools {
		an := ann[tools[i].Name]
		an.Title = tools[i].Title
		tools[i].Annotations = an
	}
	return tools
}

// msgOut is a message as read tools return it.
type msgOut struct {
	ID         int64  `json:"id"`
	Address    string `json:"address"`
	Type       string `json:"type"`
	Date       string `json:"date"`
	Body       string `json:"body"`
	CodeMasked bool   `json:"code_masked"`
	Truncated  bool   `json:"truncated"`
}

type masking struct {
	VerificationCodes string `json:"verification_codes"`
}

func maskingOf(s Settings) masking {
	if s.MaskCodes {
		return masking{"masked"}
	}
	return masking{"visible"}
}

// readableBody applies masking and the 1,000-character cut.
func readableBody(body string, mask bool) (string, bool, bool) {
	masked := false
	if mask {
		body, masked = MaskCodes(body)
	}
	cutBody := cutRunes(body, MaxBody)
	return cutBody, masked, len(cutBody) < len(body)
}

func (a *App) out(m message, mask bool) msgOut {
	body, masked, truncated := readableBody(m.Body, mask)
	return msgOut{ID: m.ID, Address: m.Address, Type: m.Type, Date: a.fmtTime(m.Date), Body: body, CodeMasked: masked, Truncated: truncated}
}

func cutRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

// budget keeps a read result near ResultBudget characters: add reports
// whether one more item still fits.
type budget struct{ used, wire int }

func (b *budget) add(v any) bool {
	s, err := apptool.Compact(v)
	if err != nil {
		return false
	}
	n := utf8.RuneCountInString(s) + 1
	// The envelope of the result (counts, masking, paging) takes ~300.
	if b.used+n > ResultBudget-300 {
		return false
	}
	// The plugin channel counts bytes of the text and of its escaped copy:
	// wide characters reach its limit before ResultBudget.
	w := apptool.WireCost(v) - 512
	if b.wire+w > apptool.MaxWireChars-1024 {
		return false
	}
	b.used += n
	b.wire += w
	return true
}

func needRead(s Settings) error {
	if s.Mode == ModeComposeOnly {
		return apptool.Errorf(NoPermission)
	}
	return nil
}

func parsePaging(args *apptool.Args, def, max int64) (int64, int64) {
	limit, ok := args.IntOK("limit", apptool.Range(1, float64(max)))
	if !ok {
		limit = def
	}
	return limit, args.Int("offset", apptool.Min(0))
}

type thread struct {
	Address      string `json:"address"`
	MessageCount int    `json:"message_count"`
	LastDate     string `json:"last_date"`
	LastType     string `json:"last_type"`
	Snippet      string `json:"snippet"`
	CodeMasked   bool   `json:"code_masked"`
}

func (a *App) threadList(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := apptool.ParseArgs(raw)
	if err != nil {
		return nil, err
	}
	limit, offset := parsePaging(args, DefaultThreads, MaxThreads)
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	s, err := a.settings(ctx)
	if err != nil {
		return nil, err
	}
	if err := needRead(s); err != nil {
		return nil, err
	}
	total, err := a.count(ctx, `SELECT count(DISTINCT thread_key) FROM messages`)
	if err != nil {
		return nil, err
	}
	// The newest message of each thread, newest threads first.
	rows, err := a.db.QueryContext(ctx, `SELECT m.id, m.address, m.body, m.type, m.date, t.n FROM
		(SELECT thread_key, count(*) AS n,
			(SELECT id FROM messages x WHERE x.thread_key = g.thread_key ORDER BY date DESC, id DESC LIMIT 1) AS last_id
		 FROM messages g GROUP BY thread_key) t
		JOIN messages m ON m.id = t.last_id
		ORDER BY m.date DESC, m.id DESC LIMIT ? OFFSET ?`, limit, offset)
	if err != nil {
		return nil, fmt.Errorf("thread list: %w", err)
	}
	defer rows.Close()
	threads := []thread{}
	var b budget
	for rows.Next() {
		var m message
		var date int64
		var n int
		if err := rows.Scan(&m.ID, &m.Address, &m.Body, &m.Type, &date, &n); err != nil {
			return nil, fmt.Errorf("thread list: %w", err)
		}
		body, masked, _ := readableBody(m.Body, s.MaskCodes)
		snip := cutRunes(strings.Join(strings.Fields(body), " "), snippetChars)
		if snip != strings.Join(strings.Fields(body), " ") {
			snip += "…"
		}
		th := thread{Address: m.Address, MessageCount: n, LastDate: a.fmtTime(time.UnixMilli(date)), LastType: m.Type, Snippet: snip, CodeMasked: masked}
		if !b.add(th) {
			break
		}
		threads = append(threads, th)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("thread list: %w", err)
	}
	return paged(total, offset, limit, len(threads), map[string]any{"masking": maskingOf(s), "threads": threads}), nil
}

// paged adds total, offset, limit, has_more and next_offset to fields.
func paged(total int, offset, limit int64, got int, fields map[string]any) map[string]any {
	fields["total"], fields["offset"], fields["limit"] = total, offset, limit
	end := offset + int64(got)
	fields["has_more"] = end < int64(total)
	if end < int64(total) {
		fields["next_offset"] = end
	} else {
		fields["next_offset"] = nil
	}
	return fields
}

// parseWhen reads an ISO-8601 time with offset or a YYYY-MM-DD date (the
// start of that day in the device zone).
func (a *App) parseWhen(args *apptool.Args, name string) (time.Time, bool) {
	s, ok := args.StringOK(name, apptool.MaxLen(40))
	if !ok || args.Err() != nil {
		return time.Time{}, false
	}
	if m, err := apptool.ParseMoment(s, a.loc, true); err == nil {
		return m.Time, true
	}
	args.Fail("Parameter %q must be an ISO-8601 time with offset (2026-10-12T15:00:00+08:00) or a date (2026-10-12).", name)
	return time.Time{}, false
}

func (a *App) messageList(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := apptool.ParseArgs(raw)
	if err != nil {
		return nil, err
	}
	address := args.String("address", apptool.Required, apptool.NonEmpty, apptool.MaxLen(MaxAddress))
	since, hasSince := a.parseWhen(args, "since")
	until, hasUntil := a.parseWhen(args, "until")
	limit, offset := parsePaging(args, DefaultMessages, MaxMessages)
	args.RejectUnknown()
	if hasSince && hasUntil && !until.After(since) && args.Err() == nil {
		args.Fail("until must be after since.")
	}
	if err := args.Err(); err != nil {
		return nil, err
	}
	s, err := a.settings(ctx)
	if err != nil {
		return nil, err
	}
	if err := needRead(s); err != nil {
		return nil, err
	}
	where, qa := "thread_key = ?", []any{ThreadKey(address)}
	if hasSince {
		where += " AND date >= ?"
		qa = append(qa, since.UnixMilli())
	}
	if hasUntil {
		where += " AND date < ?"
		qa = append(qa, until.UnixMilli())
	}
	total, err := a.count(ctx, `SELECT count(*) FROM messages WHERE `+where, qa...)
	if err != nil {
		return nil, err
	}
	msgs, err := a.queryMessages(ctx, `SELECT `+messageColumns+` FROM messages WHERE `+where+` ORDER BY date DESC, id DESC LIMIT ? OFFSET ?`, append(qa, limit, offset)...)
	if err != nil {
		return nil, err
	}
	out := []msgOut{}
	var b budget
	for _, m := range msgs {
		o := a.out(m, s.MaskCodes)
		if !b.add(o) {
			break
		}
		out = append(out, o)
	}
	return paged(total, offset, limit, len(out), map[string]any{"address": address, "masking": maskingOf(s), "messages": out}), nil
}

func (a *App) search(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := apptool.ParseArgs(raw)
	if err != nil {
		return nil, err
	}
	query := args.String("query", apptool.Required, apptool.NonEmpty, apptool.MaxLen(MaxQuery))
	limit, ok := args.IntOK("limit", apptool.Range(1, MaxSearch))
	if !ok {
		limit = DefaultSearch
	}
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	s, err := a.settings(ctx)
	if err != nil {
		return nil, err
	}
	if err := needRead(s); err != nil {
		return nil, err
	}
	all, err := a.queryMessages(ctx, `SELECT `+messageColumns+` FROM messages ORDER BY date DESC, id DESC`)
	if err != nil {
		return nil, err
	}
	q := strings.ToLower(strings.TrimSpace(query))
	out := []msgOut{}
	total := 0
	var b budget
	full := false
	for _, m := range all {
		// Match what the reader may see: a masked code is not searchable,
		// or a search could confirm it digit by digit.
		body := m.Body
		if s.MaskCodes {
			body, _ = MaskCodes(body)
		}
		if !strings.Contains(strings.ToLower(body), q) && !strings.Contains(strings.ToLower(m.Address), q) {
			continue
		}
		total++
		if full || int64(len(out)) >= limit {
			continue
		}
		o := a.out(m, s.MaskCodes)
		if !b.add(o) {
			full = true
			continue
		}
		out = append(out, o)
	}
	return map[string]any{"query": query, "count": len(out), "total": total, "masking": maskingOf(s), "messages": out}, nil
}

type outboxRow struct {
	ID        int64
	To        string
	Text      string
	Parts     int
	Submitted time.Time
}

// progress is how far a send got at now: parts leave one per sendStep and
// arrive deliverDelay later (no network here, so nothing fails).
func progress(o outboxRow, now time.Time) (state string, sent, delivered int) {
	el := now.Sub(o.Submitted)
	sent = min(o.Parts, max(0, int(el/sendStep)))
	delivered = min(o.Parts, max(0, int((el-deliverDelay)/sendStep)))
	switch {
	case delivered == o.Parts:
		return "delivered", sent, delivered
	case sent == o.Parts:
		return "sent", sent, delivered
	}
	return "queued", sent, delivered
}

func (a *App) outboxRows(ctx context.Context, q string, args ...any) ([]outboxRow, error) {
	rows, err := a.db.QueryContext(ctx, `SELECT id, to_addr, text, parts, submitted_at FROM outbox `+q, args...)
	if err != nil {
		return nil, fmt.Errorf("outbox: %w", err)
	}
	defer rows.Close()
	var out []outboxRow
	for rows.Next() {
		var o outboxRow
		var at int64
		if err := rows.Scan(&o.ID, &o.To, &o.Text, &o.Parts, &at); err != nil {
			return nil, fmt.Errorf("outbox: %w", err)
		}
		o.Submitted = time.UnixMilli(at)
		out = append(out, o)
	}
	return out, rows.Err()
}

type sendResult struct {
	ID           int64  `json:"id"`
	Parts        int    `json:"parts"`
	State        string `json:"state"`
	Submitted    string `json:"submitted"`
	Deduplicated bool   `json:"deduplicated"`
}

func (a *App) send(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := apptool.ParseArgs(raw)
	if err != nil {
		return nil, err
	}
	to := args.String("to", apptool.Required, apptool.NonEmpty, apptool.MaxLen(MaxAddress))
	text := args.String("text", apptool.Required, apptool.NonEmpty, apptool.MaxLen(MaxSendText))
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	rcpt, msg := parseRecipient(to)
	if msg == "" {
		msg = checkText(text)
	}
	if msg == "" {
		if n := previewLen(to, text); n > ConsentPreview {
			msg = fmt.Sprintf("The message cannot be shown in full on the consent card: its arguments are %d characters as JSON and the card shows %d, so the user would not see the whole text. Shorten the text (quotes and backslashes count twice).", n, ConsentPreview)
		}
	}
	if msg != "" {
		return nil, apptool.Errorf("%s", msg)
	}
	s, err := a.settings(ctx)
	if err != nil {
		return nil, err
	}
	switch s.Mode {
	case ModeComposeOnly:
		return nil, apptool.Errorf(NoPermission)
	case ModePartial:
		return nil, apptool.Errorf(NoSendPermission)
	}
	if !s.AllowShortNumbers && ShortOrService(rcpt.Digits) {
		return nil, apptool.Errorf("Refusing to send to %s: short and service numbers can subscribe, pay or unsubscribe by text, so they are allowed only when the user turns on allow_short_numbers in the SMS app.", rcpt.Digits)
	}
	now := a.clock()
	key := ThreadKey(rcpt.Digits)
	var out sendResult
	// One write transaction: the dedup and rate checks and the insert
	// cannot interleave with a send from another process.
	err = appdb.Tx(ctx, a.db, func(q appdb.Querier) error {
		var dup outboxRow
		var at int64
		err := q.QueryRowContext(ctx, `SELECT id, parts, submitted_at FROM outbox WHERE to_key = ? AND text = ? AND submitted_at > ? ORDER BY submitted_at DESC, id DESC LIMIT 1`,
			key, text, now.Add(-DedupWindowMin*time.Minute).UnixMilli()).Scan(&dup.ID, &dup.Parts, &at)
		switch {
		case err == nil:
			dup.Submitted = time.UnixMilli(at)
			state, _, _ := progress(dup, now)
			out = sendResult{ID: dup.ID, Parts: dup.Parts, State: state, Submitted: a.fmtTime(dup.Submitted), Deduplicated: true}
			return nil
		case !appdb.IsNoRows(err):
			return fmt.Errorf("send: %w", err)
		}
		var recent int
		var oldest sql.NullInt64
		since := now.Add(-RateWindowMin * time.Minute).UnixMilli()
		if err := q.QueryRowContext(ctx, `SELECT count(*), min(submitted_at) FROM outbox WHERE submitted_at > ?`, since).Scan(&recent, &oldest); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		if recent >= s.RateLimit {
			next := time.UnixMilli(oldest.Int64).Add(RateWindowMin * time.Minute)
			return apptool.Errorf("Rate limit reached: at most %d messages per %d minutes. The next one can be sent at %s.", s.RateLimit, RateWindowMin, a.fmtTime(next))
		}
		msgID, err := a.insertMessage(ctx, q, rcpt.Digits, text, "sent", now)
		if err != nil {
			return err
		}
		parts := Parts(text)
		res, err := q.ExecContext(ctx, `INSERT INTO outbox (to_addr, to_key, text, parts, submitted_at, message_id) VALUES (?, ?, ?, ?, ?, ?)`,
			rcpt.Digits, key, text, parts, now.UnixMilli(), msgID)
		if err != nil {
			return fmt.Errorf("send: %w", err)
		}
		id, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("send: %w", err)
		}
		out = sendResult{ID: id, Parts: parts, State: "queued", Submitted: a.fmtTime(now), Deduplicated: false}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !out.Deduplicated {
		a.log.Info("sms queued", "id", out.ID, "parts", out.Parts)
	}
	return out, nil
}

type statusResult struct {
	ID             int64   `json:"id"`
	To             string  `json:"to"`
	State          string  `json:"state"`
	Parts          int     `json:"parts"`
	SentParts      int     `json:"sent_parts"`
	DeliveredParts int     `json:"delivered_parts"`
	Submitted      string  `json:"submitted"`
	Error          *string `json:"error"`
}

func (a *App) statusOf(o outboxRow) statusResult {
	state, sent, delivered := progress(o, a.clock())
	return statusResult{ID: o.ID, To: o.To, State: state, Parts: o.Parts, SentParts: sent, DeliveredParts: delivered, Submitted: a.fmtTime(o.Submitted)}
}

func (a *App) sendStatus(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := apptool.ParseArgs(raw)
	if err != nil {
		return nil, err
	}
	id := args.Int("id", apptool.Required, apptool.Min(1))
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	s, err := a.settings(ctx)
	if err != nil {
		return nil, err
	}
	if err := needRead(s); err != nil {
		return nil, err
	}
	rows, err := a.outboxRows(ctx, `WHERE id = ?`, id)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, apptool.Errorf("No sent message with id %d.", id)
	}
	return a.statusOf(rows[0]), nil
}

type draft struct {
	ID        int64  `json:"draft_id"`
	To        string `json:"to"`
	Text      string `json:"text"`
	CreatedAt string `json:"created_at"`
}

func (a *App) compose(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := apptool.ParseArgs(raw)
	if err != nil {
		return nil, err
	}
	to := args.String("to", apptool.MaxLen(MaxAddress))
	text := args.String("text", apptool.MaxLen(MaxComposeText))
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	now := a.clock()
	res, err := a.db.ExecContext(ctx, `INSERT INTO drafts (to_addr, text, created_at) VALUES (?, ?, ?)`, strings.TrimSpace(to), text, now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("compose: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, fmt.Errorf("compose: %w", err)
	}
	return map[string]any{
		"opened": true, "sent": false, "draft_id": id, "to": strings.TrimSpace(to), "text": text,
		"message": "The draft was opened in the SMS composer; nothing was sent. The user decides whether to send it.",
	}, nil
}
