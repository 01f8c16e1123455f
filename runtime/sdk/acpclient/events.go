package acpclient

import (
	"encoding/json"
	"strings"
)

// Event is one item of a prompt's stream or of a loaded session's
// history: Text, Thought, UserMessage, ToolCall or Done.
type Event interface{ isEvent() }

// Text is a chunk of the agent's answer.
type Text struct{ Text string }

// Thought is a chunk of the agent's reasoning (only with
// PromptOptions.IncludeThoughts, and in history).
type Thought struct{ Text string }

// UserMessage is a user prompt; it appears in loaded history only.
type UserMessage struct{ Text string }

// ToolStatus is a tool call's state.
type ToolStatus string

const (
	ToolPendingApproval ToolStatus = "PENDING_APPROVAL"
	ToolRunning         ToolStatus = "RUNNING"
	ToolCompleted       ToolStatus = "COMPLETED"
	// ToolDenied: the call failed because the user (or a policy) denied
	// it: its result starts with "[agentos:tool_denied]".
	ToolDenied ToolStatus = "DENIED"
	ToolFailed ToolStatus = "FAILED"
)

// ToolRef names a tool the way a toolScope does: the plugin.json name and
// the raw MCP tool name.
type ToolRef struct {
	Plugin string `json:"plugin"`
	Tool   string `json:"tool"`
}

// String is "plugin:tool".
func (r ToolRef) String() string { return r.Plugin + ":" + r.Tool }

// ToolCall is a tool call's state after an update; every change of the
// same call (same ID) produces a new ToolCall event.
type ToolCall struct {
	ID string
	// Tool is the raw tool name when Ref is set, else the final model
	// name (e.g. "mcp__mcptest__test__echo").
	Tool   string
	Status ToolStatus
	// ResultJSON is the result text the runtime showed (for MCP tools,
	// usually JSON); empty until the call ends.
	ResultJSON string
	// ArgumentsJSON is the call's arguments as JSON. When the arguments
	// were too long to show (ArgumentsTruncated), it is their first 2,000
	// characters, which may not be valid JSON.
	ArgumentsJSON string
	// ArgumentsTruncated says the runtime showed only the start of the
	// arguments; ArgumentsChars is then their whole length. The tool got
	// all of them.
	ArgumentsTruncated bool
	ArgumentsChars     int
	// Ref is the toolScope entry of this session the call maps back to;
	// nil for tools outside the scope, sessions without a scope, caller
	// MCP server tools and loaded history.
	Ref *ToolRef
}

// Done ends a prompt's stream.
type Done struct {
	// StopReason is end_turn, max_tokens, max_turn_requests, refusal or
	// cancelled.
	StopReason string
	TaskID     string
}

func (Text) isEvent()        {}
func (Thought) isEvent()     {}
func (UserMessage) isEvent() {}
func (ToolCall) isEvent()    {}
func (Done) isEvent()        {}

// update is one session/update as the SDK reads it.
type update struct {
	sessionID string
	kind      string // the sessionUpdate discriminator
	text      string // chunk text
	toolID    string
	title     *string
	status    *string
	rawInput  json.RawMessage
	content   string // tool call content text
	meta      json.RawMessage
	// toolName is the call's final tool name (_meta."org.agentos".toolName);
	// consent marks a consent status line (_meta."org.agentos".consent),
	// whose content is not the call's result.
	toolName string
	consent  string
	modeID   string
	models   string // current model from config_option_update
}

