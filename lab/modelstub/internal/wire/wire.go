// Package wire holds the model stub's two HTTP dialects: OpenAI-compatible
// Chat Completions and Anthropic Messages. Each parses a request body into
// a model.Request and writes a script.Response as a stream (SSE) or one
// JSON document, with each dialect's error shape.
package wire

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/script"
)

// Parsed is a request in both forms.
type Parsed struct {
	Req    model.Request
	Stream bool
	// IncludeUsage asks for a usage chunk (OpenAI stream_options).
	IncludeUsage bool
}

// API is one dialect.
type API interface {
	// Name is "openai" or "anthropic".
	Name() string
	// Parse reads a request body.
	Parse(body []byte) (*Parsed, error)
	// WriteError answers an HTTP error in the dialect's shape.
	WriteError(w http.ResponseWriter, status int, kind, msg string)
	// WriteResponse answers resp (after its Delay, which the caller
	// waits): a stream or one JSON document. ErrCut asks the caller to
	// break the connection.
	WriteResponse(ctx context.Context, w http.ResponseWriter, p *Parsed, resp *script.Response, id string) error
}

var (
	_ API = OpenAI{}
	_ API = Anthropic{}
)

// ErrCut asks the server to break the connection mid-body.
var ErrCut = errors.New("cut")

// Sleep waits d or until ctx ends.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// FinishReasons map the script's stop reasons to OpenAI finish reasons.
var FinishReasons = map[string]string{
	model.StopEndTurn:   "stop",
	model.StopToolUse:   "tool_calls",
	model.StopMaxTokens: "length",
	model.StopRefusal:   "content_filter",
}

// ErrorKind names an HTTP status the way the providers' error bodies do.
func ErrorKind(status int) string {
	switch {
	case status == 401:
		return "authentication_error"
	case status == 403:
		return "permission_error"
	case status == 404:
		return "not_found_error"
	case status == 413:
		return "request_too_large"
	case status == 429:
		return "rate_limit_error"
	case status == 529:
		return "overloaded_error"
	case status >= 500:
		return "api_error"
	}
	return "invalid_request_error"
}
