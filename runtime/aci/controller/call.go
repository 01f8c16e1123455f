package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/clock"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// userConfirmed is the param the runtime sets after the owner answered a
// consent card for the call (the SDK's reserved name).
const userConfirmed = "user_confirmed"

// CallRequest is one call of a capability the broker allowed.
type CallRequest struct {
	ID        catalog.ACIToolID
	Arguments json.RawMessage
	// Caller is the session's originating caller (layers 1 and 4).
	Caller engine.Caller
	// Confirmed says the owner answered a consent card allowing this very
	// call (layer 5); only then does the callee get user_confirmed.
	Confirmed bool
	// Progress, when set, makes the call a callAsync and receives its
	// progress in order.
	Progress func(wire.Progress)
}

// Layers of a refusal, as the audit records them.
const (
	LayerAppPermission  = 1
	LayerKernelUID      = 2
	LayerCalleeHook     = 3
	LayerCapPermission  = 4
	LayerUserConfirm    = 5
	outcomeOK           = "ok"
	outcomeDenied       = "denied"
	outcomeFailed       = "failed"
	outcomeTimeout      = "timeout"
	outcomeCancelled    = "cancelled"
	outcomeUnavailable  = "unavailable"
	outcomeInvalidInput = "invalid_arguments"
)

// callerPackage is the originating app, nil for the owner's own sessions.
func (c *Controller) callerPackage(caller engine.Caller) (*apps.Package, error) {
	if caller.Kind != engine.CallerApp {
		return nil, nil
	}
	p, ok := c.o.Packages.ByName(caller.Package)
	if !ok || p.UID != caller.UID {
		return nil, fmt.Errorf("the calling app %s is not installed", caller.Package)
	}
	return &p, nil
}

// Call runs one call through the five layers and returns what the model
// is told. It never returns an error: failures are results with IsError.
func (c *Controller) Call(ctx context.Context, req CallRequest) engine.ToolResult {
	return c.audited(ctx, req, nil)
}

// audited is Call, also handing out the raw result.
func (c *Controller) audited(ctx context.Context, req CallRequest, out *wire.Bundle) engine.ToolResult {
	start := c.o.Clock.Now()
	rec := AuditEntry{Capability: req.ID.String(), Caller: callerName(req.Caller)}
	r, layer, code, outcome := c.call(ctx, req, out)
	rec.Outcome, rec.Layer, rec.Code = outcome, layer, int(code)
	rec.At = start.UnixMilli()
	rec.DurationMs = clock.Since(c.o.Clock, start).Milliseconds()
	c.audit.add(rec)
	c.o.Logger.Info("aci: call", "capability", rec.Capability, "caller", rec.Caller, "outcome", outcome, "code", int(code), "ms", rec.DurationMs)
	if r.Details == nil {
		r.Details = map[string]any{}
	}
	r.Details["aci"] = map[string]any{"outcome": outcome, "code": int(code), "layer": layer}
	return r
}

func callerName(c engine.Caller) string {
	if c.Kind == engine.CallerApp {
		return c.Package
	}
	return string(c.Kind)
}

func refuse(c errcode.Code, sentence, outcome string) engine.ToolResult {
	return engine.ToolResult{Code: string(c), IsError: true, Outcome: outcome, Text: errcode.ToolText(c, sentence)}
}

// call runs the layers and the call; out, when not nil, receives the
// result as the callee sent it.
func (c *Controller) call(ctx context.Context, req CallRequest, out *wire.Bundle) (engine.ToolResult, int, wire.Code, string) {
	s, cp, ok := c.capability(req.ID)
	if !ok {
		return refuse(errcode.ToolUnavailable, "The app no longer offers "+req.ID.Capability+".", engine.OutcomeNotDispatched), 0, wire.CapabilityNotFound, outcomeUnavailable
	}
	// Layer 1: the originating app holds the ACI permission.
	from, err := c.callerPackage(req.Caller)
	if err != nil {
		return refuse(errcode.ToolDenied, err.Error()+".", engine.OutcomeRejected), LayerAppPermission, wire.PermissionDenied, outcomeDenied
	}
	if from != nil && !from.HasPermission(apps.PermissionACI) {
		return refuse(errcode.ToolDenied, fmt.Sprintf("The calling app %s does not hold the %q permission, which app capabilities (ACI) need.", from.Name, apps.PermissionACI),
			engine.OutcomeRejected), LayerAppPermission, wire.PermissionDenied, outcomeDenied
	}
	// Layer 4: the capability's own permission, of the originating app.
	if perm := cp.RequirePermission; perm != "" && from != nil && !from.HasPermission(perm) && !(faultinject.Enabled && faultinject.Active(faultinject.ACICapPermissionUnchecked)) {
		return refuse(errcode.ToolDenied, fmt.Sprintf("%s requires the permission %s, which the calling app %s does not hold.", cp.ID, perm, from.Name),
			engine.OutcomeRejected), LayerCapPermission, wire.PermissionDenied, outcomeDenied
	}
	// Layer 5: a confirm capability runs only after a real answer.
	if cp.NeedsConfirm() && !req.Confirmed {
		return refuse(errcode.ToolDenied, cp.ID+" needs the owner's confirmation for every call; none was given.", engine.OutcomeRejected),
			LayerUserConfirm, wire.PermissionDenied, outcomeDenied
	}
	params, err := wire.ConvertArgs(cp, req.Arguments)
	if err == nil {
		if _, ok := params[userConfirmed]; ok {
			err = &wire.ArgError{Param: userConfirmed, Reason: "is set by AgentOS after the owner confirms, never by the model"}
		}
	}
	if err != nil {
		return refuse(errcode.ToolFailed, "Invalid arguments for "+cp.ID+": "+err.Error()+".", engine.OutcomeNotDispatched), 0, wire.BadRequest, outcomeInvalidInput
	}
	if req.Confirmed && cp.NeedsConfirm() {
		params[userConfirmed] = wire.Bool(true)
	}
	client := &wire.Client{Socket: s.socket, UID: s.pkg.UID}
	if from != nil {
		client.CallerPkg = from.Name
	}
	timeout := cp.SyncTimeout
	if timeout <= 0 {
		timeout = wire.DefaultCallTimeout
	}
	method := wire.MethodCall
	if req.Progress != nil {
		method = wire.MethodCallAsync
	}
	var resp *wire.Response
	// Layer 2 is in the client: the listener's uid is checked before a
	// byte is sent. Waking covers an app that stopped since discovery.
	err = c.withWake(ctx, s, func(ctx context.Context) error {
		cctx, cancel := clock.WithTimeout(ctx, c.o.Clock, timeout)
		defer cancel()
		var err error
		resp, err = client.Do(cctx, &wire.Request{Method: method, Capability: cp.ID, Params: params, CallID: wire.NewCallID()}, req.Progress)
		if err != nil && clock.TimedOut(cctx) && ctx.Err() == nil {
			return wire.Errorf(wire.Timeout, "%s did not answer within %s", cp.ID, timeout)
		}
		return err
	})
	if err != nil {
		return c.callError(ctx, cp, err)
	}
	if ferr := resp.Err(); ferr != nil {
		var e *wire.Error
		errors.As(ferr, &e)
		layer, outcome := 0, outcomeFailed
		if e.Code == wire.PermissionDenied {
			layer, outcome = LayerCalleeHook, outcomeDenied
		}
		return engine.ToolResult{Code: string(e.Code.Tool()), IsError: true, Outcome: engine.OutcomeCompleted,
			Text: errcode.ToolText(e.Code.Tool(), failureText(cp.ID, e))}, layer, e.Code, outcome
	}
	if out != nil {
		*out = resp.Result
	}
	return engine.ToolResult{Text: RenderResult(resp.Result), Outcome: engine.OutcomeCompleted}, 0, wire.OK, outcomeOK
}

