package broker

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/ext/internal/wire"
	"github.com/agentoslab/agentlab/runtime/ext/skills"
	"github.com/agentoslab/agentlab/runtime/ids"
	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/internal/rpc"
	"github.com/agentoslab/agentlab/runtime/model"
)

// Event types the broker writes through engine.ToolEvents.
const (
	EvConsentRequested = engine.EvConsentRequested
	EvConsentResolved  = engine.EvConsentResolved
)

// ConsentRequestedBody is the body of consent.requested (spec §5.4).
type ConsentRequestedBody struct {
	RequestID     string       `json:"requestId"`
	ToolCallID    string       `json:"toolCallId"`
	ToolName      string       `json:"toolName"`
	Risk          catalog.Risk `json:"risk"`
	CallerUID     int          `json:"callerUid"`
	CallerPackage string       `json:"callerPackage,omitempty"`
}

// ConsentResolvedBody is the body of consent.resolved.
type ConsentResolvedBody struct {
	RequestID  string `json:"requestId,omitempty"`
	ToolCallID string `json:"toolCallId"`
	ToolName   string `json:"toolName"`
	// Decision is allow or deny.
	Decision string `json:"decision"`
	// Reason is user, policy, remembered, timeout, unavailable or client.
	Reason string `json:"reason"`
	// Remember is "session" (don't ask again in this conversation) or
	// "always" (always allow), when the answer remembers.
	Remember string `json:"remember,omitempty"`
	// Notice explains an "always allow" that could not be saved.
	Notice string `json:"notice,omitempty"`
}

// view is the catalog.View of a session.
func view(s engine.SessionView) catalog.View {
	v := catalog.View{Scope: catalog.ScopeOf(s.Scope), Mode: catalog.Mode(s.Mode)}
	if faultinject.Enabled && faultinject.Active(faultinject.ScopeWiden) {
		v.Scope = nil // injected fault: the toolScope no longer narrows
	}
	return v
}

// sessionTools is the catalog of a session's own MCP servers (ses__
// names, which never meet mcp__ names or read_skill), nil when it has
// none. refresh retries unreachable servers first (before a task).
func (b *Broker) sessionTools(ctx context.Context, s engine.SessionView, refresh bool) *catalog.Catalog {
	if b.o.Sessions == nil || s.SessionID == "" {
		return nil
	}
	var entries []catalog.Entry
	if refresh {
		entries = b.o.Sessions.Tools(ctx, s.SessionID)
	} else {
		entries = b.o.Sessions.Known(s.SessionID)
	}
	if len(entries) == 0 {
		return nil
	}
	c, err := catalog.New(entries)
	if err != nil {
		b.o.Logger.Warn("broker: session tools not named", "session", s.SessionID, "err", err)
		return nil
	}
	return c
}

// aciTools is the catalog of the ACI capabilities (aci__ names, which
// never meet the other namespaces), nil when there are none.
func (b *Broker) aciTools() *catalog.Catalog {
	if b.o.ACI == nil {
		return nil
	}
	v := b.o.ACI.Version()
	b.mu.Lock()
	if b.aciCat != nil && b.aciVersion == v {
		c := b.aciCat
		b.mu.Unlock()
		return c
	}
	b.mu.Unlock()
	c, err := catalog.New(b.o.ACI.Entries())
	if err != nil {
		b.o.Logger.Warn("broker: aci capabilities not named", "err", err)
		return nil
	}
	b.mu.Lock()
	b.aciCat, b.aciVersion = c, v
	b.mu.Unlock()
	return c
}

