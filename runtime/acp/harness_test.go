package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/engine/enginetest"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/store"
	"github.com/agentoslab/agentlab/runtime/transport"
)

var (
	desktop = engine.Caller{Kind: engine.CallerDesktop, UID: 2000, Label: "desktop"}
	appA    = engine.Caller{Kind: engine.CallerApp, UID: 10001, Package: "org.example.a"}
	appB    = engine.Caller{Kind: engine.CallerApp, UID: 10002, Package: "org.example.b"}
)

// harness is an engine and an Agent over a real store.
type harness struct {
	t     testing.TB
	st    *store.Store
	e     *engine.Engine
	a     *Agent
	tools *enginetest.Tools
	model *enginetest.Model
	wg    sync.WaitGroup
	once  sync.Once
	stop  context.CancelFunc
	ctx   context.Context
}

type harnessOpts struct {
	engine func(*engine.Options)
	agent  func(*Options)
}

func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	h := &harness{t: t, tools: &enginetest.Tools{}, model: &enginetest.Model{}}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "agentos.db"))
	if err != nil {
		t.Fatal(err)
	}
	eo := &engine.Options{
		Store: st, Tools: h.tools,
		Models: engine.StaticModel(model.Config{Provider: "scripted", Model: "m1", Choices: []string{"m1", "m2"}}, h.model),
		Limits: engine.Limits{CancelWait: 3 * time.Second, CancelGrace: 200 * time.Millisecond},
	}
	if o.engine != nil {
		o.engine(eo)
	}
	e, err := engine.New(context.Background(), eo)
	if err != nil {
		t.Fatal(err)
	}
	ao := &Options{Version: "test"}
	if o.agent != nil {
		o.agent(ao)
	}
	h.st, h.e, h.a = st, e, New(e, ao)
	h.ctx, h.stop = context.WithCancel(context.Background())
	t.Cleanup(h.shutdown)
	return h
}

// shutdown ends every connection, then the engine and the store. It is
// idempotent.
func (h *harness) shutdown() {
	h.once.Do(func() {
		h.stop()
		h.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := h.e.Close(ctx); err != nil {
			h.t.Errorf("engine close: %v", err)
		}
		h.st.Close()
	})
}

// client is a line-level JSON-RPC client on one connection.
type client struct {
	t    testing.TB
	conn net.Conn
	w    *bufio.Writer

	mu   sync.Mutex
	cond *sync.Cond
	msgs []json.RawMessage // received and not yet taken, in order
	// lastTaken are the raw messages the last successful waitFor consumed.
	lastTaken []json.RawMessage
	closed    bool
	nextID    int
}

// connect opens a connection to the agent as caller c.
func (h *harness) connect(c engine.Caller) *client {
	h.t.Helper()
	return h.connectWith(c, nil)
}

// connectWith is connect with transport options (e.g. a larger line
// limit, as a transport other than the line one would have).
func (h *harness) connectWith(c engine.Caller, opts *transport.RPCOptions) *client {
	h.t.Helper()
	srv, cli := net.Pipe()
	stream := transport.NewRPCStream(srv, opts)
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		h.a.Serve(h.ctx, c, stream)
	}()
	cl := &client{t: h.t, conn: cli, w: bufio.NewWriter(cli)}
	cl.cond = sync.NewCond(&cl.mu)
	go cl.read()
	h.t.Cleanup(func() { cli.Close() })
	return cl
}

