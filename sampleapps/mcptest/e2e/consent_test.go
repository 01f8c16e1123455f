package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/sampleapps/mcptest"
	"github.com/stretchr/testify/require"
)

// TestOnlyTheOwnerAnswersConsent: an app whose tool call waits for the
// user tries every socket and message it can reach to approve the card
// itself — the admin socket, serve's private link to the extension host,
// the launcher, the desktop ACP socket, and the caller channel both
// before and after the owner authorized it (the upstream debug receivers'
// consent methods, an `_org.agentos/…` extension method, a
// session/request_permission exchange). None of it answers the card;
// only the owner's answer on the admin socket does.
func TestOnlyTheOwnerAnswersConsent(t *testing.T) {
	t.Parallel()
	s := newStack(t)
	s.install(s.bundle(0, mcptest.BundleOptions{}))
	s.mustCall("plugins.enable", map[string]string{"id": pluginID}, nil)
	if !s.waitCatalog(echo, false) {
		t.Fatal("echo never reached the catalog")
	}
	before := s.stats()
	s.mustCall("consent.mode", map[string]string{"mode": "off"}, nil)
	done := make(chan []event, 1)
	go func() {
		done <- s.prompt("steps:\n  - toolCalls:\n      - mcp: [mcptest, test, echo]\n        arguments: {text: approve me}\nfinal: done\n")
	}()
	var cards []consent.View
	require.Eventually(t, func() bool {
		s.mustCall("consent.pending", nil, &cards)
		return len(cards) == 1
	}, 30*time.Second, 50*time.Millisecond, "no consent card")
	id := cards[0].RequestID
	app := s.appInfo().UID
	respond := fmt.Sprintf(`{"id":1,"method":"consent.respond","params":{"id":%q,"choice":"ALLOW_ONCE"}}`, id)
	rpc := func(id int, method, params string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`, id, method, params)
	}
	checks := newChecks(t)
	out := asUID(t, app, "intrude", s.names.Admin(), respond)
	checks.add("adminSocketClosed", out == "closed", out)
	out = asUID(t, app, "intrude", s.names.Ext(),
		rpc(1, "admin", fmt.Sprintf(`{"op":"consent.respond","params":{"id":%q,"choice":"ALLOW_ONCE"}}`, id)),
		rpc(2, "policy.setAlways", `{"source":{"plugin":"mcptest","server":"test","tool":"echo"}}`))
	checks.add("extLinkClosed", out == "closed", out)
	out = asUID(t, app, "intrude", launcher.SocketName(s.names), respond)
	checks.add("launcherClosed", out == "closed", out)
	out = asUID(t, app, "intrude", s.names.ACP(), respond)
	checks.add("desktopSocketUnreachable", out == "closed" || out == "dial failed", out)

	attempts := []string{
		rpc(1, "initialize", `{"protocolVersion":1,"clientCapabilities":{}}`),
		rpc(2, "_org.agentos/consent/respond", fmt.Sprintf(`{"requestId":%q,"choice":"ALLOW_ONCE"}`, id)),
		rpc(3, "consent.respond", fmt.Sprintf(`{"id":%q,"choice":"ALLOW_ONCE"}`, id)),
		rpc(4, "session/request_permission", fmt.Sprintf(`{"requestId":%q,"outcome":{"outcome":"selected","optionId":"allow"}}`, id)),
		`{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow_once"}}}`,
	}
	out = asUID(t, app, append([]string{"intrude", s.names.Caller()}, attempts...)...)
	checks.add("callerChannelNotOpenUnauthorized", strings.Contains(out, "authorization_pending") || strings.Contains(out, "not_open"), out)
	s.mustCall("callers.allow", map[string]string{"package": mcptest.Package}, nil)
	out = asUID(t, app, append([]string{"intrude", s.names.Caller()}, attempts...)...)
	t.Logf("caller channel, authorized:\n%s", out)
	checks.add("callerChannelOpenAuthorized", strings.Contains(out, `"state":"open"`), out)
	checks.add("noApprovalMethods", strings.Count(out, "-32601") >= 3 && !strings.Contains(out, `"result":{"accepted"`), out)

	checks.add("cardStillPending", s.decision(id) == "pending", s.decision(id))
	checks.add("toolNotRun", s.stats().Calls == before.Calls)
	var r struct {
		Accepted bool `json:"accepted"`
	}
	s.mustCall("consent.respond", map[string]string{"id": id, "choice": "DENY"}, &r)
	evs := <-done
	last := lastTool(evs)
	checks.add("ownerAnswerTakesEffect", r.Accepted && last.Status == "DENIED" && s.decision(id) == "deny:user", last, s.decision(id))
}

func (s *stack) decision(id string) string {
	var d struct {
		Decision string `json:"decision"`
	}
	s.mustCall("consent.decision", map[string]string{"id": id}, &d)
	return d.Decision
}
