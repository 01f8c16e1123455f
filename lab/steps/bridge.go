package steps

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/lab/bridge"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
)

// bridgeResult is a bridge step's output.
type bridgeResult struct {
	// ExitCode is the bridge's (spec §8.4: 0 stdin ended, 3 auth, 5 the
	// phone not listening, 6 the phone closed the connection …).
	ExitCode int `json:"exitCode"`
	// Error is what the bridge printed about its end ("" on exit 0).
	Error      string `json:"error"`
	Initialize any    `json:"initialize"`
	SessionID  string `json:"sessionId"`
	StopReason string `json:"stopReason"`
	Text       string `json:"text"`
	// PromptError is the JSON-RPC error the prompt got, if any.
	PromptError any `json:"promptError"`
	// Lines counts what the bridge wrote to stdout; NonJSON those that
	// are not one JSON-RPC message (stdout must carry only ACP).
	Lines      int   `json:"lines"`
	NonJSON    int   `json:"nonJSON"`
	DurationMs int64 `json:"durationMs"`
}

// bridgeOf returns the role's bridge state: an adb forward to the
// desktop socket kept for the attempt (the bridge keys its stored token
// by the address, so later steps reach the same one) and a state file
// outside the run's artifacts (it holds the token).
func (a *attempt) bridgeOf(ctx context.Context, t *Target) (*bridgeState, error) {
	a.mu.Lock()
	b := a.bridges[t.Role]
	a.mu.Unlock()
	if b != nil {
		return b, nil
	}
	dir, err := os.MkdirTemp("", "agentlab-bridge-")
	if err != nil {
		return nil, labFault("bridge state", err)
	}
	port, err := t.Device.Forward(ctx, "tcp:0", acpSocket)
	if err != nil {
		os.RemoveAll(dir)
		return nil, labFault("adb forward", err)
	}
	b = &bridgeState{t: t, dir: dir, port: port}
	a.mu.Lock()
	a.bridges[t.Role] = b
	a.mu.Unlock()
	return b, nil
}

type bridgeState struct {
	t    *Target
	dir  string
	port int
}

func (b *bridgeState) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b.t.Device.RemoveForward(ctx, "tcp:"+strconv.Itoa(b.port))
	os.RemoveAll(b.dir)
}

// bridgeStep runs the bridge as an editor would (see scenario.BridgeStep).
func (a *attempt) bridgeStep(ctx context.Context, t *Target, st *scenario.Step, expand func(string) (string, error)) (any, error) {
	p := st.Bridge
	text, err := expand(p.Text)
	if p.Script != "" {
		text, err = a.sc.ScriptText(p.Script, a.lookup(t))
	}
	if err != nil {
		return nil, err
	}
	b, err := a.bridgeOf(ctx, t)
	if err != nil {
		return nil, err
	}
	o := bridge.Options{Connect: "127.0.0.1:" + strconv.Itoa(b.port), StatePath: filepath.Join(b.dir, "acp-bridge.json"),
		Label: "agentlab-scenario", Quiet: true, Getenv: func(string) string { return "" }}
	if !p.Token {
		var code struct {
			Code string `json:"code"`
		}
		if err := t.Ctl.Call(ctx, &code, "desktop", "code"); err != nil {
			return nil, fmt.Errorf("desktop code: %w", err)
		}
		if a.env.Secret != nil && code.Code != "" {
			a.env.Secret(reports.Secret{Name: "pairing code", Value: []byte(code.Code)})
		}
		o.Code = code.Code
	}
	in, inW := io.Pipe()
	out, outW := io.Pipe()
	o.Stdin, o.Stdout, o.Stderr = in, outW, io.Discard
	ed := newEditor(inW)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		ed.read(out)
	}()
	start := time.Now()
	runDone := make(chan error, 1)
	go func() {
		err := bridge.Run(ctx, o)
		outW.Close()
		runDone <- err
	}()
	res := &bridgeResult{}
	convDone := make(chan struct{})
	go func() {
		defer close(convDone)
		ed.converse(ctx, text, p.CancelAfter.D(), p.Hold.D(), res)
	}()
	err = <-runDone
	inW.Close()
	<-readDone
	<-convDone
	ed.finish(res)
	res.ExitCode = bridge.ExitCode(err)
	if err != nil {
		res.Error = clip(err.Error(), 500)
	}
	res.DurationMs = time.Since(start).Milliseconds()
	return res, nil
}