func (c *client) read() {
	r := bufio.NewReaderSize(c.conn, 1<<20)
	for {
		line, err := r.ReadBytes('\n')
		c.mu.Lock()
		if len(strings.TrimSpace(string(line))) > 0 {
			c.msgs = append(c.msgs, json.RawMessage(strings.TrimSpace(string(line))))
		}
		if err != nil {
			c.closed = true
		}
		c.cond.Broadcast()
		c.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// sendRaw writes one line as is.
func (c *client) sendRaw(line string) {
	c.t.Helper()
	c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.conn.Write([]byte(line + "\n")); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// request sends a request and returns its id.
func (c *client) request(method string, params any) int {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	c.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	c.sendRaw(string(b))
	return id
}

func (c *client) notify(method string, params any) {
	c.t.Helper()
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	c.sendRaw(string(b))
}

// message is a received JSON-RPC message.
type message struct {
	ID     *json.RawMessage `json:"id"`
	Method string           `json:"method"`
	Params json.RawMessage  `json:"params"`
	Result json.RawMessage  `json:"result"`
	Error  *wireError       `json:"error"`
}

type wireError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    struct {
		AgentosCode string         `json:"agentosCode"`
		Retryable   bool           `json:"retryable"`
		TaskID      string         `json:"taskId"`
		SessionID   string         `json:"sessionId"`
		Details     map[string]any `json:"details"`
	} `json:"data"`
}

func (c *client) waitFor(match func(message) bool, timeout time.Duration) (message, []message, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	deadline := time.Now().Add(timeout)
	timer := time.AfterFunc(timeout, func() { c.mu.Lock(); c.cond.Broadcast(); c.mu.Unlock() })
	defer timer.Stop()
	seen := 0
	for {
		for ; seen < len(c.msgs); seen++ {
			var m message
			json.Unmarshal(c.msgs[seen], &m)
			if match(m) {
				var before []message
				for _, raw := range c.msgs[:seen] {
					var b message
					json.Unmarshal(raw, &b)
					before = append(before, b)
				}
				c.lastTaken = append(c.lastTaken[:0], c.msgs[:seen+1]...)
				c.msgs = c.msgs[seen+1:]
				return m, before, true
			}
		}
		if c.closed || time.Now().After(deadline) {
			return message{}, nil, false
		}
		c.cond.Wait()
	}
}

// taken returns the raw messages the last successful waitFor consumed.
func (c *client) taken() []json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]json.RawMessage(nil), c.lastTaken...)
}

// response waits for the response to id; it returns it with the messages
// received before it (which are consumed).
func (c *client) response(id int) (message, []message) {
	c.t.Helper()
	m, before, ok := c.waitFor(func(m message) bool {
		return m.ID != nil && m.Method == "" && string(*m.ID) == fmt.Sprint(id)
	}, 20*time.Second)
	if !ok {
		c.t.Fatalf("no response to request %d", id)
	}
	return m, before
}

// call sends a request and waits for its response.
func (c *client) call(method string, params any) (message, []message) {
	c.t.Helper()
	return c.response(c.request(method, params))
}

// mustCall is call that fails the test on an error response and decodes
// the result into out (when not nil).
func (c *client) mustCall(method string, params any, out any) []message {
	c.t.Helper()
	m, before := c.call(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			c.t.Fatalf("%s result: %v", method, err)
		}
	}
	return before
}

// waitClosed reports whether the server closed the connection.
func (c *client) waitClosed(timeout time.Duration) bool {
	_, _, _ = c.waitFor(func(message) bool { return false }, timeout)
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// update is a decoded session/update.
type update struct {
	SessionID string `json:"sessionId"`
	Update    struct {
		Kind       string          `json:"sessionUpdate"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"toolCallId"`
		Status     string          `json:"status"`
		Title      string          `json:"title"`
		ToolKind   string          `json:"kind"`
		RawInput   json.RawMessage `json:"rawInput"`
		Meta       map[string]any  `json:"_meta"`
	} `json:"update"`
}

func updates(t testing.TB, msgs []message) []update {
	t.Helper()
	var out []update
	for _, m := range msgs {
		if m.Method != "session/update" {
			continue
		}
		var u update
		if err := json.Unmarshal(m.Params, &u); err != nil {
			t.Fatal(err)
		}
		out = append(out, u)
	}
	return out
}

// text joins the text of chunk updates of one kind.
func (u update) text() string {
	var c struct {
		Text string `json:"text"`
		Type string `json:"type"`
	}
	json.Unmarshal(u.Update.Content, &c)
	return c.Text
}

func kinds(us []update) string {
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

func textPrompt(sessionID, text string) map[string]any {
	return map[string]any{"sessionId": sessionID, "prompt": []map[string]any{{"type": "text", "text": text}}}
}

func (c *client) newSession(meta map[string]any) string {
	c.t.Helper()
	params := map[string]any{"cwd": "/work", "mcpServers": []any{}}
	if meta != nil {
		params["_meta"] = meta
	}
	var res struct {
		SessionID string `json:"sessionId"`
	}
	c.mustCall("session/new", params, &res)
	return res.SessionID
}
