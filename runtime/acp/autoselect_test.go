package acp

import (
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/runtime/engine/enginetest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAutoSelect: each selection reports the method that made it, and a
// fallback its reason. It turns red if a fallback is reported as a pick
// (the old "jev" for every case), if Chinese titles only match when equal,
// or if a common word ("please", "帮我") links unrelated sessions.
func TestAutoSelect(t *testing.T) {
	t.Parallel()
	h := newHarness(t, harnessOpts{})
	c := h.connect(desktop)
	c.mustCall("initialize", map[string]any{"protocolVersion": 1,
		"_meta": map[string]any{"org.agentos": map[string]any{"extensions": []string{"sessionAutoSelect"}}}}, nil)
	sel := func(query string, scope []any) (string, map[string]any) {
		t.Helper()
		meta := map[string]any{"autoSelect": map[string]any{"query": query}}
		if scope != nil {
			meta["toolScope"] = scope
		}
		var res struct {
			SessionID string `json:"sessionId"`
		}
		before := c.mustCall("session/new", map[string]any{"cwd": "/", "_meta": map[string]any{"org.agentos": meta}}, &res)
		us := updates(t, before)
		require.Len(t, us, 1, "updates %v", kinds(us))
		s := us[0].Update.Meta["org.agentos"].(map[string]any)["selection"].(map[string]any)
		require.Equal(t, res.SessionID, s["sessionId"])
		return res.SessionID, s
	}
	title := func(id, text string) {
		t.Helper()
		h.model.Push(enginetest.Text("ok"))
		c.mustCall("session/prompt", textPrompt(id, text), nil)
	}
	created := func(method, reason string) map[string]any {
		m := map[string]any{"created": true, "method": method}
		if reason != "" {
			m["fallbackReason"] = reason
		}
		return m
	}
	without := func(s map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range s {
			if k != "sessionId" {
				out[k] = v
			}
		}
		return out
	}

	rome, s := sel("plan my holiday in Rome", nil)
	assert.Equal(t, created("no_candidates", ""), without(s), "no session yet")
	title(rome, "Holiday plans for Rome")

	got, s := sel("more about rome please", nil)
	assert.Equal(t, rome, got)
	assert.Equal(t, map[string]any{"created": false, "method": "title_words"}, without(s), "shared title word")

	got, s = sel("tax return", nil)
	assert.NotEqual(t, rome, got)
	assert.Equal(t, created("fallback_new_session", "no_title_match"), without(s), "no shared word")

	_, s = sel("please, more!", nil)
	assert.Equal(t, created("fallback_new_session", "query_without_words"), without(s), "only common words")

	got, s = sel("rome", []any{map[string]any{"plugin": "test", "tool": "echo"}})
	assert.NotEqual(t, rome, got)
	assert.Equal(t, created("no_candidates", ""), without(s), "different scope")

	zh, s := sel("帮我规划罗马假期", nil)
	assert.Equal(t, created("fallback_new_session", "no_title_match"), without(s))
	title(zh, "帮我规划罗马假期")
	got, s = sel("罗马的酒店推荐", nil)
	assert.Equal(t, zh, got, "a title written without spaces matches on a shared two-character run")
	assert.Equal(t, "title_words", s["method"])
	got, s = sel("帮我报税", nil)
	assert.NotEqual(t, zh, got, "帮我 alone relates nothing")
	assert.Equal(t, created("fallback_new_session", "no_title_match"), without(s))

	m, _ := c.call("session/new", map[string]any{"cwd": "/", "_meta": map[string]any{"org.agentos": map[string]any{"autoSelect": map[string]any{"query": "  "}}}})
	require.NotNil(t, m.Error)
	assert.Equal(t, -32602, m.Error.Code, "blank query")
}

func TestWords(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Plan my holiday in ROME", []string{"plan", "holiday", "rome"}},
		{"the and please for", nil},
		{"ok, go", nil},
		{"帮我规划罗马假期", []string{"我规", "规划", "划罗", "罗马", "马假", "假期"}},
		{"罗马holiday 2026", []string{"罗马", "holiday", "2026"}},
		{"罗", nil},
		{"東京のホテル", []string{"東京", "京の", "のホ", "ホテ", "テル"}},
		{"rome rome Rome", []string{"rome"}},
	} {
		assert.Equal(t, tc.want, words(tc.in), "words(%q)", tc.in)
	}
}

// FuzzWords: whatever the text, the words are non-empty, distinct,
// lower-cased pieces of it.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"plan my holiday in Rome", "帮我规划罗马假期", "罗马holiday", "", "a\xffb", "İSTANBUL"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		lower := strings.ToLower(s)
		seen := map[string]bool{}
		for _, w := range words(s) {
			require.NotEmpty(t, w)
			require.Contains(t, lower, w)
			require.False(t, seen[w], "duplicate %q", w)
			seen[w] = true
			require.False(t, commonWords[w], "common word %q", w)
		}
	})
}
