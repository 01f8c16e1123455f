package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/runtime/aci/sdui"
	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// The console's carrier capabilities (upstream's).
const (
	ConsoleUI     = "console_ui"
	ConsoleAction = "console_action"
)

// AdminMethods are the owner's ACI methods, bound to c: aci.list,
// aci.audit and aci.console. The composition root hands them to the
// admin server.
func AdminMethods(c *Controller) []admin.Method {
	return []admin.Method{
		{Name: "aci.list", Perm: admin.Owner, Summary: "the apps' ACI services and their capabilities (refresh: discover again)", Timeout: 60 * time.Second,
			Handle: func(ctx context.Context, call *admin.Call) (any, error) { return c.adminList(ctx, call) }},
		{Name: "aci.audit", Perm: admin.Owner, Summary: "the last ACI calls: caller app, capability, outcome, code, duration",
			Handle: func(ctx context.Context, call *admin.Call) (any, error) { return c.adminAudit(call) }},
		{Name: "aci.console", Perm: admin.Owner, Summary: "an app's ACI console (console_ui), after applying an action (console_action)", Timeout: 60 * time.Second,
			Handle: func(ctx context.Context, call *admin.Call) (any, error) { return c.adminConsole(ctx, call) }},
	}
}

// ListParams are aci.list's params.
type ListParams struct {
	Package string `json:"package,omitempty"`
	Refresh bool   `json:"refresh,omitempty"`
}

// AuditParams are aci.audit's params.
type AuditParams struct {
	Limit int `json:"limit,omitempty"`
}

// ConsoleParams are aci.console's params: the app, and an action to apply
// first with its payload (a JSON object as text; an input's payload
// carries both of upstream's spellings, sdui.InputPayload).
type ConsoleParams struct {
	Package string `json:"package"`
	Service string `json:"service,omitempty"`
	Action  string `json:"action,omitempty"`
	Payload string `json:"payload,omitempty"`
}

// ConsoleView is aci.console's answer.
type ConsoleView struct {
	Package  string         `json:"package"`
	Service  string         `json:"service"`
	Snapshot *sdui.Snapshot `json:"snapshot"`
	Warning  string         `json:"warning,omitempty"`
	// Action is console_action's answer when an action was applied.
	Action map[string]any `json:"action,omitempty"`
}

func (c *Controller) adminList(ctx context.Context, call *admin.Call) (any, error) {
	var p ListParams
	if err := call.Decode(&p); err != nil {
		return nil, err
	}
	if p.Refresh {
		return c.Discover(ctx, p.Package), nil
	}
	return c.Services(p.Package), nil
}

func (c *Controller) adminAudit(call *admin.Call) (any, error) {
	var p AuditParams
	if err := call.Decode(&p); err != nil {
		return nil, err
	}
	return c.Audit(p.Limit), nil
}

// owner is the caller of the owner's own console: it holds every
// permission (layers 1 and 4) and confirms nothing.
var owner = engine.Caller{Kind: engine.CallerSystem, Label: "console"}

func (c *Controller) adminConsole(ctx context.Context, call *admin.Call) (any, error) {
	var p ConsoleParams
	if err := call.Decode(&p); err != nil {
		return nil, err
	}
	return c.Console(ctx, p)
}

// Console applies the action of p, if any, with console_action and
// returns the app's console_ui snapshot, as the owner (the audit records
// both calls).
func (c *Controller) Console(ctx context.Context, p ConsoleParams) (*ConsoleView, error) {
	svc := p.Service
	if svc == "" {
		for _, v := range c.Services(p.Package) {
			if v.hasCapability(ConsoleUI) {
				svc = v.Service
				break
			}
		}
	}
	if svc == "" {
		return nil, errcode.Newf(errcode.InvalidState, "no ACI service of %s has a console (%s)", p.Package, ConsoleUI)
	}
	out := ConsoleView{Package: p.Package, Service: svc}
	id := func(capability string) catalog.ACIToolID {
		return catalog.ACIToolID{Package: p.Package, Service: svc, Capability: capability}
	}
	if p.Action != "" {
		args, _ := json.Marshal(map[string]string{"action": p.Action, "payload": p.Payload})
		var res wire.Bundle
		r := c.audited(ctx, CallRequest{ID: id(ConsoleAction), Arguments: args, Caller: owner}, &res)
		if r.IsError {
			return nil, errcode.New(errcode.Code(r.Code), strings.TrimSpace(r.Text))
		}
		out.Action = map[string]any{}
		for k, v := range res {
			out.Action[k] = v.Any()
		}
	}
	var res wire.Bundle
	r := c.audited(ctx, CallRequest{ID: id(ConsoleUI), Arguments: json.RawMessage(`{}`), Caller: owner}, &res)
	if r.IsError {
		return nil, errcode.New(errcode.Code(r.Code), strings.TrimSpace(r.Text))
	}
	raw, ok := res["snapshot"]
	if !ok {
		raw = res["json"] // upstream's RemoteConsoleEndpoint reads this too
	}
	snap, warn, err := sdui.Parse([]byte(raw.Str()))
	if err != nil {
		return nil, errcode.Newf(errcode.Internal, "%s sent a console that cannot be read: %v", p.Package, err)
	}
	out.Snapshot, out.Warning = snap, warn
	return &out, nil
}

