// Package enginetest holds in-process fakes of the engine's seams for
// tests and benchmarks: Tools, an engine.Tools with a handful of tools
// and a scriptable consent decision, and Model, a model.Provider that
// plays scripted replies.
package enginetest

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
)

// Plugin is the plugin name of every tool here (for toolScope entries).
const Plugin = "test"

// Decision is what the consent hook says about a call.
type Decision int

const (
	// Allow runs the call.
	Allow Decision = iota
	// Deny answers tool_denied ("The user declined this tool call.").
	Deny
	// Block answers tool_blocked, as a hook would.
	Block
	// Wait holds the call until its context ends, as an unanswered consent
	// does; the call then answers tool_denied (task cancelled).
	Wait
)

// The tools. Arguments are JSON objects. Each has a title and
// annotations (shown to clients as the call's title and kind).
//
//	echo {"text"}      returns text (risk READ: visible in read_only); readOnlyHint
//	slow {"ms"}        sleeps ms or until cancelled (then result unknown); no hints
//	fail {}            returns an isError result (tool_failed); destructiveHint
//	big  {"n"}         returns n characters; readOnlyHint and openWorldHint
//	hang {}            ignores cancellation until Release is called; no hints
const (
	ToolEcho = "echo"
	ToolSlow = "slow"
	ToolFail = "fail"
	ToolBig  = "big"
	ToolHang = "hang"
)

var allTools = []string{ToolBig, ToolEcho, ToolFail, ToolHang, ToolSlow}

var yes = func() *bool { b := true; return &b }

// display is how each tool's calls are shown.
var display = map[string]engine.ToolDisplay{
	ToolEcho: {Title: "Echo", Hints: catalog.Annotations{ReadOnlyHint: yes()}},
	ToolSlow: {Title: "Slow"},
	ToolFail: {Title: "Fail", Hints: catalog.Annotations{DestructiveHint: yes()}},
	ToolBig:  {Title: "Big", Hints: catalog.Annotations{ReadOnlyHint: yes(), OpenWorldHint: yes()}},
	ToolHang: {Title: "Hang"},
}

// Tools is an in-process engine.Tools. The zero value allows every call;
// it is safe for concurrent use.
type Tools struct {
	// Consent, when set, decides each call after the catalog check.
	Consent func(ctx context.Context, req engine.ToolCallRequest) Decision
	// Section is returned as the system-prompt section of every session.
	Section string

	mu        sync.Mutex
	forgotten []string
	calls     []string
	started   chan string
	release   chan struct{}
}

var _ engine.Tools = (*Tools)(nil)

// Started returns a channel that receives the id of each call when it
// starts running (after consent and dispatch). Create it before use.
func (t *Tools) Started() <-chan string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.started == nil {
		t.started = make(chan string, 64)
	}
	return t.started
}

// Release lets every hang call return.
func (t *Tools) Release() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.release == nil {
		t.release = make(chan struct{})
	}
	select {
	case <-t.release:
	default:
		close(t.release)
	}
}

func (t *Tools) releaseCh() chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.release == nil {
		t.release = make(chan struct{})
	}
	return t.release
}

// Forgotten returns the sessions ForgetSession was called for.
func (t *Tools) Forgotten() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.forgotten)
}

// Calls returns the names of the calls that ran, in order.
func (t *Tools) Calls() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.calls)
}

// visible lists the tools a session sees: its scope, filtered by mode
// (read_only keeps echo, chat keeps nothing).
func visible(s engine.SessionView) []string {
	var out []string
	for _, name := range allTools {
		if s.Scope != nil && !slices.Contains(s.Scope, engine.ToolScopeEntry{Plugin: Plugin, Tool: name}) {
			continue
		}
		switch s.Mode {
		case "chat":
			continue
		case "read_only":
			if name != ToolEcho {
				continue
			}
		}
		out = append(out, name)
	}
	return out
}

// ForSession implements engine.Tools.
func (t *Tools) ForSession(_ context.Context, s engine.SessionView) ([]engine.ToolDef, string, error) {
	var defs []engine.ToolDef
	for _, name := range visible(s) {
		defs = append(defs, engine.ToolDef{Tool: model.Tool{Name: name, Description: "test tool " + name,
			InputSchema: json.RawMessage(`{"type":"object"}`)}, Display: display[name]})
	}
	return defs, t.Section, nil
}

