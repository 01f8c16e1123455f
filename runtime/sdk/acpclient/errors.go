package acpclient

import (
	"encoding/json"
	"errors"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// Code is the SDK's error class (spec §2.10).
type Code string

const (
	NotInstalled                Code = "NOT_INSTALLED"
	AuthorizationPendingTimeout Code = "AUTHORIZATION_PENDING_TIMEOUT"
	Denied                      Code = "DENIED"
	NoModel                     Code = "NO_MODEL"
	Busy                        Code = "BUSY"
	RateLimited                 Code = "RATE_LIMITED"
	TooLarge                    Code = "TOO_LARGE"
	Disconnected                Code = "DISCONNECTED"
	SessionNotFound             Code = "SESSION_NOT_FOUND"
	InvalidRequest              Code = "INVALID_REQUEST"
	Unsupported                 Code = "UNSUPPORTED"
	Failed                      Code = "FAILED"
)

// Error is every error the SDK returns for a refusal or failure of
// AgentOS. Match with errors.Is against the Err… sentinels, or errors.As
// for the details.
type Error struct {
	Code Code
	// AgentosCode is the runtime's code (spec §3), e.g. "quota_exceeded";
	// empty for failures on this side (NOT_INSTALLED, DISCONNECTED…).
	AgentosCode string
	// Reason is details.reason of the runtime's error, or the channel-open
	// reason (authorization_pending, denied, not_open).
	Reason string
	// Message is the runtime's message or a description of the failure.
	Message string
	// RetryAfterSeconds is set for RATE_LIMITED.
	RetryAfterSeconds int
	// RequestID is the authorization request (AUTHORIZATION_PENDING_TIMEOUT).
	RequestID string
	// TaskID is the task a prompt error belongs to, when known.
	TaskID string
	// Err is the underlying error, if any.
	Err error
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "acpclient: " + string(e.Code)
	}
	return "acpclient: " + string(e.Code) + ": " + e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Is matches another *Error with the same Code (the sentinels).
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code && t.Message == "" && t.AgentosCode == ""
}

// Sentinels for errors.Is.
var (
	ErrNotInstalled                = &Error{Code: NotInstalled}
	ErrAuthorizationPendingTimeout = &Error{Code: AuthorizationPendingTimeout}
	ErrDenied                      = &Error{Code: Denied}
	ErrNoModel                     = &Error{Code: NoModel}
	ErrBusy                        = &Error{Code: Busy}
	ErrRateLimited                 = &Error{Code: RateLimited}
	ErrTooLarge                    = &Error{Code: TooLarge}
	ErrDisconnected                = &Error{Code: Disconnected}
	ErrSessionNotFound             = &Error{Code: SessionNotFound}
	ErrInvalidRequest              = &Error{Code: InvalidRequest}
	ErrUnsupported                 = &Error{Code: Unsupported}
	ErrFailed                      = &Error{Code: Failed}
)

// wireData is the data of a runtime error.
type wireData struct {
	AgentosCode string         `json:"agentosCode"`
	TaskID      string         `json:"taskId"`
	Details     map[string]any `json:"details"`
}

// FromRPC maps a JSON-RPC error of the runtime to an *Error per spec
// §2.10. The runtime's code comes from data.agentosCode, or, when a
// client library dropped data, from the fixed message prefix "<code>: ".
func FromRPC(code int, message string, data json.RawMessage) *Error {
	var d wireData
	if len(data) > 0 {
		_ = json.Unmarshal(data, &d)
	}
	ac := d.AgentosCode
	if ac == "" {
		if i := strings.Index(message, ": "); i > 0 && errcode.Parse(message[:i]) != errcode.Internal {
			ac = message[:i]
		}
	}
	e := &Error{AgentosCode: ac, Message: message, TaskID: d.TaskID}
	if r, ok := d.Details["reason"].(string); ok {
		e.Reason = r
	}
	if v, ok := d.Details["retryAfterSeconds"].(float64); ok {
		e.RetryAfterSeconds = int(v)
	}
	switch {
	case code == -32601:
		e.Code = Unsupported
	case ac == string(errcode.ModelNotConfigured):
		e.Code = NoModel
	case ac == string(errcode.SessionNotFound):
		e.Code = SessionNotFound
	case ac == string(errcode.InvalidParams) && e.Reason == "too_large", ac == string(errcode.PayloadTooLarge):
		e.Code = TooLarge
	case ac == string(errcode.InvalidParams):
		e.Code = InvalidRequest
	case ac == string(errcode.Unsupported):
		e.Code = Unsupported
	case ac == string(errcode.QuotaExceeded) && e.Reason == "busy", ac == string(errcode.Busy):
		e.Code = Busy
	case ac == string(errcode.QuotaExceeded) && e.Reason == "hourly":
		e.Code = RateLimited
	case ac == string(errcode.QuotaExceeded) && e.Reason == "mcp_servers":
		e.Code = InvalidRequest
	case code == -32602:
		e.Code = InvalidRequest
	default:
		e.Code = Failed
	}
	return e
}

// mapErr turns an error of a request into an *Error; a closed connection
// is DISCONNECTED.
func (c *Conn) mapErr(err error) error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	select {
	case <-c.rpc.Done():
		return &Error{Code: Disconnected, Message: "the connection to AgentOS ended", Err: err}
	default:
	}
	var re *sdk.RequestError
	if errors.As(err, &re) {
		var data json.RawMessage
		if re.Data != nil {
			data, _ = json.Marshal(re.Data)
		}
		out := FromRPC(re.Code, re.Message, data)
		out.Err = err
		return out
	}
	return &Error{Code: Failed, Message: err.Error(), Err: err}
}
