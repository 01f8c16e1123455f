package admin

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/apps/apptest"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// The test binary doubles as a peer process run under other uids.
func TestMain(m *testing.M) {
	if os.Getenv("ADMIN_TEST_PEER") == "1" {
		os.Exit(peerMain(os.Args[1:]))
	}
	if os.Getenv("ADMIN_TEST_CTL") == "1" {
		// agentosd ctl as another uid.
		os.Exit(Ctl(context.Background(), testVerbs(), os.Args[1:], CtlIO{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
	}
	os.Exit(m.Run())
}

// peerMain dials the socket, sends one request line and reports what
// came back: {"bytes": n, "reply": "..."}.
func peerMain(args []string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, args[0])
	if err != nil {
		fmt.Println(`{"dialError":true}`)
		return 0
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	c.Write([]byte(args[1] + "\n"))
	b, _ := bufio.NewReader(c).ReadBytes('\n') // one reply, or nothing before EOF
	out, _ := json.Marshal(map[string]any{"bytes": len(b), "reply": string(b)})
	fmt.Println(string(out))
	return 0
}

func testNames(t testing.TB) transport.Names {
	var b [4]byte
	rand.Read(b[:])
	return transport.Names{Prefix: "t" + hex.EncodeToString(b[:]) + "-"}
}

// testMethods is a table with one method of every kind the tests need.
func testMethods() []Method {
	return []Method{
		{Name: "echo", Perm: Owner, Handle: func(ctx context.Context, c *Call) (any, error) {
			var p struct {
				Text string `json:"text"`
			}
			if err := c.Decode(&p); err != nil {
				return nil, err
			}
			return map[string]any{"text": p.Text, "uid": c.Peer.UID, "class": c.Class.String()}, nil
		}},
		{Name: "fail.internal", Perm: Owner, Handle: func(ctx context.Context, c *Call) (any, error) {
			return nil, errors.New("secret detail /etc/key")
		}},
		{Name: "fail.panic", Perm: Owner, Handle: func(ctx context.Context, c *Call) (any, error) {
			panic("boom")
		}},
		{Name: "fail.refused", Perm: Owner, Handle: func(ctx context.Context, c *Call) (any, error) {
			return nil, errcode.New(errcode.InvalidState, "not now").WithDetails(map[string]any{"reason": "downgrade"})
		}},
		{Name: "only.shell", Perm: Shell, Handle: func(ctx context.Context, c *Call) (any, error) { return "ok", nil }},
		{Name: "slow", Perm: Owner, Timeout: 30 * time.Second, Handle: func(ctx context.Context, c *Call) (any, error) {
			<-ctx.Done()
			slowEnded <- ctx.Err()
			return nil, ctx.Err()
		}},
	}
}

var slowEnded = make(chan error, 4)

func startServer(t *testing.T, opts *Options) (*Server, transport.Names) {
	t.Helper()
	names := testNames(t)
	o := Options{Name: names.Admin(), Methods: testMethods(), RuntimeUID: 10099}
	if opts != nil {
		if opts.RuntimeUID != 0 {
			o.RuntimeUID = opts.RuntimeUID
		}
		o.MaxConns, o.IdleTimeout = opts.MaxConns, opts.IdleTimeout
		if opts.Methods != nil {
			o.Methods = opts.Methods
		}
	}
	s := NewServer(&o)
	if err := s.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, names
}

// rawConn sends lines and reads replies as maps.
type rawConn struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, name string) *rawConn {
	t.Helper()
	c, err := transport.Dial(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(20 * time.Second))
	return &rawConn{t, c, bufio.NewReader(c)}
}

func (r *rawConn) roundTrip(line string) map[string]json.RawMessage {
	r.t.Helper()
	if _, err := r.c.Write([]byte(line + "\n")); err != nil {
		r.t.Fatal(err)
	}
	return r.read()
}

func (r *rawConn) read() map[string]json.RawMessage {
	r.t.Helper()
	b, err := r.r.ReadBytes('\n')
	if err != nil {
		r.t.Fatalf("read reply: %v", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		r.t.Fatalf("reply %q: %v", b, err)
	}
	return m
}

func wireOf(t *testing.T, raw json.RawMessage) errcode.WireError {
	t.Helper()
	var w errcode.WireError
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Fatalf("error %s: %v", raw, err)
	}
	return w
}

func TestTableIsSortedAndValid(t *testing.T) {
	ms := NewServer(&Options{Methods: testMethods()}).Methods()
	if !slices.IsSortedFunc(ms, func(a, b Method) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatalf("method table not sorted")
	}
	for i, m := range ms {
		if err := m.check(); err != nil {
			t.Error(err)
		}
		if i > 0 && ms[i-1].Name == m.Name {
			t.Errorf("duplicate %s", m.Name)
		}
	}
	for _, want := range []string{"methods", "status"} {
		if !slices.ContainsFunc(ms, func(m Method) bool { return m.Name == want }) {
			t.Errorf("built-in method %s missing", want)
		}
	}
	for _, v := range testVerbs() {
		if v.Method == "no.such" { // ctl_test's verb for a method the server lacks
			continue
		}
		if !slices.ContainsFunc(ms, func(m Method) bool { return m.Name == v.Method }) {
			t.Errorf("verb %q calls unknown method %s", v.path(), v.Method)
		}
	}
}

func TestTableAddPanics(t *testing.T) {
	ok := func(ctx context.Context, c *Call) (any, error) { return nil, nil }
	tests := []struct {
		name string
		ms   []Method
	}{
		{"duplicate", []Method{{Name: "a.b", Perm: Root, Handle: ok}, {Name: "a.b", Perm: Owner, Handle: ok}}},
		{"upper case", []Method{{Name: "App.install", Perm: Root, Handle: ok}}},
		{"empty", []Method{{Name: "", Perm: Root, Handle: ok}}},
		{"trailing dot", []Method{{Name: "app.", Perm: Root, Handle: ok}}},
		{"no perm", []Method{{Name: "a", Handle: ok}}},
		{"unknown perm bit", []Method{{Name: "a", Perm: 1 << 6, Handle: ok}}},
		{"nil handler", []Method{{Name: "a", Perm: Root}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			var tb table
			tb.add(tt.ms...)
		})
	}
	var tb table
	tb.add(Method{Name: "z", Perm: Root, Handle: ok}, Method{Name: "a.b", Perm: Root, Handle: ok}, Method{Name: "m", Perm: Root, Handle: ok})
	if !tb.sorted() {
		t.Fatal("add does not keep the table sorted")
	}
}

func TestProtocol(t *testing.T) {
	t.Parallel()
	_, names := startServer(t, nil)
	rc := dialRaw(t, names.Admin())

	tests := []struct {
		name     string
		line     string
		wantID   string
		result   string // exact result JSON, or "" when an error is expected
		wantCode errcode.Code
		wantText string // substring of the message
		noText   string // must not appear in the message
	}{
		{name: "echo", line: `{"id":1,"method":"echo","params":{"text":"hi"}}`, wantID: "1", result: `{"class":"root","text":"hi","uid":0}`},
		{name: "string id", line: `{"id":"a-1","method":"echo","params":{"text":""}}`, wantID: `"a-1"`, result: `{"class":"root","text":"","uid":0}`},
		{name: "absent params", line: `{"id":2,"method":"echo"}`, wantID: "2", result: `{"class":"root","text":"","uid":0}`},
		{name: "null params", line: `{"id":3,"method":"echo","params":null}`, wantID: "3", result: `{"class":"root","text":"","uid":0}`},
		{name: "unknown method", line: `{"id":5,"method":"nope"}`, wantID: "5", wantCode: errcode.Unsupported, wantText: `unknown admin method "nope"`},
		{name: "not json", line: `{"id":6,`, wantID: "null", wantCode: errcode.InvalidParams},
		{name: "not an object", line: `[1,2]`, wantID: "null", wantCode: errcode.InvalidParams},
		{name: "bad id", line: `{"id":{},"method":"echo"}`, wantID: "null", wantCode: errcode.InvalidParams},
		{name: "no method", line: `{"id":7}`, wantID: "7", wantCode: errcode.InvalidParams},
		{name: "params array", line: `{"id":8,"method":"echo","params":[1]}`, wantID: "8", wantCode: errcode.InvalidParams},
		{name: "unknown field", line: `{"id":9,"method":"echo","params":{"text":"x","key":"sk-secret"}}`, wantID: "9", wantCode: errcode.InvalidParams, wantText: `unknown field "key"`, noText: "sk-secret"},
		{name: "wrong type", line: `{"id":10,"method":"echo","params":{"text":5}}`, wantID: "10", wantCode: errcode.InvalidParams, wantText: `field "text" must be string`},
		{name: "forbidden", line: `{"id":11,"method":"only.shell"}`, wantID: "11", wantCode: errcode.Forbidden, wantText: "only.shell is for shell only"},
		{name: "internal hides text", line: `{"id":12,"method":"fail.internal"}`, wantID: "12", wantCode: errcode.Internal, noText: "secret"},
		{name: "panic", line: `{"id":13,"method":"fail.panic"}`, wantID: "13", wantCode: errcode.Internal, noText: "boom"},
		{name: "no id is answered with null", line: `{"method":"echo","params":{"text":"n"}}`, wantID: "null", result: `{"class":"root","text":"n","uid":0}`},
		{name: "refusal with details", line: `{"id":14,"method":"fail.refused"}`, wantID: "14", wantCode: errcode.InvalidState, wantText: "invalid_state: not now"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc.t = t
			m := rc.roundTrip(tt.line)
			if got := string(m["id"]); got != tt.wantID {
				t.Errorf("id = %s, want %s", got, tt.wantID)
			}
			if tt.result != "" {
				if m["error"] != nil {
					t.Fatalf("error %s", m["error"])
				}
				if string(m["result"]) != tt.result {
					t.Errorf("result = %s, want %s", m["result"], tt.result)
				}
				return
			}
			w := wireOf(t, m["error"])
			if w.Data.AgentosCode != string(tt.wantCode) || w.Code != tt.wantCode.RPC() {
				t.Errorf("error = %+v, want %s", w, tt.wantCode)
			}
			if !strings.HasPrefix(w.Message, string(tt.wantCode)+": ") {
				t.Errorf("message %q lacks the code prefix", w.Message)
			}
			if tt.wantText != "" && !strings.Contains(w.Message, tt.wantText) {
				t.Errorf("message %q lacks %q", w.Message, tt.wantText)
			}
			if tt.noText != "" && strings.Contains(string(m["error"]), tt.noText) {
				t.Errorf("error %s leaks %q", m["error"], tt.noText)
			}
		})
	}
}

// TestRefusalKeepsTheConnection: a call that fails leaves the connection
// usable for the next one.
func TestRefusalKeepsTheConnection(t *testing.T) {
	t.Parallel()
	_, names := startServer(t, nil)
	c, err := Dial(context.Background(), names.Admin())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Call(context.Background(), "fail.refused", nil, nil)
	if !errors.Is(err, errcode.InvalidState) {
		t.Fatalf("err = %v, want invalid_state", err)
	}
	var res map[string]any
	if err := c.Call(context.Background(), "echo", map[string]string{"text": "again"}, &res); err != nil || res["text"] != "again" {
		t.Fatalf("echo after refusal: %v %v", res, err)
	}
}

func TestOversizedRequestClosesConnection(t *testing.T) {
	t.Parallel()
	_, names := startServer(t, nil)
	rc := dialRaw(t, names.Admin())
	big := `{"id":1,"method":"echo","params":{"text":"` + strings.Repeat("x", MaxRequestChars) + `"}}`
	go rc.c.Write([]byte(big + "\n"))
	m := rc.read()
	w := wireOf(t, m["error"])
	if w.Data.AgentosCode != string(errcode.PayloadTooLarge) || string(m["id"]) != "null" {
		t.Fatalf("reply = %v", w)
	}
	if _, err := rc.r.ReadBytes('\n'); !errors.Is(err, io.EOF) {
		t.Fatalf("connection not closed after an oversized line: %v", err)
	}
}

func TestPeerGoneCancelsCall(t *testing.T) {
	_, names := startServer(t, nil)
	rc := dialRaw(t, names.Admin())
	for len(slowEnded) > 0 {
		<-slowEnded
	}
	// The request is read before the end of the stream, so the call
	// starts and then sees its peer gone.
	rc.c.Write([]byte(`{"id":1,"method":"slow"}` + "\n"))
	rc.c.Close()
	deadline := time.After(10 * time.Second)
	select {
	case err := <-slowEnded:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("slow call ended with %v, want canceled", err)
		}
	case <-deadline:
		t.Fatal("the call of a vanished peer was not cancelled")
	}
}

