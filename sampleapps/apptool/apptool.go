// Package apptool is the SDK-free tool layer of the sample apps (seed
// §5.12): a tool is a plain value — name, description written for the
// model, input schema, annotations and a handler — that unit tests call
// directly and that a thin shell registers with the provider SDK.
package apptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Annotations are the MCP tool annotations a sample tool sets. A nil
// pointer means "not set" (missing destructiveHint is not true).
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    *bool  `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool  `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Handler runs a tool. args is the raw JSON object the caller sent (may
// be empty or "null"). It returns the result object, which the shell
// sends as compact JSON text plus structuredContent, or an error. An
// error for which IsUserError is true is sent as an isError result with
// its sentence; any other error is a bug and is reported as
// "<tool> failed" without internals.
type Handler func(ctx context.Context, args json.RawMessage) (any, error)

// Tool is one tool of an app.
type Tool struct {
	Name        string
	Title       string
	Description string
	// InputSchema is a JSON Schema object with "type":"object".
	InputSchema json.RawMessage
	Annotations Annotations
	Handler     Handler
}

// UserError is a one-sentence English error meant for the model, such as
// "No alarm with id 7".
type UserError struct{ Sentence string }

func (e *UserError) Error() string { return e.Sentence }

// Errorf returns a *UserError with a formatted sentence.
func Errorf(format string, args ...any) error {
	return &UserError{Sentence: fmt.Sprintf(format, args...)}
}

// IsUserError reports whether err (or its chain) is a *UserError and
// returns its sentence.
func IsUserError(err error) (string, bool) {
	var ue *UserError
	if errors.As(err, &ue) {
		return ue.Sentence, true
	}
	return "", false
}

// Bool returns a pointer to b, for Annotations.
func Bool(b bool) *bool { return &b }
