package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agentoslab/agentlab/internal/table"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// AdminMethods are the desktop.* admin methods over b. The pairing code
// travels only in the result of desktop.enable and desktop.code, to the
// owner who asked; it is never logged.
func AdminMethods(b *Bridge) []admin.Method {
	return []admin.Method{
		{Name: "desktop.code", Perm: admin.Owner, Summary: "show a new pairing code", Handle: b.adminCode},
		{Name: "desktop.disable", Perm: admin.Owner, Summary: "turn desktop access off (drops every pairing)", Handle: b.adminDisable},
		{Name: "desktop.enable", Perm: admin.Owner, Summary: "turn desktop access on and show a pairing code", Handle: b.adminEnable},
		{Name: "desktop.list", Perm: admin.Owner, Summary: "list paired computers", Handle: b.adminList},
		{Name: "desktop.revoke", Perm: admin.Owner, Summary: "revoke one paired computer", Handle: b.adminRevoke},
		{Name: "desktop.status", Perm: admin.Owner, Summary: "desktop access status and recent closes", Handle: b.adminStatus},
	}
}

// CtlVerbs are the `agentosd ctl desktop …` verbs.
func CtlVerbs() []admin.Verb {
	return []admin.Verb{
		{Group: "desktop", Name: "enable", Method: "desktop.enable", Summary: "turn desktop access on; prints a pairing code", Text: printCode},
		{Group: "desktop", Name: "disable", Method: "desktop.disable", Summary: "turn desktop access off and forget every computer", Text: printStatus},
		{Group: "desktop", Name: "code", Method: "desktop.code", Summary: "print a new pairing code (replaces the old one)", Text: printCode},
		{Group: "desktop", Name: "revoke", Method: "desktop.revoke", Args: "PAIRING_ID", Summary: "revoke a paired computer", Params: idParams, Text: printStatus},
		{Group: "desktop", Name: "list", Method: "desktop.list", Summary: "list paired computers", Text: printList},
		{Group: "desktop", Name: "status", Method: "desktop.status", Summary: "desktop access status", Text: printStatus},
	}
}

// StatusSection is the "desktop" section of `agentosd ctl status`.
func StatusSection(b *Bridge) admin.StatusSection {
	return admin.StatusSection{Name: "desktop", Read: func(context.Context) (any, error) {
		st := b.Status()
		st.Closes = nil
		return st, nil
	}}
}

// CodeResult is the result of desktop.enable and desktop.code.
type CodeResult struct {
	Code        string `json:"code"`
	ExpiresInMs int64  `json:"expiresInMs"`
}

func noParams(c *admin.Call) error { return c.Decode(&struct{}{}) }

func (b *Bridge) adminEnable(_ context.Context, c *admin.Call) (any, error) {
	if err := noParams(c); err != nil {
		return nil, err
	}
	code, err := b.Enable()
	if err != nil {
		return nil, err
	}
	return CodeResult{Code: code, ExpiresInMs: CodeTTL.Milliseconds()}, nil
}

func (b *Bridge) adminCode(_ context.Context, c *admin.Call) (any, error) {
	if err := noParams(c); err != nil {
		return nil, err
	}
	code, err := b.NewCode()
	if err != nil {
		return nil, err
	}
	return CodeResult{Code: code, ExpiresInMs: CodeTTL.Milliseconds()}, nil
}

func (b *Bridge) adminDisable(_ context.Context, c *admin.Call) (any, error) {
	if err := noParams(c); err != nil {
		return nil, err
	}
	if err := b.Disable(); err != nil {
		return nil, err
	}
	return b.Status(), nil
}

func (b *Bridge) adminRevoke(_ context.Context, c *admin.Call) (any, error) {
	var p struct {
		ID string `json:"id"`
	}
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if p.ID == "" {
		return nil, errcode.New(errcode.InvalidParams, `"id" is required`)
	}
	if err := b.Revoke(p.ID); err != nil {
		return nil, err
	}
	return b.Status(), nil
}

func (b *Bridge) adminList(_ context.Context, c *admin.Call) (any, error) {
	if err := noParams(c); err != nil {
		return nil, err
	}
	return b.List(), nil
}

func (b *Bridge) adminStatus(_ context.Context, c *admin.Call) (any, error) {
	if err := noParams(c); err != nil {
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
	var rows [][]string
	for _, p := range list {
		rows = append(rows, []string{p.ID, p.Label, time.UnixMilli(p.PairedAtMillis).Format(time.RFC3339),
			time.UnixMilli(p.LastSeenMillis).Format(time.RFC3339), fmt.Sprint(p.Connections)})
	}
	return table.Write(w, []string{"id", "label", "paired", "last seen", "connections"}, rows)
}
