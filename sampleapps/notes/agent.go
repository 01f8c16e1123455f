package notes

import (
	"context"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// ToolScopeEntry is one (plugin, raw tool name) pair of a toolScope, as
// the caller SDK takes it (seed §4.4).
type ToolScopeEntry struct {
	Plugin string `json:"plugin"`
	Tool   string `json:"tool"`
}

// Agent runs one "schedule with AgentOS" round. The caller SDK shell
// satisfies it (connect, authorization, a new session with scope, one
// prompt); the notes and SMS apps only see this seam, so their flows and
// reports are tested without a runtime.
//
// Schedule blocks until the round ends and returns the stop reason of the
// final Done event ("end_turn", "cancelled", "max_tokens",
// "max_turn_requests", "refusal"). onEvent is called for every event, in
// order, never concurrently; it must not block. A failure is returned as
// an error, preferably an *AgentError so the report can name its kind.
// Cancelling ctx cancels the round.
type Agent interface {
	Schedule(ctx context.Context, prompt string, scope []ToolScopeEntry, onEvent func(Event)) (stopReason string, err error)
}

// GatewayNamer is optionally implemented by an Agent to name itself in
// reports ("agentos", "fake").
type GatewayNamer interface {
	GatewayName() string
}

// EventKind tells what an Event carries.
type EventKind int

const (
	// EventWaiting: the runtime has not authorized this app yet; the SDK
	// keeps retrying while the user decides.
	EventWaiting EventKind = iota + 1
	// EventRunning: the prompt was accepted and the round started.
	EventRunning
	// EventText: a chunk of the agent's reply (Text).
	EventText
	// EventToolCall: a tool call appeared or changed status.
	EventToolCall
	// EventDone: the round ended with StopReason.
	EventDone
)

// ToolStatus is the caller SDK's tool-call status (spec §2.10).
type ToolStatus string

const (
	StatusPendingApproval ToolStatus = "PENDING_APPROVAL"
	StatusRunning         ToolStatus = "RUNNING"
	StatusCompleted       ToolStatus = "COMPLETED"
	StatusDenied          ToolStatus = "DENIED"
	StatusFailed          ToolStatus = "FAILED"
)

// Event is one event of a round, the Go form of the SDK's AgentOsEvent.
type Event struct {
	Kind EventKind
	// Text is the chunk of an EventText.
	Text string
	// Tool call fields (EventToolCall). Tool is the raw tool name when Ref
	// is set (the call maps to an entry of this session's toolScope), else
	// the final model name (mcp__<plugin>__<server>__<tool>).
	ToolCallID string
	Tool       string
	Ref        *ToolScopeEntry
	Status     ToolStatus
	// ArgumentsJSON and ResultJSON are the call's arguments and result
	// text as the SDK passes them (third-party content; never logged).
	ArgumentsJSON string
	ResultJSON    string
	// StopReason of an EventDone.
	StopReason string
}

// ErrorKind names a caller-side failure as the caller SDK does
// (AgentOsError, spec §2.10), plus the app's own local refusals.
type ErrorKind string

const (
	NotInstalled                ErrorKind = "NOT_INSTALLED"
	AuthorizationPendingTimeout ErrorKind = "AUTHORIZATION_PENDING_TIMEOUT"
	Denied                      ErrorKind = "DENIED"
	NoModel                     ErrorKind = "NO_MODEL"
	Busy                        ErrorKind = "BUSY"
	RateLimited                 ErrorKind = "RATE_LIMITED"
	TooLarge                    ErrorKind = "TOO_LARGE"
	Disconnected                ErrorKind = "DISCONNECTED"
	SessionNotFound             ErrorKind = "SESSION_NOT_FOUND"
	InvalidRequest              ErrorKind = "INVALID_REQUEST"
	Unsupported                 ErrorKind = "UNSUPPORTED"
	Failed                      ErrorKind = "FAILED"
	// Local refusals and outcomes of the app itself.
	Empty         ErrorKind = "EMPTY"
	NothingToSend ErrorKind = "NOTHING_TO_SEND"
	TimedOut      ErrorKind = "TIMEOUT"
	Stopped       ErrorKind = "STOPPED"
)

// AgentError is a caller-side failure with its kind and a sentence for
// the user. errors.Is(err, &AgentError{Kind: K}) matches any AgentError of
// kind K.
type AgentError struct {
	Kind   ErrorKind
	Detail string
	Err    error
}

func (e *AgentError) Error() string {
	switch {
	case e.Detail != "":
		return e.Detail
	case e.Err != nil:
		return string(e.Kind) + ": " + e.Err.Error()
	}
	return string(e.Kind)
}

func (e *AgentError) Unwrap() error { return e.Err }

// Is matches an *AgentError target by kind.
func (e *AgentError) Is(target error) bool {
	t, ok := target.(*AgentError)
	return ok && t.Kind == e.Kind
}

// Sentinels for errors.Is.
var (
	ErrTooLarge  = &AgentError{Kind: TooLarge}
	ErrEmptyText = &AgentError{Kind: Empty, Detail: "There is no text to send."}
	// ErrNoAgent is ask_agent's answer while no AgentOS connection is
	// wired in (Options.Agent is nil).
	ErrNoAgent error = &apptool.UserError{Sentence: "No AgentOS connection is available: this build of the app has no AgentOS caller SDK wired in, so ask_agent cannot run."}
)
