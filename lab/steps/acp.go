package steps

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
)

// Desktop ACP on the device (spec §8).
const (
	acpSocket  = "localabstract:agentos-acp"
	pairMethod = "_org.agentos/pair"
	// maxPairLine bounds the pairing answer.
	maxPairLine = 256 << 10
	pairTimeout = 10 * time.Second
	// maxUpdates bounds the updates kept per prompt; maxText the text.
	maxUpdates = 20000
	maxText    = 1 << 20
)

// enableDesktop turns desktop access on and waits until the runtime
// listens.
func enableDesktop(ctx context.Context, t *Target) error {
	var code struct {
		Code string `json:"code"`
	}
	if err := t.Ctl.Call(ctx, &code, "desktop", "enable"); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st struct {
			Enabled   bool   `json:"enabled"`
			Listening bool   `json:"listening"`
			Error     string `json:"listenError"`
		}
		if err := t.Ctl.Call(ctx, &st, "desktop", "status"); err != nil {
			return err
		}
		if st.Listening {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("desktop access is on but the runtime does not listen (%s)", st.Error)
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return err
		}
	}
}

// acpConn is one paired desktop ACP connection to a device's runtime.
type acpConn struct {
	raw  net.Conn
	conn *acp.Connection

	mu      sync.Mutex
	collect map[string]*promptResult
}

// acpOf returns the role's desktop connection, pairing on first use.
func (a *attempt) acpOf(ctx context.Context, t *Target) (*acpConn, error) {
	a.mu.Lock()
	c := a.acp[t.Role]
	a.mu.Unlock()
	if c != nil {
		return c, nil
	}
	c, err := pairDesktop(ctx, t, a.env.Secret, a.log)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	a.acp[t.Role] = c
	a.mu.Unlock()
	return c, nil
}

// pairDesktop turns desktop access on, takes a fresh pairing code, dials
// the runtime's desktop socket through adb, pairs and initializes ACP.
func pairDesktop(ctx context.Context, t *Target, secret func(reports.Secret), log *slog.Logger) (*acpConn, error) {
	if err := enableDesktop(ctx, t); err != nil {
		return nil, fmt.Errorf("desktop access: %w", err)
	}
	var code struct {
		Code string `json:"code"`
	}
	if err := t.Ctl.Call(ctx, &code, "desktop", "code"); err != nil {
		return nil, fmt.Errorf("desktop code: %w", err)
	}
	if secret != nil && code.Code != "" {
		secret(reports.Secret{Name: "pairing code", Value: []byte(code.Code)})
	}
	raw, err := t.Device.Dial(ctx, acpSocket)
	if err != nil {
		if errors.Is(err, devices.ErrDeviceGone) {
			return nil, err
		}
		return nil, fmt.Errorf("dial %s: %w", acpSocket, err)
	}
	br, token, err := pair(ctx, raw, code.Code)
	if err != nil {
		raw.Close()
		return nil, err
	}
	if secret != nil && token != "" {
		secret(reports.Secret{Name: "pairing token", Value: []byte(token)})
	}
	c := &acpConn{raw: raw, collect: map[string]*promptResult{}}
	c.conn = acp.NewConnection(c.handle, raw, br)
	c.conn.SetLogger(log)
	init := map[string]any{
		"protocolVersion":    1,
		"clientCapabilities": map[string]any{"fs": map[string]any{"readTextFile": false, "writeTextFile": false}, "terminal": false},
		"clientInfo":         map[string]any{"name": "agentlab", "version": "1"},
	}
	if _, err := acp.SendRequest[json.RawMessage](c.conn, ctx, "initialize", init); err != nil {
		c.close()
		return nil, fmt.Errorf("initialize: %w", err)
	}
	return c, nil
}