func TestTooManyConnections(t *testing.T) {
	t.Parallel()
	_, names := startServer(t, &Options{MaxConns: 2})
	var held []*rawConn
	for i := 0; i < 2; i++ {
		rc := dialRaw(t, names.Admin())
		rc.roundTrip(`{"id":1,"method":"echo"}`) // served: the slot is taken
		held = append(held, rc)
	}
	rc := dialRaw(t, names.Admin())
	m := rc.read()
	if w := wireOf(t, m["error"]); w.Data.AgentosCode != string(errcode.Busy) {
		t.Fatalf("third connection got %+v, want busy", w)
	}
	// The client reports the refusal of its connection as busy, on the
	// call and after it (ctl says "busy", not "closed without answering").
	c, err := Dial(context.Background(), names.Admin())
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := c.Call(context.Background(), "echo", nil, nil); !errors.Is(err, errcode.Busy) {
			t.Fatalf("call on a refused connection: %v, want busy", err)
		}
	}
	c.Close()
	held[0].c.Close()
	// The slot frees once the server notices the close.
	require.Eventually(t, func() bool {
		rc := dialRaw(t, names.Admin())
		rc.c.Write([]byte(`{"id":2,"method":"echo"}` + "\n"))
		return rc.read()["error"] == nil
	}, 10*time.Second, 10*time.Millisecond, "slot never freed")
}

