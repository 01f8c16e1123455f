package engine

import (
	"context"
	"encoding/json"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/model"
)

// ToolDef is a tool offered to a session's model, with how its calls are
// shown to people.
type ToolDef struct {
	model.Tool
	// Display goes into the tool.call event of each call; the model
	// never sees it.
	Display ToolDisplay
}

// ToolDisplay is how a tool's calls are shown to people (ACP clients):
// its title and its MCP annotations as the provider declared them.
// Nothing is decided on it; risk and consent come from the catalog.
type ToolDisplay struct {
	Title string              `json:"title,omitempty"`
	Hints catalog.Annotations `json:"hints"`
}

// ToolScopeEntry is one (plugin, raw tool) pair of a session's toolScope
// (spec §2.4). The server name is not part of it.
type ToolScopeEntry struct {
	Plugin string `json:"plugin"`
	Tool   string `json:"tool"`
}

// SessionView is what the tool layer needs to know about a session to
// decide which tools it may see and use.
type SessionView struct {
	SessionID string
	TaskID    string
	Caller    Caller
	// Scope is nil when the session has no toolScope (whole catalog) and
	// non-nil (possibly empty = no tools) when it has one.
	Scope []ToolScopeEntry
	// Mode is "default", "read_only" or "chat".
	Mode string
}

// ToolCallRequest is one call the model asked for, as the engine hands it
// to the tool layer.
type ToolCallRequest struct {
	Session    SessionView
	ToolCallID string
	// Name is the final model name (mcp__…, ses__…, read_skill).
	Name      string
	Arguments json.RawMessage
}

// ToolResult is what a tool call produced. Text goes to the model (capped
// at 32,768 chars by the engine with the spec's truncation line) and, cut
// to 8,192 chars, to ACP clients.
type ToolResult struct {
	Text    string
	IsError bool
	// Code is set for runtime-made tool errors (tool_denied, …); Text then
	// is errcode.ToolText(Code, sentence).
	Code string
	// Outcome of the dispatch for tool.settled: completed, not_dispatched,
	// unknown, cancelled, rejected.
	Outcome string
	// Details are extra facts for the event log (never arguments or results).
	Details map[string]any
}

// ToolEvents lets the tool layer write consent and dispatch facts into the
// task's event log as they happen.
type ToolEvents interface {
	// Emit appends an event of the given type (e.g. "consent.requested",
	// "consent.resolved", "tool.dispatched") with a JSON-marshalable body.
	Emit(ctx context.Context, typ string, body any) error
}

// Tools is the engine's seam to tools: the catalog, the consent decision
// and the executor. The runtime core ships an in-process implementation
// for tests; the extension-host work fills it with the real catalog,
// consent coordinator and MCP providers.
//
// Implementations must be safe for concurrent use by many tasks.
type Tools interface {
	// ForSession returns the tool definitions the model is offered for a
	// turn of this session (catalog ∩ scope, filtered by mode), each with
	// how its calls are shown, plus a system-prompt section (skills list)
	// that may be empty.
	ForSession(ctx context.Context, s SessionView) (tools []ToolDef, systemSection string, err error)

	// Call authorizes (catalog, scope and mode check by name, then risk
	// policy and consent, which may block until the user answers or ctx
	// ends) and executes one call. It emits "tool.dispatched" through ev
	// right before handing the call to a provider, so a crash after it
	// is reported as result unknown. It never returns an error for tool
	// failures: those are ToolResults with IsError. An error means the
	// task itself cannot go on (e.g. the store failed).
	Call(ctx context.Context, req ToolCallRequest, ev ToolEvents) (ToolResult, error)

	// ForgetSession drops per-session memory ("don't ask again in this
	// conversation", session MCP servers) when a session closes or is deleted.
	ForgetSession(sessionID string)
}
