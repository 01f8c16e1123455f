package notes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/apptool/appdb"
)

// Limits of the note tools.
const (
	MaxTitle       = 200
	MaxContent     = 50000
	MaxTags        = 20
	MaxTag         = 40
	MaxQuery       = 200
	MaxSeparator   = 20
	SummaryChars   = 200 // note_list summaries (spec §4.13)
	DefaultLimit   = 50
	MaxLimit       = 200
	DefaultGetSize = 4000
	MaxGetSize     = 20000
	DefaultSearch  = 20
	MaxSearch      = 100
	snippetChars   = 120
)

// Colors a note may have.
var Colors = []string{"default", "red", "orange", "yellow", "green", "teal", "blue", "purple", "pink", "gray"}

// DeleteNotTrashed is note_delete's answer for a note that is not in the
// trash: deleting is only possible from the trash, so a model cannot
// destroy a note in one step.
const DeleteNotTrashed = "Only notes in the trash can be deleted; move note %d to the trash with note_trash first."

func (a *App) fmtTime(t time.Time) string { return apptool.ISO(t, a.loc) }

// noteSummary is a note without its full content.
type noteSummary struct {
	ID           int64    `json:"id"`
	Title        string   `json:"title"`
	Summary      string   `json:"summary"`
	Tags         []string `json:"tags"`
	Color        string   `json:"color"`
	Pinned       bool     `json:"pinned"`
	Archived     bool     `json:"archived"`
	Trashed      bool     `json:"trashed"`
	ContentChars int      `json:"content_chars"`
	CreatedAt    string   `json:"created_at"`
	UpdatedAt    string   `json:"updated_at"`
}

func (a *App) summary(n note) noteSummary {
	return noteSummary{
		ID: n.ID, Title: n.Title, Summary: cut(n.Content, SummaryChars), Tags: n.Tags, Color: n.Color,
		Pinned: n.Pinned, Archived: n.Archived, Trashed: n.Trashed, ContentChars: utf8.RuneCountInString(n.Content),
		CreatedAt: a.fmtTime(n.CreatedAt), UpdatedAt: a.fmtTime(n.UpdatedAt),
	}
}

// noteChunk is note_get's answer: the note with one chunk of its content.
type noteChunk struct {
	ID           int64    `json:"id"`
	Title        string   `json:"title"`
	Content      string   `json:"content"`
	Tags         []string `json:"tags"`
	Color        string   `json:"color"`
	Pinned       bool     `json:"pinned"`
	Archived     bool     `json:"archived"`
	Trashed      bool     `json:"trashed"`
	CreatedAt    string   `json:"created_at"`
	UpdatedAt    string   `json:"updated_at"`
	ContentChars int      `json:"content_chars"`
	Offset       int      `json:"offset"`
	NextOffset   *int     `json:"next_offset"`
}

// cut returns the first n code points of s.
func cut(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

var schemaID = `"id":{"type":"integer","minimum":1,"description":"The note id."}`

func schema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	if required == nil {
		req = []byte("[]")
	}
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) + `,"additionalProperties":false}`)
}

// Annotation sets, every hint explicit (as the alarm app does); only the
// spec's listed hints are true, and openWorldHint is false (local data).
var (
	readOnly    = apptool.Annotations{ReadOnlyHint: apptool.Bool(true), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
	write       = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
	idempotent  = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(true), OpenWorldHint: apptool.Bool(false)}
	destructive = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(true), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
)

func withTitle(an apptool.Annotations, title string) apptool.Annotations {
	an.Title = title
	return an
}

