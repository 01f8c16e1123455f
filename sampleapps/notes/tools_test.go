package notes

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

func TestToolCatalog(t *testing.T) {
	t.Parallel()
	a, _ := newApp(t, time.UTC, nil)
	type hints struct{ readOnly, idempotent, destructive bool }
	want := []struct {
		name string
		h    hints
	}{
		{"note_list", hints{readOnly: true}},
		{"note_get", hints{readOnly: true}},
		{"note_create", hints{}},
		{"note_update", hints{idempotent: true}},
		{"note_append", hints{}},
		{"note_search", hints{readOnly: true}},
		{"note_trash", hints{}},
		{"note_restore", hints{idempotent: true}},
		{"note_delete", hints{destructive: true}},
		{"tag_list", hints{readOnly: true}},
	}
	tools := a.Tools()
	if len(tools) != len(want) {
		t.Fatalf("%d tools, want %d (spec §9.7: notes has 10)", len(tools), len(want))
	}
	is := func(p *bool) bool { return p != nil && *p }
	for i, w := range want {
		tl := tools[i]
		if tl.Name != w.name {
			t.Errorf("tool %d = %s, want %s", i, tl.Name, w.name)
			continue
		}
		an := tl.Annotations
		got := hints{is(an.ReadOnlyHint), is(an.IdempotentHint), is(an.DestructiveHint)}
		if got != w.h {
			t.Errorf("%s annotations %+v, want %+v", tl.Name, got, w.h)
		}
		if strings.HasSuffix(tl.Name, "_delete") != is(an.DestructiveHint) {
			t.Errorf("%s: every *_delete and only those are destructive", tl.Name)
		}
		if tl.Description == "" || tl.Title == "" || an.Title != tl.Title {
			t.Errorf("%s: missing description or title", tl.Name)
		}
		var s struct {
			Type                 string                     `json:"type"`
			Properties           map[string]json.RawMessage `json:"properties"`
			Required             []string                   `json:"required"`
			AdditionalProperties *bool                      `json:"additionalProperties"`
		}
		if err := json.Unmarshal(tl.InputSchema, &s); err != nil {
			t.Fatalf("%s schema: %v", tl.Name, err)
		}
		if s.Type != "object" || s.Properties == nil || s.AdditionalProperties == nil || *s.AdditionalProperties {
			t.Errorf("%s schema is not a closed object: %s", tl.Name, tl.InputSchema)
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s requires undeclared %q", tl.Name, r)
			}
		}
	}
}

// seedTools creates: 1 "Groceries" (tags home, pinned), 2 "Trip" (tags
// travel, work), 3 archived, 4 trashed.
func seedTools(t *testing.T, a *App, clk *sampletest.Clock) {
	t.Helper()
	sampletest.OK(t, a, "note_create", `{"title":"Groceries","content":"milk, eggs and Coffee beans","tags":["home"],"pinned":true}`)
	clk.Advance(time.Minute)
	sampletest.OK(t, a, "note_create", `{"title":"Trip","content":"Book the train to Hamburg for Friday.","tags":["travel","work"]}`)
	clk.Advance(time.Minute)
	sampletest.OK(t, a, "note_create", `{"title":"Old plans","content":"archived thing","tags":["work"]}`)
	sampletest.OK(t, a, "note_update", `{"id":3,"archived":true}`)
	clk.Advance(time.Minute)
	sampletest.OK(t, a, "note_create", `{"title":"Junk","content":"throw away coffee"}`)
	sampletest.OK(t, a, "note_trash", `{"id":4}`)
	clk.Advance(time.Minute)
}

