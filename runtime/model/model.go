// Package model is the runtime's seam to language models: one Provider
// interface, the request and stream types every provider speaks, and the
// mapping of transport failures to the model error codes of spec §3.2.
//
// Providers live in sub-packages (openai, anthropic, script's scripted
// provider). The engine only ever sees this package.
package model

import (
	"context"
	"encoding/json"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// Role of a message in a conversation.
type Role string

const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Message is one turn of the conversation the model sees. An assistant
// message may carry tool calls; a tool message answers one call by id.
type Message struct {
	Role      Role       `json:"role"`
	Text      string     `json:"text,omitempty"`
	ToolCalls []ToolCall `json:"toolCalls,omitempty"`
	// ToolCallID and IsError are set on RoleTool messages.
	ToolCallID string `json:"toolCallId,omitempty"`
	IsError    bool   `json:"isError,omitempty"`
}

// ToolCall is a call the model asked for. Name is the final model name
// (spec §7), Arguments a JSON object.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Tool is a tool definition offered to the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// Request is one model call.
type Request struct {
	Model     string
	System    string
	Messages  []Message
	Tools     []Tool
	MaxTokens int
}

// EventKind says what a stream event carries.
type EventKind int

const (
	// TextDelta carries assistant text in Text.
	TextDelta EventKind = iota + 1
	// ThinkingDelta carries reasoning text in Text.
	ThinkingDelta
	// ToolCallDone carries one complete tool call in Call.
	ToolCallDone
	// Done ends the stream; StopReason says why.
	Done
)

// Stop reasons a provider reports in a Done event.
const (
	StopEndTurn   = "end_turn"
	StopToolUse   = "tool_use"
	StopMaxTokens = "max_tokens"
	StopRefusal   = "refusal"
)

// Event is one item of a model's streamed answer.
type Event struct {
	Kind       EventKind
	Text       string
	Call       ToolCall
	StopReason string
}

// Stream is a model answer being received. Next returns the next event,
// or an error (an *errcode.Error with a model code) when the stream
// breaks. After Done, Next returns io.EOF. Close releases the connection
// and may be called at any time, from any goroutine, more than once.
type Stream interface {
	Next() (Event, error)
	Close() error
}

// Provider starts model calls. Stream returns once response headers have
// arrived (or fails with a model error code); ctx cancellation aborts the
// call and the stream. Implementations must be safe for concurrent use.
type Provider interface {
	Stream(ctx context.Context, req *Request) (Stream, error)
}

// Config selects and configures a provider. The key is never part of
// Config's JSON form: it travels separately (environment, file or stdin)
// and lives only in memory and in a 0600 key file.
type Config struct {
	// Provider is "openai" (any OpenAI-compatible Chat Completions
	// endpoint), "anthropic" or "scripted".
	Provider string `json:"provider"`
	BaseURL  string `json:"baseUrl,omitempty"`
	Model    string `json:"model,omitempty"`
	// Choices are the model ids a session may switch to with
	// session/set_model (spec §2.5); empty for custom endpoints.
	Choices []string `json:"choices,omitempty"`
	// Script is the path of a script for the scripted provider.
	Script string `json:"script,omitempty"`
	// Key is the API key. It is excluded from JSON on purpose.
	Key string `json:"-"`
	// Timeout bounds connect and header wait; zero means 60 s.
	Timeout time.Duration `json:"-"`
}

// String never prints the key.
func (c Config) String() string {
	return "model.Config{provider=" + c.Provider + " baseUrl=" + c.BaseURL + " model=" + c.Model + "}"
}

// ErrorFor returns the model error for an HTTP status (spec §3.2,
// ModelFailures.forStatus): 401,403→auth_failed; 402→quota_exhausted;
// 408→timeout; 413→request_too_large; 425,429→rate_limited;
// 500–599→unavailable; other 4xx→bad_request; anything else→protocol.
func ErrorFor(status int) errcode.Code {
	switch {
	case status == 401 || status == 403:
		return errcode.ModelAuthFailed
	case status == 402:
		return errcode.ModelQuotaExhausted
	case status == 408:
		return errcode.ModelTimeout
	case status == 413:
		return errcode.ModelRequestTooLarge
	case status == 425 || status == 429:
		return errcode.ModelRateLimited
	case status >= 500 && status <= 599:
		return errcode.ModelUnavailable
	case status >= 400 && status <= 499:
		return errcode.ModelBadRequest
	default:
		return errcode.ModelProtocol
	}
}
