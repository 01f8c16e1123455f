package bridge_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/runtime/bridge"
	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/stretchr/testify/require"
)

const helperEnv = "BRIDGE_DIAL_HELPER"

// TestMain doubles as a dial helper run under another uid: it connects
// to the socket, writes a pair line and reports what came back.
func TestMain(m *testing.M) {
	if name := os.Getenv(helperEnv); name != "" {
		c, err := transport.Dial(context.Background(), name)
		if err != nil {
			fmt.Println("dial-failed")
			os.Exit(0)
		}
		c.Write([]byte(`{"jsonrpc":"2.0","id":0,"method":"_org.agentos/pair","params":{"code":"000000"}}` + "\n"))
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		b, err := io.ReadAll(c)
		if len(b) == 0 && (err == nil || errors.Is(err, syscall.ECONNRESET)) {
			fmt.Println("closed-without-a-byte")
		} else {
			fmt.Printf("got %q %v\n", b, err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

var seq atomic.Int64

type env struct {
	t     *testing.T
	dir   string
	name  string
	clock *clocktest.Clock
	b     *bridge.Bridge
	// served receives what each served ACP connection's first line was.
	served  chan string
	callers chan engine.Caller
}

func newEnv(t *testing.T, hsTimeout time.Duration) *env {
	t.Helper()
	e := &env{t: t, dir: t.TempDir(), name: fmt.Sprintf("@bridge-test-%d-%d", os.Getpid(), seq.Add(1)),
		clock: clocktest.New(time.Now()), served: make(chan string, 16), callers: make(chan engine.Caller, 16)}
	e.open(hsTimeout)
	return e
}

func (e *env) open(hsTimeout time.Duration) {
	e.t.Helper()
	b, err := bridge.Open(&bridge.Options{Dir: e.dir, Name: e.name, Clock: e.clock, HandshakeTimeout: hsTimeout,
		Serve: func(ctx context.Context, c engine.Caller, s *transport.RPCStream) {
			select {
			case e.callers <- c:
			default:
			}
			// An echo "agent": the first ACP line back, then stay until closed.
			r := bufio.NewReader(s.Reader())
			line, err := r.ReadString('\n')
			if err == nil {
				select {
				case e.served <- strings.TrimSpace(line):
				default:
				}
				s.Writer().Write([]byte(line))
			}
			io.Copy(io.Discard, r)
		}})
	if err != nil {
		e.t.Fatal(err)
	}
	e.b = b
	e.t.Cleanup(func() { b.Close() })
}

// dial connects and sends lines (joined into one write).
func (e *env) dial(lines ...string) (net.Conn, *bufio.Reader) {
	e.t.Helper()
	c, err := transport.Dial(context.Background(), e.name)
	if err != nil {
		e.t.Fatalf("dial: %v", err)
	}
	e.t.Cleanup(func() { c.Close() })
	if len(lines) > 0 {
		if _, err := c.Write([]byte(strings.Join(lines, "\n") + "\n")); err != nil {
			e.t.Fatal(err)
		}
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	return c, bufio.NewReader(c)
}

type reply struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		Version      int    `json:"version"`
		PairingID    string `json:"pairingId"`
		Token        string `json:"token"`
		MaxLineChars int    `json:"maxLineChars"`
	} `json:"result"`
	Error *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			AgentosCode string `json:"agentosCode"`
			Retryable   bool   `json:"retryable"`
			Details     struct {
				Reason string `json:"reason"`
			} `json:"details"`
		} `json:"data"`
	} `json:"error"`
}

func readReply(t *testing.T, r *bufio.Reader) (reply, string) {
	t.Helper()
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("read reply: %v (%q)", err, line)
	}
	var rep reply
	if err := json.Unmarshal([]byte(line), &rep); err != nil {
		t.Fatalf("reply %q: %v", line, err)
	}
	return rep, line
}

func pairCode(code string) string {
	return `{"jsonrpc":"2.0","id":0,"method":"_org.agentos/pair","params":{"version":1,"code":"` + code + `","label":"acp-bridge@laptop\u0007"}}`
}

func pairToken(tok string) string {
	return `{"jsonrpc":"2.0","id":"t","method":"_org.agentos/pair","params":{"token":"` + tok + `"}}`
}

func TestOffByDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	if st := e.b.Status(); st.Enabled || st.Listening {
		t.Fatalf("status = %+v", st)
	}
	if _, err := transport.Dial(context.Background(), e.name); err == nil {
		t.Fatal("the socket exists while desktop access is off")
	}
	if _, err := e.b.NewCode(); err == nil {
		t.Fatal("a code while off")
	}
}

func TestPairWithCodeThenToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	code, err := e.b.Enable()
	if err != nil || !regexp.MustCompile(`^[0-9]{6}$`).MatchString(code) {
		t.Fatalf("Enable = %q, %v", code, err)
	}
	// The code may be typed with spaces and dashes; ACP follows in the
	// same write and must not be lost.
	typed := code[:3] + " - " + code[3:]
	_, r := e.dial(pairCode(typed), `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`)
	rep, _ := readReply(t, r)
	if rep.Error != nil || rep.Result == nil {
		t.Fatalf("pair reply = %+v", rep)
	}
	if !regexp.MustCompile(`^dp_[0-9a-f]{12}$`).MatchString(rep.Result.PairingID) ||
		!regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`).MatchString(rep.Result.Token) ||
		rep.Result.MaxLineChars != 65536 || rep.Result.Version != 1 || string(rep.ID) != "0" {
		t.Fatalf("result = %+v", rep.Result)
	}
	if c := <-e.callers; c.Kind != engine.CallerDesktop || c.OwnerKey() != "desktop" || c.Label != "desktop" || c.UID != os.Getuid() {
		t.Fatalf("caller = %+v", c)
	}
	if got := <-e.served; !strings.Contains(got, `"initialize"`) {
		t.Fatalf("ACP line after the pair line = %q", got)
	}
	if echo, _ := r.ReadString('\n'); !strings.Contains(echo, "initialize") {
		t.Fatalf("echo = %q", echo)
	}
	// The code is one-time.
	_, r2 := e.dial(pairCode(code))
	if rep, _ := readReply(t, r2); rep.Error == nil || rep.Error.Data.Details.Reason != bridge.ReasonInvalidCode {
		t.Fatalf("second use of a code = %+v", rep)
	}
	// The token pairs again, without a new token.
	_, r3 := e.dial(pairToken(rep.Result.Token))
	rep3, _ := readReply(t, r3)
	if rep3.Result == nil || rep3.Result.Token != "" || rep3.Result.PairingID != rep.Result.PairingID || string(rep3.ID) != `"t"` {
		t.Fatalf("token reply = %+v", rep3)
	}
	// Storage: only the SHA-256 of the token, 0600, label cleaned.
	data, err := os.ReadFile(filepath.Join(e.dir, bridge.FileName))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), rep.Result.Token) || strings.Contains(string(data), code) {
		t.Fatal("token or code stored in the clear")
	}
	st, err := bridge.ParseState(data)
	if err != nil || !st.Enabled || len(st.Pairings) != 1 || st.Pairings[0].Label != "acp-bridge@laptop" {
		t.Fatalf("stored = %+v, %v", st, err)
	}
	if fi, _ := os.Stat(filepath.Join(e.dir, bridge.FileName)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode = %v", fi.Mode())
	}
	// A restart keeps access on and the pairing.
	e.b.Close()
	e.open(0)
	_, r4 := e.dial(pairToken(rep.Result.Token))
	if rep4, _ := readReply(t, r4); rep4.Result == nil {
		t.Fatalf("token after restart = %+v", rep4)
	}
}

func TestRefusals(t *testing.T) {
	t.Parallel()
	texts := map[string]string{
		"pairing_required": "auth_required: the first message must be a _org.agentos/pair request carrying a pairing code or token",
		"invalid_code":     "auth_required: wrong pairing code, or no pairing code is active; generate one on the phone",
		"invalid_token":    "auth_required: this computer is no longer paired (revoked, or desktop access was turned off); pair again with a new code",
	}
	tests := []struct {
		name, line, reason, id string
	}{
		{"initialize first", `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{}}`, "pairing_required", "7"},
		{"bad json", `{"jsonrpc":`, "pairing_required", "null"},
		{"not 2.0", `{"jsonrpc":"1.0","id":1,"method":"_org.agentos/pair","params":{"code":"1"}}`, "pairing_required", "1"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"_org.agentos/pair","params":{"code":"1"}}`, "pairing_required", "null"},
		{"no id", `{"jsonrpc":"2.0","method":"_org.agentos/pair","params":{"code":"1"}}`, "pairing_required", "null"},
		{"version 2", `{"jsonrpc":"2.0","id":1,"method":"_org.agentos/pair","params":{"version":2,"code":"1"}}`, "pairing_required", "1"},
		{"both", `{"jsonrpc":"2.0","id":1,"method":"_org.agentos/pair","params":{"code":"1","token":"x"}}`, "pairing_required", "1"},
		{"neither", `{"jsonrpc":"2.0","id":1,"method":"_org.agentos/pair","params":{}}`, "pairing_required", "1"},
		{"wrong code", `{"jsonrpc":"2.0","id":1,"method":"_org.agentos/pair","params":{"code":"x"}}`, "invalid_code", "1"},
		{"bad token", `{"jsonrpc":"2.0","id":1,"method":"_org.agentos/pair","params":{"token":"short"}}`, "invalid_token", "1"},
		{"unknown token", pairToken(strings.Repeat("A", 43)), "invalid_token", `"t"`},
	}
	e := newEnv(t, 0)
	if _, err := e.b.Enable(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		c, r := e.dial(tt.line)
		rep, raw := readReply(t, r)
		if rep.Error == nil || rep.Error.Code != -32000 || rep.Error.Data.AgentosCode != "auth_required" ||
			rep.Error.Data.Retryable || rep.Error.Data.Details.Reason != tt.reason || string(rep.ID) != tt.id {
			t.Errorf("%s: reply %s", tt.name, raw)
			continue
		}
		if rep.Error.Message != texts[tt.reason] {
			t.Errorf("%s: message %q", tt.name, rep.Error.Message)
		}
		// Then the phone closes the connection.
		if _, err := r.ReadByte(); err != io.EOF {
			t.Errorf("%s: connection not closed: %v", tt.name, err)
		}
		c.Close()
	}
}

func TestCodeAttemptsAndExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	code, _ := e.b.Enable()
	wrong := "999999"
	if code == wrong {
		wrong = "999998"
	}
	for i := 1; i <= 5; i++ {
		_, r := e.dial(pairCode(wrong))
		rep, _ := readReply(t, r)
		want := bridge.ReasonInvalidCode
		if i == 5 {
			want = bridge.ReasonTooManyAttempts
		}
		if rep.Error == nil || rep.Error.Data.Details.Reason != want {
			t.Fatalf("attempt %d: %+v", i, rep.Error)
		}
	}
	// The code is void now, even the right one.
	_, r := e.dial(pairCode(code))
	if rep, _ := readReply(t, r); rep.Error == nil || rep.Error.Data.Details.Reason != bridge.ReasonInvalidCode {
		t.Fatalf("void code: %+v", rep.Error)
	}
	// A code lives five minutes on the runtime's clock, to the
	// millisecond.
	code, _ = e.b.NewCode()
	e.clock.Advance(bridge.CodeTTL - time.Millisecond)
	if st := e.b.Status(); !st.CodeActive || st.CodeLeftMs != 1 {
		t.Fatalf("a millisecond before expiry: active %v, %d ms left", st.CodeActive, st.CodeLeftMs)
	}
	e.clock.Advance(time.Millisecond)
	if st := e.b.Status(); st.CodeActive {
		t.Fatalf("expired code still active: %+v", st)
	}
	_, r = e.dial(pairCode(code))
	if rep, _ := readReply(t, r); rep.Error == nil || rep.Error.Data.Details.Reason != bridge.ReasonCodeExpired ||
		rep.Error.Message != "auth_required: the pairing code has expired; generate a new one on the phone" {
		t.Fatalf("expired code: %+v", rep.Error)
	}
}

// expectClosedSilently reads until EOF and fails on any byte.
func expectClosedSilently(t *testing.T, r *bufio.Reader, what string) {
	t.Helper()
	b, err := io.ReadAll(r)
	if len(b) != 0 || err != nil {
		t.Fatalf("%s: got %q, %v; want a close without reply", what, b, err)
	}
}

func TestHandshakeLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 300*time.Millisecond)
	e.b.Enable()
	_, r := e.dial()
	expectClosedSilently(t, r, "no first line")
	_, r = e.dial(`{"jsonrpc":"2.0","id":1,"method":"_org.agentos/pair","params":{"code":"` + strings.Repeat("1", 4100) + `"}}`)
	expectClosedSilently(t, r, "over-long first line")

	// 4 handshaking connections fill the slots; a 5th is busy.
	e2 := newEnv(t, 5*time.Second)
	e2.b.Enable()
	for i := 0; i < bridge.MaxHandshaking; i++ {
		e2.dial()
	}
	require.Eventually(t, func() bool { return e2.b.Status().Handshaking == bridge.MaxHandshaking }, 5*time.Second, 2*time.Millisecond)
	_, r = e2.dial()
	line, _ := r.ReadString('\n')
	want := `{"error":{"code":-32047,"message":"busy: too many desktop connections","data":{"agentosCode":"busy","retryable":true}},"id":null,"jsonrpc":"2.0"}` + "\n"
	var got, exp any
	json.Unmarshal([]byte(line), &got)
	json.Unmarshal([]byte(want), &exp)
	if fmt.Sprint(got) != fmt.Sprint(exp) {
		t.Fatalf("busy line = %q", line)
	}
	closes := e.b.Status().Closes
	reasons := map[string]bool{}
	for _, c := range closes {
		reasons[c.Reason] = true
	}
	if len(closes) != 2 || !reasons["handshake_read"] || !reasons["handshake_too_long"] {
		t.Fatalf("close records = %+v", closes)
	}
}

func pair(t *testing.T, e *env, label string) (token, id string, r *bufio.Reader, c net.Conn) {
	t.Helper()
	code, err := e.b.NewCode()
	if err != nil {
		t.Fatal(err)
	}
	c, r = e.dial(strings.Replace(pairCode(code), "acp-bridge@laptop", label, 1))
	rep, _ := readReply(t, r)
	if rep.Result == nil {
		t.Fatalf("pair: %+v", rep.Error)
	}
	return rep.Result.Token, rep.Result.PairingID, r, c
}

func TestRevokeDisableAndLRU(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	e.b.Enable()
	tokA, idA, rA, _ := pair(t, e, "a")
	_, _, rB, _ := pair(t, e, "b")
	require.Eventually(t, func() bool { return e.b.Status().Established == 2 }, 5*time.Second, 2*time.Millisecond)
	if err := e.b.Revoke(idA); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadAll(rA); err != nil {
		t.Fatalf("revoked connection: %v", err)
	}
	if err := e.b.Revoke(idA); err == nil {
		t.Fatal("revoking twice")
	}
	_, r := e.dial(pairToken(tokA))
	if rep, _ := readReply(t, r); rep.Error == nil || rep.Error.Data.Details.Reason != bridge.ReasonInvalidToken {
		t.Fatalf("revoked token: %+v", rep.Error)
	}
	// Switching off drops every connection and pairing.
	if err := e.b.Disable(); err != nil {
		t.Fatal(err)
	}
	io.ReadAll(rB)
	require.Eventually(t, func() bool { return e.b.Status().Established == 0 }, 5*time.Second, 2*time.Millisecond)
	if st := e.b.Status(); st.Enabled || st.Listening || st.Pairings != 0 {
		t.Fatalf("after disable: %+v", st)
	}
	if _, err := transport.Dial(context.Background(), e.name); err == nil {
		t.Fatal("socket still there")
	}
	// 17 pairings keep the 16 most recently seen.
	e.b.Enable()
	var first string
	for i := 0; i < bridge.MaxPairings+1; i++ {
		_, id, _, c := pair(t, e, fmt.Sprint("pc", i))
		c.Close()
		require.Eventually(t, func() bool { return e.b.Status().Established == 0 }, 5*time.Second, 2*time.Millisecond)
		if i == 0 {
			first = id
		}
		e.clock.Advance(time.Millisecond) // distinct lastSeen milliseconds
	}
	list := e.b.List()
	if len(list) != bridge.MaxPairings {
		t.Fatalf("%d pairings", len(list))
	}
	for _, p := range list {
		if p.ID == first {
			t.Fatal("least recently seen pairing kept")
		}
	}
}

func TestCorruptFileMeansOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	e.b.Enable()
	pair(t, e, "x")
	e.b.Close()
	os.WriteFile(filepath.Join(e.dir, bridge.FileName), []byte(`{"version":1,"enabled":true,"pairings":[{"id":"bad"}]}`), 0o600)
	e.open(0)
	if st := e.b.Status(); st.Enabled || st.Pairings != 0 || st.Health == "ok" {
		t.Fatalf("corrupt file: %+v", st)
	}
}

func TestOtherUIDsClosedWithoutAByte(t *testing.T) {
	testenv.NeedRoot(t)
	t.Parallel()
	e := newEnv(t, 0)
	e.b.Enable()
	self, _ := os.Executable()
	dir, err := os.MkdirTemp("", "bridge-dialer-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	os.Chmod(dir, 0o755)
	bin := filepath.Join(dir, "dialer")
	data, _ := os.ReadFile(self)
	os.WriteFile(bin, data, 0o755)
	cmd := exec.Command(bin)
	cmd.Env = []string{helperEnv + "=" + e.name}
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 10123, Gid: 10123}}
	out, err := cmd.CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "closed-without-a-byte" {
		t.Fatalf("app uid: %q %v", out, err)
	}
	closes := e.b.Status().Closes
	if len(closes) != 1 || closes[0].Reason != "uid_not_allowed" || closes[0].UID != 10123 {
		t.Fatalf("closes = %+v", closes)
	}
	if st := e.b.Status(); st.Pairings != 0 || st.CodeActive != true {
		t.Fatalf("status after a foreign uid: %+v", st)
	}
}

func FuzzParsePairLine(f *testing.F) {
	f.Add([]byte(pairCode("123456")))
	f.Add([]byte(pairToken(strings.Repeat("a", 43))))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1e400,"method":"_org.agentos/pair","params":{"version":1.0,"code":"1"}}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, line []byte) {
		req, perr := bridge.ParsePairLine(line)
		if perr != nil {
			if !json.Valid(perr.ID) {
				t.Fatalf("reply id %q is not JSON", perr.ID)
			}
			w := perr.Wire()
			if w.Code != -32000 || !strings.HasPrefix(w.Message, "auth_required: ") {
				t.Fatalf("wire = %+v", w)
			}
			return
		}
		if !json.Valid(req.ID) || string(req.ID) == "null" {
			t.Fatalf("accepted id %q", req.ID)
		}
		if strings.ContainsAny(req.Code, " -") || len([]rune(req.Label)) > 64 || req.Label == "" {
			t.Fatalf("request = %+v", req)
		}
	})
}

func FuzzParseState(f *testing.F) {
	f.Add([]byte(`{"version":1,"enabled":true,"pairings":[{"id":"dp_0123456789ab","tokenSha256":"` + strings.Repeat("0", 64) + `","label":"x","pairedAtMillis":1,"lastSeenMillis":2}]}`))
	f.Add([]byte(`{"version":1,"enabled":false,"pairings":[]}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := bridge.ParseState(data)
		if err != nil {
			return
		}
		if len(st.Pairings) > bridge.MaxPairings || st.Version != 1 {
			t.Fatalf("state = %+v", st)
		}
		b, _ := json.Marshal(st)
		if _, err := bridge.ParseState(b); err != nil {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// TestUnwritableSuccessRevokesPairing: a computer that goes away before
// its token could be written leaves no pairing behind.
func TestUnwritableSuccessRevokesPairing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0)
	code, _ := e.b.Enable()
	c, err := transport.Dial(context.Background(), e.name)
	if err != nil {
		t.Fatal(err)
	}
	c.Write([]byte(pairCode(code) + "\n"))
	c.Close()
	require.Eventually(t, func() bool {
		cl := e.b.Status().Closes
		return len(cl) == 1
	}, 5*time.Second, 2*time.Millisecond)
	st := e.b.Status()
	if st.Pairings != 0 || st.CodeActive || st.Closes[0].Reason != "reply_failed" {
		t.Fatalf("status = %+v", st)
	}
}