func TestTools(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", MaxContent+1)
	tests := []struct {
		name    string
		tool    string
		args    string
		wantErr string
		check   func(t *testing.T, a *App, res map[string]any)
	}{
		// note_list
		{"list default", "note_list", `{}`, "", func(t *testing.T, a *App, r map[string]any) {
			wantIDs(t, r["notes"], 1, 2) // pinned first; archived and trashed left out
			if r["total"] != 2.0 || r["has_more"] != false || r["next_offset"] != nil {
				t.Errorf("paging %v", r)
			}
		}},
		{"list paging", "note_list", `{"limit":1}`, "", func(t *testing.T, a *App, r map[string]any) {
			wantIDs(t, r["notes"], 1)
			if r["has_more"] != true || r["next_offset"] != 1.0 {
				t.Errorf("paging %v", r)
			}
		}},
		{"list offset", "note_list", `{"limit":1,"offset":1}`, "", func(t *testing.T, a *App, r map[string]any) { wantIDs(t, r["notes"], 2) }},
		{"list tag", "note_list", `{"tag":"work"}`, "", func(t *testing.T, a *App, r map[string]any) { wantIDs(t, r["notes"], 2) }},
		{"list archived", "note_list", `{"archived":true}`, "", func(t *testing.T, a *App, r map[string]any) { wantIDs(t, r["notes"], 3) }},
		{"list trash", "note_list", `{"trashed":true}`, "", func(t *testing.T, a *App, r map[string]any) { wantIDs(t, r["notes"], 4) }},
		{"list unpinned", "note_list", `{"pinned":false}`, "", func(t *testing.T, a *App, r map[string]any) { wantIDs(t, r["notes"], 2) }},
		{"list limit too big", "note_list", `{"limit":201}`, `Parameter "limit" must be between 1 and 200.`, nil},
		{"list bad type", "note_list", `{"archived":"yes"}`, `Parameter "archived" must be true or false.`, nil},
		{"list unknown param", "note_list", `{"folder":"x"}`, `Unknown parameter "folder".`, nil},
		{"list negative offset", "note_list", `{"offset":-1}`, `Parameter "offset" must be at least 0.`, nil},
		// note_get
		{"get", "note_get", `{"id":2}`, "", func(t *testing.T, a *App, r map[string]any) {
			if r["content"] != "Book the train to Hamburg for Friday." || r["next_offset"] != nil || r["content_chars"] != 37.0 {
				t.Errorf("get %v", r)
			}
		}},
		{"get chunk", "note_get", `{"id":2,"offset":5,"max_chars":3}`, "", func(t *testing.T, a *App, r map[string]any) {
			if r["content"] != "the" || r["next_offset"] != 8.0 || r["offset"] != 5.0 {
				t.Errorf("chunk %v", r)
			}
		}},
		{"get trashed still readable", "note_get", `{"id":4}`, "", func(t *testing.T, a *App, r map[string]any) {
			if r["trashed"] != true {
				t.Errorf("%v", r)
			}
		}},
		{"get missing id", "note_get", `{}`, `Missing required parameter "id".`, nil},
		{"get bad id", "note_get", `{"id":"2"}`, `Parameter "id" must be an integer.`, nil},
		{"get unknown id", "note_get", `{"id":99}`, `No note with id 99.`, nil},
		{"get offset past end", "note_get", `{"id":2,"offset":38}`, `Offset 38 is past the end of note 2 (37 characters).`, nil},
		{"get max_chars range", "note_get", `{"id":2,"max_chars":0}`, `Parameter "max_chars" must be between 1 and 20000.`, nil},
		// note_create
		{"create", "note_create", `{"content":"hello","title":" Hi ","tags":["a"," a ","b"],"color":"blue"}`, "", func(t *testing.T, a *App, r map[string]any) {
			if r["id"] != 5.0 || r["title"] != "Hi" || fmt.Sprint(r["tags"]) != "[a b]" || r["color"] != "blue" || r["created_at"] != "2026-10-12T06:04:00+00:00" {
				t.Errorf("create %v", r)
			}
		}},
		{"create missing content", "note_create", `{"title":"x"}`, `Missing required parameter "content".`, nil},
		{"create blank content", "note_create", `{"content":"   "}`, `Parameter "content" must not be empty.`, nil},
		{"create bad color", "note_create", `{"content":"x","color":"black"}`, `Parameter "color" must be one of ` + strings.Join(Colors, ", ") + `.`, nil},
		{"create oversized", "note_create", `{"content":"` + long + `"}`, `Parameter "content" is too long (50001 characters; the limit is 50000).`, nil},
		{"create too many tags", "note_create", `{"content":"x","tags":` + manyTags(21) + `}`, `Parameter "tags" has 21 items; the limit is 20.`, nil},
		{"create tags wrong type", "note_create", `{"content":"x","tags":"a,b"}`, `Parameter "tags" must be an array of strings.`, nil},
		{"create not an object", "note_create", `["x"]`, `Arguments must be a JSON object.`, nil},
		// note_update
		{"update content replaces", "note_update", `{"id":2,"content":"new text","tags":["x"]}`, "", func(t *testing.T, a *App, r map[string]any) {
			g := sampletest.OK(t, a, "note_get", `{"id":2}`)
			if g["content"] != "new text" || fmt.Sprint(g["tags"]) != "[x]" || g["updated_at"] != "2026-10-12T06:04:00+00:00" {
				t.Errorf("after update %v", g)
			}
		}},
		{"update empty patch", "note_update", `{"id":2}`, `Nothing to update: give at least one of title, content, tags, color, pinned, archived.`, nil},
		{"update trashed refused", "note_update", `{"id":2,"trashed":true}`, `note_update cannot move a note to or from the trash; use note_trash or note_restore.`, nil},
		{"update note in trash", "note_update", `{"id":4,"title":"x"}`, `Note 4 is in the trash; restore it with note_restore before editing it.`, nil},
		{"update unknown id", "note_update", `{"id":77,"title":"x"}`, `No note with id 77.`, nil},
		{"update missing id", "note_update", `{"title":"x"}`, `Missing required parameter "id".`, nil},
		{"update bad pinned", "note_update", `{"id":2,"pinned":1}`, `Parameter "pinned" must be true or false.`, nil},
		// note_append
		{"append default separator", "note_append", `{"id":2,"text":"Seat 42."}`, "", func(t *testing.T, a *App, r map[string]any) {
			g := sampletest.OK(t, a, "note_get", `{"id":2}`)
			if g["content"] != "Book the train to Hamburg for Friday.\nSeat 42." {
				t.Errorf("content %q", g["content"])
			}
		}},
		{"append separator", "note_append", `{"id":2,"text":"Seat 42.","separator":" | "}`, "", func(t *testing.T, a *App, r map[string]any) {
			g := sampletest.OK(t, a, "note_get", `{"id":2}`)
			if g["content"] != "Book the train to Hamburg for Friday. | Seat 42." {
				t.Errorf("content %q", g["content"])
			}
		}},
		{"append missing text", "note_append", `{"id":2}`, `Missing required parameter "text".`, nil},
		{"append unknown id", "note_append", `{"id":9,"text":"x"}`, `No note with id 9.`, nil},
		{"append too long in total", "note_append", `{"id":2,"text":"` + strings.Repeat("y", MaxContent-10) + `"}`, `Note 2 would be too long (50028 characters; the limit is 50000).`, nil},
		// note_search
		{"search content case-insensitive", "note_search", `{"query":"COFFEE"}`, "", func(t *testing.T, a *App, r map[string]any) {
			hits := r["results"].([]any)
			if len(hits) != 1 || hits[0].(map[string]any)["id"] != 1.0 {
				t.Fatalf("hits %v", hits)
			}
			h := hits[0].(map[string]any)
			if fmt.Sprint(h["matched_in"]) != "[content]" || !strings.Contains(h["snippet"].(string), "Coffee") {
				t.Errorf("hit %v", h)
			}
		}},
		{"search include trashed", "note_search", `{"query":"coffee","include_trashed":true}`, "", func(t *testing.T, a *App, r map[string]any) {
			if r["count"] != 2.0 {
				t.Errorf("%v", r)
			}
		}},
		{"search title and tags", "note_search", `{"query":"trip"}`, "", func(t *testing.T, a *App, r map[string]any) {
			h := r["results"].([]any)[0].(map[string]any)
			if fmt.Sprint(h["matched_in"]) != "[title]" {
				t.Errorf("%v", h)
			}
		}},
		{"search tags", "note_search", `{"query":"trav"}`, "", func(t *testing.T, a *App, r map[string]any) {
			h := r["results"].([]any)[0].(map[string]any)
			if fmt.Sprint(h["matched_in"]) != "[tags]" {
				t.Errorf("%v", h)
			}
		}},
		{"search tag filter", "note_search", `{"query":"e","tag":"home"}`, "", func(t *testing.T, a *App, r map[string]any) {
			if r["count"] != 1.0 {
				t.Errorf("%v", r)
			}
		}},
		{"search limit", "note_search", `{"query":"e","limit":1}`, "", func(t *testing.T, a *App, r map[string]any) {
			if r["count"] != 1.0 || r["total"] != 3.0 {
				t.Errorf("%v", r)
			}
		}},
		{"search missing query", "note_search", `{}`, `Missing required parameter "query".`, nil},
		{"search long query", "note_search", `{"query":"` + strings.Repeat("q", 201) + `"}`, `Parameter "query" is too long (201 characters; the limit is 200).`, nil},
		// trash / restore / delete
		{"trash", "note_trash", `{"id":2}`, "", func(t *testing.T, a *App, r map[string]any) {
			if r["trashed"] != true {
				t.Errorf("%v", r)
			}
		}},
		{"trash twice", "note_trash", `{"id":4}`, `Note 4 is already in the trash.`, nil},
		{"trash unknown", "note_trash", `{"id":40}`, `No note with id 40.`, nil},
		{"trash missing id", "note_trash", `{}`, `Missing required parameter "id".`, nil},
		{"restore", "note_restore", `{"id":4}`, "", func(t *testing.T, a *App, r map[string]any) {
			if r["trashed"] != false {
				t.Errorf("%v", r)
			}
		}},
		{"restore is idempotent", "note_restore", `{"id":2}`, "", func(t *testing.T, a *App, r map[string]any) {
			if r["trashed"] != false || r["updated_at"] != "2026-10-12T06:01:00+00:00" {
				t.Errorf("restoring a note outside the trash changed it: %v", r)
			}
		}},
		{"restore unknown", "note_restore", `{"id":0}`, `Parameter "id" must be at least 1.`, nil},
		{"delete from trash", "note_delete", `{"id":4}`, "", func(t *testing.T, a *App, r map[string]any) {
			if r["deleted"] != true {
				t.Errorf("%v", r)
			}
			if _, e := sampletest.Try(t, a, "note_get", `{"id":4}`); e != "No note with id 4." {
				t.Errorf("still there: %q", e)
			}
		}},
		{"delete not trashed", "note_delete", `{"id":2}`, `Only notes in the trash can be deleted; move note 2 to the trash with note_trash first.`, nil},
		{"delete unknown", "note_delete", `{"id":404}`, `No note with id 404.`, nil},
		{"delete bad id", "note_delete", `{"id":1.5}`, `Parameter "id" must be an integer.`, nil},
		// tag_list
		{"tags", "tag_list", `{}`, "", func(t *testing.T, a *App, r map[string]any) {
			// work: notes 2 and 3 (archived counts, trashed does not).
			if fmt.Sprint(r["tags"]) != "[map[count:2 tag:work] map[count:1 tag:home] map[count:1 tag:travel]]" {
				t.Errorf("%v", r["tags"])
			}
		}},
		{"tags unknown param", "tag_list", `{"x":1}`, `Unknown parameter "x".`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a, clk := newApp(t, time.UTC, nil)
			seedTools(t, a, clk)
			before := dumpJSON(t, a)
			res, e := sampletest.Try(t, a, tt.tool, tt.args)
			if e != tt.wantErr {
				t.Fatalf("error %q, want %q", e, tt.wantErr)
			}
			if e != "" {
				if after := dumpJSON(t, a); after != before {
					t.Errorf("a failed call changed the store")
				}
				return
			}
			if tt.check != nil {
				tt.check(t, a, res)
			}
		})
	}
}