// ForSession implements engine.Tools: the visible tools of the session
// (catalog ∩ scope, filtered by mode, then the session's own servers'
// tools) and the skills section of the system prompt (absent in
// restricted-scope sessions and chat mode).
func (b *Broker) ForSession(ctx context.Context, s engine.SessionView) ([]engine.ToolDef, string, error) {
	cat, sk := b.mirror()
	v := view(s)
	entries := cat.Visible(v)
	if ac := b.aciTools(); ac != nil {
		entries = append(entries, ac.Visible(v)...)
	}
	if st := b.sessionTools(ctx, s, true); st != nil {
		entries = append(entries, st.Visible(v)...)
	}
	out := make([]engine.ToolDef, 0, len(entries))
	for _, e := range entries {
		out = append(out, engine.ToolDef{
			Tool:    model.Tool{Name: e.Name, Description: e.Description, InputSchema: e.InputSchema},
			Display: engine.ToolDisplay{Title: e.Title, Hints: e.Hints},
		})
	}
	section := ""
	if v.SkillsAllowed() && len(sk) > 0 {
		section = skills.PromptSection(sk)
	}
	return out, section, nil
}

// ForgetSession implements engine.Tools.
func (b *Broker) ForgetSession(id string) {
	b.memory.Forget(id)
	if b.o.Sessions != nil {
		b.o.Sessions.Forget(id)
	}
}

func toolError(c errcode.Code, sentence, outcome string) engine.ToolResult {
	return engine.ToolResult{Code: string(c), IsError: true, Outcome: outcome, Text: errcode.ToolText(c, sentence)}
}

// Call implements engine.Tools: the broker flow of spec §5.2.
func (b *Broker) Call(ctx context.Context, req engine.ToolCallRequest, ev engine.ToolEvents) (engine.ToolResult, error) {
	cat, _ := b.mirror()
	e, err := cat.Lookup(req.Name, view(req.Session))
	if err != nil {
		if ac := b.aciTools(); ac != nil {
			e, err = ac.Lookup(req.Name, view(req.Session))
		}
	}
	if err != nil {
		if st := b.sessionTools(ctx, req.Session, false); st != nil {
			e, err = st.Lookup(req.Name, view(req.Session))
		}
	}
	if err != nil {
		// Unknown, disabled, out of scope and mode-hidden look the same,
		// and none of them asks the user.
		return toolError(errcode.ToolNotInCatalog, catalog.NotAvailable(req.Name).Text, engine.OutcomeRejected), nil
	}
	if e.Kind == catalog.KindBuiltin {
		if err := ev.Emit(ctx, engine.EvToolDispatched, engine.ToolRefBody{ToolCallID: req.ToolCallID}); err != nil {
			return engine.ToolResult{}, err
		}
		return b.readSkill(ctx, req.Arguments), nil
	}

	var details map[string]any
	asked := false
	remembered := b.memory.Remembered(req.Session.SessionID, e.Name)
	switch need := consent.Requirement(e.Risk, consent.HookNone, e.Approval, remembered); need {
	case consent.NotNeeded:
	case consent.RunByPolicy, consent.RunRemembered:
		reason := "policy"
		if need == consent.RunRemembered {
			reason = "remembered"
		}
		if err := ev.Emit(ctx, EvConsentResolved, ConsentResolvedBody{ToolCallID: req.ToolCallID, ToolName: e.Name, Decision: "allow", Reason: reason}); err != nil {
			return engine.ToolResult{}, err
		}
	default:
		res, ok, d, err := b.ask(ctx, req, e, ev)
		if err != nil || !ok {
			return res, err
		}
		details, asked = d, true
	}

	if err := ev.Emit(ctx, engine.EvToolDispatched, engine.ToolRefBody{ToolCallID: req.ToolCallID}); err != nil {
		return engine.ToolResult{}, err
	}
	var r engine.ToolResult
	switch e.Kind {
	case catalog.KindPlugin:
		r = b.callPlugin(ctx, wire.CallParams{Name: e.Name, Source: e.Source, Arguments: req.Arguments})
	case catalog.KindSession:
		if b.o.Sessions == nil {
			r = toolError(errcode.ToolUnavailable, "The server is not connected.", engine.OutcomeNotDispatched)
		} else {
			r = b.o.Sessions.Call(ctx, req.Session.SessionID, e.Session, e.Name, req.Arguments, b.o.CallTimeout)
		}
	case catalog.KindACI:
		if b.o.ACI == nil {
			r = toolError(errcode.ToolUnavailable, "App capabilities are not available.", engine.OutcomeNotDispatched)
			break
		}
		progress := func(percent int, message string) {
			// Progress is shown, never decisive: a failed write is dropped.
			ev.Emit(ctx, engine.EvToolProgress, engine.ToolProgressBody{ToolCallID: req.ToolCallID, Percent: percent, Message: message})
		}
		r = b.o.ACI.CallACI(ctx, e.ACI, req.Arguments, req.Session.Caller, asked, progress)
	}
	if len(details) > 0 {
		if r.Details == nil {
			r.Details = map[string]any{}
		}
		for k, v := range details {
			r.Details[k] = v
		}
	}
	return r, nil
}

