package todo

import (
	"context"
	"encoding/json"
	"errors"
	"strings"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// Annotation sets of spec §9.4.
var (
	readOnly    = apptool.Annotations{ReadOnlyHint: apptool.Bool(true), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
	plainWrite  = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
	idempotent  = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(false), IdempotentHint: apptool.Bool(true), OpenWorldHint: apptool.Bool(false)}
	destructive = apptool.Annotations{ReadOnlyHint: apptool.Bool(false), DestructiveHint: apptool.Bool(true), IdempotentHint: apptool.Bool(false), OpenWorldHint: apptool.Bool(false)}
)

var (
	idProp       = apptool.Prop{Name: "id", Type: "string", Description: "To-do id (8 hex characters) from todo_list, todo_search or todo_create."}
	titleProp    = apptool.Prop{Name: "title", Type: "string", MaxLength: MaxTitle, Description: "What to do, at most 200 characters."}
	notesProp    = apptool.Prop{Name: "notes", Type: "string", MaxLength: MaxNotes, Description: "Details, at most 10,000 characters."}
	statusProp   = apptool.Prop{Name: "status", Type: "string", Enum: statuses, Description: "todo (not started), doing (in progress), done, or shelved (on hold)."}
	priorityProp = apptool.Prop{Name: "priority", Type: "string", Enum: priorities, Description: "high, medium or low."}
	dueProp      = apptool.Prop{Name: "due", Type: "string", Description: `A date "YYYY-MM-DD" (due that whole day) or an ISO-8601 date-time with UTC offset, e.g. "2026-10-12T17:00:00+08:00". Years 1970-2200.`}
	allDayProp   = apptool.Prop{Name: "due_all_day", Type: "boolean", Description: "true: due on the date of due, whatever the time; false: due needs a time. Defaults to whether due is a plain date."}
	tagsProp     = apptool.Prop{Name: "tags", Type: "array", Items: "string", Description: `Short labels without "#", e.g. ["work"]; at most 20, each at most 40 characters.`}
	parentProp   = apptool.Prop{Name: "parent_id", Type: "string", Description: "Id of the top-level to-do this is a subtask of (one level only)."}
)

func (a *App) buildTools() []apptool.Tool {
	return []apptool.Tool{
		{
			Name: "todo_list", Title: "List to-dos", Annotations: readOnly,
			Description: "List to-dos, high priority first, then by due (soonest first, undated last). Done to-dos are left out unless include_done is true or status is \"done\". due_before and due_after are inclusive and take a date (compared by the phone's local date) or an ISO-8601 date-time. overdue_only keeps open (todo/doing) items whose due has passed. parent_id lists the subtasks of one to-do. Notes are cut to 200 characters (notes_truncated); use todo_get for the full text. Returns {todos, total, offset, limit, count, next_offset}; next_offset is null on the last page.",
			InputSchema: apptool.ObjectSchema(nil,
				apptool.Prop{Name: "status", Type: "string", Enum: statuses, Description: "Only to-dos with this status."},
				apptool.Prop{Name: "priority", Type: "string", Enum: priorities, Description: "Only to-dos with this priority."},
				apptool.Prop{Name: "tag", Type: "string", Description: "Only to-dos carrying this tag (case-insensitive)."},
				apptool.Prop{Name: "due_before", Type: "string", Description: "Only to-dos due on or before this date or date-time."},
				apptool.Prop{Name: "due_after", Type: "string", Description: "Only to-dos due on or after this date or date-time."},
				apptool.Prop{Name: "overdue_only", Type: "boolean", Description: "Only open to-dos that are past due (default false)."},
				apptool.Prop{Name: "parent_id", Type: "string", Description: "Only the subtasks of this to-do."},
				apptool.Prop{Name: "include_done", Type: "boolean", Description: "Also list done to-dos (default false)."},
				apptool.Prop{Name: "limit", Type: "integer", Minimum: apptool.Num(1), Maximum: apptool.Num(200), Description: "Page size, default 50, at most 200."},
				apptool.Prop{Name: "offset", Type: "integer", Minimum: apptool.Num(0), Description: "How many to skip (default 0)."}),
			Handler: a.todoList,
		},
		{
			Name: "todo_get", Title: "Get a to-do", Annotations: readOnly,
			Description: "Get one to-do with its full notes and its subtasks (oldest first).",
			InputSchema: apptool.ObjectSchema([]string{"id"}, idProp),
			Handler:     a.todoGet,
		},
		{
			Name: "todo_create", Title: "Create a to-do", Annotations: plainWrite,
			Description: "Create a to-do: one thing with a clear done state. Search with todo_search first so you do not add a duplicate. priority defaults to medium and status to todo. A due date does not ring or notify; for something that must ring use an alarm, for a meeting a calendar event. parent_id makes it a subtask of an existing top-level to-do. Returns the new to-do.",
			InputSchema: apptool.ObjectSchema([]string{"title"}, titleProp, notesProp, priorityProp, dueProp, allDayProp, tagsProp, parentProp, statusProp),
			Handler:     a.todoCreate,
		},
		{
			Name: "todo_update", Title: "Update a to-do", Annotations: idempotent,
			Description: "Change fields of a to-do; only what you pass changes, and at least one field is needed. notes and tags replace the old value; \"\" clears notes, due or parent_id (making a subtask top-level), [] clears tags. due_all_day alone turns the current due into an all-day due on its date. Returns the updated to-do.",
			InputSchema: apptool.ObjectSchema([]string{"id"}, idProp, titleProp, notesProp, priorityProp, dueProp, allDayProp, tagsProp, parentProp, statusProp),
			Handler:     a.todoUpdate,
		},
		{
			Name: "todo_set_status", Title: "Set a to-do's status", Annotations: idempotent,
			Description: "Set the status of a to-do: todo, doing, done or shelved. Marking done records done_at; any other status clears it. Subtasks keep their own status. Returns the to-do.",
			InputSchema: apptool.ObjectSchema([]string{"id", "status"}, idProp, statusProp),
			Handler:     a.todoSetStatus,
		},
		{
			Name: "todo_delete", Title: "Delete a to-do", Annotations: destructive,
			Description: "Delete a to-do for good, together with its subtasks. This cannot be undone; to keep the record use todo_set_status done or shelved. Returns {deleted (how many to-dos in all), id, title, subtasks_deleted}.",
			InputSchema: apptool.ObjectSchema([]string{"id"}, idProp),
			Handler:     a.todoDelete,
		},
		{
			Name: "todo_search", Title: "Search to-dos", Annotations: readOnly,
			Description: "Search to-dos of every status (done included) by text in the title, notes or tags, case-insensitively; every word of the query must match somewhere. Title matches come first; matched_in says where each one matched. Returns {query, results, total, count, has_more}.",
			InputSchema: apptool.ObjectSchema([]string{"query"},
				apptool.Prop{Name: "query", Type: "string", MaxLength: MaxQuery, Description: "Words to look for."},
				apptool.Prop{Name: "status", Type: "string", Enum: statuses, Description: "Only to-dos with this status."},
				apptool.Prop{Name: "limit", Type: "integer", Minimum: apptool.Num(1), Maximum: apptool.Num(100), Description: "At most this many results, default 20, at most 100."}),
			Handler: a.todoSearch,
		},
		{
			Name: "todo_summary", Title: "To-do overview", Annotations: readOnly,
			Description: "Counts of all to-dos (subtasks included) per status, and of open ones (todo/doing): overdue, due_today and due_this_week (today to Sunday, not overdue, includes due_today). Returns today, week_start (Monday), week_end and time_zone so you can name the range. Use todo_list for the items behind a number.",
			InputSchema: apptool.ObjectSchema(nil),
			Handler:     a.todoSummary,
		},
	}
}

func parse(raw json.RawMessage) (*apptool.Args, error) { return apptool.ParseArgs(raw) }

// readDue reads "due" and "due_all_day". clear is true for due "" (only
// when allowClear).
type dueArg struct {
	has, clear bool
	value      due
	allDay     bool
	hasAllDay  bool
}

func (a *App) readDue(args *apptool.Args, allowClear bool) dueArg {
	var d dueArg
	d.allDay, d.hasAllDay = args.BoolOK("due_all_day")
	s, ok := args.StringOK("due")
	if !ok {
		return d
	}
	d.has = true
	if strings.TrimSpace(s) == "" && allowClear {
		d.clear = true
		if d.hasAllDay {
			args.Fail(`Parameter "due_all_day" cannot be combined with an empty "due".`)
		}
		return d
	}
	m, err := apptool.ParseMoment(s, a.loc, true)
	switch {
	case errors.Is(err, apptool.ErrNoOffset):
		args.Fail(`Parameter "due" needs a UTC offset, e.g. "2026-10-12T17:00:00+08:00", or use a plain date "2026-10-12".`)
		return d
	case err != nil:
		args.Fail(`Parameter "due" must be a date "YYYY-MM-DD" or an ISO-8601 date-time with offset, e.g. "2026-10-12T17:00:00+08:00".`)
		return d
	case m.Date.Year < minDueYear || m.Date.Year > maxDueYear:
		args.Fail(`Parameter "due" must be between the years 1970 and 2200.`)
		return d
	}
	allDay := m.DateOnly
	if d.hasAllDay {
		allDay = d.allDay
	}
	if m.DateOnly && !allDay {
		args.Fail(`Parameter "due" needs a time when "due_all_day" is false, e.g. "2026-10-12T17:00:00+08:00".`)
		return d
	}
	if allDay {
		d.value = due{Set: true, AllDay: true, Date: m.Date}
	} else {
		d.value = due{Set: true, At: m.Time}
	}
	return d
}

// readTags reads "tags": trimmed, without a leading "#", no empties, no
// duplicates (case-insensitive), at most MaxTags of MaxTag characters.
func readTags(args *apptool.Args) ([]string, bool) {
	list, ok := args.Strings("tags")
	if !ok {
		return nil, false
	}
	out := []string{}
	for _, t := range list {
		t = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(t), "#"))
		switch {
		case t == "":
			args.Fail(`Items of "tags" must not be empty.`)
			return nil, true
		case len([]rune(t)) > MaxTag:
			args.Fail(`Each item of "tags" must be at most %d characters.`, MaxTag)
			return nil, true
		case hasTag(out, t):
			continue
		}
		out = append(out, t)
	}
	if len(out) > MaxTags {
		args.Fail(`Parameter "tags" may hold at most %d tags.`, MaxTags)
	}
	return out, true
}

