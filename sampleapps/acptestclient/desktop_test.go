package acptestclient_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/runtime/consent/callers"
)

// pairLine is a pairing request with a code or token expression.
func pairLine(id int, key, value string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"_org.agentos/pair","params":{"version":1,%q:%q,"label":"acptestclient"}}`, id, key, value)
}

// The desktop pairing handshake of spec §8.2 driven as a scenario does it:
// the owner's admin socket for codes, raw lines on the desktop socket,
// secrets kept out of the output.
func TestDesktopPairing(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the desktop socket admits uids 0 and 2000 only")
	}
	t.Parallel()
	rt := newRuntime(t, callers.Config{})
	args := []string{
		`[{"op":"raw_connect","socket":"admin","as":"adm"},{"op":"raw","conn":"adm","as":"en","send":{"id":1,"method":"desktop.enable"}},` +
			`{"op":"raw_connect","socket":"acp","as":"a1"},{"op":"raw","conn":"a1","as":"noPair","send":{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":1}}}]`,
	}
	for i := 1; i <= 5; i++ {
		args = append(args, fmt.Sprintf(`[{"op":"raw_connect","socket":"acp","as":"w%d"},{"op":"raw","conn":"w%d","as":"wrong%d","send":%s}]`,
			i, i, i, pairLine(i, "code", "${wrong:en.code}")))
	}
	args = append(args,
		`[{"op":"raw_connect","socket":"acp","as":"v"},{"op":"raw","conn":"v","as":"voided","send":`+pairLine(9, "code", "${secret:en.code}")+`},`+
			`{"op":"raw","conn":"adm","as":"nc","send":{"id":2,"method":"desktop.code"}},`+
			`{"op":"raw_connect","socket":"acp","as":"ok"},{"op":"raw","conn":"ok","as":"paired","send":`+pairLine(0, "code", "${secret:nc.code}")+`},`+
			`{"op":"raw","conn":"ok","as":"init","send":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}}]`,
		`[{"op":"raw_connect","socket":"acp","as":"re"},{"op":"raw","conn":"re","as":"again","send":`+pairLine(0, "token", "${secret:paired.token}")+`},`+
			`{"op":"raw_connect","socket":"acp","as":"bt"},{"op":"raw","conn":"bt","as":"badToken","send":`+pairLine(0, "token", "${wrong:paired.token}")+`},`+
			`{"op":"raw_connect","socket":"acp","as":"mt"},{"op":"raw","conn":"mt","as":"malformed","send":`+pairLine(0, "token", "short")+`}]`,
	)
	// Four handshakes pending at once are the most: a fifth is busy.
	// Turning access off drops pending and paired connections and the
	// socket.
	args = append(args, `[{"op":"raw_connect","socket":"acp","as":"h1"},{"op":"raw_connect","socket":"acp","as":"h2"},{"op":"raw_connect","socket":"acp","as":"h3"},`+
		`{"op":"raw_connect","socket":"acp","as":"h4"},{"op":"raw_connect","socket":"acp","as":"h5"},{"op":"raw_read","conn":"h5","as":"busyPending","readMs":2000},`+
		`{"op":"raw","conn":"adm","as":"off","send":{"id":3,"method":"desktop.disable"}},{"op":"raw_read","conn":"h1","as":"dropped","readMs":2000},`+
		`{"op":"raw_read","conn":"ok","as":"droppedPaired","readMs":2000},{"op":"raw_connect","socket":"acp","as":"gone"}]`)
	// On again: the old token is void; eight established are the most.
	args = append(args, `[{"op":"raw","conn":"adm","as":"en2","send":{"id":4,"method":"desktop.enable"}},`+
		`{"op":"raw_connect","socket":"acp","as":"ot"},{"op":"raw","conn":"ot","as":"oldToken","send":`+pairLine(0, "token", "${secret:paired.token}")+`},`+
		`{"op":"raw_connect","socket":"acp","as":"e1"},{"op":"raw","conn":"e1","as":"est1","send":`+pairLine(0, "code", "${secret:en2.code}")+`}]`)
	var fill []string
	for i := 2; i <= 8; i++ {
		fill = append(fill, fmt.Sprintf(`{"op":"raw_connect","socket":"acp","as":"e%d"},{"op":"raw","conn":"e%d","as":"est%d","send":%s}`,
			i, i, i, pairLine(0, "token", "${secret:est1.token}")))
	}
	args = append(args, "["+strings.Join(fill, ",")+"]")
	args = append(args, `[{"op":"raw_connect","socket":"acp","as":"ninth"},{"op":"raw_read","conn":"ninth","as":"busyEstablished","readMs":2000},`+
		`{"op":"raw","conn":"adm","as":"off2","send":{"id":5,"method":"desktop.disable"}}]`)
	out := run(t, rt, args...)
	checks := []struct {
		path string
		want any
	}{
		{"r.en.response.result.code", "<redacted len=6 digits>"},
		{"r.noPair.response.id", float64(7)},
		{"r.noPair.response.error.code", float64(-32000)},
		{"r.noPair.response.error.data.details.reason", "pairing_required"},
		{"r.wrong1.response.error.data.details.reason", "invalid_code"},
		{"r.wrong4.response.error.data.details.reason", "invalid_code"},
		{"r.wrong5.response.error.data.details.reason", "too_many_attempts"},
		{"r.voided.response.error.data.details.reason", "invalid_code"},
		{"r.paired.response.result.token", "<redacted len=43 token-shape>"},
		{"r.paired.response.result.maxLineChars", float64(65536)},
		{"r.init.response.result.protocolVersion", float64(1)},
		{"r.again.response.error", nil},
		{"r.again.response.result.token", nil},
		{"r.badToken.response.error.data.details.reason", "invalid_token"},
		{"r.malformed.response.error.data.details.reason", "invalid_token"},
		{"r.oldToken.response.error.data.details.reason", "invalid_token"},
		{"r.est8.response.error", nil},
		{"r.h4.connected", true},
		{"r.busyPending.line.error.code", float64(-32047)},
		{"r.busyPending.line.error.data.agentosCode", "busy"},
		{"r.busyPending.line.id", nil},
		{"r.busyEstablished.line.error.code", float64(-32047)},
		{"r.off.response.error", nil},
		{"r.dropped.closed", true},
		{"r.droppedPaired.closed", true},
		{"r.gone.refused", true},
	}
	for _, c := range checks {
		if got := get(out, c.path); got != c.want {
			t.Errorf("%s = %#v, want %#v", c.path, got, c.want)
		}
	}
	if id, _ := get(out, "r.paired.response.result.pairingId").(string); !strings.HasPrefix(id, "dp_") {
		t.Errorf("pairingId %q", id)
	}
	if strings.Contains(fmt.Sprint(out), "${") {
		t.Error("an unresolved secret reference reached the output")
	}
}
