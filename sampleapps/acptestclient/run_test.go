package acptestclient_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/agentoslab/agentlab/sampleapps/acptestclient"
)

// run runs a plan against rt and returns the output as plain JSON values.
func run(t *testing.T, rt *runtime, args ...string) map[string]any {
	t.Helper()
	ops, err := acptestclient.ParsePlan(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out := acptestclient.Run(ctx, acptestclient.Env{CallerSocket: rt.names.Caller()}, ops)
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// get reads a dotted path ("r.p1.toolCalls.0.status") from v.
func get(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// script is an inline model script calling mcptest's echo once.
const echoScript = "#!agentos-script\nsteps:\n  - toolCalls:\n      - mcp: [mcptest, test, echo]\n        arguments: {text: ping}\nfinal: done\n"

// holdScript streams one chunk and then holds the task until cancelled.
const holdScript = "#!agentos-script\nsteps:\n  - text: working\n    hangAfter: 1\n"

// streamScript streams 2,000 four-character chunks (8,000 characters).
const streamScript = "#!agentos-script\nsteps:\n  - text: abcdefgh\n    chunkChars: 4\n    repeat: 1000\n"

// streamDigest is sha256 of "abcdefgh" × 1,000.
var streamDigest = func() string {
	h := sha256.Sum256([]byte(strings.Repeat("abcdefgh", 1000)))
	return hex.EncodeToString(h[:])
}()

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestPendingAndRawOpen(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, callers.Config{})
	out := run(t, rt, `[{"op":"raw_open","as":"first"},{"op":"connect","maxWaitMs":1500,"retryMs":300}]`)
	id := rt.pendingRequest(t)
	checks := []struct {
		path string
		want any
	}{
		{"ok", true},
		{"r.first.opened", false},
		{"r.first.reason", "authorization_pending"},
		{"r.first.requestId", id},
		{"r.c.connected", false},
		{"r.c.error.code", "AUTHORIZATION_PENDING_TIMEOUT"},
		{"r.c.waits.0.requestId", id},
		{"steps.1.error.code", "AUTHORIZATION_PENDING_TIMEOUT"},
	}
	for _, c := range checks {
		if got := get(out, c.path); got != c.want {
			t.Errorf("%s = %v, want %v", c.path, got, c.want)
		}
	}
	if w, _ := get(out, "r.c.waits").([]any); len(w) < 2 {
		t.Errorf("waits %v, want at least two Waiting callbacks", w)
	}
}

func TestSessionsLifecycle(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, callers.Config{})
	rt.allow(t)
	out := run(t, rt,
		`[{"op":"connect"},{"op":"new","as":"s1"},{"op":"prompt","session":"s1","text":"hello there","as":"p1"},`+
			`{"op":"prompt","session":"s1","text":"second turn","as":"p2"}]`,
		`[{"op":"new","as":"s2","scope":[{"plugin":"mcptest","tool":"echo"}]},{"op":"prompt","session":"s2","as":"p3","text":`+jsonString(echoScript)+`}]`,
		`[{"op":"new","as":"s3","scope":[]},{"op":"prompt","session":"s3","as":"p4","text":`+jsonString(echoScript)+`}]`,
		`[{"op":"list","as":"l1"},{"op":"connect","as":"c2"},{"op":"load","conn":"c2","id":"s1","as":"ld"},{"op":"resume","conn":"c2","id":"s2","as":"rs"},`+
			`{"op":"fork","conn":"c2","id":"s1","as":"fk"},{"op":"set_mode","session":"s1","mode":"chat","as":"m1"},{"op":"set_mode","session":"s1","mode":"bogus","as":"m2"},`+
			`{"op":"prompt","session":"s1","pad":16001,"as":"big"},{"op":"prompt","session":"s1","pad":16000,"as":"edge"},`+
			`{"op":"delete","id":"fk","as":"del"},{"op":"load","id":"fk","as":"gone"},{"op":"load","id":"ses_00000000000000000000000000","as":"never"},`+
			`{"op":"prompt","session":"s1","text":"again","times":3,"busyRetryMs":2000,"as":"burst"}]`,
		`[{"op":"prompt","session":"s1","busyRetryMs":2000,"text":`+jsonString(holdScript)+`,"background":true,"as":"hold"},`+
			`{"op":"wait_text","prompt":"hold","text":"working","as":"wt"},{"op":"cancel","session":"s1"},{"op":"await","prompt":"hold"},`+
			`{"op":"prompt","session":"s1","busyRetryMs":2000,"text":`+jsonString(holdScript)+`,"as":"timed","cancelAfterMs":300},`+
			`{"op":"prompt","session":"s1","busyRetryMs":2000,"text":`+jsonString(streamScript)+`,"dropText":true,"as":"st"},`+
			`{"op":"close","session":"s2","as":"cl"},{"op":"disconnect","conn":"c2"}]`,
	)
	checks := []struct {
		path string
		want any
	}{
		{"r.p1.stopReason", "end_turn"},
		{"r.p1.text", "hello there"},
		{"r.p2.text", "second turn"},
		{"r.p3.toolCalls.0.status", "COMPLETED"},
		{"r.p3.toolCalls.0.tool", "echo"},
		{"r.p3.toolCalls.0.ref", "mcptest:echo"},
		{"r.p3.toolCalls.0.result", `{"echo":"ping"}`},
		{"r.p4.toolCalls.0.status", "FAILED"},
		{"r.p4.toolCalls.0.tool", "mcp__mcptest__test__echo"},
		{"r.p4.toolCalls.0.ref", ""},
		{"r.l1.sessions.0.error", nil},
		{"r.ld.sessionId", get(out, "r.s1.sessionId")},
		{"r.ld.historyText", "user: hello there\nagent: hello there\nuser: second turn\nagent: second turn\n"},
		{"r.rs.history.0", nil},
		{"r.m1.error", nil},
		{"r.m2.error.code", "INVALID_REQUEST"},
		{"r.big.error.code", "TOO_LARGE"},
		{"r.big.error.reason", "too_large"},
		{"r.edge.error", nil},
		{"r.del.error", nil},
		{"r.gone.error.code", "SESSION_NOT_FOUND"},
		{"r.never.error.code", "SESSION_NOT_FOUND"},
		{"r.burst.runs.2.stopReason", "end_turn"},
		{"r.hold.stopReason", "cancelled"}, {"r.hold.error", nil},
		{"r.hold.background", true},
		{"r.wt.seen", true},
		{"r.timed.stopReason", "cancelled"},
		{"r.st.stopReason", "end_turn"},
		{"r.st.text", ""},
		{"r.st.stream.chars", 8000.0},
		{"r.st.stream.sha256", streamDigest},
		{"r.cl.error", nil},
	}
	for _, c := range checks {
		if got := get(out, c.path); got != c.want {
			t.Errorf("%s = %#v, want %#v", c.path, got, c.want)
		}
	}
	if s, _ := get(out, "r.p4.toolCalls.0.result").(string); !strings.HasPrefix(s, "[agentos:tool_not_in_catalog]") {
		t.Errorf("out-of-scope result %q", s)
	}
	if l, _ := get(out, "r.l1.sessions").([]any); len(l) != 3 {
		t.Errorf("list: %v", l)
	}
	if m, _ := get(out, "r.edge.text").(string); len(m) != 16000 {
		t.Errorf("a 16,000-character prompt echoed %d characters", len(m))
	}
	// The runtime coalesces the 2,000 model chunks; the client counts
	// what it received and times the cancel.
	if n, _ := get(out, "r.st.stream.chunks").(float64); n < 1 || n > 2000 {
		t.Errorf("stream chunks %v", n)
	}
	if n, _ := get(out, "r.st.stream.maxChunkChars").(float64); n < 4 || n > 8192 {
		t.Errorf("largest chunk %v", n)
	}
	if n, ok := get(out, "r.timed.stream.cancelToStopMs").(float64); !ok || n < 0 || get(out, "r.st.stream.cancelToStopMs") != nil {
		t.Errorf("cancelToStopMs %v after a cancelled prompt", get(out, "r.timed.stream"))
	}
	if st, _ := get(out, "r.p3.toolCalls.0.statuses").([]any); len(st) < 2 || st[len(st)-1] != "COMPLETED" {
		t.Errorf("statuses %v", st)
	}
}

func TestRawChannel(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, callers.Config{})
	rt.allow(t)
	out := run(t, rt, `[{"op":"raw_open","as":"ch"},`+
		`{"op":"raw","as":"init","send":{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientInfo":{"name":"org.agentos.sample.notes","version":"0"}}}},`+
		`{"op":"raw","as":"unknown","send":{"jsonrpc":"2.0","id":2,"method":"_org.agentos/consent/respond","params":{"requestId":"req_x","choice":"ALLOW_ONCE"}}},`+
		`{"op":"raw","as":"reply","send":{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}},"readMs":300},`+
		`{"op":"raw","as":"notjson","line":"this is not json","readMs":1000},`+
		`{"op":"raw","as":"rnew","send":{"jsonrpc":"2.0","id":3,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}},`+
		`{"op":"raw","as":"rp","send":{"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":"${r:rnew.response.result.sessionId}","prompt":[{"type":"text","text":"raw hi"}]}},"readMs":10000},`+
		`{"op":"raw","as":"rbig","send":{"jsonrpc":"2.0","id":5,"method":"session/prompt","params":{"sessionId":"${r:rnew.response.result.sessionId}","prompt":[{"type":"text","text":"${pad:16001}"}]}}},`+
		`{"op":"raw","as":"badref","line":"${r:rnew.response.result.nothing}"},{"op":"raw_close"}]`)
	checks := []struct {
		path string
		want any
	}{
		{"r.ch.opened", true},
		{"r.init.response.result.protocolVersion", float64(1)},
		{"r.init.response.result.agentCapabilities.loadSession", true},
		{"r.unknown.response.error.code", float64(-32601)},
		{"r.reply.response", nil},
		{"r.reply.closed", false},
		{"r.notjson.other.0.error.code", float64(-32700)},
		{"r.rp.response.result.stopReason", "end_turn"},
		{"r.badref.error.code", "PLAN"},
		{"r.rbig.response.error.data.details.reason", "too_large"},
		{"r.rbig.response.error.data.details.limit", float64(16000)},
	}
	for _, c := range checks {
		if got := get(out, c.path); got != c.want {
			t.Errorf("%s = %#v, want %#v", c.path, got, c.want)
		}
	}
}