func parseUpdate(params json.RawMessage) (update, error) {
	var n struct {
		SessionID string `json:"sessionId"`
		Update    struct {
			SessionUpdate string                     `json:"sessionUpdate"`
			Content       json.RawMessage            `json:"content"`
			ToolCallID    string                     `json:"toolCallId"`
			Title         *string                    `json:"title"`
			Status        *string                    `json:"status"`
			RawInput      json.RawMessage            `json:"rawInput"`
			Meta          map[string]json.RawMessage `json:"_meta"`
			CurrentModeID string                     `json:"currentModeId"`
			ConfigOptions []struct {
				ID           string `json:"id"`
				CurrentValue string `json:"currentValue"`
			} `json:"configOptions"`
		} `json:"update"`
	}
	if err := json.Unmarshal(params, &n); err != nil {
		return update{}, err
	}
	u := update{sessionID: n.SessionID, kind: n.Update.SessionUpdate, toolID: n.Update.ToolCallID,
		title: n.Update.Title, status: n.Update.Status, rawInput: n.Update.RawInput,
		meta: n.Update.Meta[metaKey], modeID: n.Update.CurrentModeID}
	switch u.kind {
	case "user_message_chunk", "agent_message_chunk", "agent_thought_chunk":
		u.text = blockText(n.Update.Content)
	case "tool_call", "tool_call_update":
		var m struct {
			ToolName string `json:"toolName"`
			Consent  string `json:"consent"`
		}
		if len(u.meta) > 0 && json.Unmarshal(u.meta, &m) == nil {
			u.toolName, u.consent = m.ToolName, m.Consent
		}
		var items []struct {
			Type    string          `json:"type"`
			Content json.RawMessage `json:"content"`
		}
		if json.Unmarshal(n.Update.Content, &items) == nil {
			var b strings.Builder
			for _, it := range items {
				if it.Type == "content" {
					b.WriteString(blockText(it.Content))
				}
			}
			u.content = b.String()
		}
	case "config_option_update":
		for _, o := range n.Update.ConfigOptions {
			if o.ID == "model" {
				u.models = o.CurrentValue
			}
			if o.ID == "mode" && u.modeID == "" {
				u.modeID = o.CurrentValue
			}
		}
	}
	return u, nil
}

// blockText is the text of a content block ("" for non-text blocks).
func blockText(raw json.RawMessage) string {
	var b struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &b) != nil || b.Type != "text" {
		return ""
	}
	return b.Text
}

// toolState accumulates one tool call's updates.
type toolState struct {
	name      string
	args      string
	argsChars int // > 0: args is a preview of this many chars
	status    ToolStatus
	result    string
}

// truncatedInput is the runtime's rawInput for arguments too long to send
// (runtime/acp RawInputTruncated).
type truncatedInput struct {
	Marker *struct {
		OriginalChars int `json:"originalChars"`
	} `json:"agentosTruncated"`
	Preview string `json:"preview"`
}

// deniedPrefix marks a denied call's result (spec §2.6).
const deniedPrefix = "[agentos:tool_denied]"

// toolEvent folds u into the calls map and returns the call's new state;
// scope maps final names back to toolScope entries (nil: no mapping).
func toolEvent(calls map[string]*toolState, u update, scope []ToolRef) ToolCall {
	st := calls[u.toolID]
	if st == nil {
		st = &toolState{status: ToolPendingApproval}
		calls[u.toolID] = st
	}
	// The runtime names the tool in _meta; the title is for people (the
	// tool's own title since the runtime has one). Older runtimes put the
	// name in the title.
	if u.toolName != "" {
		st.name = u.toolName
	} else if u.title != nil && *u.title != "" && st.name == "" {
		st.name = *u.title
	}
	if len(u.rawInput) > 0 && string(u.rawInput) != "null" {
		st.args, st.argsChars = string(u.rawInput), 0
		var t truncatedInput
		if json.Unmarshal(u.rawInput, &t) == nil && t.Marker != nil {
			st.args, st.argsChars = t.Preview, t.Marker.OriginalChars
		}
	}
	if u.status != nil {
		switch *u.status {
		case "pending":
			st.status = ToolPendingApproval
		case "in_progress":
			st.status = ToolRunning
		case "completed":
			st.status = ToolCompleted
		case "failed":
			st.status = ToolFailed
			if strings.HasPrefix(u.content, deniedPrefix) {
				st.status = ToolDenied
			}
		}
	}
	if u.content != "" && u.consent == "" {
		st.result = u.content
	}
	ev := ToolCall{ID: u.toolID, Tool: st.name, Status: st.status, ResultJSON: st.result, ArgumentsJSON: st.args,
		ArgumentsTruncated: st.argsChars > 0, ArgumentsChars: st.argsChars}
	if ref := refFor(st.name, scope); ref != nil {
		ev.Ref = ref
		ev.Tool = ref.Tool
	}
	return ev
}
