// Package errcode is the runtime's one table of error codes (spec §3).
//
// Every error the runtime returns over ACP, writes into the event log or
// hands to the model carries a Code from this table. The table is frozen:
// codes are only ever added. Go code creates errors with New or Newf and
// matches them with errors.Is (against a Code) or errors.As (*Error); the
// wire form is produced by exactly one function, (*Error).Wire.
package errcode

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// Code is an agentosCode such as "session_not_found".
type Code string

// Kind says what a failure ends: a rejected request, a model call, a tool
// call (the turn goes on) or a task.
type Kind string

const (
	KindRequest Kind = "request"
	KindModel   Kind = "model"
	KindTool    Kind = "tool"
	KindTask    Kind = "task"
)

// Request errors (spec §3.1): the request is rejected, no task is created.
const (
	InvalidParams    Code = "invalid_params"
	Unsupported      Code = "unsupported"
	AuthRequired     Code = "auth_required"
	NotOpen          Code = "not_open"
	Forbidden        Code = "forbidden"
	SessionNotFound  Code = "session_not_found"
	TaskNotFound     Code = "task_not_found"
	InvalidState     Code = "invalid_state"
	RequestConflict  Code = "request_conflict"
	SessionTerminal  Code = "session_terminal"
	CursorTooOld     Code = "cursor_too_old"
	PayloadTooLarge  Code = "payload_too_large"
	Busy             Code = "busy"
	QuotaExceeded    Code = "quota_exceeded"
	RecoveryRequired Code = "recovery_required"
	SafeMode         Code = "safe_mode"
)

// Model errors (spec §3.2): the task ends task.failed.
const (
	ModelNotConfigured     Code = "model_not_configured"
	ModelAuthFailed        Code = "model_auth_failed"
	ModelQuotaExhausted    Code = "model_quota_exhausted"
	ModelBadRequest        Code = "model_bad_request"
	ModelRequestTooLarge   Code = "model_request_too_large"
	ModelRateLimited       Code = "model_rate_limited"
	ModelUnavailable       Code = "model_unavailable"
	ModelNetwork           Code = "model_network"
	ModelTimeout           Code = "model_timeout"
	ModelStreamInterrupted Code = "model_stream_interrupted"
	ModelTLSFailed         Code = "model_tls_failed"
	ModelProtocol          Code = "model_protocol"
)

// Tool errors (spec §3.3): the turn continues; the model gets an isError
// result whose text is Text(code, sentence).
const (
	ToolNotInCatalog   Code = "tool_not_in_catalog"
	ToolDenied         Code = "tool_denied"
	ToolBlocked        Code = "tool_blocked"
	ToolFailed         Code = "tool_failed"
	ToolTimeout        Code = "tool_timeout"
	ToolUnavailable    Code = "tool_unavailable"
	ToolResultUnknown  Code = "tool_result_unknown"
	ToolResultTooLarge Code = "tool_result_too_large"
)

// Task errors (spec §3.4).
const (
	QueueTimeout     Code = "queue_timeout"
	ExecutionTimeout Code = "execution_timeout"
	AgentCoreFailed  Code = "agent_core_failed"
	Abandoned        Code = "abandoned"
	RecoveryExpired  Code = "recovery_expired"
	StoreFailed      Code = "store_failed"
	Internal         Code = "internal"
)

// JSON-RPC codes used by the table. -32700/-32600/-32601 are produced by
// the JSON-RPC layer itself and passed through unchanged.
const (
	RPCParseError     = -32700
	RPCInvalidRequest = -32600
	RPCMethodNotFound = -32601
	RPCInvalidParams  = -32602
	RPCInternal       = -32603
	RPCAuthRequired   = -32000
	RPCNotFound       = -32002
	RPCTaskError      = -32051
)

// Row is one line of the spec §3 table.
type Row struct {
	Code      Code
	RPC       int
	Retryable bool
	Kind      Kind
}