func manyTags(n int) string {
	var tags []string
	for i := range n {
		tags = append(tags, fmt.Sprintf("t%d", i))
	}
	b, _ := json.Marshal(tags)
	return string(b)
}

func wantIDs(t *testing.T, notes any, ids ...int) {
	t.Helper()
	var got []int
	for _, n := range notes.([]any) {
		got = append(got, int(n.(map[string]any)["id"].(float64)))
	}
	if fmt.Sprint(got) != fmt.Sprint(ids) {
		t.Errorf("ids %v, want %v", got, ids)
	}
}

func TestListSummaryIs200Chars(t *testing.T) {
	t.Parallel()
	a, _ := newApp(t, time.UTC, nil)
	content := strings.Repeat("备", 250)
	sampletest.OK(t, a, "note_create", `{"content":"`+content+`"}`)
	r := sampletest.OK(t, a, "note_list", `{}`)
	n := r["notes"].([]any)[0].(map[string]any)
	if s := n["summary"].(string); s != strings.Repeat("备", 200) || n["content_chars"] != 250.0 {
		t.Errorf("summary %d runes, content_chars %v", len([]rune(s)), n["content_chars"])
	}
}

func TestGetChunksCoverContent(t *testing.T) {
	t.Parallel()
	a, _ := newApp(t, time.UTC, nil)
	content := strings.Repeat("ab😀c", 1500) // 6000 code points, astral ones too
	sampletest.OK(t, a, "note_create", `{"content":"`+content+`"}`)
	var got strings.Builder
	off := 0
	for i := 0; ; i++ {
		r := sampletest.OK(t, a, "note_get", fmt.Sprintf(`{"id":1,"offset":%d,"max_chars":2500}`, off))
		got.WriteString(r["content"].(string))
		if r["next_offset"] == nil {
			break
		}
		off = int(r["next_offset"].(float64))
		if i > 5 {
			t.Fatal("no end")
		}
	}
	if got.String() != content {
		t.Error("chunks do not add up to the content")
	}
}