func (a *App) buildTools() []apptool.Tool {
	colors, _ := json.Marshal(Colors)
	tagsProp := fmt.Sprintf(`"tags":{"type":"array","items":{"type":"string","minLength":1,"maxLength":%d},"maxItems":%d,"description":"Tags, for example [\"work\"]."}`, MaxTag, MaxTags)
	colorProp := `"color":{"type":"string","enum":` + string(colors) + `}`
	tools := []apptool.Tool{
		{
			Name:  "note_list",
			Title: "List notes",
			Description: "List the user's notes, pinned first, then most recently edited. Each note has a summary (its first 200 characters), not the full content: use note_get for that. " +
				"By default archived and trashed notes are left out; set archived=true for the archive or trashed=true for the trash. " +
				"Pages with limit (default 50, max 200) and offset; the result has total, has_more and next_offset.",
			InputSchema: schema(`"tag":{"type":"string","description":"Only notes with this exact tag."},` +
				`"pinned":{"type":"boolean","description":"true: only pinned notes; false: only unpinned."},` +
				`"archived":{"type":"boolean","default":false},"trashed":{"type":"boolean","default":false},` +
				`"limit":{"type":"integer","minimum":1,"maximum":200,"default":50},"offset":{"type":"integer","minimum":0,"default":0}`),
			Handler: a.noteList,
		},
		{
			Name:  "note_get",
			Title: "Read a note",
			Description: "Read one note with its content. Long content comes in chunks: max_chars (default 4000, max 20000) characters from offset; " +
				"when next_offset is not null, call again with offset=next_offset to read on.",
			InputSchema: schema(schemaID+`,"offset":{"type":"integer","minimum":0,"default":0,"description":"Character offset into the content."},`+
				`"max_chars":{"type":"integer","minimum":1,"maximum":20000,"default":4000}`, "id"),
			Handler: a.noteGet,
		},
		{
			Name:  "note_create",
			Title: "Create a note",
			Description: "Create a note. Search first (note_search) so you do not create a duplicate; to add to an existing note use note_append. " +
				"Notes hold information; things with a time go to the calendar, tasks to the to-do app, wake-ups to the alarm app.",
			InputSchema: schema(fmt.Sprintf(`"content":{"type":"string","minLength":1,"maxLength":%d,"description":"The note text."},`+
				`"title":{"type":"string","maxLength":%d},`, MaxContent, MaxTitle)+tagsProp+","+colorProp+`,"pinned":{"type":"boolean","default":false}`, "content"),
			Handler: a.noteCreate,
		},
		{
			Name:  "note_update",
			Title: "Edit a note",
			Description: "Change fields of a note. content REPLACES the whole text (use note_append to add to it); tags REPLACE the tag list. " +
				"Give at least one field. Trash and restore with note_trash and note_restore, not here.",
			InputSchema: schema(schemaID+fmt.Sprintf(`,"title":{"type":"string","maxLength":%d},"content":{"type":"string","minLength":1,"maxLength":%d},`, MaxTitle, MaxContent)+
				tagsProp+","+colorProp+`,"pinned":{"type":"boolean"},"archived":{"type":"boolean"}`, "id"),
			Handler: a.noteUpdate,
		},
		{
			Name:        "note_append",
			Title:       "Append to a note",
			Description: "Add text to the end of a note, after separator (default a line break). The rest of the note is kept.",
			InputSchema: schema(schemaID+fmt.Sprintf(`,"text":{"type":"string","minLength":1,"maxLength":%d},"separator":{"type":"string","maxLength":%d,"default":"\n"}`, MaxContent, MaxSeparator), "id", "text"),
			Handler:     a.noteAppend,
		},
		{
			Name:  "note_search",
			Title: "Search notes",
			Description: "Find notes whose title, content or tags contain query (case-insensitive). Each result has a snippet and matched_in (title, content, tags). " +
				"Trashed notes are left out unless include_trashed=true. limit default 20, max 100.",
			InputSchema: schema(fmt.Sprintf(`"query":{"type":"string","minLength":1,"maxLength":%d},"tag":{"type":"string"},`, MaxQuery)+
				`"limit":{"type":"integer","minimum":1,"maximum":100,"default":20},"include_trashed":{"type":"boolean","default":false}`, "query"),
			Handler: a.noteSearch,
		},
		{
			Name:        "note_trash",
			Title:       "Move a note to the trash",
			Description: "Move a note to the trash. It can be brought back with note_restore. This is the normal way to delete a note.",
			InputSchema: schema(schemaID, "id"),
			Handler:     a.noteTrash,
		},
		{
			Name:        "note_restore",
			Title:       "Restore a note from the trash",
			Description: "Bring a note back from the trash. Restoring a note that is not in the trash changes nothing.",
			InputSchema: schema(schemaID, "id"),
			Handler:     a.noteRestore,
		},
		{
			Name:  "note_delete",
			Title: "Delete a note for good",
			Description: "Delete a note permanently. Only a note that is already in the trash can be deleted; everything else must go through note_trash first. " +
				"Use this only when the user explicitly asks to empty it from the trash.",
			InputSchema: schema(schemaID, "id"),
			Handler:     a.noteDelete,
		},
		{
			Name:        "tag_list",
			Title:       "List tags",
			Description: "List the tags used by notes that are not in the trash, with how many notes carry each, most used first.",
			InputSchema: schema(``),
			Handler:     a.tagList,
		},
	}
	ann := map[string]apptool.Annotations{
		"note_list": readOnly, "note_get": readOnly, "note_create": write, "note_update": idempotent,
		"note_append": write, "note_search": readOnly, "note_trash": write, "note_restore": idempotent,
		"note_delete": destructive, "tag_list": readOnly,
	}
	for i := range tools {
		tools[i].Annotations = withTitle(ann[tools[i].Name], tools[i].Title)
	}
	return tools
}

