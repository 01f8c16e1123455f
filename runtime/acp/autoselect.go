package acp

import (
	"context"
	"slices"
	"strings"
	"unicode"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/internal/chars"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// The selection methods (spec §2.4 sessionAutoSelect). The runtime has no
// "Jev" selector model: it picks by shared title words, and says so
// rather than claiming "jev".
const (
	// methodTitleWords: an existing session was picked because its title
	// shares a word with the query.
	methodTitleWords = "title_words"
	// methodNoCandidates: the caller has no session with the requested
	// toolScope, so a new one was created.
	methodNoCandidates = "no_candidates"
	// methodFallback: there were candidates but the heuristic could not
	// pick one; fallbackReason says why.
	methodFallback = "fallback_new_session"
)

// The fallback reasons (diagnostic only).
const (
	// reasonNoTitleMatch: no candidate's title shares a word with the query.
	reasonNoTitleMatch = "no_title_match"
	// reasonQueryWithoutWords: the query has nothing to match on (only
	// short or common words, or punctuation).
	reasonQueryWithoutWords = "query_without_words"
	// reasonUnavailable: the picked session could not be opened (deleted
	// meanwhile, say).
	reasonUnavailable = "selected_session_unavailable"
)

// selection is the autoSelect report (spec §2.4).
type selection struct {
	SessionID      string `json:"sessionId"`
	Created        bool   `json:"created"`
	Method         string `json:"method"`
	FallbackReason string `json:"fallbackReason,omitempty"`
}

// autoSelect is the simple session selector (spec §2.4 sessionAutoSelect):
// among the caller's sessions with exactly the requested toolScope (and
// no task needing recovery), the most recently active one whose title
// shares a word with the query is picked; otherwise a new session is
// created and the selection says why.
func (cn *conn) autoSelect(ctx context.Context, cwd string, scope []engine.ToolScopeEntry, query string) (engine.SessionInfo, *selection, error) {
	list, err := cn.a.e.ListSessions(ctx, cn.caller, nil)
	if err != nil {
		return engine.SessionInfo{}, nil, err
	}
	want := catalog.ScopeOf(scope)
	qwords := words(query)
	candidates := 0
	reason := reasonNoTitleMatch
	for _, s := range list {
		if s.OwnerKey != cn.caller.OwnerKey() || !catalog.ScopeEqual(catalog.ScopeOf(s.Scope), want) &&
			!(faultinject.Enabled && faultinject.Active(faultinject.AutoSelectIgnoresScope)) {
			continue
		}
		if _, state, ok := cn.a.e.ActiveTask(ctx, s.ID); ok && state == "recovery_required" {
			continue
		}
		candidates++
		if !sharesWord(qwords, words(s.Title)) {
			continue
		}
		info, err := cn.a.e.OpenSession(ctx, cn.caller, s.ID)
		if err != nil {
			if ctx.Err() != nil {
				return engine.SessionInfo{}, nil, err
			}
			reason = reasonUnavailable
			break
		}
		return info, &selection{SessionID: s.ID, Method: methodTitleWords}, nil
	}
	info, err := cn.a.e.NewSession(ctx, cn.caller, cwd, scope)
	if err != nil {
		return engine.SessionInfo{}, nil, err
	}
	sel := &selection{SessionID: info.ID, Created: true, Method: methodNoCandidates}
	if candidates > 0 {
		if len(qwords) == 0 && reason == reasonNoTitleMatch {
			reason = reasonQueryWithoutWords
		}
		sel.Method, sel.FallbackReason = methodFallback, reason
	}
	return info, sel, nil
}

// words are what a query and a title are matched on, lower-cased: words
// of at least three letters or digits, except common ones, and for text
// written without spaces (Chinese, Japanese kana) every two-character run,
// the usual way to match such text without a dictionary. A change of
// script ends a word, so "罗马holiday" is 罗马 and holiday.
func words(s string) []string {
	var out []string
	add := func(w string) {
		if !commonWords[w] && !slices.Contains(out, w) {
			out = append(out, w)
		}
	}
	var word, run []rune
	flushWord := func() {
		if len(word) > 0 && chars.Len(string(word)) >= 3 {
			add(string(word))
		}
		word = word[:0]
	}
	flushRun := func() {
		for i := 0; i+1 < len(run); i++ {
			add(string(run[i : i+2]))
		}
		run = run[:0]
	}
	for _, r := range strings.ToLower(s) {
		switch {
		case unbroken(r):
			flushWord()
			run = append(run, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			flushRun()
			word = append(word, r)
		default:
			flushWord()
			flushRun()
		}
	}
	flushWord()
	flushRun()
	return out
}

// unbroken reports whether r belongs to a script written without spaces
// between words.
func unbroken(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana)
}

// commonWords match almost any two requests ("please", "帮我"), so they
// never make two texts related.
var commonWords = map[string]bool{
	"the": true, "and": true, "for": true, "with": true, "you": true, "your": true,
	"are": true, "can": true, "what": true, "how": true, "this": true, "that": true,
	"please": true, "about": true, "from": true, "have": true, "more": true, "into": true,
	"帮我": true, "我的": true, "一下": true, "一个": true, "可以": true, "什么": true,
	"怎么": true, "请问": true, "我们": true, "这个": true, "那个": true, "请帮": true,
}

func sharesWord(a, b []string) bool {
	for _, w := range a {
		if slices.Contains(b, w) {
			return true
		}
	}
	return false
}
