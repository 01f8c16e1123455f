package bridge

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/devices/adbserver"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/syncbuf"
	"github.com/agentoslab/agentlab/internal/testenv"
	rbridge "github.com/agentoslab/agentlab/runtime/bridge"
	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/transport"
)

func TestMain(m *testing.M) {
	// The test binary is also the init of the virtual device the adb
	// test starts.
	virtual.Init()
	code := m.Run()
	if agentosdBin.dir != "" {
		os.RemoveAll(agentosdBin.dir)
	}
	os.Exit(code)
}

// echoServe answers every ACP request with {"echo": method}.
func echoServe(ctx context.Context, c engine.Caller, s *transport.RPCStream) {
	sc := bufio.NewScanner(s.Reader())
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]string{"echo": req.Method}})
		s.Writer().Write(append(b, '\n'))
	}
}

// phone is the runtime's desktop access, served in this process on an
// abstract socket of its own.
type phone struct {
	b    *rbridge.Bridge
	name string
	code string
}

func newPhone(t *testing.T) *phone { return newPhoneServing(t, echoServe) }

func newPhoneServing(t *testing.T, serve func(context.Context, engine.Caller, *transport.RPCStream)) *phone {
	t.Helper()
	var r [6]byte
	rand.Read(r[:])
	name := "@agentlab-bridge-test-" + hex.EncodeToString(r[:])
	b, err := rbridge.Open(&rbridge.Options{Dir: t.TempDir(), Name: name, Serve: serve, AllowUIDs: []int{os.Getuid()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	code, err := b.Enable()
	if err != nil {
		t.Fatal(err)
	}
	return &phone{b: b, name: name, code: code}
}

type run struct {
	err            error
	stdout, stderr string
}

func opts(t *testing.T, connect, state string) Options {
	return Options{Connect: connect, StatePath: state, Label: "test-laptop", Timeout: 2 * time.Second,
		Getenv: func(string) string { return "" }}
}

func doPair(t *testing.T, o Options, code string) run {
	var out, errb bytes.Buffer
	o.Stdout, o.Stderr = &out, &errb
	err := Pair(context.Background(), o, code)
	return run{err, out.String(), errb.String()}
}

func doRun(t *testing.T, o Options, stdin io.Reader) run {
	var out, errb bytes.Buffer
	o.Stdin, o.Stdout, o.Stderr = stdin, &out, &errb
	err := Run(context.Background(), o)
	return run{err, out.String(), errb.String()}
}

func TestPairThenBridge(t *testing.T) {
	p := newPhone(t)
	dir := filepath.Join(t.TempDir(), "cfg", "agentos")
	state := filepath.Join(dir, "acp-bridge.json")
	o := opts(t, "unix:"+p.name, state)

	r := doPair(t, o, " "+p.code[:3]+"-"+p.code[3:]+" ")
	if ExitCode(r.err) != ExitOK {
		t.Fatalf("pair: %v\n%s", r.err, r.stderr)
	}
	if strings.Contains(r.stderr, p.code) || r.stdout != "" {
		t.Errorf("pair printed the code or wrote stdout: %q %q", r.stderr, r.stdout)
	}
	fi, err := os.Stat(state)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("state file mode: %v %v", fi, err)
	}
	if di, _ := os.Stat(dir); di.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v", di.Mode().Perm())
	}
	st, err := LoadState(state)
	if err != nil {
		t.Fatal(err)
	}
	pd, ok := st.Devices["unix:"+p.name]
	if !ok || len(pd.Token) != 43 || !strings.HasPrefix(pd.PairingID, "dp_") || pd.Label != "test-laptop" {
		t.Fatalf("stored %+v", st.Devices)
	}
	if _, err := time.Parse(time.RFC3339, pd.PairedAt); err != nil {
		t.Errorf("pairedAt %q", pd.PairedAt)
	}
	if strings.Contains(r.stderr, pd.Token) {
		t.Error("the token was printed")
	}
	if list := p.b.List(); len(list) != 1 || list[0].Label != "test-laptop" {
		t.Errorf("phone pairings %+v", list)
	}

	// The bridge with the stored token: stdout carries only ACP.
	pr, pw := io.Pipe()
	out := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		ro := o
		ro.Stdin, ro.Stdout, ro.Stderr = pr, out, io.Discard
		done <- Run(context.Background(), ro)
	}()
	pw.Write([]byte("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"session/new\",\"params\":{}}\n"))
	want := `{"id":1,"jsonrpc":"2.0","result":{"echo":"initialize"}}` + "\n" + `{"id":2,"jsonrpc":"2.0","result":{"echo":"session/new"}}` + "\n"
	require.Eventually(t, func() bool {
		return len(out.String()) >= len(want)
	}, 5*time.Second, 5*time.Millisecond, "waiting for both answers")
	pw.Close() // stdin ends: exit 0
	if err := <-done; ExitCode(err) != ExitOK {
		t.Fatalf("bridge: %v", err)
	}
	if out.String() != want {
		t.Errorf("stdout\n%q\nwant\n%q", out.String(), want)
	}
	// A second pair replaces the entry; the file stays 0600.
	code, _ := p.b.NewCode()
	if r := doPair(t, o, code); r.err != nil {
		t.Fatal(r.err)
	}
	if fi, _ := os.Stat(state); fi.Mode().Perm() != 0o600 {
		t.Errorf("state mode after rewrite %v", fi.Mode())
	}
	if tmps, _ := filepath.Glob(state + ".*.tmp"); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}

	// unpair forgets it.
	var errb bytes.Buffer
	o.Stderr = &errb
	if err := Unpair(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if st, _ := LoadState(state); len(st.Devices) != 0 {
		t.Errorf("after unpair: %+v", st.Devices)
	}
	if err := Unpair(context.Background(), o); err != nil {
		t.Errorf("unpair twice: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	p := newPhone(t)
	state := filepath.Join(t.TempDir(), "state.json")
	o := opts(t, "unix:"+p.name, state)

	// Not paired, no code: refused before connecting.
	r := doRun(t, o, strings.NewReader(""))
	if ExitCode(r.err) != ExitAuth || !strings.Contains(r.err.Error(), "not paired with unix:"+p.name) {
		t.Errorf("not paired: %v", r.err)
	}
	var e *Error
	if !errors.As(r.err, &e) || !strings.Contains(e.Hint, "agentlab bridge pair") {
		t.Errorf("hint: %+v", e)
	}

	// A wrong code.
	wrong := "000000"
	if p.code == wrong {
		wrong = "111111"
	}
	r = doPair(t, o, wrong)
	if ExitCode(r.err) != ExitAuth || !errors.As(r.err, &e) || e.Reason != ReasonInvalidCode || e.Hint != hint(ReasonInvalidCode, &target{key: "unix:" + p.name}) {
		t.Errorf("wrong code: %v", r.err)
	}
	var buf bytes.Buffer
	if code := Report(&buf, r.err); code != ExitAuth || !strings.HasPrefix(buf.String(), "agentlab bridge: refused (invalid_code)") || !strings.Contains(buf.String(), "agentlab bridge: hint: ") {
		t.Errorf("report: %d %q", code, buf.String())
	}

	// Pair, then the phone revokes: the stored token is refused and forgotten.
	if r := doPair(t, o, p.code); r.err != nil {
		t.Fatal(r.err)
	}
	st, _ := LoadState(state)
	if err := p.b.Revoke(st.Devices["unix:"+p.name].PairingID); err != nil {
		t.Fatal(err)
	}
	r = doRun(t, o, strings.NewReader(""))
	if ExitCode(r.err) != ExitAuth || !errors.As(r.err, &e) || e.Reason != ReasonInvalidToken {
		t.Fatalf("revoked token: %v", r.err)
	}
	if st, _ := LoadState(state); len(st.Devices) != 0 {
		t.Errorf("the refused token was kept: %+v", st.Devices)
	}

	// Desktop access off: the socket is gone.
	p.b.Disable()
	r = doPair(t, o, "123456")
	if ExitCode(r.err) != ExitNotListening {
		t.Errorf("access off: %v", r.err)
	}
}

// TestPhoneCloses: the phone ends the session (the pairing is revoked)
// while stdin is still open.
func TestPhoneCloses(t *testing.T) {
	p := newPhone(t)
	state := filepath.Join(t.TempDir(), "state.json")
	o := opts(t, "unix:"+p.name, state)
	if r := doPair(t, o, p.code); r.err != nil {
		t.Fatal(r.err)
	}
	pr, pw := io.Pipe()
	done := make(chan run, 1)
	out := &syncbuf.Buffer{}
	go func() {
		o.Stdin, o.Stdout, o.Stderr = pr, out, io.Discard
		done <- run{err: Run(context.Background(), o)}
	}()
	pw.Write([]byte(`{"jsonrpc":"2.0","id":7,"method":"ping","params":{}}` + "\n"))
	require.Eventually(t, func() bool {
		return strings.Contains(out.String(), `"echo":"ping"`)
	}, 5*time.Second, 5*time.Millisecond, "waiting for the echo")
	st, _ := LoadState(state)
	p.b.Revoke(st.Devices["unix:"+p.name].PairingID)
	r := <-done
	if ExitCode(r.err) != ExitClosed {
		t.Errorf("phone closed: %v", r.err)
	}
	// Run closed stdin on return.
	if _, err := pw.Write([]byte("x")); err == nil {
		t.Error("stdin still open after Run returned")
	}
}

// fakePhone listens on TCP and behaves as answer says.
func fakePhone(t *testing.T, answer func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				answer(c)
			}()
		}
	}()
	return ln.Addr().String()
}