func (a *App) todoList(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	var f filter
	f.status = args.String("status", apptool.OneOf(statuses...))
	f.priority = args.String("priority", apptool.OneOf(priorities...))
	f.tag = strings.TrimLeft(strings.TrimSpace(args.String("tag")), "#")
	f.before = a.readBound(args, "due_before")
	f.after = a.readBound(args, "due_after")
	f.overdueOnly = args.Bool("overdue_only", false)
	f.parentID = args.String("parent_id")
	f.includeDone = args.Bool("include_done", false)
	limit, ok := args.IntOK("limit", apptool.Range(1, 200))
	if !ok {
		limit = 50
	}
	offset := int(args.Int("offset", apptool.Min(0)))
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	type result struct {
		Todos      []todoJSON `json:"todos"`
		Total      int        `json:"total"`
		Offset     int        `json:"offset"`
		Limit      int        `json:"limit"`
		Count      int        `json:"count"`
		NextOffset *int       `json:"next_offset"`
	}
	var out result
	err = a.do(ctx, func(s *state) error {
		if f.parentID != "" {
			if _, err := s.find(f.parentID); err != nil {
				return err
			}
		}
		all := s.filter(f)
		var page []todoJSON
		for i := offset; i < len(all) && i < offset+int(limit); i++ {
			page = append(page, s.json(all[i], true))
		}
		build := func(k int) any {
			r := result{Todos: append([]todoJSON{}, page[:k]...), Total: len(all), Offset: offset, Limit: int(limit), Count: k}
			if next := offset + k; next < len(all) {
				r.NextOffset = &next
			}
			return r
		}
		out = build(apptool.Fit(len(page), build)).(result)
		return nil
	})
	return out, err
}

