package engine

import (
	"encoding/json"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// Event types of the log. Bodies are JSON objects; the body type of each
// is named next to it. The ACP layer maps message, thought and tool
// events to session/update (spec §2.6); the rest are for the log, replay
// boundaries and recovery.
const (
	EvSessionCreated = "session.created" // SessionCreatedBody

	EvTaskQueued           = "task.queued"            // TaskQueuedBody: the prompt as the model sees it
	EvTaskStarted          = "task.started"           // {}
	EvTaskCompleted        = "task.completed"         // TaskEndBody{StopReason}
	EvTaskCancelled        = "task.cancelled"         // TaskEndBody{By}
	EvTaskFailed           = "task.failed"            // TaskEndBody{Error}
	EvTaskRecoveryRequired = "task.recovery_required" // TaskEndBody{Error}
	EvTaskAbandoned        = "task.abandoned"         // TaskEndBody{Error, Decision}
	EvTaskRecoveryExpired  = "task.recovery_expired"  // TaskEndBody{Error}
	EvMessageDelta         = "message.delta"          // TextBody: assistant text, coalesced
	EvThoughtDelta         = "thought.delta"          // TextBody: reasoning text, coalesced
	EvToolCall             = "tool.call"              // ToolCallBody: the model asked for a call
	EvToolDispatched       = "tool.dispatched"        // ToolRefBody: consent passed, provider called (emitted by Tools)
	EvToolResult           = "tool.result"            // ToolResultBody: what the model was given
	EvToolSettled          = "tool.settled"           // ToolSettledBody
	EvToolRoundLimit       = "tool_round_limit"       // {rounds}
	EvConsentRequested     = "consent.requested"      // the tool layer asks the owner (emitted by Tools)
	EvConsentResolved      = "consent.resolved"       // the answer, a policy's or a remembered allow (emitted by Tools)
	eventPrefixConsent     = "consent."
	eventPrefixHook        = "hook."
	eventToolProgress      = "tool.progress"
	// EvToolProgress is a dispatched call's progress (ToolProgressBody),
	// written by the tool layer (an ACI callAsync).
	EvToolProgress = eventToolProgress
)

// SessionCreatedBody is the body of session.created.
type SessionCreatedBody struct {
	CallerKind CallerKind `json:"callerKind"`
	ForkedFrom string     `json:"forkedFrom,omitempty"`
}

// TaskQueuedBody is the body of task.queued.
type TaskQueuedBody struct {
	Text string `json:"text"`
}

// TextBody is the body of message.delta and thought.delta.
type TextBody struct {
	Text string `json:"text"`
}

// ToolCallBody is the body of tool.call.
type ToolCallBody struct {
	ToolCallID string          `json:"toolCallId"`
	Name       string          `json:"name"`
	Arguments  json.RawMessage `json:"arguments"`
	// Display is the tool's as the turn offered it; nil when the model
	// called a tool it was not offered (and in logs written before it
	// existed).
	Display *ToolDisplay `json:"display,omitempty"`
}

// ToolRefBody is the body of tool.dispatched.
type ToolRefBody struct {
	ToolCallID string `json:"toolCallId"`
}

// ToolProgressBody is the body of tool.progress: how far a dispatched
// call is (0–100, never going back) and what it says it does.
type ToolProgressBody struct {
	ToolCallID string `json:"toolCallId"`
	Percent    int    `json:"percent"`
	Message    string `json:"message,omitempty"`
}

// ToolResultBody is the body of tool.result. Text is exactly what the
// model was given (capped at MaxResultChars plus the truncation line);
// Length is the length of the tool's own text before any cap.
type ToolResultBody struct {
	ToolCallID string `json:"toolCallId"`
	Text       string `json:"text"`
	IsError    bool   `json:"isError,omitempty"`
	Code       string `json:"code,omitempty"`
	Length     int    `json:"length"`
}

// ToolSettledBody is the body of tool.settled (spec §5.2).
type ToolSettledBody struct {
	ToolCallID string         `json:"toolCallId"`
	Outcome    string         `json:"outcome"`
	IsError    bool           `json:"isError"`
	Error      *errcode.Info  `json:"error,omitempty"`
	Details    map[string]any `json:"details,omitempty"`
}

// TaskEndBody is the body of the terminal task events.
type TaskEndBody struct {
	StopReason string        `json:"stopReason,omitempty"`
	By         string        `json:"by,omitempty"`
	Decision   string        `json:"decision,omitempty"`
	Error      *errcode.Info `json:"error,omitempty"`
}

// Tool-call outcomes of tool.settled.
const (
	OutcomeCompleted     = "completed"
	OutcomeNotDispatched = "not_dispatched"
	OutcomeUnknown       = "unknown"
	OutcomeCancelled     = "cancelled"
	OutcomeRejected      = "rejected"
)

// Stop reasons of task.completed and of session/prompt (spec §2.7).
const (
	StopEndTurn         = "end_turn"
	StopMaxTokens       = "max_tokens"
	StopMaxTurnRequests = "max_turn_requests"
	StopRefusal         = "refusal"
	StopCancelled       = "cancelled"
)

// IsTerminal reports whether an event type ends its task.
func IsTerminal(typ string) bool {
	switch typ {
	case EvTaskCompleted, EvTaskCancelled, EvTaskFailed, EvTaskRecoveryRequired, EvTaskAbandoned, EvTaskRecoveryExpired:
		return true
	}
	return false
}