func TestHandshakeFailures(t *testing.T) {
	readLine := func(c net.Conn) { bufio.NewReader(c).ReadString('\n') }
	cases := []struct {
		name   string
		answer func(c net.Conn)
		code   int
		msg    string
	}{
		{"closed before answering", func(c net.Conn) { readLine(c) }, ExitNotListening, "closed before the phone answered"},
		{"not json", func(c net.Conn) { readLine(c); c.Write([]byte("hello\n")) }, ExitFailure, "not a JSON-RPC answer"},
		{"silent", func(c net.Conn) {
			readLine(c)
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			io.Copy(io.Discard, c)
		}, ExitFailure, "did not answer the pairing within"},
		{"too long", func(c net.Conn) { readLine(c); c.Write(bytes.Repeat([]byte("x"), MaxAnswerBytes+8192)) }, ExitFailure, "too long"},
		{"busy", func(c net.Conn) {
			c.Write([]byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32047,"message":"busy: too many desktop connections","data":{"agentosCode":"busy","retryable":true}}}` + "\n"))
		}, ExitFailure, "too many desktop connections"},
		{"disabled", func(c net.Conn) {
			readLine(c)
			c.Write([]byte(`{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"auth_required: desktop access is turned off on the phone","data":{"agentosCode":"auth_required","retryable":false,"details":{"reason":"disabled"}}}}` + "\n"))
		}, ExitAuth, "refused (disabled)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := fakePhone(t, tc.answer)
			o := opts(t, addr, filepath.Join(t.TempDir(), "s.json"))
			o.Timeout = 300 * time.Millisecond
			r := doPair(t, o, "123456")
			if ExitCode(r.err) != tc.code || !strings.Contains(r.err.Error(), tc.msg) {
				t.Errorf("got %d %v, want %d %q", ExitCode(r.err), r.err, tc.code, tc.msg)
			}
		})
	}
	// Bytes the phone sends right after the answer line reach stdout.
	addr := fakePhone(t, func(c net.Conn) {
		readLine(c)
		c.Write([]byte(`{"jsonrpc":"2.0","id":0,"result":{"version":1,"pairingId":"dp_0123456789ab","token":"` + strings.Repeat("A", 43) + `","maxLineChars":65536}}` + "\n" + `{"early":true}` + "\n"))
		io.Copy(io.Discard, c) // until the bridge closes
	})
	o := opts(t, addr, filepath.Join(t.TempDir(), "s.json"))
	o.Code = "123456"
	r := doRun(t, o, strings.NewReader(""))
	if r.err != nil || r.stdout != `{"early":true}`+"\n" {
		t.Errorf("early bytes: %v %q", r.err, r.stdout)
	}
	if st, _ := LoadState(o.StatePath); st.Devices["tcp:"+addr].PairingID != "dp_0123456789ab" {
		t.Errorf("tcp key: %+v", st.Devices)
	}
}

func TestUsageAndState(t *testing.T) {
	for _, c := range []string{"nohost", "h:0", "unix:"} {
		r := doPair(t, opts(t, c, filepath.Join(t.TempDir(), "s.json")), "1")
		if ExitCode(r.err) != ExitUsage {
			t.Errorf("--connect %q: %v", c, r.err)
		}
	}
	r := doPair(t, opts(t, "127.0.0.1:9", filepath.Join(t.TempDir(), "s.json")), "")
	if ExitCode(r.err) != ExitUsage {
		t.Errorf("pair without a code: %v", r.err)
	}
	bad := filepath.Join(t.TempDir(), "s.json")
	os.WriteFile(bad, []byte("{not json"), 0o600)
	r = doRun(t, opts(t, "127.0.0.1:9", bad), strings.NewReader(""))
	if ExitCode(r.err) != ExitFailure || !errors.Is(r.err, ErrBadState) {
		t.Errorf("corrupt state: %v", r.err)
	}
	env := map[string]string{"AGENTOS_BRIDGE_STATE": "/x/s.json", "XDG_CONFIG_HOME": "/cfg", "HOME": "/home/u"}
	get := func(k string) string { return env[k] }
	if p := DefaultStatePath(get); p != "/x/s.json" {
		t.Errorf("state path %s", p)
	}
	delete(env, "AGENTOS_BRIDGE_STATE")
	if p := DefaultStatePath(get); p != "/cfg/agentos/acp-bridge.json" {
		t.Errorf("state path %s", p)
	}
	delete(env, "XDG_CONFIG_HOME")
	if p := DefaultStatePath(get); p != "/home/u/.config/agentos/acp-bridge.json" {
		t.Errorf("state path %s", p)
	}
}

// TestADB drives the real adb path against a virtual device on a private
// adb server: no runtime listens there (exit 5), an unknown serial is a
// device problem (exit 4).
func TestADB(t *testing.T) {
	testenv.NeedVirtualDevices(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := adbserver.Start(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dev, err := virtual.Start(ctx, &virtual.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.Stop(context.Background())
	if out, err := srv.Command(ctx, "connect", dev.Serial()).CombinedOutput(); err != nil {
		t.Fatalf("adb connect: %v %s", err, out)
	}
	o := opts(t, "", filepath.Join(t.TempDir(), "s.json"))
	o.ADBEnv = srv.Env()
	o.Getenv = func(k string) string {
		if k == "ANDROID_SERIAL" {
			return dev.Serial()
		}
		return ""
	}
	r := doPair(t, o, "123456")
	if ExitCode(r.err) != ExitNotListening {
		t.Errorf("no runtime on the device: %v", r.err)
	}
	// The forward was removed on exit.
	if out, _ := srv.Command(ctx, "forward", "--list").Output(); strings.Contains(string(out), dev.Serial()) {
		t.Errorf("forward left behind: %s", out)
	}
	o.Serial = "no-such-serial"
	if r := doPair(t, o, "123456"); ExitCode(r.err) != ExitDevice {
		t.Errorf("unknown serial: %v", r.err)
	}
	// Without a serial, the only device is taken.
	o.Serial, o.Getenv = "", func(string) string { return "" }
	if r := doPair(t, o, "123456"); ExitCode(r.err) != ExitNotListening {
		t.Errorf("only device: %v", r.err)
	}
}

// TestRefusalReachesTheEditor: a bridge that cannot connect answers the
// editor's first request with a JSON-RPC error saying what to do, instead
// of ending stdout (which editors show as "the agent exited").
func TestRefusalReachesTheEditor(t *testing.T) {
	p := newPhone(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}` + "\n"
	cases := []struct {
		name    string
		connect string
		stdin   string
		wantID  string
		rpcCode int
		reason  string
		says    []string
		exit    int
	}{
		{name: "not paired", connect: "unix:" + p.name, stdin: init, wantID: "1", rpcCode: -32000, reason: ReasonNotPaired, exit: ExitAuth,
			says: []string{"not paired with unix:" + p.name, "What to do: pair first:", "agentlab bridge pair --connect unix:" + p.name + " <code>", phoneCode}},
		{name: "a notification first", connect: "unix:" + p.name,
			stdin:  `{"jsonrpc":"2.0","method":"$/progress","params":{}}` + "\nnot json\n" + `{"jsonrpc":"2.0","id":"x","method":"initialize","params":{}}` + "\n",
			wantID: `"x"`, rpcCode: -32000, reason: ReasonNotPaired, exit: ExitAuth},
		{name: "not listening", connect: "unix:@agentlab-bridge-test-nobody-" + p.code, stdin: init, wantID: "1", rpcCode: -32042, reason: ReasonNotListening, exit: ExitNotListening,
			says: []string{"the phone is not listening", "make sure the AgentOS runtime is running", "desktop enable"}},
		{name: "stdin ends", connect: "unix:" + p.name, stdin: "", exit: ExitAuth},
		{name: "stdin silent", connect: "unix:" + p.name, stdin: "silent", exit: ExitAuth},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := opts(t, tc.connect, filepath.Join(t.TempDir(), "state.json"))
			o.RefuseWait = 200 * time.Millisecond
			var stdin io.Reader = strings.NewReader(tc.stdin)
			if tc.stdin == "silent" {
				pr, pw := io.Pipe()
				defer pw.Close()
				stdin = pr
			}
			if tc.connect != "unix:"+p.name {
				o.Code = "123456"
			}
			r := doRun(t, o, stdin)
			assert.Equal(t, tc.exit, ExitCode(r.err), "%v", r.err)
			if tc.wantID == "" {
				assert.Empty(t, r.stdout)
				return
			}
			var resp struct {
				JSONRPC string           `json:"jsonrpc"`
				ID      json.RawMessage  `json:"id"`
				Error   errcodeWire      `json:"error"`
				Result  *json.RawMessage `json:"result"`
			}
			require.Equal(t, 1, strings.Count(r.stdout, "\n"), "one answer line: %q", r.stdout)
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &resp))
			assert.Equal(t, "2.0", resp.JSONRPC)
			assert.Equal(t, tc.wantID, string(resp.ID))
			assert.Nil(t, resp.Result)
			assert.Equal(t, tc.rpcCode, resp.Error.Code)
			assert.Equal(t, tc.reason, resp.Error.Data.Details["reason"])
			assert.EqualValues(t, tc.exit, resp.Error.Data.Details["exitCode"])
			for _, s := range tc.says {
				assert.Contains(t, resp.Error.Message, s)
			}
		})
	}
}