func (v ServiceView) hasCapability(id string) bool {
	for _, c := range v.Capabilities {
		if c == id {
			return true
		}
	}
	return false
}

// CtlVerbs are the `agentosd ctl aci …` verbs.
func CtlVerbs() []admin.Verb {
	return []admin.Verb{
		{Group: "aci", Name: "list", Method: "aci.list", Args: "[PACKAGE] [--refresh]", Summary: "list the apps' ACI services and capabilities",
			Params: listParams, Text: printList, Timeout: 60 * time.Second},
		{Group: "aci", Name: "audit", Method: "aci.audit", Args: "[--limit N]", Summary: "show the last ACI calls", Params: auditParams, Text: printAudit},
		{Group: "aci", Name: "console", Method: "aci.console", Args: "PACKAGE [ACTION [KEY=TEXT | JSON]]",
			Summary: "show an app's ACI console as text, after applying ACTION (an input's text as KEY=TEXT)",
			Params:  consoleParams, Text: printConsole, Timeout: 60 * time.Second},
	}
}

func listParams(args []string, _ io.Reader) (any, error) {
	var p ListParams
	for _, a := range args {
		switch {
		case a == "--refresh":
			p.Refresh = true
		case strings.HasPrefix(a, "-") || p.Package != "":
			return nil, admin.Usagef("unexpected %q", a)
		default:
			p.Package = a
		}
	}
	return p, nil
}

func auditParams(args []string, _ io.Reader) (any, error) {
	var p AuditParams
	switch {
	case len(args) == 0:
	case len(args) == 2 && args[0] == "--limit":
		n, err := strconv.Atoi(args[1])
		if err != nil || n <= 0 {
			return nil, admin.Usagef("--limit wants a positive number")
		}
		p.Limit = n
	default:
		return nil, admin.Usagef("want [--limit N]")
	}
	return p, nil
}

func consoleParams(args []string, _ io.Reader) (any, error) {
	if len(args) < 1 || len(args) > 3 {
		return nil, admin.Usagef("want PACKAGE [ACTION [KEY=TEXT | JSON]]")
	}
	p := ConsoleParams{Package: args[0]}
	if len(args) >= 2 {
		p.Action = args[1]
		p.Payload = "{}"
	}
	if len(args) == 3 {
		a := args[2]
		if strings.HasPrefix(strings.TrimSpace(a), "{") {
			p.Payload = a
		} else {
			k, v, ok := strings.Cut(a, "=")
			if !ok || k == "" {
				return nil, admin.Usagef("the input is KEY=TEXT (or a JSON object), not %q", a)
			}
			raw, _ := json.Marshal(sdui.InputPayload(k, v))
			p.Payload = string(raw)
		}
	}
	return p, nil
}

func printList(w io.Writer, raw json.RawMessage) error {
	var vs []ServiceView
	if err := json.Unmarshal(raw, &vs); err != nil {
		return err
	}
	if len(vs) == 0 {
		fmt.Fprintln(w, "no ACI services")
	}
	for _, v := range vs {
		fmt.Fprintf(w, "%s/%s uid %d protocol %s: %d capabilities\n", v.Package, v.Service, v.UID, orDash(v.Protocol), len(v.Capabilities))
		if v.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", v.Error)
		}
		for _, c := range v.Capabilities {
			fmt.Fprintf(w, "  %s\n", c)
		}
		for _, pr := range v.Problems {
			fmt.Fprintf(w, "  skipped: %s\n", pr)
		}
	}
	return nil
}

func printAudit(w io.Writer, raw json.RawMessage) error {
	var es []AuditEntry
	if err := json.Unmarshal(raw, &es); err != nil {
		return err
	}
	for _, e := range es {
		layer := ""
		if e.Layer > 0 {
			layer = fmt.Sprintf(" layer %d", e.Layer)
		}
		fmt.Fprintf(w, "%s %s %s %s code %d%s %d ms\n", time.UnixMilli(e.At).UTC().Format(time.RFC3339), e.Caller, e.Capability, e.Outcome, e.Code, layer, e.DurationMs)
	}
	return nil
}

func printConsole(w io.Writer, raw json.RawMessage) error {
	var v ConsoleView
	if err := json.Unmarshal(raw, &v); err != nil {
		return err
	}
	if v.Action != nil {
		fmt.Fprintf(w, "action %v: ok %v %v\n\n", v.Action["action"], v.Action["ok"], v.Action["message"])
	}
	if v.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", v.Warning)
	}
	if v.Snapshot != nil {
		io.WriteString(w, sdui.RenderText(v.Snapshot))
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
