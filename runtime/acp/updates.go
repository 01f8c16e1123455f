package acp

import (
	"encoding/json"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/chars"
	"github.com/agentoslab/agentlab/runtime/store"
)

// Limits of what one session/update carries (spec §2.6, §4.2).
const (
	maxChunkChars      = 8192
	maxToolResultChars = 8192
	// MaxRawInputChars bounds a tool_call's rawInput as JSON text, so the
	// notification always fits in a 65,536-char line (a longer one would
	// make the caller close the connection, spec §4.2). Longer arguments
	// are shown as a RawInputTruncated marker object.
	MaxRawInputChars = 16384
	// rawInputPreviewChars of the arguments' JSON text stay in the marker,
	// as many as a consent card's preview (spec §4.6).
	rawInputPreviewChars = 2000
)

// RawInputTruncated is the rawInput of a tool_call whose arguments are
// longer than MaxRawInputChars: {"agentosTruncated": {"originalChars": N,
// "limit": 16384}, "preview": "<the first 2,000 chars of the JSON>"}.
// The model and the tool still get the whole arguments; only what the
// client is shown is cut.
const RawInputTruncated = "agentosTruncated"

// mapper turns log events into session/update notifications (spec §2.6).
// Live turns and history replay use the same mapper, so a loaded session
// looks exactly as it did live; replay adds the user's prompts, which are
// never echoed live.
type mapper struct {
	replay bool
	// open lists, per task, the tool calls that have no final status yet.
	open map[string][]string
	// prompts holds, in replay, the prompts of tasks not started yet: a
	// prompt is shown when its task starts, so a prompt queued behind a
	// running task comes after that task's answer, as the model saw it.
	prompts map[string]string
}

func newMapper(replay bool) *mapper {
	return &mapper{replay: replay, open: map[string][]string{}, prompts: map[string]string{}}
}

// updates maps one event; most event types map to nothing.
func (m *mapper) updates(ev store.Event) []sdk.SessionUpdate {
	if ev.Type == engine.EvTaskQueued {
		if m.replay {
			var b engine.TaskQueuedBody
			json.Unmarshal(ev.Body, &b)
			m.prompts[ev.TaskID] = b.Text
		}
		return nil
	}
	out := m.prompt(ev.TaskID)
	return append(out, m.mapEvent(ev)...)
}

// prompt returns the user message of a task about to show its first event.
func (m *mapper) prompt(taskID string) []sdk.SessionUpdate {
	text, ok := m.prompts[taskID]
	if !ok {
		return nil
	}
	delete(m.prompts, taskID)
	return textUpdates(text, sdk.UpdateUserMessageText)
}

func (m *mapper) mapEvent(ev store.Event) []sdk.SessionUpdate {
	switch ev.Type {
	case engine.EvMessageDelta:
		var b engine.TextBody
		json.Unmarshal(ev.Body, &b)
		return textUpdates(b.Text, sdk.UpdateAgentMessageText)
	case engine.EvThoughtDelta:
		var b engine.TextBody
		json.Unmarshal(ev.Body, &b)
		return textUpdates(b.Text, sdk.UpdateAgentThoughtText)
	case engine.EvToolCall:
		var b engine.ToolCallBody
		json.Unmarshal(ev.Body, &b)
		m.open[ev.TaskID] = append(m.open[ev.TaskID], b.ToolCallID)
		input := displayInput(b.Arguments)
		return []sdk.SessionUpdate{sdk.StartToolCall(sdk.ToolCallId(b.ToolCallID), b.Name,
			sdk.WithStartKind(sdk.ToolKindOther), sdk.WithStartStatus(sdk.ToolCallStatusPending), sdk.WithStartRawInput(input))}
	case engine.EvToolDispatched:
		var b engine.ToolRefBody
		json.Unmarshal(ev.Body, &b)
		return []sdk.SessionUpdate{sdk.UpdateToolCall(sdk.ToolCallId(b.ToolCallID), sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress))}
	case engine.EvToolResult:
		var b engine.ToolResultBody
		json.Unmarshal(ev.Body, &b)
		m.closeCall(ev.TaskID, b.ToolCallID)
		status := sdk.ToolCallStatusCompleted
		if b.IsError {
			status = sdk.ToolCallStatusFailed
		}
		return []sdk.SessionUpdate{toolEnd(b.ToolCallID, status, displayResult(b.Text, b.Length))}
	}
	if engine.IsTerminal(ev.Type) {
		return m.endTask(ev.TaskID)
	}
	return nil
}

func (m *mapper) closeCall(taskID, callID string) {
	calls := m.open[taskID]
	for i, id := range calls {
		if id == callID {
			m.open[taskID] = append(calls[:i:i], calls[i+1:]...)
			return
		}
	}
}

// endTask reports the calls a finished task left without a status as
// failed: the turn is over, so they never will finish.
func (m *mapper) endTask(taskID string) []sdk.SessionUpdate {
	var out []sdk.SessionUpdate
	for _, id := range m.open[taskID] {
		out = append(out, toolEnd(id, sdk.ToolCallStatusFailed,
			errcode.ToolText(errcode.ToolResultUnknown, "The turn ended before this tool call finished.")))
	}
	delete(m.open, taskID)
	return out
}

// finish ends every task still open at the end of a replay except the
// one that is running now.
func (m *mapper) finish(running string) []sdk.SessionUpdate {
	var out []sdk.SessionUpdate
	for taskID := range m.open {
		if taskID != running {
			out = append(out, m.endTask(taskID)...)
		}
	}
	return out
}

func toolEnd(callID string, status sdk.ToolCallStatus, text string) sdk.SessionUpdate {
	return sdk.UpdateToolCall(sdk.ToolCallId(callID), sdk.WithUpdateStatus(status),
		sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))}))
}

// textUpdates splits text into chunks of at most 8,192 chars, never
// inside a surrogate pair.
func textUpdates(text string, mk func(string) sdk.SessionUpdate) []sdk.SessionUpdate {
	var out []sdk.SessionUpdate
	for _, p := range chars.Split(text, maxChunkChars) {
		out = append(out, mk(p))
	}
	return out
}

// displayInput is a tool call's arguments as the client is shown them
// (rawInput): the arguments, or the RawInputTruncated marker when they
// are too long to send.
func displayInput(args json.RawMessage) any {
	var input any
	if json.Unmarshal(args, &input) != nil {
		input = map[string]any{}
	}
	// Measured as the notification will carry it: encoding/json escapes
	// <, > and & six-fold, so the stored text's length is not enough.
	enc, _ := json.Marshal(input)
	if n := chars.Len(string(enc)); n > MaxRawInputChars {
		return map[string]any{
			RawInputTruncated: map[string]any{"originalChars": n, "limit": MaxRawInputChars},
			"preview":         chars.Cut(string(args), rawInputPreviewChars),
		}
	}
	return input
}

// displayResult is a tool result as a client shows it: at most 8,192
// chars, with the original length noted when it was shortened.
func displayResult(text string, length int) string {
	if chars.Len(text) <= maxToolResultChars {
		return text
	}
	if length < chars.Len(text) {
		length = chars.Len(text)
	}
	note := fmt.Sprintf("\n[Result shortened for display; the original has %d characters.]", length)
	return chars.Cut(text, maxToolResultChars-chars.Len(note)) + note
}
