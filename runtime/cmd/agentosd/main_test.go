package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/syncbuf"
	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/stretchr/testify/require"
)

// testBin is agentosd with the in-process test tools (tag
// agentosd_testtools), built once by TestMain; release is agentosd as
// shipped, built on first use (benchmarks). Servers run them under other
// uids in the admission test.
var testBin string

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(helperMain())
	}
	var err error
	testBin, err = testbin.Build(context.Background(), ".", "-tags", "agentosd_testtools")
	if err != nil {
		fmt.Fprintln(os.Stderr, "build agentosd:", err)
		os.Exit(1)
	}
	os.Exit(testbin.Main(m))
}

// release returns agentosd as shipped (no test tools).
func release(tb testing.TB) string {
	tb.Helper()
	return testbin.Path(tb, ".")
}

var prefixes atomic.Int64

// uniquePrefix gives each runtime its own abstract socket names.
func uniquePrefix() string {
	return fmt.Sprintf("t%d-%d-", os.Getpid(), prefixes.Add(1))
}

// dataDir makes a data directory with a scripted model configuration.
// Its parent is open to every uid (servers run under other uids in the
// admission test).
func dataDir(t testing.TB) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "agentosd-data")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	os.Chmod(parent, 0o755)
	d := filepath.Join(parent, "data")
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "model.json"), []byte(`{"provider":"scripted","model":"scripted"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return d
}

// server is a running `agentosd serve`.
type server struct {
	t      testing.TB
	cmd    *exec.Cmd
	names  transport.Names
	data   string
	stderr *syncbuf.Buffer
	exited chan struct{}
	err    error
}

// startServe starts serve on data and waits until it accepts connections.
func startServe(t testing.TB, bin, data, prefix string, extra ...string) *server {
	t.Helper()
	args := append([]string{"serve", "--data", data, "--socket-prefix", prefix, "--allow-own-uid"}, extra...)
	s := &server{t: t, cmd: exec.Command(bin, args...), names: transport.Names{Prefix: prefix}, data: data,
		stderr: &syncbuf.Buffer{}, exited: make(chan struct{})}
	s.cmd.Stderr = s.stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.err = s.cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.exited
	})
	exited := func() bool {
		select {
		case <-s.exited:
			return true
		default:
			return false
		}
	}
	require.Eventually(t, func() bool {
		if exited() {
			return true // reported below, without waiting out the timeout
		}
		c, err := transport.Dial(context.Background(), s.names.ACP())
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 5*time.Millisecond, "serve did not listen: %s", s.stderr)
	if exited() {
		t.Fatalf("serve exited: %v\n%s", s.err, s.stderr)
	}
	return s
}

// rpc is a line-level JSON-RPC client.
type rpc struct {
	t    testing.TB
	conn io.ReadWriteCloser
	mu   sync.Mutex
	cond *sync.Cond
	msgs []msg
	eof  bool
	id   int
}

type msg struct {
	ID     *json.RawMessage `json:"id"`
	Method string           `json:"method"`
	Params json.RawMessage  `json:"params"`
	Result json.RawMessage  `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Data    struct {
			AgentosCode string         `json:"agentosCode"`
			TaskID      string         `json:"taskId"`
			Details     map[string]any `json:"details"`
		} `json:"data"`
	} `json:"error"`
}

func newRPC(t testing.TB, c io.ReadWriteCloser) *rpc {
	r := &rpc{t: t, conn: c}
	r.cond = sync.NewCond(&r.mu)
	go func() {
		br := bufio.NewReaderSize(c, 1<<20)
		for {
			line, err := br.ReadBytes('\n')
			r.mu.Lock()
			if len(bytes.TrimSpace(line)) > 0 {
				var m msg
				json.Unmarshal(line, &m)
				r.msgs = append(r.msgs, m)
			}
			if err != nil {
				r.eof = true
			}
			r.cond.Broadcast()
			r.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() { c.Close() })
	return r
}

func (s *server) dial() *rpc {
	s.t.Helper()
	c, err := transport.Dial(context.Background(), s.names.ACP())
	if err != nil {
		s.t.Fatal(err)
	}
	return newRPC(s.t, c)
}

func (r *rpc) send(method string, params any) int {
	r.t.Helper()
	r.mu.Lock()
	r.id++
	id := r.id
	r.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := r.conn.Write(append(b, '\n')); err != nil {
		r.t.Fatal(err)
	}
	return id
}

func (r *rpc) notify(method string, params any) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	r.conn.Write(append(b, '\n'))
}

// wait returns the first message matching and every message before it.
func (r *rpc) wait(match func(msg) bool, timeout time.Duration) (msg, []msg, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	stop := time.AfterFunc(timeout, func() { r.mu.Lock(); r.cond.Broadcast(); r.mu.Unlock() })
	defer stop.Stop()
	deadline := time.Now().Add(timeout)
	for {
		for i, m := range r.msgs {
			if match(m) {
				before := append([]msg(nil), r.msgs[:i]...)
				r.msgs = r.msgs[i+1:]
				return m, before, true
			}
		}
		if r.eof || time.Now().After(deadline) {
			return msg{}, nil, false
		}
		r.cond.Wait()
	}
}

func (r *rpc) response(id int) (msg, []msg) {
	r.t.Helper()
	m, before, ok := r.wait(func(m msg) bool { return m.Method == "" && m.ID != nil && string(*m.ID) == fmt.Sprint(id) }, 30*time.Second)
	if !ok {
		r.t.Fatalf("no response to %d", id)
	}
	return m, before
}

func (r *rpc) call(method string, params any, out any) []msg {
	r.t.Helper()
	m, before := r.response(r.send(method, params))
	if m.Error != nil {
		r.t.Fatalf("%s: %s", method, m.Error.Message)
	}
	if out != nil {
		json.Unmarshal(m.Result, out)
	}
	return before
}

type update struct {
	Update struct {
		Kind       string          `json:"sessionUpdate"`
		Status     string          `json:"status"`
		ToolCallID string          `json:"toolCallId"`
		Content    json.RawMessage `json:"content"`
		Meta       map[string]any  `json:"_meta"`
	} `json:"update"`
}

func updatesOf(msgs []msg) []update {
	var out []update
	for _, m := range msgs {
		if m.Method == "session/update" {
			var u update
			json.Unmarshal(m.Params, &u)
			out = append(out, u)
		}
	}
	return out
}

func chunkText(us []update, kind string) string {
	var b strings.Builder
	for _, u := range us {
		if u.Update.Kind == kind {
			var c struct {
				Text string `json:"text"`
			}
			json.Unmarshal(u.Update.Content, &c)
			b.WriteString(c.Text)
		}
	}
	return b.String()
}

func kindsOf(us []update) string {
	var out []string
	for _, u := range us {
		k := u.Update.Kind
		if u.Update.Status != "" {
			k += "/" + u.Update.Status
		}
		out = append(out, k)
	}
	return strings.Join(out, " ")
}

// scriptPrompt is a prompt answered by the inline model script it carries.
func scriptPrompt(sessionID string, lines ...string) map[string]any {
	return map[string]any{"sessionId": sessionID, "prompt": []map[string]any{
		{"type": "text", "text": "#!agentos-script\n" + strings.Join(lines, "\n")}}}
}

func (r *rpc) newSession() string {
	var res struct {
		SessionID string `json:"sessionId"`
	}
	r.call("session/new", map[string]any{"cwd": "/it", "mcpServers": []any{}}, &res)
	return res.SessionID
}

// readAll reads a small file.
func readAll(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