// callError is a call that got no answer.
func (c *Controller) callError(ctx context.Context, cp *wire.Capability, err error) (engine.ToolResult, int, wire.Code, string) {
	switch {
	case errors.Is(err, wire.ErrPeerUID):
		return refuse(errcode.ToolUnavailable, fmt.Sprintf("The socket of %s is held by another app; nothing was sent.", cp.ID), engine.OutcomeNotDispatched),
			LayerKernelUID, wire.ServiceUnavailable, outcomeUnavailable
	case ctx.Err() != nil:
		r := refuse(errcode.ToolResultUnknown, "Tool call was cancelled after dispatch.", engine.OutcomeUnknown)
		r.Details = map[string]any{"cancelled": true}
		return r, 0, wire.Timeout, outcomeCancelled
	case errors.Is(err, wire.Timeout):
		return refuse(errcode.ToolTimeout, err.Error()+"; the app was told to stop.", engine.OutcomeUnknown), 0, wire.Timeout, outcomeTimeout
	case errors.Is(err, wire.ServiceUnavailable):
		return refuse(errcode.ToolUnavailable, "The app serving "+cp.ID+" is not running and could not be started.", engine.OutcomeNotDispatched),
			0, wire.ServiceUnavailable, outcomeUnavailable
	}
	return refuse(errcode.ToolResultUnknown, "The app serving "+cp.ID+" stopped before it answered.", engine.OutcomeUnknown), 0, wire.ConnectionDied, outcomeFailed
}

// failureText is what the model reads of a failed call: the code's name,
// the message and, for a structured error, its suggestion.
func failureText(id string, e *wire.Error) string {
	name := fmt.Sprint(int(e.Code))
	if row, ok := e.Code.Lookup(); ok {
		name = row.Name
	}
	text := fmt.Sprintf("%s failed (%s, code %d): %s", id, name, e.Raw, e.Message)
	if e.Detail != nil && e.Detail.Suggestion != "" {
		text += " Suggestion: " + e.Detail.Suggestion
	}
	return text
}

// RenderResult is a result as the model reads it: a JSON object of plain
// values, each text with an attachment replaced by its full value
// (wire.Expand, by the fields, whatever the capability), the attachments
// themselves left out, other bytes as "<N bytes>". "truncated" stays only
// when some value is still a preview.
func RenderResult(b wire.Bundle) string {
	full, problems := wire.Expand(b)
	out := make(map[string]any, len(b))
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := b[k]
		if base, ok := strings.CutSuffix(k, wire.SuffixGzip); ok && v.Type() == wire.TypeBytes {
			if _, expanded := full[base]; expanded {
				continue
			}
		}
		if t, ok := full[k]; ok {
			out[k] = t
			continue
		}
		if v.Type() == wire.TypeBytes {
			out[k] = v.Text()
			continue
		}
		out[k] = v.Any()
	}
	if _, ok := out[wire.KeyTruncated]; ok && len(problems) == 0 && len(full) > 0 {
		delete(out, wire.KeyTruncated)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return "{}"
	}
	return string(raw)
}

// CallACI is Call as the broker's seam (broker.ACITools) calls it.
func (c *Controller) CallACI(ctx context.Context, id catalog.ACIToolID, args json.RawMessage, caller engine.Caller, confirmed bool, progress func(percent int, message string)) engine.ToolResult {
	req := CallRequest{ID: id, Arguments: args, Caller: caller, Confirmed: confirmed}
	if progress != nil {
		req.Progress = func(p wire.Progress) { progress(p.Percent, p.Message) }
	}
	return c.Call(ctx, req)
}