// editor is the bridge's other end: it writes requests to its stdin and
// reads what it writes to stdout.
type editor struct {
	in io.WriteCloser

	mu      sync.Mutex
	nextID  int
	waiting map[int]chan json.RawMessage
	text    bytes.Buffer
	lines   int
	nonJSON int
	ended   chan struct{} // closed when stdout ends
}

func newEditor(in io.WriteCloser) *editor {
	return &editor{in: in, nextID: 1, waiting: map[int]chan json.RawMessage{}, ended: make(chan struct{})}
}

type rpcMsg struct {
	ID     *int            `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// read parses the bridge's stdout: answers go to their waiter, message
// chunks into the text.
func (e *editor) read(r io.Reader) {
	defer close(e.ended)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		var m rpcMsg
		e.mu.Lock()
		e.lines++
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			e.nonJSON++
			e.mu.Unlock()
			continue
		}
		switch {
		case m.Method == "session/update":
			var u struct {
				Update struct {
					Kind    string `json:"sessionUpdate"`
					Content struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			}
			if json.Unmarshal(m.Params, &u) == nil && u.Update.Kind == "agent_message_chunk" {
				e.text.WriteString(u.Update.Content.Text)
			}
		case m.Method == "" && m.ID != nil:
			if ch := e.waiting[*m.ID]; ch != nil {
				delete(e.waiting, *m.ID)
				whole, _ := json.Marshal(m)
				ch <- whole
			}
		}
		e.mu.Unlock()
	}
	io.Copy(io.Discard, r)
}

// call sends a request and waits for its answer (nil when the bridge
// ended first).
func (e *editor) call(ctx context.Context, method string, params any) *rpcMsg {
	e.mu.Lock()
	id := e.nextID
	e.nextID++
	ch := make(chan json.RawMessage, 1)
	e.waiting[id] = ch
	e.mu.Unlock()
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if _, err := e.in.Write(append(line, '\n')); err != nil {
		return nil
	}
	select {
	case raw := <-ch:
		var m rpcMsg
		json.Unmarshal(raw, &m)
		return &m
	case <-e.ended:
		return nil
	case <-ctx.Done():
		return nil
	}
}

func (e *editor) notify(method string, params any) {
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	e.in.Write(append(line, '\n'))
}

// converse runs the editor's side: initialize, then a session and the
// prompt when there is one, then holds stdin open for hold (or until the
// bridge ends) and closes it.
func (e *editor) converse(ctx context.Context, text string, cancelAfter, hold time.Duration, res *bridgeResult) {
	defer e.in.Close()
	init := e.call(ctx, "initialize", map[string]any{"protocolVersion": 1, "clientCapabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "agentlab-bridge-step", "version": "1"}})
	if init == nil {
		return
	}
	res.Initialize = rawJSON(init.Result)
	if text != "" {
		s := e.call(ctx, "session/new", map[string]any{"cwd": "/", "mcpServers": []any{}})
		if s == nil {
			return
		}
		var ns struct {
			SessionID string `json:"sessionId"`
		}
		json.Unmarshal(s.Result, &ns)
		res.SessionID = ns.SessionID
		if ns.SessionID == "" {
			res.PromptError = rawJSON(s.Error)
			return
		}
		if cancelAfter > 0 {
			t := time.AfterFunc(cancelAfter, func() { e.notify("session/cancel", map[string]any{"sessionId": ns.SessionID}) })
			defer t.Stop()
		}
		pr := e.call(ctx, "session/prompt", map[string]any{"sessionId": ns.SessionID, "prompt": []any{map[string]any{"type": "text", "text": text}}})
		if pr == nil {
			return
		}
		var r struct {
			StopReason string `json:"stopReason"`
		}
		json.Unmarshal(pr.Result, &r)
		res.StopReason = r.StopReason
		if len(pr.Error) > 0 {
			res.PromptError = rawJSON(pr.Error)
		}
	}
	if hold > 0 {
		select {
		case <-e.ended:
		case <-time.After(hold):
		case <-ctx.Done():
		}
	}
}

func (e *editor) finish(res *bridgeResult) {
	e.mu.Lock()
	defer e.mu.Unlock()
	res.Text = e.text.String()
	res.Lines, res.NonJSON = e.lines, e.nonJSON
}