// ask shows a consent card and waits for the answer. ok false means the
// call must not run and res says why.
func (b *Broker) ask(ctx context.Context, req engine.ToolCallRequest, e catalog.Entry, ev engine.ToolEvents) (res engine.ToolResult, ok bool, details map[string]any, err error) {
	var src *catalog.ToolID
	if e.Kind == catalog.KindPlugin {
		s := e.Source
		src = &s
	}
	options := consent.Options(consent.Offer{
		Risk:               e.Risk,
		Rememberable:       true,
		Source:             src,
		WritebackAvailable: b.link() != nil,
		AlwaysAllowOffered: e.Kind == catalog.KindPlugin && e.MayAlwaysAllow,
	})
	c := req.Session.Caller
	reqID := ids.New(ids.Request)
	requested := ConsentRequestedBody{RequestID: reqID, ToolCallID: req.ToolCallID, ToolName: e.Name, Risk: e.Risk, CallerUID: c.UID}
	if c.Kind == engine.CallerApp {
		requested.CallerPackage = c.Package
	}
	if err := ev.Emit(ctx, EvConsentRequested, requested); err != nil {
		return engine.ToolResult{}, false, nil, err
	}
	cr := consent.Request{
		ID: reqID, SessionID: req.Session.SessionID, TaskID: req.Session.TaskID, ToolCallID: req.ToolCallID,
		Caller:   consent.Initiator{Kind: string(c.Kind), UID: c.UID, Package: c.Package, Label: c.Label},
		ToolName: e.Name, ToolTitle: e.Title, Source: src, Arguments: req.Arguments, Risk: e.Risk, Options: options,
	}
	switch e.Kind {
	case catalog.KindSession:
		cr.SessionServer = e.Session.Server
	case catalog.KindACI:
		cr.ACIApp = e.ACI.Package
	}
	out := b.consent.Ask(ctx, cr)
	resolved := ConsentResolvedBody{RequestID: reqID, ToolCallID: req.ToolCallID, ToolName: e.Name, Decision: "deny", Reason: out.EventReason()}
	if out.Allowed() {
		resolved.Decision, resolved.Reason = "allow", "user"
	}
	switch out.Choice {
	case consent.AllowForSession:
		resolved.Remember = "session"
		b.memory.Remember(req.Session.SessionID, e.Name)
	case consent.AlwaysAllow:
		resolved.Remember = "always"
		if notice := b.saveAlways(ctx, e.Source); notice != "" {
			resolved.Notice = notice
			b.consent.SetNotice(reqID, notice)
			details = map[string]any{"notice": notice}
		}
	}
	// The answer is recorded even when the task was cancelled meanwhile.
	if err := ev.Emit(context.WithoutCancel(ctx), EvConsentResolved, resolved); err != nil {
		return engine.ToolResult{}, false, nil, err
	}
	if !out.Allowed() {
		return toolError(errcode.ToolDenied, out.DenialText(), engine.OutcomeRejected), false, nil, nil
	}
	return engine.ToolResult{}, true, details, nil
}

