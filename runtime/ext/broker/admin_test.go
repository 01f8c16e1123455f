package broker_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/ext/exttest"
	"github.com/stretchr/testify/assert"
)

// TestConsentSurfaceCheck is consent_surface_check (spec §10.7): its 16
// checks, through the real admin socket and `agentosd ctl consent …`
// verbs, with the 4 s card timeout of the upstream script.
func TestConsentSurfaceCheck(t *testing.T) {
	h := exttest.New(t, exttest.Options{})
	ctl := func(args ...string) json.RawMessage {
		t.Helper()
		code, out, errOut := h.Ctl(append(args, "--json")...)
		if code != admin.ExitOK {
			t.Fatalf("ctl %v: exit %d: %s%s", args, code, out, errOut)
		}
		return json.RawMessage(out)
	}
	inject := func(args ...string) string {
		var r struct {
			RequestID string `json:"requestId"`
		}
		json.Unmarshal(ctl(append([]string{"consent", "inject"}, args...)...), &r)
		return r.RequestID
	}
	pending := func() []consent.View {
		var v []consent.View
		json.Unmarshal(ctl("consent", "pending"), &v)
		return v
	}
	byID := func(id string) (consent.View, bool) {
		for _, v := range pending() {
			if v.RequestID == id {
				return v, true
			}
		}
		return consent.View{}, false
	}
	choices := func(v consent.View) []consent.Choice {
		var out []consent.Choice
		for _, o := range v.Options {
			out = append(out, o.Choice)
		}
		return out
	}
	decision := func(id string) string {
		var d struct {
			Decision string `json:"decision"`
		}
		json.Unmarshal(ctl("consent", "decision", id), &d)
		return d.Decision
	}
	respond := func(id, choice string) bool {
		var r struct {
			Accepted bool `json:"accepted"`
		}
		json.Unmarshal(ctl("consent", "respond", id, choice), &r)
		return r.Accepted
	}
	checks := map[string]bool{}

	w := inject("--risk", "WRITE", "--tool", "note_create", "--plugin", "notes", "--server", "notes", "--caller", "app",
		"--pkg", "org.example.notes", "--args", "{\"title\":\"a\u202eb\u200bc\"}")
	wv, ok := byID(w)
	checks["writeCardShown"] = ok
	checks["writeOptionsExact"] = slices.Equal(choices(wv), []consent.Choice{consent.AllowOnce, consent.AllowForSession, consent.AlwaysAllow, consent.Deny})
	checks["writeTitle"] = wv.Title == "要允许「note_create」吗？"
	checks["writeRiskLabel"] = wv.Risk == catalog.RiskWrite && wv.Card.RiskLabel == "会修改数据"
	checks["appInitiatorNamesPackage"] = wv.CallerKind == consent.CallerApp && wv.CallerPackage == "org.example.notes" && strings.Contains(wv.InitiatorLine, "org.example.notes")
	checks["sourceLine"] = wv.SourceLine == "来自插件「notes」 · 服务器「notes」"
	checks["argsSanitized"] = wv.ArgumentsPreview == `{"title":"abc"}`

	nr := inject("--risk", "WRITE", "--tool", "note_create", "--plugin", "notes", "--server", "notes", "--remember=false")
	nv, _ := byID(nr)
	checks["noRememberNoSession"] = slices.Equal(choices(nv), []consent.Choice{consent.AllowOnce, consent.AlwaysAllow, consent.Deny})

	hi := inject("--risk", "HIGH", "--tool", "note_delete", "--plugin", "notes", "--server", "notes")
	hv, _ := byID(hi)
	checks["highOptions"] = slices.Equal(choices(hv), []consent.Choice{consent.AllowOnce, consent.Deny})
	checks["highDestructiveMarked"] = len(hv.Options) == 2 && hv.Options[0].Destructive && !hv.Options[1].Destructive

	p := pending()
	checks["fifoOrder"] = len(p) == 3 && p[0].RequestID == w && p[1].RequestID == nr && p[2].RequestID == hi &&
		p[0].Card.QueuePosition == 0 && p[2].Card.QueuePosition == 2 && p[0].Card.QueueSize == 3
	checks["answerByIdOutOfOrder"] = respond(hi, "ALLOW_FOR_SESSION") && len(pending()) == 2 && decision(w) == "pending"
	checks["notOfferedIsDeny"] = decision(hi) == "deny:user"
	checks["respondAcceptedOnce"] = !respond(hi, "ALLOW_ONCE") && respond(w, "ALLOW_ONCE") && !respond(w, "ALLOW_ONCE")
	respond(nr, "DENY")

	tm := inject("--risk", "WRITE", "--tool", "note_create", "--timeout-ms", "4000")
	start := time.Now()
	assert.Eventually(t, func() bool { return decision(tm) != "pending" }, 20*time.Second, 100*time.Millisecond)
	checks["timeoutDenies"] = decision(tm) == "deny:timeout" && time.Since(start) >= 3900*time.Millisecond
	_, still := byID(tm)
	checks["timedOutCardRemoved"] = !still && !respond(tm, "ALLOW_ONCE")

	if len(checks) != 16 {
		t.Fatalf("%d checks, want 16", len(checks))
	}
	for name, ok := range checks {
		if !ok {
			t.Errorf("check %s failed", name)
		}
	}
}

// Bad consent modes and approvals come back with their reasons.
func TestOwnerRefusals(t *testing.T) {
	h := exttest.New(t, exttest.Options{})
	if _, err := h.Call("consent.mode", map[string]string{"mode": "always"}); err == nil || !strings.Contains(err.Error(), "mode") {
		t.Fatalf("bad consent mode: %v", err)
	}
	if code, _, _ := h.Ctl("consent", "mode"); code != admin.ExitUsage {
		t.Fatalf("consent mode without a mode: exit %d", code)
	}
	if code, _, _ := h.Ctl("plugins", "enable", "no.such/agent-plugin"); code != admin.ExitFailed {
		t.Fatalf("enable of an unknown plugin: exit %d", code)
	}
	code, out, _ := h.Ctl("catalog", "--wait", "mcp__none__x__y", "--timeout", "200ms", "--json")
	if code != admin.ExitFailed || !strings.Contains(out, `"met":false`) {
		t.Fatalf("catalog wait for a missing tool: exit %d %s", code, out)
	}
}
