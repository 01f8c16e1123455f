package lab

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/lab/steps"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

const recordedScenario = `# yaml-language-server: $schema=../scenario.schema.json
name: rec/echo
description: Echo through a live model.
tags: [rec]
upstream: x.py/echo
needs: {apps: [mcptest], model: live}
model: {live: true}
setup:
  - consent: {mode: allow}
steps:
  - prompt:
      text: Echo something.
      tool_scope: [{plugin: mcptest, tool: echo}]
    save: chat
checks:
  - {name: ended, upstream: x.py/echo/ended, events: chat, path: .stopReason,
     eq: end_turn}
`

const recordedScript = `description: Recorded from the live provider.
steps:
  - thinking: [hmm]
    toolCalls:
      - id: call_1
        name: mcp__mcptest__test__echo
        arguments: {text: "costs $$5"}
    stop: tool_use
  - text: ["done ", "now", LONG]
    stop: end_turn
`

// longChunk is a chunk longer than a line may be, with what a folded
// line could lose: runs of spaces at the cuts, quotes, escapes, non-ASCII.
var longChunk = strings.Repeat(`a "quoted"  word\\ ünï  `, 12) + "\t end  "

// recordedAttempt writes a recorded attempt's folder for the scenario
// above, as a record run leaves it.
func recordedAttempt(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	file := filepath.Join(root, "scenarios", "rec", "echo.yaml")
	require.NoError(t, os.MkdirAll(filepath.Dir(file), 0o755))
	require.NoError(t, os.WriteFile(file, []byte(recordedScenario), 0o644))
	dir := filepath.Join(root, "out", "artifacts", "rec_echo", "attempt-1")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	man, err := yaml.Marshal(&steps.Recording{Scenario: "rec/echo", File: file, Attempt: 1, Verdict: "pass",
		Scripts: map[string]string{"": steps.ScriptFile("")}})
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, steps.RecordingFile), man, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, steps.ScriptFile("")), []byte(strings.Replace(recordedScript, "LONG", strconv.Quote(longChunk), 1)), 0o644))
	return dir
}

// TestReplayScenario: the replay scenario is the recorded one with the
// recorded script inline as YAML (no string holding a script), on the
// stub, without the upstream mappings, and it validates.
func TestReplayScenario(t *testing.T) {
	dir := recordedAttempt(t)
	doc, rec, err := ReplayScenario(dir, "rec/echo-replay")
	require.NoError(t, err)
	assert.Equal(t, "rec/echo", rec.Scenario)
	s, err := scenario.Parse(doc, "echo-replay.yaml", nil)
	require.NoError(t, err, "%s", doc)
	t.Logf("%s", doc)
	assert.Equal(t, "rec/echo-replay", s.Name)
	assert.Equal(t, scenario.ModelStub, s.NeedsModel())
	require.NotNil(t, s.Model)
	require.NotNil(t, s.Model.Script)
	require.NotNil(t, s.Model.Script.Inline, "the script is inline")
	require.NotNil(t, s.Model.Parsed)
	assert.Empty(t, s.Upstream)
	assert.NotContains(t, string(doc), "upstream")
	assert.Contains(t, string(doc), "costs $$5", "a recorded dollar stays escaped")
	assert.Contains(t, string(doc), "Replays attempt 1 of rec/echo")
	assert.Equal(t, []string{"mcptest"}, s.Needs.Apps)
	resp, err := s.Model.Parsed.Respond(&model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "x"},
		{Role: model.RoleAssistant}, {Role: model.RoleTool, Text: "r"}}})
	require.NoError(t, err)
	require.Len(t, resp.Events, 3)
	assert.Equal(t, longChunk, resp.Events[2].Text, "a long chunk is written over lines, exactly")
	for _, ln := range strings.Split(string(doc), "\n") {
		assert.LessOrEqual(t, len(ln), 160, ln)
	}

	_, _, err = ReplayScenario(t.TempDir(), "")
	assert.ErrorIs(t, err, ErrConfig, "a folder without a recording")
}

// TestCompareEvents: ids and durations may differ; text, tool calls and
// the update kinds may not.
func TestCompareEvents(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	write := func(dir, body string) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, "events-chat.json"), []byte(body), 0o644))
	}
	write(a, `{"sessionId":"s1","durationMs":5,"text":"hi","toolCalls":[{"id":"t1","name":"echo","status":"completed","arguments":{"text":"x"}}],
		"updates":[{"sessionUpdate":"tool_call","toolCallId":"t1"},{"sessionUpdate":"agent_message_chunk"}]}`)
	write(b, `{"sessionId":"s2","durationMs":9,"text":"hi","toolCalls":[{"id":"t9","name":"echo","status":"completed","arguments":{"text":"x"}}],
		"updates":[{"sessionUpdate":"tool_call","toolCallId":"t9"},{"sessionUpdate":"agent_message_chunk"}]}`)
	assert.Empty(t, CompareEvents(a, b))
	write(b, `{"text":"hi","toolCalls":[{"name":"echo","status":"completed","arguments":{"text":"y"}}],
		"updates":[{"sessionUpdate":"tool_call"},{"sessionUpdate":"agent_message_chunk"}]}`)
	assert.Len(t, CompareEvents(a, b), 1)
	write(b, `{"text":"hi","toolCalls":[{"name":"echo","status":"completed","arguments":{"text":"x"}}],
		"updates":[{"sessionUpdate":"tool_call"},{"sessionUpdate":"agent_message_chunk"},{"sessionUpdate":"agent_message_chunk"}]}`)
	assert.Len(t, CompareEvents(a, b), 1)
	require.NoError(t, os.Remove(filepath.Join(b, "events-chat.json")))
	assert.NotEmpty(t, CompareEvents(a, b))
}