// saveAlways writes the tool-level "always" through the extension host
// (5 s). A failure leaves this call allowed and returns the notice.
func (b *Broker) saveAlways(ctx context.Context, src catalog.ToolID) string {
	peer := b.link()
	if peer == nil {
		return "\"Always allow\" could not be saved (the extension host is not running); this call was allowed, the next one will ask again."
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), b.o.AlwaysTimeout)
	defer cancel()
	if err := peer.Call(ctx, wire.MethodAlways, wire.AlwaysParams{Source: src}, nil); err != nil {
		reason := string(errcode.CodeOf(err))
		var e *errcode.Error
		if errors.As(err, &e) {
			if r, ok := e.Details["reason"].(string); ok {
				reason = r
			}
		}
		if ctx.Err() != nil {
			reason = "timeout"
		}
		b.o.Logger.Warn("broker: always allow not saved", "reason", reason)
		return "\"Always allow\" could not be saved (" + reason + "); this call was allowed, the next one will ask again."
	}
	return ""
}

// callPlugin runs a plugin tool in the extension host.
func (b *Broker) callPlugin(ctx context.Context, p wire.CallParams) engine.ToolResult {
	return b.callPluginTimeout(ctx, p, b.o.CallTimeout)
}

func (b *Broker) callPluginTimeout(ctx context.Context, p wire.CallParams, timeout time.Duration) engine.ToolResult {
	r, _ := b.callExt(ctx, p, timeout)
	return r
}

// callExt runs a call in the extension host and returns the engine's
// result and, when the host answered, its own (with structured content
// and the provider's pid).
func (b *Broker) callExt(ctx context.Context, p wire.CallParams, timeout time.Duration) (engine.ToolResult, *wire.CallResult) {
	peer := b.link()
	if peer == nil {
		return toolError(errcode.ToolUnavailable, "The extension host is restarting; try again in a moment.", engine.OutcomeNotDispatched), nil
	}
	p.TimeoutMs = timeout.Milliseconds()
	var res wire.CallResult
	err := peer.CallGrace(ctx, resultGrace, wire.MethodCall, p, &res)
	switch {
	case err == nil:
		return engine.ToolResult{Text: res.Text, IsError: res.IsError, Code: res.Code, Outcome: res.Outcome, Details: withPID(res)}, &res
	case errors.Is(err, rpc.ErrClosed):
		return toolError(errcode.ToolResultUnknown, "Tool call failed: the extension host stopped before the provider answered.", engine.OutcomeUnknown), nil
	case ctx.Err() != nil:
		r := toolError(errcode.ToolResultUnknown, "Tool call was cancelled after dispatch.", engine.OutcomeUnknown)
		r.Details = map[string]any{"cancelled": true}
		return r, nil
	}
	return toolError(errcode.ToolResultUnknown, "Tool call failed: the extension host did not answer.", engine.OutcomeUnknown), nil
}

func withPID(r wire.CallResult) map[string]any {
	if r.ProviderPID == 0 {
		return r.Details
	}
	d := map[string]any{}
	for k, v := range r.Details {
		d[k] = v
	}
	d["providerPid"] = r.ProviderPID
	return d
}

// readSkill runs the built-in read_skill tool.
func (b *Broker) readSkill(ctx context.Context, raw json.RawMessage) engine.ToolResult {
	args, err := skills.ParseArgs(raw)
	if err != nil {
		return skillErr(err)
	}
	peer := b.link()
	if peer == nil {
		return toolError(errcode.ToolUnavailable, "The extension host is restarting; try again in a moment.", engine.OutcomeNotDispatched)
	}
	ctx, cancel := context.WithTimeout(ctx, adminTimeout)
	defer cancel()
	var res wire.SkillResult
	if err := peer.Call(ctx, wire.MethodSkill, wire.SkillParams{Name: args.Name, Path: args.Path}, &res); err != nil {
		if errors.Is(err, rpc.ErrClosed) || ctx.Err() != nil {
			return toolError(errcode.ToolUnavailable, "The skill could not be read right now.", engine.OutcomeNotDispatched)
		}
		return skillErr(err)
	}
	return engine.ToolResult{Text: res.Text, Outcome: engine.OutcomeCompleted}
}

func skillErr(err error) engine.ToolResult {
	e := errcode.From(err)
	if e.Code.Kind() != errcode.KindTool {
		return toolError(errcode.ToolFailed, "The skill could not be read.", engine.OutcomeCompleted)
	}
	return toolError(e.Code, e.Text, engine.OutcomeCompleted)
}