func (a *App) readBound(args *apptool.Args, name string) bound {
	s, ok := args.StringOK(name)
	if !ok || strings.TrimSpace(s) == "" {
		return bound{}
	}
	m, err := apptool.ParseMoment(s, a.loc, false)
	if err != nil {
		args.Fail(`Parameter %q must be a date "YYYY-MM-DD" or an ISO-8601 date-time.`, name)
		return bound{}
	}
	return bound{set: true, dateOnly: m.DateOnly, date: m.Date, at: m.Time}
}

// withTodo reads the required "id" (after read has read the rest), then
// runs fn on that to-do.
func (a *App) withTodo(ctx context.Context, raw json.RawMessage, read func(args *apptool.Args) error, fn func(s *state, t *todo) (any, error)) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	id := args.String("id", apptool.Required, apptool.NonEmpty)
	if read != nil {
		if err := read(args); err != nil {
			return nil, err
		}
	}
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	var out any
	err = a.do(ctx, func(s *state) error {
		t, err := s.find(strings.TrimSpace(id))
		if err != nil {
			return err
		}
		out, err = fn(s, t)
		return err
	})
	return out, err
}

func (a *App) todoGet(ctx context.Context, raw json.RawMessage) (any, error) {
	return a.withTodo(ctx, raw, nil, func(s *state, t *todo) (any, error) {
		out := s.json(t, false)
		out.Subtasks = []todoJSON{}
		for _, c := range s.children(t.ID) {
			out.Subtasks = append(out.Subtasks, s.json(c, false))
		}
		// Subtasks are one level deep and each note is bounded, but a
		// to-do with hundreds of long subtasks could still exceed the
		// channel: keep the first that fit.
		build := func(k int) any { o := out; o.Subtasks = out.Subtasks[:k]; return o }
		return build(apptool.Fit(len(out.Subtasks), build)), nil
	})
}

