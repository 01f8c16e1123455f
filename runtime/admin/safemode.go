package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

// SafeModeSwitch turns the runtime's safe mode on and off for the
// safemode.* methods (Options.SafeMode): the owner's switch on the
// console's status page and `agentosd ctl safemode`.
type SafeModeSwitch interface {
	// EnterSafeMode makes the runtime refuse new prompts.
	EnterSafeMode(ctx context.Context) (SafeModeResult, error)
	// LeaveSafeMode lets it accept prompts again, or asks the supervisor
	// to restart it normally when the supervisor started it in safe mode.
	LeaveSafeMode(ctx context.Context) (SafeModeResult, error)
}

// SafeModeResult is what a safemode.* call did.
type SafeModeResult struct {
	// SafeMode is whether new prompts are refused now.
	SafeMode bool `json:"safeMode"`
	// Restart says the supervisor restarts the runtime normally soon
	// (it had started it in safe mode).
	Restart bool `json:"restart,omitempty"`
	// Note says it in a sentence for the owner.
	Note string `json:"note"`
}

func (s *Server) safeModeMethods() []Method {
	do := func(f func(SafeModeSwitch, context.Context) (SafeModeResult, error)) Handler {
		return func(ctx context.Context, c *Call) (any, error) {
			if err := c.Decode(&struct{}{}); err != nil {
				return nil, err
			}
			if s.safeMode == nil {
				return nil, errcode.New(errcode.InvalidState, "this runtime has no safe-mode switch").WithDetails(map[string]any{"reason": "unavailable"})
			}
			return f(s.safeMode, ctx)
		}
	}
	return []Method{
		{Name: "safemode.enter", Perm: Owner, Summary: "enter safe mode: new prompts are refused (safe_mode) until left or restarted",
			Handle: do(SafeModeSwitch.EnterSafeMode)},
		{Name: "safemode.leave", Perm: Owner, Summary: "leave safe mode (the supervisor's too: it restarts the runtime normally)",
			Handle: do(SafeModeSwitch.LeaveSafeMode)},
	}
}

func safeModeVerbs() []Verb {
	return []Verb{
		{Group: "safemode", Name: "enter", Method: "safemode.enter", Summary: "refuse new prompts until safe mode is left", Text: printSafeMode},
		{Group: "safemode", Name: "leave", Method: "safemode.leave", Summary: "leave safe mode", Text: printSafeMode},
	}
}

func printSafeMode(w io.Writer, raw json.RawMessage) error {
	var r SafeModeResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "safe mode   %s\n%s\n", onOff(r.SafeMode), r.Note)
	return err
}
