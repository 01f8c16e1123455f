package apptool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Result is what a shell sends back for one call: one compact-JSON text
// item plus the same object as structuredContent, or an error sentence.
type Result struct {
	Text       string
	Structured any
	IsError    bool
}

// Run calls t's handler and shapes its outcome as the sample apps' wire
// convention (spec §9.0): a *UserError becomes its sentence; any other
// error or a panic becomes "<tool> failed." without internals, so a bug
// never leaks a stack trace to the model.
func Run(ctx context.Context, t Tool, args json.RawMessage) (res Result) {
	defer func() {
		if r := recover(); r != nil {
			res = Result{Text: fmt.Sprintf("%s failed.", t.Name), IsError: true}
		}
	}()
	out, err := t.Handler(ctx, args)
	if err != nil {
		if s, ok := IsUserError(err); ok {
			return Result{Text: s, IsError: true}
		}
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return Result{Text: fmt.Sprintf("%s was cancelled.", t.Name), IsError: true}
		}
		return Result{Text: fmt.Sprintf("%s failed.", t.Name), IsError: true}
	}
	text, err := Compact(out)
	if err != nil {
		return Result{Text: fmt.Sprintf("%s failed.", t.Name), IsError: true}
	}
	return Result{Text: text, Structured: out}
}

// Compact encodes v as compact JSON without HTML escaping, so "<" and "&"
// in user data stay readable to the model.
func Compact(v any) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", err
	}
	return string(bytes.TrimRight(buf.Bytes(), "\n")), nil
}