// checkParent enforces one level of subtasks: the parent exists, is
// top-level, is not t, and t has no subtasks of its own.
func (s *state) checkParent(t *todo, parentID string) error {
	p, err := s.find(parentID)
	if err != nil {
		return err
	}
	switch {
	case t != nil && p.ID == t.ID:
		return apptool.Errorf("A to-do cannot be its own subtask.")
	case p.ParentID != "":
		return apptool.Errorf("To-do %q is itself a subtask; subtasks cannot have subtasks.", p.ID)
	case t != nil && len(s.children(t.ID)) > 0:
		return apptool.Errorf("To-do %q has subtasks, so it cannot become a subtask.", t.ID)
	}
	return nil
}

func (a *App) todoCreate(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	t := &todo{Status: "todo", Priority: "medium", Tags: []string{}}
	t.Title = strings.TrimSpace(args.String("title", apptool.Required, apptool.NonEmpty, apptool.MaxLen(MaxTitle)))
	t.Notes = args.String("notes", apptool.MaxLen(MaxNotes))
	if p := args.String("priority", apptool.OneOf(priorities...)); p != "" {
		t.Priority = p
	}
	d := a.readDue(args, false)
	if d.hasAllDay && !d.has {
		args.Fail(`Parameter "due_all_day" only applies together with "due".`)
	}
	t.Due = d.value
	if tags, ok := readTags(args); ok {
		t.Tags = tags
	}
	t.ParentID = strings.TrimSpace(args.String("parent_id"))
	if st := args.String("status", apptool.OneOf(statuses...)); st != "" {
		t.Status = st
	}
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	var out todoJSON
	err = a.do(ctx, func(s *state) error {
		if t.ParentID != "" {
			if err := s.checkParent(nil, t.ParentID); err != nil {
				return err
			}
		}
		if err := s.add(t); err != nil {
			return err
		}
		out = s.json(t, false)
		return nil
	})
	return out, err
}

