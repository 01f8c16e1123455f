package acp

import (
	"encoding/json"
	"strings"
	"testing"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/store"
)

// A tool_call always fits in a line the client can read: long arguments
// become the RawInputTruncated marker (spec §4.2), measured as they will
// be encoded, not as they were stored.
func TestDisplayInput(t *testing.T) {
	long := `{"text":"` + strings.Repeat("x", 100000) + `"}`
	// 3,000 '<' are 3,000 chars stored but 18,000 once encoding/json
	// escapes them.
	escaped := `{"text":"` + strings.Repeat("<", 3000) + `"}`
	tests := []struct {
		name      string
		args      string
		truncated bool
	}{
		{"small", `{"text":"hi"}`, false},
		{"at the limit", `{"t":"` + strings.Repeat("y", MaxRawInputChars-8) + `"}`, false},
		{"over the limit", `{"t":"` + strings.Repeat("y", MaxRawInputChars-7) + `"}`, true},
		{"100,000 chars", long, true},
		{"escapes grow", escaped, true},
		{"not JSON", `{`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := displayInput(json.RawMessage(tc.args))
			enc, err := json.Marshal(got)
			require.NoError(t, err)
			assert.LessOrEqual(t, len(enc), MaxRawInputChars+rawInputPreviewChars*6+200, "what is sent stays bounded")
			m, _ := got.(map[string]any)
			marker, isMarker := m[RawInputTruncated].(map[string]any)
			require.Equal(t, tc.truncated, isMarker, "marker present")
			if tc.truncated {
				assert.Equal(t, MaxRawInputChars, marker["limit"])
				assert.Greater(t, marker["originalChars"], MaxRawInputChars)
				assert.True(t, strings.HasPrefix(tc.args, m["preview"].(string)), "preview is the start of the arguments")
				assert.Len(t, m["preview"], rawInputPreviewChars)
			}
		})
	}
}

// TestToolKind: the ACP kind of a call comes from the tool's annotations;
// destructiveHint wins (as it does for risk), readOnly and openWorld
// together are fetch, a tool that says nothing may change things (edit),
// and a tool the turn did not offer (or an old log) is other.
func TestToolKind(t *testing.T) {
	yes, no := true, false
	cases := []struct {
		name string
		d    *engine.ToolDisplay
		want sdk.ToolKind
	}{
		{"not offered", nil, sdk.ToolKindOther},
		{"no hints", &engine.ToolDisplay{Title: "Create a note"}, sdk.ToolKindEdit},
		{"read only", &engine.ToolDisplay{Hints: catalog.Annotations{ReadOnlyHint: &yes}}, sdk.ToolKindRead},
		{"read only, closed world", &engine.ToolDisplay{Hints: catalog.Annotations{ReadOnlyHint: &yes, OpenWorldHint: &no}}, sdk.ToolKindRead},
		{"read only, open world", &engine.ToolDisplay{Hints: catalog.Annotations{ReadOnlyHint: &yes, OpenWorldHint: &yes}}, sdk.ToolKindFetch},
		{"open world writer", &engine.ToolDisplay{Hints: catalog.Annotations{ReadOnlyHint: &no, OpenWorldHint: &yes}}, sdk.ToolKindEdit},
		{"destructive", &engine.ToolDisplay{Hints: catalog.Annotations{DestructiveHint: &yes}}, sdk.ToolKindDelete},
		{"destructive wins over read only", &engine.ToolDisplay{Hints: catalog.Annotations{ReadOnlyHint: &yes, DestructiveHint: &yes}}, sdk.ToolKindDelete},
		{"explicitly not destructive", &engine.ToolDisplay{Hints: catalog.Annotations{ReadOnlyHint: &no, DestructiveHint: &no, OpenWorldHint: &no}}, sdk.ToolKindEdit},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, ToolKind(tc.d), tc.name)
	}
}

// TestToolCallFromOldLog: a tool.call written before calls carried their
// display still maps (title = name, kind other) and names the tool in
// _meta, so history of older sessions replays.
func TestToolCallFromOldLog(t *testing.T) {
	m := newMapper(true, engine.CallerDesktop)
	us := m.updates(store.Event{Type: engine.EvToolCall, TaskID: "tsk_1", Body: json.RawMessage(`{"toolCallId":"c1","name":"mcp__notes__notes__note_create","arguments":{}}`)})
	require.Len(t, us, 1)
	tc := us[0].ToolCall
	require.NotNil(t, tc)
	assert.Equal(t, "mcp__notes__notes__note_create", tc.Title)
	assert.Equal(t, sdk.ToolKindOther, tc.Kind)
	assert.Equal(t, map[string]any{"org.agentos": map[string]any{"toolName": "mcp__notes__notes__note_create"}}, tc.Meta)
}
