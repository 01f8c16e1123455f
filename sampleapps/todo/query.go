package todo

import (
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

var (
	statuses   = []string{"todo", "doing", "done", "shelved"}
	priorities = []string{"high", "medium", "low"}
)

func priorityRank(p string) int {
	for i, v := range priorities {
		if v == p {
			return i
		}
	}
	return len(priorities)
}

// overdue: an open to-do whose due has passed; an all-day due is overdue
// from the next local day.
func (s *state) overdue(t *todo) bool {
	if !t.open() || !t.Due.Set {
		return false
	}
	if t.Due.AllDay {
		return t.Due.Date.Compare(s.today) < 0
	}
	return t.Due.At.Before(s.now)
}

// todoJSON is the to-do object of the tools.
type todoJSON struct {
	ID             string     `json:"id"`
	Title          string     `json:"title"`
	Notes          string     `json:"notes"`
	NotesTruncated bool       `json:"notes_truncated,omitempty"`
	Status         string     `json:"status"`
	Priority       string     `json:"priority"`
	Due            *string    `json:"due"`
	DueAllDay      bool       `json:"due_all_day"`
	Overdue        bool       `json:"overdue"`
	Tags           []string   `json:"tags"`
	ParentID       *string    `json:"parent_id"`
	SubtasksTotal  *int       `json:"subtasks_total,omitempty"`
	SubtasksDone   *int       `json:"subtasks_done,omitempty"`
	CreatedAt      string     `json:"created_at"`
	UpdatedAt      string     `json:"updated_at"`
	DoneAt         *string    `json:"done_at"`
	MatchedIn      []string   `json:"matched_in,omitempty"`
	Subtasks       []todoJSON `json:"subtasks,omitempty"`
}

// json renders t; preview cuts the notes to 200 characters for lists.
func (s *state) json(t *todo, preview bool) todoJSON {
	out := todoJSON{
		ID: t.ID, Title: t.Title, Notes: t.Notes, Status: t.Status, Priority: t.Priority, Overdue: s.overdue(t),
		Tags: append([]string{}, t.Tags...), CreatedAt: apptool.ISO(t.CreatedAt, s.loc), UpdatedAt: apptool.ISO(t.UpdatedAt, s.loc),
	}
	if preview && utf8.RuneCountInString(t.Notes) > notesPreview {
		out.Notes, out.NotesTruncated = string([]rune(t.Notes)[:notesPreview]), true
	}
	if t.Due.Set {
		v := apptool.ISO(t.Due.At, s.loc)
		if t.Due.AllDay {
			v = t.Due.Date.String()
		}
		out.Due, out.DueAllDay = &v, t.Due.AllDay
	}
	if t.ParentID != "" {
		p := t.ParentID
		out.ParentID = &p
	}
	if !t.DoneAt.IsZero() {
		v := apptool.ISO(t.DoneAt, s.loc)
		out.DoneAt = &v
	}
	if kids := s.children(t.ID); len(kids) > 0 {
		total, done := len(kids), 0
		for _, c := range kids {
			if c.Status == "done" {
				done++
			}
		}
		out.SubtasksTotal, out.SubtasksDone = &total, &done
	}
	return out
}

// sortTodos orders by priority (high first), then due (soonest first,
// undated last), then creation.
func (s *state) sortTodos(list []*todo) {
	sort.SliceStable(list, func(i, j int) bool {
		a, b := list[i], list[j]
		if pa, pb := priorityRank(a.Priority), priorityRank(b.Priority); pa != pb {
			return pa < pb
		}
		if a.Due.Set != b.Due.Set {
			return a.Due.Set
		}
		if a.Due.Set {
			if da, db := a.Due.instant(s.loc), b.Due.instant(s.loc); !da.Equal(db) {
				return da.Before(db)
			}
		}
		return a.Seq < b.Seq
	})
}

// bound is an inclusive due_before / due_after limit.
type bound struct {
	set      bool
	dateOnly bool
	date     apptool.Date
	at       time.Time
}

// before reports whether t's due is on or before b (after=false) or on or
// after b (after=true). A date bound, and an all-day due, compare by local
// date.
func (s *state) within(t *todo, b bound, after bool) bool {
	if !t.Due.Set {
		return false
	}
	var c int
	if b.dateOnly || t.Due.AllDay {
		bd := b.date
		if !b.dateOnly {
			bd = apptool.DateOf(b.at, s.loc)
		}
		c = t.Due.date(s.loc).Compare(bd)
	} else {
		c = t.Due.At.Compare(b.at)
	}
	if after {
		return c >= 0
	}
	return c <= 0
}

type filter struct {
	status, priority, tag, parentID string
	before, after                   bound
	overdueOnly, includeDone        bool
}

func (s *state) filter(f filter) []*todo {
	var out []*todo
	for _, t := range s.todos {
		switch {
		case f.status != "" && t.Status != f.status,
			f.status == "" && !f.includeDone && t.Status == "done",
			f.priority != "" && t.Priority != f.priority,
			f.tag != "" && !hasTag(t.Tags, f.tag),
			f.parentID != "" && t.ParentID != f.parentID,
			f.before.set && !s.within(t, f.before, false),
			f.after.set && !s.within(t, f.after, true),
			f.overdueOnly && !s.overdue(t):
			continue
		}
		out = append(out, t)
	}
	s.sortTodos(out)
	return out
}

func hasTag(tags []string, tag string) bool {
	for _, t := range tags {
		if strings.EqualFold(t, tag) {
			return true
		}
	}
	return false
}

type hit struct {
	t         *todo
	matchedIn []string
}

// search: every word of the query must appear (case-insensitively) in the
// title, the notes or a tag; to-dos matching in the title come first.
func (s *state) search(query, status string) []hit {
	words := strings.Fields(strings.ToLower(query))
	var hits []hit
	for _, t := range s.todos {
		if status != "" && t.Status != status {
			continue
		}
		title, notes := strings.ToLower(t.Title), strings.ToLower(t.Notes)
		tags := strings.ToLower(strings.Join(t.Tags, "\x00"))
		in := map[string]bool{}
		all := true
		for _, w := range words {
			found := false
			for field, text := range map[string]string{"title": title, "notes": notes, "tags": tags} {
				if strings.Contains(text, w) {
					in[field], found = true, true
				}
			}
			if !found {
				all = false
				break
			}
		}
		if !all {
			continue
		}
		h := hit{t: t}
		for _, field := range []string{"title", "notes", "tags"} {
			if in[field] {
				h.matchedIn = append(h.matchedIn, field)
			}
		}
		hits = append(hits, h)
	}
	list := make([]*todo, len(hits))
	byTodo := map[*todo]hit{}
	for i, h := range hits {
		list[i] = h.t
		byTodo[h.t] = h
	}
	s.sortTodos(list)
	sort.SliceStable(list, func(i, j int) bool {
		return byTodo[list[i]].matchedIn[0] == "title" && byTodo[list[j]].matchedIn[0] != "title"
	})
	out := make([]hit, len(list))
	for i, t := range list {
		out[i] = byTodo[t]
	}
	return out
}

// Summary is todo_summary's result.
type Summary struct {
	Counts      map[string]int `json:"counts"`
	Total       int            `json:"total"`
	Overdue     int            `json:"overdue"`
	DueToday    int            `json:"due_today"`
	DueThisWeek int            `json:"due_this_week"`
	Today       string         `json:"today"`
	WeekStart   string         `json:"week_start"`
	WeekEnd     string         `json:"week_end"`
	TimeZone    string         `json:"time_zone"`
}

// summary counts every to-do (subtasks included). due_today and
// due_this_week count open to-dos that are not yet overdue; the week runs
// Monday to Sunday and includes today.
func (s *state) summary() Summary {
	weekStart := s.today.AddDays(-((int(s.today.Weekday()) + 6) % 7))
	weekEnd := weekStart.AddDays(6)
	sum := Summary{Counts: map[string]int{}, Today: s.today.String(), WeekStart: weekStart.String(), WeekEnd: weekEnd.String(), TimeZone: s.loc.String()}
	for _, st := range statuses {
		sum.Counts[st] = 0
	}
	for _, t := range s.todos {
		sum.Total++
		sum.Counts[t.Status]++
		if !t.open() || !t.Due.Set {
			continue
		}
		if s.overdue(t) {
			sum.Overdue++
			continue
		}
		d := t.Due.date(s.loc)
		if d == s.today {
			sum.DueToday++
		}
		if d.Compare(s.today) >= 0 && d.Compare(weekEnd) <= 0 {
			sum.DueThisWeek++
		}
	}
	return sum
}
