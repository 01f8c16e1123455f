package steps

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPromptResultToolCalls: the prompt step names a call by the final
// tool name the runtime puts in _meta (the title is the tool's own, for
// people), keeps the title and kind, and leaves the desktop's consent
// status lines out of the result but in the call's flow, in stream order
// (a flow that kept only the last status could not tell "asked, then run"
// from "run, then asked").
func TestPromptResultToolCalls(t *testing.T) {
	r := &promptResult{ToolCalls: []*toolCall{}}
	for _, u := range []string{
		`{"sessionUpdate":"tool_call","toolCallId":"c1","title":"Echo","kind":"read","status":"pending","rawInput":{"text":"smoke"},"_meta":{"org.agentos":{"toolName":"mcp__mcptest__test__echo"}}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"pending","content":[{"type":"content","content":{"type":"text","text":"Waiting for approval on the phone (AgentOS asks its owner)."}}],"_meta":{"org.agentos":{"consent":"pending"}}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"pending","content":[{"type":"content","content":{"type":"text","text":"Allowed on the phone."}}],"_meta":{"org.agentos":{"consent":"allowed"}}}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"in_progress"}`,
		`{"sessionUpdate":"tool_call_update","toolCallId":"c1","status":"completed","content":[{"type":"content","content":{"type":"text","text":"smoke"}}]}`,
		// A runtime without _meta names the tool in the title.
		`{"sessionUpdate":"tool_call","toolCallId":"c2","title":"mcp__mcptest__test__echo","kind":"other","status":"pending"}`,
	} {
		r.add(json.RawMessage(u))
	}
	require.Len(t, r.ToolCalls, 2)
	c := r.ToolCalls[0]
	assert.Equal(t, "mcp__mcptest__test__echo", c.Name)
	assert.Equal(t, "Echo", c.Title)
	assert.Equal(t, "read", c.Kind)
	assert.Equal(t, "completed", c.Status)
	assert.Equal(t, "smoke", c.Result, "status lines are not the result")
	assert.Equal(t, []string{"pending", "consent:pending", "consent:allowed", "in_progress", "completed"}, c.Flow)
	assert.Equal(t, "mcp__mcptest__test__echo", r.ToolCalls[1].Name)
	assert.Equal(t, []string{"pending"}, r.ToolCalls[1].Flow)
	assert.Len(t, r.Updates, 6, "every update is kept as it came")
}