type errcodeWire struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    struct {
		AgentosCode string         `json:"agentosCode"`
		Details     map[string]any `json:"details"`
	} `json:"data"`
}

// sessionServe answers session/new with a session id and the mcpServers
// it was given, and sends a session/update before every answer, so the
// test sees what the phone got and where the notice lands.
func sessionServe(ctx context.Context, c engine.Caller, s *transport.RPCStream) {
	sc := bufio.NewScanner(s.Reader())
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				MCPServers json.RawMessage `json:"mcpServers"`
			} `json:"params"`
		}
		if json.Unmarshal(sc.Bytes(), &req) != nil || req.ID == nil {
			continue
		}
		u, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "ses_before", "update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": "before " + req.Method}}}})
		b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": map[string]any{"sessionId": "ses_phone", "got": req.Params.MCPServers}})
		s.Writer().Write(append(append(u, '\n'), append(b, '\n')...))
	}
}

// TestBridgeLeavesOutStdioServers: through a paired bridge, a session/new
// with a stdio and an http server reaches the phone with the http one
// only; the editor gets the phone's lines in order, then the notice.
func TestBridgeLeavesOutStdioServers(t *testing.T) {
	p := newPhoneServing(t, sessionServe)
	o := opts(t, "unix:"+p.name, filepath.Join(t.TempDir(), "state.json"))
	require.NoError(t, doPair(t, o, p.code).err)

	pr, pw := io.Pipe()
	out := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		ro := o
		ro.Stdin, ro.Stdout, ro.Stderr = pr, out, io.Discard
		done <- Run(context.Background(), ro)
	}()
	pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[` + stdioServer + `,` + httpServer + `]}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}` + "\n"))
	require.Eventually(t, func() bool {
		return strings.Count(out.String(), "\n") >= 5
	}, 5*time.Second, 5*time.Millisecond, "waiting for both answers")
	pw.Close()
	require.NoError(t, <-done)
	lines := strings.SplitAfter(out.String(), "\n")
	require.Len(t, lines, 6, "%q", out.String()) // 5 lines and the empty rest
	assert.Contains(t, lines[0], `"before session/new"`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":1,"result":{"sessionId":"ses_phone","got":[`+httpServer+`]}}`, lines[1])
	assertNotice(t, []byte(lines[2]), "ses_phone", []string{"fs"})
	assert.Contains(t, lines[3], `"before session/new"`)
	assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"result":{"sessionId":"ses_phone","got":[]}}`, lines[4])
}

// TestNoSuchDevice: a serial adb does not list is a device problem named
// as such (with what adb has), for the bridge, pair and code alike, and
// the editor is told the same.
func TestNoSuchDevice(t *testing.T) {
	vd := startADBDevice(t, "magisk")
	o := vd.opts(t)
	o.Serial = "NOPE123"
	o.RefuseWait = time.Second
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}` + "\n"
	r := doRun(t, o, strings.NewReader(init))
	require.Equal(t, ExitDevice, ExitCode(r.err), "%v", r.err)
	assert.Equal(t, "no such device: NOPE123 (adb lists: "+vd.vd.Serial()+" (device))", r.err.Error())
	assert.Contains(t, r.stdout, `"reason":"no_device"`)
	assert.Contains(t, r.stdout, "no such device: NOPE123")
	assert.NotContains(t, r.stdout+r.err.Error(), "not paired")

	assert.Equal(t, ExitDevice, ExitCode(doPair(t, o, "123456").err))
	err := Code(context.Background(), o, CodeOptions{})
	assert.Equal(t, ExitDevice, ExitCode(err))
	assert.Contains(t, err.Error(), "no such device: NOPE123")
}