// table is spec §3.1–§3.4, in the spec's order.
var table = []Row{
	{InvalidParams, -32602, false, KindRequest},
	{Unsupported, -32602, false, KindRequest},
	{AuthRequired, -32000, false, KindRequest},
	{NotOpen, -32040, false, KindRequest},
	{Forbidden, -32041, false, KindRequest},
	{SessionNotFound, -32002, false, KindRequest},
	{TaskNotFound, -32002, false, KindRequest},
	{InvalidState, -32042, false, KindRequest},
	{RequestConflict, -32043, false, KindRequest},
	{SessionTerminal, -32044, false, KindRequest},
	{CursorTooOld, -32045, false, KindRequest},
	{PayloadTooLarge, -32046, false, KindRequest},
	{Busy, -32047, true, KindRequest},
	{QuotaExceeded, -32048, true, KindRequest},
	{RecoveryRequired, -32049, false, KindRequest},
	{SafeMode, -32050, false, KindRequest},

	{ModelNotConfigured, -32051, false, KindModel},
	{ModelAuthFailed, -32051, false, KindModel},
	{ModelQuotaExhausted, -32051, false, KindModel},
	{ModelBadRequest, -32051, false, KindModel},
	{ModelRequestTooLarge, -32051, false, KindModel},
	{ModelRateLimited, -32051, true, KindModel},
	{ModelUnavailable, -32051, true, KindModel},
	{ModelNetwork, -32051, true, KindModel},
	{ModelTimeout, -32051, true, KindModel},
	{ModelStreamInterrupted, -32051, true, KindModel},
	{ModelTLSFailed, -32051, false, KindModel},
	{ModelProtocol, -32051, false, KindModel},

	{ToolNotInCatalog, -32051, false, KindTool},
	{ToolDenied, -32051, false, KindTool},
	{ToolBlocked, -32051, false, KindTool},
	{ToolFailed, -32051, false, KindTool},
	{ToolTimeout, -32051, false, KindTool},
	{ToolUnavailable, -32051, true, KindTool},
	{ToolResultUnknown, -32051, false, KindTool},
	{ToolResultTooLarge, -32051, false, KindTool},

	{QueueTimeout, -32051, true, KindTask},
	{ExecutionTimeout, -32051, false, KindTask},
	{AgentCoreFailed, -32051, false, KindTask},
	{Abandoned, -32051, false, KindTask},
	{RecoveryExpired, -32051, false, KindTask},
	{StoreFailed, -32603, false, KindTask},
	{Internal, -32603, false, KindTask},
}

var byCode = func() map[Code]Row {
	m := make(map[Code]Row, len(table))
	for _, r := range table {
		if _, dup := m[r.Code]; dup {
			panic("errcode: duplicate code " + string(r.Code))
		}
		m[r.Code] = r
	}
	return m
}()

// Table returns a copy of every row, in the spec's order.
func Table() []Row { return append([]Row(nil), table...) }

// Lookup returns the row of c. Unknown codes report ok=false.
func Lookup(c Code) (Row, bool) {
	r, ok := byCode[c]
	return r, ok
}

// Parse maps a wire agentosCode to a Code; unknown codes become Internal
// (spec §3: "Unknown wire codes deserialize to internal").
func Parse(s string) Code {
	if _, ok := byCode[Code(s)]; ok {
		return Code(s)
	}
	return Internal
}

// RPC is the JSON-RPC code of c (Internal's for unknown codes).
func (c Code) RPC() int { return c.row().RPC }

// Retryable reports whether a client may resend after c.
func (c Code) Retryable() bool { return c.row().Retryable }

// Kind reports what c ends.
func (c Code) Kind() Kind { return c.row().Kind }

func (c Code) row() Row {
	if r, ok := byCode[c]; ok {
		return r
	}
	return byCode[Internal]
}

// Error lets a bare Code be used as a sentinel: errors.Is(err, errcode.Busy).
func (c Code) Error() string { return string(c) }

// Error is a runtime error with its code. Text is one human sentence without
// keys, headers, prompts or tool arguments; Details is the spec's
// data.details object.
type Error struct {
	Code      Code
	Text      string
	Details   map[string]any
	SessionID string
	TaskID    string
	// Err is the underlying cause; it never reaches the wire.
	Err error
}

