package labtest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestLanguageIn(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]bool{
		`[{"op":"connect"},{"op":"new","as":"s1"}]`:     true,
		`{"op":"raw_open"}`:                             true,
		` {"ops":[{"op":"list"}]}`:                      true,
		"#!agentos-script\nsteps:\n  - text: working\n": true,
		`{"title":"plan","content":"call Wang"}`:        false,
		`{"jsonrpc":"2.0","id":1,"method":"x"}`:         false,
		"[agentos:tool_failed]":                         false,
		"hello":                                         false,
	} {
		if got := languageIn(s) != ""; got != want {
			t.Errorf("languageIn(%q) = %v, want %v", s, got, want)
		}
	}
	if fmt.Sprint(hasOp(nil)) != "false" {
		t.Error("hasOp(nil)")
	}
}

func TestStyleProblems(t *testing.T) {
	long := "description: " + fmt.Sprintf("%0160d", 0) + "\n"
	plan := "steps:\n  - run: {shell: '[{\"op\":\"connect\"}]'}\n"
	assert.Len(t, StyleProblems([]byte(long)), 1, "a line over 160 characters")
	assert.Equal(t, []string{"2:18: a JSON plan of the test caller inside a string: write it as a caller step's plan"},
		StyleProblems([]byte(plan)))
	assert.Empty(t, StyleProblems([]byte("steps:\n  - wait: {for: 5m}\n")))
	// 100 Chinese characters are 200 columns wide.
	wide := "final: " + strings.Repeat("闹", 100) + "\n"
	assert.Len(t, StyleProblems([]byte(wide)), 1, "a line 207 columns wide")
}
