package daemon

import (
	"context"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// noTools is the tool layer until the extension host is wired: an empty
// catalog, so every call is tool_not_in_catalog.
type noTools struct{}

var _ engine.Tools = noTools{}

func (noTools) ForSession(context.Context, engine.SessionView) ([]engine.ToolDef, string, error) {
	return nil, "", nil
}

func (noTools) Call(_ context.Context, req engine.ToolCallRequest, _ engine.ToolEvents) (engine.ToolResult, error) {
	return engine.ToolResult{IsError: true, Code: string(errcode.ToolNotInCatalog), Outcome: engine.OutcomeRejected,
		Text: errcode.ToolText(errcode.ToolNotInCatalog, "Tool "+req.Name+" is not available.")}, nil
}

func (noTools) ForgetSession(string) {}