func TestIdleConnectionClosed(t *testing.T) {
	t.Parallel()
	_, names := startServer(t, &Options{IdleTimeout: 50 * time.Millisecond})
	rc := dialRaw(t, names.Admin())
	if _, err := rc.r.ReadBytes('\n'); !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: %v, want EOF", err)
	}
}

func TestCloseStopsServing(t *testing.T) {
	t.Parallel()
	s, names := startServer(t, nil)
	rc := dialRaw(t, names.Admin())
	rc.roundTrip(`{"id":1,"method":"echo"}`)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.r.ReadBytes('\n'); !errors.Is(err, io.EOF) {
		t.Fatalf("connection after Close: %v", err)
	}
	if _, err := Dial(context.Background(), names.Admin()); !errors.Is(err, ErrUnreachable) {
		t.Fatalf("dial after Close: %v, want ErrUnreachable", err)
	}
}

// TestAdmissionByPeerUID runs real processes under other uids: an app uid
// is closed without a byte; the shell uid and the runtime's uid are served.
func TestAdmissionByPeerUID(t *testing.T) {
	testenv.NeedRoot(t)
	const runtimeUID, appUID = 10099, 10123
	_, names := startServer(t, &Options{RuntimeUID: runtimeUID})
	bin := apptest.Stage(t, "")
	tests := []struct {
		name      string
		uid       int
		wantBytes bool
		wantClass string
	}{
		{"app uid refused", appUID, false, ""},
		{"shell uid served", ShellUID, true, "shell"},
		{"runtime uid served", runtimeUID, true, "runtime"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cmd := apptest.Command(tt.uid, bin, []string{names.Admin(), `{"id":1,"method":"echo","params":{"text":"x"}}`}, "ADMIN_TEST_PEER=1")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("peer: %v", err)
			}
			var got struct {
				DialError bool   `json:"dialError"`
				Bytes     int    `json:"bytes"`
				Reply     string `json:"reply"`
			}
			if err := json.Unmarshal(bytes.TrimSpace(out), &got); err != nil {
				t.Fatalf("peer output %q: %v", out, err)
			}
			if got.DialError {
				t.Fatal("peer could not dial")
			}
			if !tt.wantBytes {
				if got.Bytes != 0 {
					t.Fatalf("uid %d received %d bytes: %q", tt.uid, got.Bytes, got.Reply)
				}
				return
			}
			if !strings.Contains(got.Reply, fmt.Sprintf(`"uid":%d`, tt.uid)) || !strings.Contains(got.Reply, `"class":"`+tt.wantClass+`"`) {
				t.Fatalf("reply %q", got.Reply)
			}
		})
	}
}

// TestInvokeAsThePeer: an in-process call (the web console) gets the
// same classes and permission checks as a call on the socket.
func TestInvokeAsThePeer(t *testing.T) {
	s := NewServer(&Options{Methods: testMethods(), RuntimeUID: 10099})
	tests := []struct {
		name   string
		uid    int
		method string
		want   string
		code   errcode.Code
	}{
		{"shell echo", ShellUID, "echo", `{"class":"shell","text":"x","uid":2000}`, ""},
		{"runtime echo", 10099, "echo", `{"class":"runtime","text":"x","uid":10099}`, ""},
		{"app uid", 10123, "echo", "", errcode.Forbidden},
		{"root on a shell-only method", RootUID, "only.shell", "", errcode.Forbidden},
		{"unknown method", ShellUID, "nope", "", errcode.Unsupported},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := s.Invoke(context.Background(), transport.Cred{UID: tt.uid}, tt.method, map[string]string{"text": "x"})
			if tt.code != "" {
				require.ErrorIs(t, err, tt.code)
				return
			}
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(raw))
		})
	}
}