func (a *App) todoUpdate(ctx context.Context, raw json.RawMessage) (any, error) {
	var (
		title, notes, priority, status, parent             string
		hasTitle, hasNotes, hasPriority, hasStatus, hasPar bool
		d                                                  dueArg
		tags                                               []string
		hasTags                                            bool
	)
	read := func(args *apptool.Args) error {
		title, hasTitle = args.StringOK("title", apptool.NonEmpty, apptool.MaxLen(MaxTitle))
		notes, hasNotes = args.StringOK("notes", apptool.MaxLen(MaxNotes))
		priority, hasPriority = args.StringOK("priority", apptool.OneOf(priorities...))
		d = a.readDue(args, true)
		tags, hasTags = readTags(args)
		parent, hasPar = args.StringOK("parent_id")
		status, hasStatus = args.StringOK("status", apptool.OneOf(statuses...))
		args.RejectUnknown()
		if !hasTitle && !hasNotes && !hasPriority && !d.has && !d.hasAllDay && !hasTags && !hasPar && !hasStatus {
			args.Fail("Nothing to update: pass at least one of title, notes, priority, due, due_all_day, tags, parent_id, status.")
		}
		return nil
	}
	return a.withTodo(ctx, raw, read, func(s *state, t *todo) (any, error) {
		if hasPar && strings.TrimSpace(parent) != "" {
			if err := s.checkParent(t, strings.TrimSpace(parent)); err != nil {
				return nil, err
			}
		}
		if d.hasAllDay && !d.has {
			// due_all_day alone converts the current due.
			switch {
			case !t.Due.Set:
				return nil, apptool.Errorf("This to-do has no due date for \"due_all_day\" to apply to; pass \"due\" as well.")
			case d.allDay && !t.Due.AllDay:
				t.Due = due{Set: true, AllDay: true, Date: apptool.DateOf(t.Due.At, s.loc)}
			case !d.allDay && t.Due.AllDay:
				return nil, apptool.Errorf("An all-day due has no time; pass \"due\" as an ISO-8601 date-time with offset.")
			}
		}
		if hasTitle {
			t.Title = strings.TrimSpace(title)
		}
		if hasNotes {
			t.Notes = notes
		}
		if hasPriority {
			t.Priority = priority
		}
		if d.clear {
			t.Due = due{}
		} else if d.has {
			t.Due = d.value
		}
		if hasTags {
			t.Tags = tags
		}
		if hasPar {
			t.ParentID = strings.TrimSpace(parent)
		}
		if hasStatus {
			s.setStatus(t, status)
		}
		if err := s.save(t); err != nil {
			return nil, err
		}
		return s.json(t, false), nil
	})
}

func (a *App) todoSetStatus(ctx context.Context, raw json.RawMessage) (any, error) {
	var status string
	read := func(args *apptool.Args) error {
		status = args.String("status", apptool.Required, apptool.OneOf(statuses...))
		return nil
	}
	return a.withTodo(ctx, raw, read, func(s *state, t *todo) (any, error) {
		if t.Status != status {
			s.setStatus(t, status)
			if err := s.save(t); err != nil {
				return nil, err
			}
		}
		return s.json(t, false), nil
	})
}

func (a *App) todoDelete(ctx context.Context, raw json.RawMessage) (any, error) {
	return a.withTodo(ctx, raw, nil, func(s *state, t *todo) (any, error) {
		n, err := s.remove(t)
		if err != nil {
			return nil, err
		}
		return struct {
			Deleted         int    `json:"deleted"`
			ID              string `json:"id"`
			Title           string `json:"title"`
			SubtasksDeleted int    `json:"subtasks_deleted"`
		}{n, t.ID, t.Title, n - 1}, nil
	})
}

func (a *App) todoSearch(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	query := strings.TrimSpace(args.String("query", apptool.Required, apptool.NonEmpty, apptool.MaxLen(MaxQuery)))
	status := args.String("status", apptool.OneOf(statuses...))
	limit, ok := args.IntOK("limit", apptool.Range(1, 100))
	if !ok {
		limit = 20
	}
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	type result struct {
		Query   string     `json:"query"`
		Results []todoJSON `json:"results"`
		Total   int        `json:"total"`
		Count   int        `json:"count"`
		HasMore bool       `json:"has_more"`
	}
	var out result
	err = a.do(ctx, func(s *state) error {
		hits := s.search(query, status)
		var page []todoJSON
		for i := 0; i < len(hits) && i < int(limit); i++ {
			j := s.json(hits[i].t, true)
			j.MatchedIn = hits[i].matchedIn
			page = append(page, j)
		}
		build := func(k int) any {
			return result{Query: query, Results: append([]todoJSON{}, page[:k]...), Total: len(hits), Count: k, HasMore: k < len(hits)}
		}
		out = build(apptool.Fit(len(page), build)).(result)
		return nil
	})
	return out, err
}

func (a *App) todoSummary(ctx context.Context, raw json.RawMessage) (any, error) {
	args, err := parse(raw)
	if err != nil {
		return nil, err
	}
	args.RejectUnknown()
	if err := args.Err(); err != nil {
		return nil, err
	}
	var out Summary
	err = a.do(ctx, func(s *state) error {
		out = s.summary()
		return nil
	})
	return out, err
}