func parse(raw json.RawMessage) (*apptool.Args, error) { return apptool.ParseArgs(raw) }

// readTags reads and normalises a tag list: trimmed, duplicates dropped.
func readTags(args *apptool.Args) ([]string, bool) {
	tags, ok := args.Strings("tags", apptool.MaxLen(MaxTag), apptool.NonEmpty)
	if !ok {
		return nil, false
	}
	if len(tags) > MaxTags {
		args.Fail("Parameter %q has %d items; the limit is %d.", "tags", len(tags), MaxTags)
	}
	out := []string{}
	seen := map[string]bool{}
	for _, t := range tags {
		t = strings.TrimSpace(t)
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out, true
}

func readColor(args *apptool.Args) (string, bool) {
	return args.StringOK("color", apptool.OneOf(Colors...))
}

func noNote(id int64) error { return apptool.Errorf("No note with id %d.", id) }

// load returns the note or the user sentence for an unknown id.
func (a *App) load(ctx context.Context, q appdb.Querier, id int64) (note, error) {
	n, err := a.getNote(ctx, q, id)
	if errors.Is(err, errNoNote) {
		return note{}, noNote(id)
	}
	return n, err
}

func (a *App) noteList(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	var f listFilter
	f.Tag = args.String("tag", apptool.MaxLen(MaxTag))
	if p, ok := args.BoolOK("pinned"); ok {
		f.Pinned = &p
	}
	archived, hasArchived := args.BoolOK("archived")
	f.Trashed = args.Bool("trashed", false)
	// The trash lists archived and plain notes alike unless asked.
	if hasArchived || !f.Trashed {
		f.Archived = &archived
	}
	limit, ok := args.IntOK("limit", apptool.Range(1, MaxLimit))
	if !ok {
		limit = DefaultLimit
	}
	offset := args.Int("offset", apptool.Min(0))
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	notes, total, err := a.listNotes(ctx, f, limit, offset)
	if err != nil {
		return nil, err
	}
	out := make([]noteSummary, 0, len(notes))
	for _, n := range notes {
		out = append(out, a.summary(n))
	}
	page := func(k int) any {
		var next *int64
		if end := offset + int64(k); end < total {
			next = &end
		}
		return struct {
			Total      int64         `json:"total"`
			Offset     int64         `json:"offset"`
			Limit      int64         `json:"limit"`
			HasMore    bool          `json:"has_more"`
			NextOffset *int64        `json:"next_offset"`
			Notes      []noteSummary `json:"notes"`
		}{total, offset, limit, next != nil, next, out[:k]}
	}
	return page(apptool.Fit(len(out), page)), nil
}

func (a *App) noteGet(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id := args.Int("id", apptool.Required, apptool.Min(1))
	offset := int(args.Int("offset", apptool.Min(0)))
	size, ok := args.IntOK("max_chars", apptool.Range(1, MaxGetSize))
	if !ok {
		size = DefaultGetSize
	}
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	n, err := a.load(ctx, a.db, id)
	if err != nil {
		return nil, err
	}
	content := []rune(n.Content)
	if offset > len(content) {
		return nil, apptool.Errorf("Offset %d is past the end of note %d (%d characters).", offset, id, len(content))
	}
	chunk := func(k int) any {
		end := offset + k
		var next *int
		if end < len(content) {
			next = &end
		}
		return noteChunk{
			ID: n.ID, Title: n.Title, Content: string(content[offset:end]), Tags: n.Tags, Color: n.Color,
			Pinned: n.Pinned, Archived: n.Archived, Trashed: n.Trashed,
			CreatedAt: a.fmtTime(n.CreatedAt), UpdatedAt: a.fmtTime(n.UpdatedAt),
			ContentChars: len(content), Offset: offset, NextOffset: next,
		}
	}
	// A chunk of wide characters can outgrow the plugin channel before
	// max_chars: then it ends earlier and next_offset says where.
	k := apptool.Fit(min(int(size), len(content)-offset), chunk)
	if k == 0 && offset < len(content) {
		k = 1
	}
	return chunk(k), nil
}

func (a *App) noteCreate(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	var n note
	n.Content = args.String("content", apptool.Required, apptool.NonEmpty, apptool.MaxLen(MaxContent))
	n.Title = strings.TrimSpace(args.String("title", apptool.MaxLen(MaxTitle)))
	n.Tags, _ = readTags(args)
	n.Color, _ = readColor(args)
	n.Pinned = args.Bool("pinned", false)
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	n, err = a.insertNote(ctx, a.db, n)
	if err != nil {
		return nil, err
	}
	return a.summary(n), nil
}

func (a *App) noteUpdate(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id := args.Int("id", apptool.Required, apptool.Min(1))
	title, hasTitle := args.StringOK("title", apptool.MaxLen(MaxTitle))
	content, hasContent := args.StringOK("content", apptool.NonEmpty, apptool.MaxLen(MaxContent))
	tags, hasTags := readTags(args)
	color, hasColor := readColor(args)
	pinned, hasPinned := args.BoolOK("pinned")
	archived, hasArchived := args.BoolOK("archived")
	if args.Raw("trashed") != nil && args.Has("trashed") {
		args.Fail("note_update cannot move a note to or from the trash; use note_trash or note_restore.")
	}
	args.RejectUnknown()
	if !(hasTitle || hasContent || hasTags || hasColor || hasPinned || hasArchived) {
		args.Fail("Nothing to update: give at least one of title, content, tags, color, pinned, archived.")
	}
	if err := args.Err(); err != nil {
		return nil, err
	}
	return a.edit(ctx, id, func(n *note) error {
		if n.Trashed {
			return apptool.Errorf("Note %d is in the trash; restore it with note_restore before editing it.", id)
		}
		if hasTitle {
			n.Title = strings.TrimSpace(title)
		}
		if hasContent {
			n.Content = content
		}
		if hasTags {
			n.Tags = tags
		}
		if hasColor {
			n.Color = color
		}
		if hasPinned {
			n.Pinned = pinned
		}
		if hasArchived {
			n.Archived = archived
		}
		return nil
	})
}

// edit loads note id, lets change modify it (or refuse with an error) and
// saves it, in one write transaction so edits from the MCP server and the
// debug command line never interleave. A nil change result with
// errUnchanged leaves the note as it was.
func (a *App) edit(ctx context.Context, id int64, change func(n *note) error) (any, error) {
	var out noteSummary
	err := appdb.Tx(ctx, a.db, func(q appdb.Querier) error {
		n, err := a.load(ctx, q, id)
		if err != nil {
			return err
		}
		if err := change(&n); errors.Is(err, errUnchanged) {
			out = a.summary(n)
			return nil
		} else if err != nil {
			return err
		}
		if n, err = a.saveNote(ctx, q, n); err != nil {
			return err
		}
		out = a.summary(n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// errUnchanged tells edit that the note needs no write.
var errUnchanged = errors.New("unchanged")

func (a *App) noteAppend(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id := args.Int("id", apptool.Required, apptool.Min(1))
	text := args.String("text", apptool.Required, apptool.NonEmpty, apptool.MaxLen(MaxContent))
	sep, ok := args.StringOK("separator", apptool.MaxLen(MaxSeparator))
	if !ok {
		sep = "\n"
	}
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	return a.edit(ctx, id, func(n *note) error {
		if n.Trashed {
			return apptool.Errorf("Note %d is in the trash; restore it with note_restore before editing it.", id)
		}
		joined := text
		if n.Content != "" {
			joined = n.Content + sep + text
		}
		if c := utf8.RuneCountInString(joined); c > MaxContent {
			return apptool.Errorf("Note %d would be too long (%d characters; the limit is %d).", id, c, MaxContent)
		}
		n.Content = joined
		return nil
	})
}

type searchHit struct {
	ID        int64    `json:"id"`
	Title     string   `json:"title"`
	Snippet   string   `json:"snippet"`
	MatchedIn []string `json:"matched_in"`
	Tags      []string `json:"tags"`
	Pinned    bool     `json:"pinned"`
	Archived  bool     `json:"archived"`
	Trashed   bool     `json:"trashed"`
	UpdatedAt string   `json:"updated_at"`
}

func (a *App) noteSearch(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	query := args.String("query", apptool.Required, apptool.NonEmpty, apptool.MaxLen(MaxQuery))
	tag := args.String("tag", apptool.MaxLen(MaxTag))
	limit, ok := args.IntOK("limit", apptool.Range(1, MaxSearch))
	if !ok {
		limit = DefaultSearch
	}
	withTrashed := args.Bool("include_trashed", false)
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	all, err := a.allNotes(ctx, withTrashed)
	if err != nil {
		return nil, err
	}
	q := strings.ToLower(strings.TrimSpace(query))
	hits := []searchHit{}
	total := 0
	for _, n := range all {
		if tag != "" && !containsStr(n.Tags, tag) {
			continue
		}
		var in []string
		if strings.Contains(strings.ToLower(n.Title), q) {
			in = append(in, "title")
		}
		pos := runeIndexFold(n.Content, q)
		if pos >= 0 {
			in = append(in, "content")
		}
		for _, t := range n.Tags {
			if strings.Contains(strings.ToLower(t), q) {
				in = append(in, "tags")
				break
			}
		}
		if len(in) == 0 {
			continue
		}
		total++
		if int64(len(hits)) >= limit {
			continue
		}
		hits = append(hits, searchHit{
			ID: n.ID, Title: n.Title, Snippet: snippet(n.Content, pos, utf8.RuneCountInString(q)), MatchedIn: in,
			Tags: n.Tags, Pinned: n.Pinned, Archived: n.Archived, Trashed: n.Trashed, UpdatedAt: a.fmtTime(n.UpdatedAt),
		})
	}
	page := func(k int) any {
		return struct {
			Query   string      `json:"query"`
			Count   int         `json:"count"`
			Total   int         `json:"total"`
			Results []searchHit `json:"results"`
		}{query, k, total, hits[:k]}
	}
	return page(apptool.Fit(len(hits), page)), nil
}

func containsStr(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// runeIndexFold returns the code-point index of the first case-insensitive
// match of lowered query q in s, or -1.
func runeIndexFold(s, q string) int {
	lower := strings.ToLower(s)
	i := strings.Index(lower, q)
	if i < 0 {
		return -1
	}
	if utf8.RuneCountInString(lower) != utf8.RuneCountInString(s) {
		// Lowercasing changed the length (rare scripts): a match, but no
		// position to cut the snippet at.
		return 0
	}
	return utf8.RuneCountInString(lower[:i])
}

// snippet cuts about snippetChars code points of content around the match
// at pos (or from the start when pos < 0), marking cuts with "…".
func snippet(content string, pos, qlen int) string {
	rs := []rune(content)
	if pos < 0 {
		pos = 0
	}
	start := max(0, pos-(snippetChars-qlen)/2)
	end := min(len(rs), start+snippetChars)
	if end-start < snippetChars {
		start = max(0, end-snippetChars)
	}
	s := strings.Join(strings.Fields(string(rs[start:end])), " ")
	if start > 0 {
		s = "…" + s
	}
	if end < len(rs) {
		s += "…"
	}
	return s
}

func (a *App) idArg(raw json.RawMessage) (int64, error) {
	args, err := parse(raw)
	if err != nil {
		return 0, err
	}
	id := args.Int("id", apptool.Required, apptool.Min(1))
	args.RejectUnknown()
	return id, args.Err()
}

func (a *App) noteTrash(ctx context.Context, raw json.RawMessage) (any, error) {
	id, err := a.idArg(raw)
	if err != nil {
		return nil, err
	}
	return a.edit(ctx, id, func(n *note) error {
		if n.Trashed {
			return apptool.Errorf("Note %d is already in the trash.", id)
		}
		n.Trashed = true
		return nil
	})
}

func (a *App) noteRestore(ctx context.Context, raw json.RawMessage) (any, error) {
	id, err := a.idArg(raw)
	if err != nil {
		return nil, err
	}
	return a.edit(ctx, id, func(n *note) error {
		if !n.Trashed {
			return errUnchanged // restoring is idempotent
		}
		n.Trashed = false
		return nil
	})
}

func (a *App) noteDelete(ctx context.Context, raw json.RawMessage) (any, error) {
	id, err := a.idArg(raw)
	if err != nil {
		return nil, err
	}
	var gone note
	err = appdb.Tx(ctx, a.db, func(q appdb.Querier) error {
		n, err := a.load(ctx, q, id)
		if err != nil {
			return err
		}
		if !n.Trashed {
			return apptool.Errorf(DeleteNotTrashed, id)
		}
		gone = n
		return a.deleteNote(ctx, q, id)
	})
	if err != nil {
		return nil, err
	}
	return struct {
		Deleted bool        `json:"deleted"`
		Note    noteSummary `json:"note"`
	}{true, a.summary(gone)}, nil
}

type tagCount struct {
	Tag   string `json:"tag"`
	Count int    `json:"count"`
}

func (a *App) tagList(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	tags, err := a.tagCounts(ctx)
	if err != nil {
		return nil, err
	}
	return struct {
		Count int        `json:"count"`
		Tags  []tagCount `json:"tags"`
	}{len(tags), tags}, nil
}

func (a *App) tagCounts(ctx context.Context) ([]tagCount, error) {
	rows, err := a.db.QueryContext(ctx, `SELECT json_each.value, count(*) FROM notes, json_each(notes.tags)
		WHERE notes.trashed = 0 GROUP BY json_each.value ORDER BY count(*) DESC, json_each.value`)
	if err != nil {
		return nil, fmt.Errorf("tag list: %w", err)
	}
	defer rows.Close()
	out := []tagCount{}
	for rows.Next() {
		var t tagCount
		if err := rows.Scan(&t.Tag, &t.Count); err != nil {
			return nil, fmt.Errorf("tag list: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