// New returns an error with code c and the given text.
func New(c Code, text string) *Error { return &Error{Code: c, Text: text} }

// Newf is New with a format.
func Newf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Text: fmt.Sprintf(format, args...)}
}

// Wrap returns an error with code c whose cause is err. The cause is kept
// for errors.Is/As and logs but is never sent to clients.
func Wrap(c Code, text string, err error) *Error { return &Error{Code: c, Text: text, Err: err} }

// WithDetails sets details and returns e.
func (e *Error) WithDetails(d map[string]any) *Error { e.Details = d; return e }

// WithSession sets the session id and returns e.
func (e *Error) WithSession(id string) *Error { e.SessionID = id; return e }

// WithTask sets the task id and returns e.
func (e *Error) WithTask(id string) *Error { e.TaskID = id; return e }

// Message is the wire message: "<code>: <text>".
func (e *Error) Message() string { return string(e.Code) + ": " + e.Text }

func (e *Error) Error() string { return e.Message() }

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, errcode.X) match on the code.
func (e *Error) Is(target error) bool {
	if c, ok := target.(Code); ok {
		return e.Code == c
	}
	return false
}

// WireError is the JSON-RPC error object of spec §3.
type WireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	// Data is absent only on the JSON-RPC layer's own protocol errors
	// (Protocol); every error of the table carries it.
	Data WireData `json:"data,omitzero"`
}

// WireData is RpcErrorData: agentosCode and retryable are always present.
type WireData struct {
	AgentosCode string `json:"agentosCode"`
	Retryable   bool   `json:"retryable"`
	// Reason and RequestID are the caller channel's refusal fields
	// (runtime/callerchan: data.reason authorization_pending, denied or
	// not_open, and the pending card's requestId); empty elsewhere.
	Reason    string         `json:"reason,omitempty"`
	RequestID string         `json:"requestId,omitempty"`
	SessionID string         `json:"sessionId,omitempty"`
	TaskID    string         `json:"taskId,omitempty"`
	Details   map[string]any `json:"details,omitempty"`
}

// Wire is the one place a Go error becomes a JSON-RPC error object.
func (e *Error) Wire() WireError {
	return WireError{
		Code:    e.Code.RPC(),
		Message: e.Message(),
		Data: WireData{
			AgentosCode: string(e.Code),
			Retryable:   e.Code.Retryable(),
			SessionID:   e.SessionID,
			TaskID:      e.TaskID,
			Details:     e.Details,
		},
	}
}

// Info is the event-log form of an error (ErrorInfo).
type Info struct {
	Code      Code           `json:"code"`
	Message   string         `json:"message"`
	Retryable bool           `json:"retryable"`
	Details   map[string]any `json:"details,omitempty"`
}

// Info returns the event-log form of e.
func (e *Error) Info() Info {
	return Info{Code: e.Code, Message: e.Message(), Retryable: e.Code.Retryable(), Details: e.Details}
}

// From maps any Go error to an *Error: an *Error in the chain is returned
// as is; context cancellation and deadline become Internal with a neutral
// text (callers that mean "cancelled" handle it before calling From);
// anything else is Internal and its text is not exposed.
func From(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Wrap(Internal, "the operation timed out", err)
	}
	if errors.Is(err, context.Canceled) {
		return Wrap(Internal, "the operation was cancelled", err)
	}
	return Wrap(Internal, "internal error", err)
}

// CodeOf returns the code of err, or "" for nil.
func CodeOf(err error) Code {
	if err == nil {
		return ""
	}
	return From(err).Code
}

// ToolText is the text a model receives for a tool error:
// "[agentos:<code>] <sentence>" (spec §3.3).
func ToolText(c Code, sentence string) string { return "[agentos:" + string(c) + "] " + sentence }

// Codes returns every code sorted by name, for docs and tests.
func Codes() []Code {
	out := make([]Code, 0, len(table))
	for _, r := range table {
		out = append(out, r.Code)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
