package callerchan_test

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
)

// sessionsCase is upstream's tp-sessions: the full session lifecycle
// through the caller channel.
func sessionsCase(t *testing.T, c *checks, open opener) {
	rt := open(callers.Config{})
	a := rt.install(notesApp(), "")
	rt.preAllow(a)
	h := rt.startApp(a.UID)
	h.do(map[string]any{"op": "connect"})
	s := h.do(map[string]any{"op": "new", "cwd": "/notes"})
	c.check("created", s.Err == nil && s.Session != "", s.Err)
	p1 := h.do(map[string]any{"op": "prompt", "session": s.Session, "text": "first turn\nmore"})
	p2 := h.do(map[string]any{"op": "prompt", "session": s.Session, "text": "second turn"})
	c.check("twoTurns", done(p1.Events) == "end_turn" && done(p2.Events) == "end_turn", p1.Err, p2.Err)
	c.check("sessionId", regexp.MustCompile(`^ses_[0-9A-Z]{26}$`).MatchString(s.Session), s.Session)
	l := h.do(map[string]any{"op": "list"})
	c.check("listWithTitles", len(l.Sessions) == 1 && l.Sessions[0].ID == s.Session && l.Sessions[0].Title == "first turn", l.Sessions)

	// Load on another connection.
	h2 := rt.startApp(a.UID)
	h2.do(map[string]any{"op": "connect"})
	ld := h2.do(map[string]any{"op": "load", "session": s.Session})
	c.check("loadOnOtherConnection", ld.Err == nil && ld.Session == s.Session, ld.Err)
	var kinds []string
	for _, e := range ld.History {
		kinds = append(kinds, e.Type+":"+e.Text)
	}
	// The scripted model echoes the prompt.
	want := []string{"user:first turn\nmore", "text:first turn\nmore", "user:second turn", "text:second turn"}
	c.check("loadComplete", len(ld.History) == len(want), kinds)
	c.check("loadOrdered", slices.Equal(kinds, want), kinds)
	p3 := h2.do(map[string]any{"op": "prompt", "session": s.Session, "text": "third"})
	c.check("loadContinuable", done(p3.Events) == "end_turn", p3.Err)
	rs := h2.do(map[string]any{"op": "resume", "session": s.Session})
	c.check("resumeNoReplay", rs.Err == nil && len(rs.History) == 0, rs.Err, len(rs.History))
	fk := h.do(map[string]any{"op": "fork", "session": s.Session})
	fl := h2.do(map[string]any{"op": "load", "session": fk.Session})
	c.check("forkCarriesTurns", fk.Err == nil && fk.Session != s.Session && len(fl.History) >= len(want), fk.Err, len(fl.History))

	// Modes: a new session is default; an app may narrow to read_only
	// then chat, each visible on load, and never widen again.
	c.check("modeDefault", s.Mode == acpclient.ModeDefault && ld.Mode == acpclient.ModeDefault, s.Mode, ld.Mode)
	m := h.do(map[string]any{"op": "setMode", "session": s.Session, "mode": acpclient.ModeReadOnly})
	lm := h2.do(map[string]any{"op": "load", "session": s.Session})
	c.check("modeReadOnlyVisibleOnLoad", m.Err == nil && lm.Mode == acpclient.ModeReadOnly, m.Err, lm.Mode)
	mc := h.do(map[string]any{"op": "setMode", "session": s.Session, "mode": acpclient.ModeChat})
	lm = h2.do(map[string]any{"op": "load", "session": s.Session})
	c.check("modeChat", mc.Err == nil && lm.Mode == acpclient.ModeChat, mc.Err, lm.Mode)
	md := h.do(map[string]any{"op": "setMode", "session": s.Session, "mode": acpclient.ModeDefault})
	c.check("modeCannotWiden", md.Err != nil && md.Err.Code == "INVALID_REQUEST", md.Err)

	// Models: a custom endpoint offers none.
	c.check("noModelsSelectable", len(s.Models) == 0, s.Models)
	sm := h.do(map[string]any{"op": "setModel", "session": s.Session, "model": "gpt-x"})
	c.check("setModelUnsupported", sm.Err != nil && sm.Err.Code == "UNSUPPORTED", sm.Err)

	// Caller MCP servers: any bad entry rejects the whole batch.
	good := acpclient.MCPServer{Name: "docs", URL: "https://mcp.example.com/mcp",
		Headers: []acpclient.Header{{Name: "Authorization", Value: "Bearer SECRET-DEVICE-TOKEN"}}}
	before := len(h.do(map[string]any{"op": "list"}).Sessions)
	rejected := func(name string, bad acpclient.MCPServer) {
		r := h.do(map[string]any{"op": "new", "servers": []acpclient.MCPServer{good, bad}})
		c.check(name, r.Err != nil && r.Err.Code == "INVALID_REQUEST" && r.Session == "", r.Err)
	}
	rejected("mcpLoopbackRejected", acpclient.MCPServer{Name: "lo", URL: "https://127.0.0.1/mcp"})
	rejected("mcpCloudMetadataRejected", acpclient.MCPServer{Name: "meta", URL: "https://169.254.169.254/latest"})
	rejected("mcpPrivateNetRejected", acpclient.MCPServer{Name: "lan", URL: "https://10.1.2.3/mcp"})
	rejected("mcpUserinfoRejected", acpclient.MCPServer{Name: "ui", URL: "https://user:pw@mcp.example.com/mcp"})
	rejected("mcpCRLFHeaderRejected", acpclient.MCPServer{Name: "crlf", URL: "https://mcp.example.org/mcp",
		Headers: []acpclient.Header{{Name: "X-A", Value: "a\r\nInjected: 1"}}})
	rejected("mcpForbiddenHeaderRejected", acpclient.MCPServer{Name: "host", URL: "https://mcp.example.org/mcp",
		Headers: []acpclient.Header{{Name: "Host", Value: "evil.example"}}})
	after := len(h.do(map[string]any{"op": "list"}).Sessions)
	c.check("mcpRejectedLeavesNoSession", after == before, before, after)
	ok := h.do(map[string]any{"op": "new", "servers": []acpclient.MCPServer{good}})
	c.check("mcpUnreachableCreatedWithStatus", ok.Err == nil && len(ok.Servers) == 1 && ok.Servers[0].Name == "docs" &&
		!ok.Servers[0].Connected && ok.Servers[0].Reason != "", ok.Err, ok.Servers)

	cl := h.do(map[string]any{"op": "close", "session": s.Session})
	l = h.do(map[string]any{"op": "list"})
	found := false
	for _, x := range l.Sessions {
		found = found || x.ID == s.Session
	}
	c.check("closeKeepsSession", cl.Err == nil && found, cl.Err)
	del := h.do(map[string]any{"op": "delete", "session": s.Session})
	gone := h2.do(map[string]any{"op": "load", "session": s.Session})
	c.check("deleteIsNotFound", del.Err == nil && gone.Err != nil && gone.Err.Code == "SESSION_NOT_FOUND", del.Err, gone.Err)
	never := h2.do(map[string]any{"op": "load", "session": "ses_01HZZZZZZZZZZZZZZZZZZZZZZZ"})
	c.check("deleteLikeNeverExisted", never.Err != nil && gone.Err != nil && never.Err.Message == gone.Err.Message, never.Err, gone.Err)

	// Secrets never reach the logs or the store.
	stored := string(rt.storeBytes())
	logs := rt.logs()
	c.check("tokenNotInLogs", !strings.Contains(logs, "SECRET-DEVICE-TOKEN") && !strings.Contains(stored, "SECRET-DEVICE-TOKEN") && len(logs) > 0)
	c.check("hostNotInLogs", !strings.Contains(logs, "mcp.example.com") && !strings.Contains(stored, "mcp.example.com"))
}
