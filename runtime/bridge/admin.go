package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// The desktop.* admin methods. serve provides the bridge:
//
//	admin.Provide(adminSrv, bridge) // *bridge.Bridge
//
// The pairing code travels only in the result of desktop.enable and
// desktop.code, to the owner who asked; it is never logged.
func init() {
	admin.Register(
		admin.Method{Name: "desktop.code", Perm: admin.Owner, Summary: "show a new pairing code", Handle: desktopCode},
		admin.Method{Name: "desktop.disable", Perm: admin.Owner, Summary: "turn desktop access off (drops every pairing)", Handle: desktopDisable},
		admin.Method{Name: "desktop.enable", Perm: admin.Owner, Summary: "turn desktop access on and show a pairing code", Handle: desktopEnable},
		admin.Method{Name: "desktop.list", Perm: admin.Owner, Summary: "list paired computers", Handle: desktopList},
		admin.Method{Name: "desktop.revoke", Perm: admin.Owner, Summary: "revoke one paired computer", Handle: desktopRevoke},
		admin.Method{Name: "desktop.status", Perm: admin.Owner, Summary: "desktop access status and recent closes", Handle: desktopStatus},
	)
	admin.RegisterVerb(
		admin.Verb{Group: "desktop", Name: "enable", Method: "desktop.enable", Summary: "turn desktop access on; prints a pairing code", Text: printCode},
		admin.Verb{Group: "desktop", Name: "disable", Method: "desktop.disable", Summary: "turn desktop access off and forget every computer", Text: printStatus},
		admin.Verb{Group: "desktop", Name: "code", Method: "desktop.code", Summary: "print a new pairing code (replaces the old one)", Text: printCode},
		admin.Verb{Group: "desktop", Name: "revoke", Method: "desktop.revoke", Args: "PAIRING_ID", Summary: "revoke a paired computer", Params: idParams, Text: printStatus},
		admin.Verb{Group: "desktop", Name: "list", Method: "desktop.list", Summary: "list paired computers", Text: printList},
		admin.Verb{Group: "desktop", Name: "status", Method: "desktop.status", Summary: "desktop access status", Text: printStatus},
	)
}

// CodeResult is the result of desktop.enable and desktop.code.
type CodeResult struct {
	Code        string `json:"code"`
	ExpiresInMs int64  `json:"expiresInMs"`
}

func noParams(c *admin.Call) error { return c.Decode(&struct{}{}) }

func desktopEnable(_ context.Context, c *admin.Call) (any, error) {
	if err := noParams(c); err != nil {
		return nil, err
	}
	b, err := admin.Use[*Bridge](c)
	if err != nil {
		return nil, err
	}
	code, err := b.Enable()
	if err != nil {
		return nil, err
	}
	return CodeResult{Code: code, ExpiresInMs: CodeTTL.Milliseconds()}, nil
}

func desktopCode(_ context.Context, c *admin.Call) (any, error) {
	if err := noParams(c); err != nil {
		return nil, err
	}
	b, err := admin.Use[*Bridge](c)
	if err != nil {
		return nil, err
	}
	code, err := b.NewCode()
	if err != nil {
		return nil, err
	}
	return CodeResult{Code: code, ExpiresInMs: CodeTTL.Milliseconds()}, nil
}

func desktopDisable(_ context.Context, c *admin.Call) (any, error) {
	if err := noParams(c); err != nil {
		return nil, err
	}
	b, err := admin.Use[*Bridge](c)
	if err != nil {
		return nil, err
	}
	if err := b.Disable(); err != nil {
		return nil, err
	}
	return b.Status(), nil
}

func desktopRevoke(_ context.Context, c *admin.Call) (any, error) {
	var p struct {
		ID string `json:"id"`
	}
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if p.ID == "" {
		return nil, errcode.New(errcode.InvalidParams, `"id" is required`)
	}
	b, err := admin.Use[*Bridge](c)
	if err != nil {
		return nil, err
	}
	if err := b.Revoke(p.ID); err != nil {
		return nil, err
	}
	return b.Status(), nil
}

func desktopList(_ context.Context, c *admin.Call) (any, error) {
	if err := noParams(c); err != nil {
		return nil, err
	}
	b, err := admin.Use[*Bridge](c)
	if err != nil {
		return nil, err
	}
	return b.List(), nil
}

func desktopStatus(_ context.Context, c *admin.Call) (any, error) {
	if err := noParams(c); err != nil {
		return nil, err
	}
	b, err := admin.Use[*Bridge](c)
	if err != nil {
		return nil, err
	}
	return b.Status(), nil
}

func idParams(args []string, _ io.Reader) (any, error) {
	if len(args) != 1 {
		return nil, admin.Usagef("want exactly one PAIRING_ID")
	}
	return map[string]string{"id": args[0]}, nil
}

func printCode(w io.Writer, raw json.RawMessage) error {
	var r CodeResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	// The command people run on the computer is agentlab's bridge (the
	// upstream acp-bridge does not exist here).
	_, err := fmt.Fprintf(w, "pairing code: %s (valid %s, one use)\non the computer: agentlab bridge pair %s (add -s SERIAL when adb lists several devices)\n",
		r.Code, time.Duration(r.ExpiresInMs)*time.Millisecond, r.Code)
	return err
}

func printStatus(w io.Writer, raw json.RawMessage) error {
	var s Status
	if err := json.Unmarshal(raw, &s); err != nil {
		return err
	}
	state := "off"
	if s.Enabled {
		state = "on"
	}
	fmt.Fprintf(w, "desktop access: %s; listening: %v; connections: %d (+%d pairing); paired computers: %d; code active: %v\n",
		state, s.Listening, s.Established, s.Handshaking, s.Pairings, s.CodeActive)
	if s.ListenError != "" {
		fmt.Fprintf(w, "listen error: %s\n", s.ListenError)
	}
	for _, c := range s.Closes {
		fmt.Fprintf(w, "  %s uid %d %s %s\n", time.UnixMilli(c.AtMillis).Format(time.TimeOnly), c.UID, c.Reason, c.PairingID)
	}
	return nil
}

func printList(w io.Writer, raw json.RawMessage) error {
	var list []PairingInfo
	if err := json.Unmarshal(raw, &list); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tLABEL\tPAIRED\tLAST SEEN\tCONNECTIONS")
	for _, p := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\n", p.ID, p.Label, time.UnixMilli(p.PairedAtMillis).Format(time.RFC3339),
			time.UnixMilli(p.LastSeenMillis).Format(time.RFC3339), p.Connections)
	}
	return tw.Flush()
}