func TestTimesFollowZone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ zone, want string }{
		{"UTC", "2026-10-12T06:00:00+00:00"},
		{"Asia/Shanghai", "2026-10-12T14:00:00+08:00"},
		{"America/New_York", "2026-10-12T02:00:00-04:00"},
	} {
		a, clk := newApp(t, sampletest.Location(t, tc.zone), nil)
		r := sampletest.OK(t, a, "note_create", `{"content":"x"}`)
		if r["created_at"] != tc.want {
			t.Errorf("%s: %v", tc.zone, r["created_at"])
		}
		// After the DST change in New York the offset follows the date.
		if tc.zone == "America/New_York" {
			clk.Advance(30 * 24 * time.Hour)
			sampletest.OK(t, a, "note_append", `{"id":1,"text":"y"}`)
			if g := sampletest.OK(t, a, "note_get", `{"id":1}`); g["updated_at"] != "2026-11-11T01:00:00-05:00" {
				t.Errorf("after DST: %v", g["updated_at"])
			}
		}
	}
}

// Results must fit the plugin channel (65,536 chars) even with wide
// characters: chunks and pages end early and say where to go on.
func TestResultsFitTheWire(t *testing.T) {
	t.Parallel()
	a, _ := newApp(t, time.UTC, nil)
	wide := strings.Repeat("备", 20000)
	sampletest.OK(t, a, "note_create", `{"content":"`+wide+`"}`)
	g := sampletest.OK(t, a, "note_get", `{"id":1,"max_chars":20000}`)
	n := len([]rune(g["content"].(string)))
	if n == 0 || n >= 20000 || g["next_offset"] != float64(n) || apptool.WireCost(g) > apptool.MaxWireChars {
		t.Errorf("chunk of %d runes, next_offset %v", n, g["next_offset"])
	}
	for range 199 {
		sampletest.OK(t, a, "note_create", `{"title":"`+strings.Repeat("标", 200)+`","content":"`+strings.Repeat("备", 300)+`"}`)
	}
	l := sampletest.OK(t, a, "note_list", `{"limit":200}`)
	got := len(l["notes"].([]any))
	if got == 0 || got == 200 || l["next_offset"] != float64(got) || l["has_more"] != true || apptool.WireCost(l) > apptool.MaxWireChars {
		t.Errorf("page of %d, next_offset %v", got, l["next_offset"])
	}
	s := sampletest.OK(t, a, "note_search", `{"query":"备","limit":100}`)
	if c := s["count"].(float64); c == 0 || c == 100 || s["total"] != 200.0 || apptool.WireCost(s) > apptool.MaxWireChars {
		t.Errorf("search count %v total %v", c, s["total"])
	}
}