// TestCodeFailures: bridge code says why it cannot take a code: no
// module, su denying the shell, no root at all.
func TestCodeFailures(t *testing.T) {
	magisk := startADBDevice(t, "magisk")
	var out bytes.Buffer
	o := magisk.opts(t)
	o.Stdout = &out
	err := Code(context.Background(), o, CodeOptions{})
	var e *Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, ExitDevice, e.Code)
	assert.Equal(t, ReasonNotInstalled, e.Reason, "%v", err)
	assert.Contains(t, e.Hint, "agentlab provision")

	require.NoError(t, os.WriteFile(filepath.Join(magisk.vd.Root(), "data/adb/su_policy"), []byte("2000 deny\n"), 0o600))
	err = Code(context.Background(), o, CodeOptions{})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, ReasonSuDenied, e.Reason, "%v", err)
	assert.Contains(t, e.Hint, "superuser list")

	none := startADBDevice(t, "none")
	err = Code(context.Background(), none.opts(t), CodeOptions{})
	require.ErrorAs(t, err, &e)
	assert.Equal(t, ReasonNoRoot, e.Reason, "%v", err)
	assert.Equal(t, ExitDevice, e.Code)
	assert.Empty(t, out.String(), "no code was printed")

	// --connect has no adb to take a code with.
	err = Code(context.Background(), opts(t, "127.0.0.1:9", filepath.Join(t.TempDir(), "s.json")), CodeOptions{})
	assert.Equal(t, ExitUsage, ExitCode(err))
	require.ErrorAs(t, err, &e)
	assert.Contains(t, e.Hint, phoneCode)
}

// adbDev is a virtual device behind its own adb server.
type adbDev struct {
	srv *adbserver.Server
	vd  *virtual.Device
}

func startADBDevice(t *testing.T, root string) *adbDev {
	t.Helper()
	testenv.NeedVirtualDevices(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := adbserver.Start(ctx, nil)
	require.NoError(t, err)
	t.Cleanup(func() { srv.Close() })
	vd, err := virtual.Start(ctx, &virtual.Options{StateDir: t.TempDir(), RootMethod: root})
	require.NoError(t, err)
	t.Cleanup(func() { vd.Stop(context.Background()) })
	out, err := srv.Command(ctx, "connect", vd.Serial()).CombinedOutput()
	require.NoError(t, err, "adb connect: %s", out)
	out, err = srv.Command(ctx, "-s", vd.Serial(), "wait-for-device").CombinedOutput()
	require.NoError(t, err, "adb wait-for-device: %s", out)
	return &adbDev{srv: srv, vd: vd}
}

// opts are bridge options for this device (by the only-device rule).
func (d *adbDev) opts(t *testing.T) Options {
	o := opts(t, "", filepath.Join(t.TempDir(), "s.json"))
	o.ADBEnv = d.srv.Env()
	return o
}
