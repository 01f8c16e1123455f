package acp

import (
	"encoding/json"
	"fmt"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/chars"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
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

// Consent status of a tool call, in _meta."org.agentos".consent of the
// tool_call_update that shows it (desktop callers only). Its content is
// a status line, not the call's result.
const (
	ConsentPending = "pending"
	ConsentAllowed = "allowed"
)

// Texts of the consent status updates.
const (
	consentWaitText    = "Waiting for approval on the phone (AgentOS asks its owner)."
	consentAllowedText = "Allowed on the phone."
)

// mapper turns log events into session/update notifications (spec §2.6).
// Live turns and history replay use the same mapper, so a loaded session
// looks exactly as it did live; replay adds the user's prompts, which are
// never echoed live.
type mapper struct {
	replay bool
	// consent shows a call's wait for the owner's answer (consent.*
	// events) as tool_call_updates: desktop callers only. The caller SDK
	// of apps reads a tool_call_update's content as the call's result,
	// and an app has no use for the phone's side of the conversation.
	consent bool
	// asking holds the calls whose consent wait was shown.
	asking map[string]bool
	// open lists, per task, the tool calls that have no final status yet.
	open map[string][]string
	// prompts holds, in replay, the prompts of tasks not started yet: a
	// prompt is shown when its task starts, so a prompt queued behind a
	// running task comes after that task's answer, as the model saw it.
	prompts map[string]string
}

func newMapper(replay bool, caller engine.CallerKind) *mapper {
	return &mapper{replay: replay, consent: caller == engine.CallerDesktop,
		open: map[string][]string{}, prompts: map[string]string{}, asking: map[string]bool{}}
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
		title := b.Name
		if b.Display != nil && b.Display.Title != "" {
			title = b.Display.Title
		}
		u := sdk.StartToolCall(sdk.ToolCallId(b.ToolCallID), title,
			sdk.WithStartKind(ToolKind(b.Display)), sdk.WithStartStatus(sdk.ToolCallStatusPending), sdk.WithStartRawInput(input))
		u.ToolCall.Meta = map[string]any{metaKey: map[string]any{"toolName": b.Name}}
		return []sdk.SessionUpdate{u}
	case engine.EvConsentRequested, engine.EvConsentResolved:
		return m.consentUpdate(ev)
	case engine.EvToolDispatched:
		var b engine.ToolRefBody
		json.Unmarshal(ev.Body, &b)
		return []sdk.SessionUpdate{sdk.UpdateToolCall(sdk.ToolCallId(b.ToolCallID), sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress))}
	case engine.EvToolProgress:
		// An ACI callAsync's progress: the call is still running, and its
		// content says how far it is (replaced by the result at the end).
		var b engine.ToolProgressBody
		json.Unmarshal(ev.Body, &b)
		if b.ToolCallID == "" {
			return nil
		}
		text := fmt.Sprintf("%d%%", b.Percent)
		if b.Message != "" {
			text += " " + chars.Cut(b.Message, maxToolResultChars)
		}
		u := sdk.UpdateToolCall(sdk.ToolCallId(b.ToolCallID), sdk.WithUpdateStatus(sdk.ToolCallStatusInProgress),
			sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))}))
		u.ToolCallUpdate.Meta = map[string]any{metaKey: map[string]any{"progress": b.Percent}}
		return []sdk.SessionUpdate{u}
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

// consentUpdate shows a desktop caller that the phone asks its owner
// about a call, and that the owner allowed it. A denial needs nothing
// here: the call's failed result follows.
func (m *mapper) consentUpdate(ev store.Event) []sdk.SessionUpdate {
	if !m.consent {
		return nil
	}
	var b struct {
		ToolCallID string `json:"toolCallId"`
		Decision   string `json:"decision"`
	}
	json.Unmarshal(ev.Body, &b)
	if b.ToolCallID == "" {
		return nil
	}
	status, text := ConsentPending, consentWaitText
	if ev.Type == engine.EvConsentResolved {
		// Only an asked call shows its answer (a policy's allow asked
		// nobody).
		if !m.asking[b.ToolCallID] || b.Decision != "allow" {
			delete(m.asking, b.ToolCallID)
			return nil
		}
		delete(m.asking, b.ToolCallID)
		status, text = ConsentAllowed, consentAllowedText
	} else {
		m.asking[b.ToolCallID] = true
	}
	u := sdk.UpdateToolCall(sdk.ToolCallId(b.ToolCallID), sdk.WithUpdateStatus(sdk.ToolCallStatusPending),
		sdk.WithUpdateContent([]sdk.ToolCallContent{sdk.ToolContent(sdk.TextBlock(text))}))
	u.ToolCallUpdate.Meta = map[string]any{metaKey: map[string]any{"consent": status}}
	return []sdk.SessionUpdate{u}
}

// ToolKind is the ACP kind of a tool's calls, from its annotations as its
// provider declared them (display only: risk and consent never read it):
//
//	destructiveHint                  delete (it wins, as it does for risk)
//	readOnlyHint and openWorldHint   fetch (reads the world outside the phone)
//	readOnlyHint                     read
//	any other tool the turn offered  edit (a tool may change things unless it says it does not)
//	a tool the turn did not offer    other
//
// A tool that changes the world outside (openWorldHint without
// readOnlyHint, e.g. sending an SMS) is edit, not fetch.
func ToolKind(d *engine.ToolDisplay) sdk.ToolKind {
	if d == nil {
		return sdk.ToolKindOther
	}
	h := d.Hints
	is := func(p *bool) bool { return p != nil && *p }
	switch {
	case is(h.DestructiveHint):
		return sdk.ToolKindDelete
	case is(h.ReadOnlyHint) && is(h.OpenWorldHint):
		return sdk.ToolKindFetch
	case is(h.ReadOnlyHint):
		return sdk.ToolKindRead
	}
	return sdk.ToolKindEdit
}

func (m *mapper) closeCall(taskID, callID string) {
	delete(m.asking, callID)
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
	if n := chars.Len(string(enc)); n > MaxRawInputChars && !(faultinject.Enabled && faultinject.Active(faultinject.OversizeClosesChannel)) {
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
