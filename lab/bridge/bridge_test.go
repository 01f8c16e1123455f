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
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/adbserver"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/syncbuf"
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

func newPhone(t *testing.T) *phone {
	t.Helper()
	var r [6]byte
	rand.Read(r[:])
	name := "@agentlab-bridge-test-" + hex.EncodeToString(r[:])
	b, err := rbridge.Open(&rbridge.Options{Dir: t.TempDir(), Name: name, Serve: echoServe, AllowUIDs: []int{os.Getuid()}})
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
	waitFor(t, "both answers", func() bool { return len(out.String()) >= len(want) })
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
	if ExitCode(r.err) != ExitAuth || !errors.As(r.err, &e) || e.Reason != ReasonInvalidCode || e.Hint != hints[ReasonInvalidCode] {
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
	waitFor(t, "the echo", func() bool { return strings.Contains(out.String(), `"echo":"ping"`) })
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

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
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
	if os.Geteuid() != 0 {
		t.Skip("virtual devices need root")
	}
	if _, err := exec.LookPath("adb"); err != nil {
		t.Skip("adb not on PATH (apt-get install -y adb)")
	}
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