// pair sends the pairing request and reads its answer; it returns the
// reader positioned after the answer line and the token the runtime gave.
func pair(ctx context.Context, conn net.Conn, code string) (*bufio.Reader, string, error) {
	deadline := time.Now().Add(pairTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	conn.SetDeadline(deadline)
	defer conn.SetDeadline(time.Time{})
	line, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 0, "method": pairMethod,
		"params": map[string]any{"version": 1, "code": code, "label": "agentlab"}})
	if _, err := conn.Write(append(line, '\n')); err != nil {
		return nil, "", fmt.Errorf("pair: %w", err)
	}
	br := bufio.NewReaderSize(conn, 64<<10)
	var answer []byte
	for {
		chunk, err := br.ReadSlice('\n')
		answer = append(answer, chunk...)
		if len(answer) > maxPairLine {
			return nil, "", errors.New("pair: the answer is too long")
		}
		if err == nil {
			break
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, "", fmt.Errorf("pair: the runtime closed the connection without answering: %w", err)
		}
	}
	var resp struct {
		Result *struct {
			Token string `json:"token"`
		} `json:"result"`
		Error *acp.RequestError `json:"error"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(answer), &resp); err != nil {
		return nil, "", fmt.Errorf("pair: the answer is not JSON: %w", err)
	}
	if resp.Error != nil {
		return nil, "", fmt.Errorf("pair: refused: %s", resp.Error.Message)
	}
	if resp.Result == nil {
		return nil, "", errors.New("pair: the answer has no result")
	}
	return br, resp.Result.Token, nil
}

func (c *acpConn) close() {
	c.raw.Close()
	<-c.conn.Done()
}

// handle receives the runtime's notifications and requests.
func (c *acpConn) handle(_ context.Context, method string, params json.RawMessage) (any, *acp.RequestError) {
	if method != "session/update" {
		return nil, acp.NewMethodNotFound(method)
	}
	var n struct {
		SessionID string          `json:"sessionId"`
		Update    json.RawMessage `json:"update"`
	}
	if json.Unmarshal(params, &n) != nil {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.collect[n.SessionID]; r != nil {
		r.add(n.Update)
	}
	return nil, nil
}

// promptResult is a prompt's whole event stream and its outcome: the
// prompt step's output.
type promptResult struct {
	SessionID      string            `json:"sessionId"`
	StopReason     string            `json:"stopReason,omitempty"`
	TaskID         string            `json:"taskId,omitempty"`
	Text           string            `json:"text"`
	Thoughts       string            `json:"thoughts,omitempty"`
	ToolCalls      []*toolCall       `json:"toolCalls"`
	Updates        []json.RawMessage `json:"updates"`
	UpdatesDropped int               `json:"updatesDropped,omitempty"`
	Error          *rpcError         `json:"error,omitempty"`
	CancelSent     bool              `json:"cancelSent,omitempty"`
	DurationMs     int64             `json:"durationMs"`
}

// toolCall is one tool call of the stream, folded from tool_call and its
// updates. Name is the final tool name (_meta."org.agentos".toolName; the
// title for runtimes that had none); Title is what people are shown.
type toolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Title     string `json:"title,omitempty"`
	Kind      string `json:"kind,omitempty"`
	Status    string `json:"status"`
	Arguments any    `json:"arguments,omitempty"`
	Result    string `json:"result,omitempty"`
	Meta      any    `json:"meta,omitempty"`
	// Flow is the call's course in stream order: each new status, and
	// "consent:<status>" for a consent line, so a check can test order
	// (asked, allowed, then run) and not only the last status.
	Flow []string `json:"flow"`
}

// step appends one point of the call's course, skipping repeats.
func (tc *toolCall) step(s string) {
	if s != "" && (len(tc.Flow) == 0 || tc.Flow[len(tc.Flow)-1] != s) {
		tc.Flow = append(tc.Flow, s)
	}
}

type rpcError struct {
	Code        int    `json:"code"`
	Message     string `json:"message"`
	AgentosCode string `json:"agentosCode,omitempty"`
	Data        any    `json:"data,omitempty"`
}

func rpcErrorOf(err error) (*rpcError, bool) {
	var re *acp.RequestError
	if !errors.As(err, &re) {
		return nil, false
	}
	out := &rpcError{Code: re.Code, Message: re.Message, Data: scenario.ToJSON(re.Data)}
	if m, ok := out.Data.(map[string]any); ok {
		out.AgentosCode, _ = m["agentosCode"].(string)
	}
	return out, true
}

// add folds one session/update into the result.
func (r *promptResult) add(raw json.RawMessage) {
	if len(r.Updates) < maxUpdates {
		r.Updates = append(r.Updates, raw)
	} else {
		r.UpdatesDropped++
	}
	var u struct {
		Kind       string          `json:"sessionUpdate"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"toolCallId"`
		Title      string          `json:"title"`
		ToolKind   string          `json:"kind"`
		Status     string          `json:"status"`
		RawInput   json.RawMessage `json:"rawInput"`
		Meta       json.RawMessage `json:"_meta"`
	}
	if json.Unmarshal(raw, &u) != nil {
		return
	}
	var meta struct {
		AgentOS struct {
			ToolName string `json:"toolName"`
			// Consent marks a consent status line, not a result.
			Consent string `json:"consent"`
		} `json:"org.agentos"`
	}
	json.Unmarshal(u.Meta, &meta)
	switch u.Kind {
	case "agent_message_chunk", "agent_thought_chunk":
		var c struct {
			Text string `json:"text"`
		}
		json.Unmarshal(u.Content, &c)
		if u.Kind == "agent_message_chunk" && len(r.Text) < maxText {
			r.Text += c.Text
		} else if len(r.Thoughts) < maxText {
			r.Thoughts += c.Text
		}
	case "tool_call":
		tc := &toolCall{ID: u.ToolCallID, Name: u.Title, Title: u.Title, Kind: u.ToolKind, Status: u.Status, Flow: []string{}}
		tc.step(u.Status)
		if meta.AgentOS.ToolName != "" {
			tc.Name = meta.AgentOS.ToolName
		}
		if len(u.RawInput) > 0 {
			tc.Arguments = rawJSON(u.RawInput)
		}
		if len(u.Meta) > 0 {
			tc.Meta = rawJSON(u.Meta)
		}
		r.ToolCalls = append(r.ToolCalls, tc)
		r.addContent(tc, u.Content)
	case "tool_call_update":
		var tc *toolCall
		for _, x := range r.ToolCalls {
			if x.ID == u.ToolCallID {
				tc = x
			}
		}
		if tc == nil {
			tc = &toolCall{ID: u.ToolCallID, Flow: []string{}}
			r.ToolCalls = append(r.ToolCalls, tc)
		}
		if meta.AgentOS.Consent != "" {
			tc.step("consent:" + meta.AgentOS.Consent)
		} else {
			tc.step(u.Status)
		}
		if u.Status != "" {
			tc.Status = u.Status
		}
		if u.Title != "" {
			tc.Title = u.Title
		}
		if meta.AgentOS.Consent == "" {
			r.addContent(tc, u.Content)
		}
	}
}

// addContent appends the text of tool-call content blocks to its result.
func (r *promptResult) addContent(tc *toolCall, raw json.RawMessage) {
	var blocks []struct {
		Type    string `json:"type"`
		Content struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &blocks) != nil {
		return
	}
	for _, b := range blocks {
		if b.Content.Text != "" && len(tc.Result) < maxText {
			tc.Result += b.Content.Text
		}
	}
}

func rawJSON(b json.RawMessage) any {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	return v
}

// newSession opens a session with the step's options. A refusal is
// returned as an *rpcError.
func (c *acpConn) newSession(ctx context.Context, p *scenario.PromptStep) (string, error) {
	servers := []any{}
	for _, m := range p.MCPServers {
		headers := []any{}
		for _, h := range m.Headers {
			headers = append(headers, map[string]any{"name": h.Name, "value": h.Value})
		}
		servers = append(servers, map[string]any{"type": "http", "name": m.Name, "url": m.URL, "headers": headers})
	}
	params := map[string]any{"cwd": "/", "mcpServers": servers}
	if p.ToolScope != nil {
		scope := []any{}
		for _, r := range *p.ToolScope {
			scope = append(scope, map[string]any{"plugin": r.Plugin, "tool": r.Tool})
		}
		params["_meta"] = map[string]any{"org.agentos": map[string]any{"toolScope": scope}}
	}
	res, err := acp.SendRequest[json.RawMessage](c.conn, ctx, "session/new", params)
	if err != nil {
		return "", err
	}
	var out struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.SessionID == "" {
		return "", fmt.Errorf("session/new: no sessionId in the answer")
	}
	if p.Mode != "" && p.Mode != "default" {
		if _, err := acp.SendRequest[json.RawMessage](c.conn, ctx, "session/set_mode", map[string]any{"sessionId": out.SessionID, "modeId": p.Mode}); err != nil {
			return out.SessionID, err
		}
	}
	return out.SessionID, nil
}

// prompt sends one prompt and collects its stream until the answer.
func (c *acpConn) prompt(ctx context.Context, sessionID, text string, cancelAfter time.Duration) (*promptResult, error) {
	r := &promptResult{SessionID: sessionID, ToolCalls: []*toolCall{}, Updates: []json.RawMessage{}}
	c.mu.Lock()
	c.collect[sessionID] = r
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.collect, sessionID)
		c.mu.Unlock()
	}()
	start := time.Now()
	if cancelAfter > 0 {
		t := time.AfterFunc(cancelAfter, func() {
			c.mu.Lock()
			r.CancelSent = true
			c.mu.Unlock()
			c.conn.SendNotification(context.WithoutCancel(ctx), "session/cancel", map[string]any{"sessionId": sessionID})
		})
		defer t.Stop()
	}
	res, err := acp.SendRequest[json.RawMessage](c.conn, ctx, "session/prompt", map[string]any{
		"sessionId": sessionID,
		"prompt":    []any{map[string]any{"type": "text", "text": text}},
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	r.DurationMs = time.Since(start).Milliseconds()
	if err != nil {
		re, ok := rpcErrorOf(err)
		if !ok {
			return nil, err
		}
		r.Error = re
		return r, nil
	}
	var out struct {
		StopReason string `json:"stopReason"`
		Meta       struct {
			AgentOS struct {
				TaskID string `json:"taskId"`
			} `json:"org.agentos"`
		} `json:"_meta"`
	}
	json.Unmarshal(res, &out)
	r.StopReason, r.TaskID = out.StopReason, out.Meta.AgentOS.TaskID
	return r, nil
}

// prompt is the prompt step.
func (a *attempt) prompt(ctx context.Context, t *Target, st *scenario.Step, expand func(string) (string, error)) (any, error) {
	p := st.Prompt
	text, err := expand(p.Text)
	if p.Script != "" {
		text, err = a.sc.ScriptText(p.Script, a.lookup(t))
	}
	if err != nil {
		return nil, err
	}
	c, err := a.acpOf(ctx, t)
	if err != nil {
		return nil, err
	}
	var sessionID string
	if p.Session != "" {
		prev, err := a.savedValue(p.Session)
		if err != nil {
			return nil, err
		}
		m, _ := prev.(map[string]any)
		sessionID, _ = m["sessionId"].(string)
		if sessionID == "" {
			return nil, fmt.Errorf("prompt %q opened no session", p.Session)
		}
	} else {
		sessionID, err = c.newSession(ctx, p)
		if err != nil {
			if re, ok := rpcErrorOf(err); ok {
				a.notePrompt(st.OutputName())
				return &promptResult{SessionID: sessionID, Error: re, ToolCalls: []*toolCall{}, Updates: []json.RawMessage{}}, nil
			}
			return nil, a.connErr(t, err)
		}
	}
	res, err := c.prompt(ctx, sessionID, text, p.CancelAfter.D())
	if err != nil {
		return nil, a.connErr(t, err)
	}
	a.notePrompt(st.OutputName())
	return res, nil
}

func (a *attempt) notePrompt(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.prompts = append(a.prompts, name)
}

// connErr drops a broken connection (the next prompt pairs again) and
// says whether the device itself went away.
func (a *attempt) connErr(t *Target, err error) error {
	a.mu.Lock()
	c := a.acp[t.Role]
	delete(a.acp, t.Role)
	a.mu.Unlock()
	if c != nil {
		c.close()
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, serr := t.Device.State(sctx); errors.Is(serr, devices.ErrDeviceGone) {
		return labFault("desktop ACP", err)
	}
	return fmt.Errorf("desktop ACP: %w", err)
}