// ForgetSession implements engine.Tools.
func (t *Tools) ForgetSession(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.forgotten = append(t.forgotten, id)
}

func toolErr(c errcode.Code, sentence, outcome string) engine.ToolResult {
	return engine.ToolResult{Text: errcode.ToolText(c, sentence), IsError: true, Code: string(c), Outcome: outcome}
}

// Call implements engine.Tools: catalog check, consent (with consent.*
// events when a decision is asked), tool.dispatched, then the tool.
func (t *Tools) Call(ctx context.Context, req engine.ToolCallRequest, ev engine.ToolEvents) (engine.ToolResult, error) {
	if !slices.Contains(visible(req.Session), req.Name) {
		return toolErr(errcode.ToolNotInCatalog, "Tool "+req.Name+" is not available.", engine.OutcomeRejected), nil
	}
	if t.Consent != nil {
		if err := ev.Emit(ctx, "consent.requested", map[string]string{"toolCallId": req.ToolCallID}); err != nil {
			return engine.ToolResult{}, err
		}
		d := t.Consent(ctx, req)
		if d == Wait {
			<-ctx.Done()
		}
		decision := map[Decision]string{Allow: "allow", Deny: "deny", Block: "block", Wait: "cancelled"}[d]
		if err := ev.Emit(context.WithoutCancel(ctx), "consent.resolved", map[string]string{"toolCallId": req.ToolCallID, "decision": decision}); err != nil {
			return engine.ToolResult{}, err
		}
		switch d {
		case Deny:
			return toolErr(errcode.ToolDenied, "The user declined this tool call.", engine.OutcomeRejected), nil
		case Block:
			return toolErr(errcode.ToolBlocked, "This tool call was blocked by a hook.", engine.OutcomeRejected), nil
		case Wait:
			return toolErr(errcode.ToolDenied, "The task was cancelled before the user answered.", engine.OutcomeRejected), nil
		}
	}
	if err := ev.Emit(ctx, engine.EvToolDispatched, engine.ToolRefBody{ToolCallID: req.ToolCallID}); err != nil {
		return engine.ToolResult{}, err
	}
	t.mu.Lock()
	t.calls = append(t.calls, req.Name)
	started := t.started
	t.mu.Unlock()
	if started != nil {
		select {
		case started <- req.ToolCallID:
		default:
		}
	}
	var args struct {
		Text string `json:"text"`
		MS   int    `json:"ms"`
		N    int    `json:"n"`
	}
	json.Unmarshal(req.Arguments, &args)
	switch req.Name {
	case ToolEcho:
		return engine.ToolResult{Text: args.Text, Outcome: engine.OutcomeCompleted}, nil
	case ToolSlow:
		timer := time.NewTimer(time.Duration(args.MS) * time.Millisecond)
		defer timer.Stop()
		select {
		case <-timer.C:
			return engine.ToolResult{Text: "slept", Outcome: engine.OutcomeCompleted}, nil
		case <-ctx.Done():
			return toolErr(errcode.ToolResultUnknown, "Tool call was cancelled after dispatch.", engine.OutcomeUnknown), nil
		}
	case ToolFail:
		return toolErr(errcode.ToolFailed, "The tool failed on purpose.", engine.OutcomeCompleted), nil
	case ToolBig:
		return engine.ToolResult{Text: strings.Repeat("x", args.N), Outcome: engine.OutcomeCompleted}, nil
	case ToolHang:
		<-t.releaseCh()
		return engine.ToolResult{Text: "released", Outcome: engine.OutcomeCompleted}, nil
	}
	return toolErr(errcode.ToolNotInCatalog, "Tool "+req.Name+" is not available.", engine.OutcomeRejected), nil
}

// Scope returns toolScope entries for the named tools.
func Scope(names ...string) []engine.ToolScopeEntry {
	out := []engine.ToolScopeEntry{}
	for _, n := range names {
		out = append(out, engine.ToolScopeEntry{Plugin: Plugin, Tool: n})
	}
	return out
}