// listenWith serves a socket whose connections are handled by f.
func listenWith(t *testing.T, f func(c net.Conn)) string {
	t.Helper()
	name := "@atc-dial-" + strconv.Itoa(int(prefixSeq.Add(1))) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	ln, err := transport.Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f(c)
		}
	}()
	t.Cleanup(func() { ln.Close(); <-done })
	return name
}

func TestDial(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, callers.Config{})
	// closedUnread: accepted after the line arrived, closed without a read.
	unread := listenWith(t, func(c net.Conn) { time.Sleep(50 * time.Millisecond); c.Close() })
	reads := listenWith(t, func(c net.Conn) {
		transport.NewLineReader(c, 0).ReadLine()
		c.Close()
	})
	answers := listenWith(t, func(c net.Conn) {
		transport.NewLineReader(c, 0).ReadLine()
		c.Write([]byte(`{"jsonrpc":"2.0","id":0,"result":{}}` + "\n"))
		c.Close()
	})
	silent := listenWith(t, func(c net.Conn) { t.Cleanup(func() { c.Close() }) })
	line := `{"jsonrpc":"2.0","id":0,"method":"_org.agentos/pair","params":{"code":"123456"}}`
	var ops []string
	for _, d := range []struct{ as, socket string }{{"unread", unread}, {"reads", reads}, {"answers", answers}, {"silent", silent}, {"none", "@atc-nobody-listens"}} {
		ops = append(ops, `{"op":"dial","as":"`+d.as+`","socket":"`+d.socket+`","line":`+jsonString(line)+`,"readMs":500}`)
	}
	out := run(t, rt, ops...)
	if r := get(out, "r.unread.result"); r != "reset" && r != "epipe" {
		t.Errorf("unread: result %v, want reset or epipe", r)
	}
	checks := []struct {
		path string
		want any
	}{
		{"r.unread.closedUnread", true},
		{"r.reads.result", "eof"},
		{"r.reads.closedUnread", false},
		{"r.answers.result", "data"},
		{"r.answers.line.id", float64(0)},
		{"r.silent.result", "open"},
		{"r.none.result", "refused"},
	}
	for _, c := range checks {
		if got := get(out, c.path); got != c.want {
			t.Errorf("%s = %#v, want %#v", c.path, got, c.want)
		}
	}
}

func TestMain_(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	getenv := func(string) string { return "@atc-nobody-listens" }
	if code := acptestclient.Main(context.Background(), nil, getenv, &stdout, &stderr, nil); code != acptestclient.ExitUsage {
		t.Errorf("no command: exit %d", code)
	}
	stdout.Reset()
	if code := acptestclient.Main(context.Background(), []string{"run", `{"op":"nope"}`}, getenv, &stdout, &stderr, nil); code != acptestclient.ExitUsage ||
		!strings.Contains(stdout.String(), `"ok":false`) {
		t.Errorf("bad plan: exit %d, %s", code, stdout.String())
	}
	stdout.Reset()
	if code := acptestclient.Main(context.Background(), []string{"run", `{"op":"connect","maxWaitMs":100}`}, getenv, &stdout, &stderr, nil); code != acptestclient.ExitOK ||
		!strings.Contains(stdout.String(), `"code":"NOT_INSTALLED"`) {
		t.Errorf("no runtime: exit %d, %s", code, stdout.String())
	}
}
