package callerchan_test

import (
	"bufio"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/transport"
)

func TestCtlCallers(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, callers.Config{})
	a := notesApp()
	rt.install(a, "")
	_, err := rt.reg.OpenChannel(a, func() {})
	if err == nil {
		t.Fatal("first open allowed")
	}
	code, out := rt.ctl("", "callers", "list", "--json")
	var res struct {
		Callers []map[string]json.RawMessage `json:"callers"`
		Cards   []struct {
			RequestID    string `json:"requestId"`
			DigestPrefix string `json:"digestPrefix"`
			PackageName  string `json:"packageName"`
			Label        string `json:"label"`
		} `json:"cards"`
		Channels    map[string]int  `json:"channels"`
		Revocations json.RawMessage `json:"revocations"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &res) != nil {
		t.Fatalf("list: %d %s", code, out)
	}
	if len(res.Cards) != 1 || res.Cards[0].DigestPrefix != a.SigningDigest[:12] || res.Cards[0].PackageName != a.Package ||
		res.Cards[0].Label != a.Label || string(res.Revocations) != "[]" {
		t.Fatalf("list result: %s", out)
	}
	if _, ok := res.Channels["thirdParty"]; !ok {
		t.Fatalf("channels: %s", out)
	}
	id := res.Cards[0].RequestID
	if code, out := rt.ctl("", "callers", "answer", id, "allow"); code != 0 || strings.TrimSpace(out) != "accepted" {
		t.Fatalf("answer: %d %q", code, out)
	}
	if code, out := rt.ctl("", "callers", "answer", id, "deny", "--json"); code != 0 || !strings.Contains(out, `"accepted":false`) {
		t.Fatalf("second answer: %d %q", code, out)
	}
	if code, out := rt.ctl("", "callers", "revoke", a.Package); code != 0 || !strings.Contains(out, "denied") {
		t.Fatalf("revoke: %d %q", code, out)
	}
	if code, out := rt.ctl("", "callers", "allow", "org.example.none", "--json"); code != 1 || !strings.Contains(out, "agentos.acp.not_found") {
		t.Fatalf("unknown package: %d %q", code, out)
	}
	if code, _ := rt.ctl("", "callers", "answer", id); code != 2 {
		t.Fatalf("usage error exit = %d", code)
	}
	if code, out := rt.ctl("", "callers", "config", "--cooldown", "8s", "--ttl", "3s", "--json"); code != 0 ||
		!strings.Contains(out, `"cooldownMs":8000`) || !strings.Contains(out, `"ttlMs":3000`) {
		t.Fatalf("config: %d %q", code, out)
	}
	if got := rt.reg.Config(); got.DenyCooldown != 8*time.Second || got.AbandonAfter != 5*time.Second {
		t.Fatalf("config in force = %+v", got)
	}
	if code, out := rt.ctl("", "callers", "list"); code != 0 || !strings.Contains(out, a.Package) {
		t.Fatalf("text list: %d %q", code, out)
	}
}

// TestCtlDesktopAndPairedACP: desktop access through ctl, a computer
// pairs with the printed code and speaks ACP on the same connection.
func TestCtlDesktopAndPairedACP(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, callers.Config{})
	if code, out := rt.ctl("", "desktop", "status", "--json"); code != 0 || !strings.Contains(out, `"enabled":false`) {
		t.Fatalf("status: %d %q", code, out)
	}
	code, out := rt.ctl("", "desktop", "enable", "--json")
	var cr struct{ Code string }
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil || len(cr.Code) != 6 {
		t.Fatalf("enable: %d %q", code, out)
	}
	if strings.Contains(rt.logBuf.String(), cr.Code) {
		t.Fatal("pairing code in the logs")
	}
	c, err := transport.Dial(t.Context(), rt.names.ACP())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"_org.agentos/pair","params":{"version":1,"code":"` + cr.Code + `"}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}` + "\n"))
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	pairLine, _ := r.ReadString('\n')
	initLine, _ := r.ReadString('\n')
	if !strings.Contains(pairLine, `"pairingId":"dp_`) || !strings.Contains(initLine, `"agentInfo"`) {
		t.Fatalf("pair %q, initialize %q", pairLine, initLine)
	}
	code, out = rt.ctl("", "desktop", "list", "--json")
	var list []struct{ ID string }
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) != 1 {
		t.Fatalf("list: %d %q", code, out)
	}
	if code, _ := rt.ctl("", "desktop", "revoke", list[0].ID); code != 0 {
		t.Fatalf("revoke: %d", code)
	}
	if _, err := r.ReadString('\n'); err == nil {
		t.Fatal("revoked computer still connected")
	}
	if code, out := rt.ctl("", "desktop", "disable", "--json"); code != 0 || !strings.Contains(out, `"enabled":false`) {
		t.Fatalf("disable: %d %q", code, out)
	}
	if code, out := rt.ctl("", "desktop", "code", "--json"); code != 1 || !strings.Contains(out, "invalid_state") {
		t.Fatalf("code while off: %d %q", code, out)
	}
}

// TestAppUIDCannotOpenOwnerSockets: an app uid is closed without a byte
// on @agentos-admin and on @agentos-acp (desktop access on).
func TestAppUIDCannotOpenOwnerSockets(t *testing.T) {
	testenv.NeedRoot(t)
	t.Parallel()
	rt := newRuntime(t, callers.Config{})
	if _, err := rt.br.Enable(); err != nil {
		t.Fatal(err)
	}
	a := notesApp()
	rt.install(a, "")
	rt.preAllow(a)
	h := rt.startApp(a.UID)
	for _, name := range []string{rt.names.Admin(), rt.names.ACP()} {
		r := h.do(map[string]any{"op": "raw", "socket": name})
		if !r.Closed || r.Line != "" {
			t.Errorf("%s: app uid got %q (closed %v, err %+v)", name, r.Line, r.Closed, r.Err)
		}
	}
	// The same app is served on its own socket.
	if r := h.do(map[string]any{"op": "connect"}); r.Err != nil {
		t.Fatalf("caller channel: %+v", r.Err)
	}
}
