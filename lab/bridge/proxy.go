package bridge

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"sync"
	"unicode"
)

// MaxLineChars is the ACP line limit of desktop access (spec §8.1).
const MaxLineChars = 65536

// maxLineBytes holds any line within MaxLineChars UTF-16 units (at most
// 3 UTF-8 bytes each) and its "\r\n". A longer line is passed through
// without being parsed: the phone refuses it as it always did.
const maxLineBytes = MaxLineChars*3 + 2

// maxPending bounds the requests waiting for their answer to get a
// notice (an editor has a handful in flight).
const maxPending = 64

// sessionMethods are the ACP requests that carry mcpServers: session/new,
// session/load, and the unstable session/resume and session/fork.
var sessionMethods = map[string]bool{"session/new": true, "session/load": true, "session/resume": true, "session/fork": true}

// NoticeMeta is the _meta key of the bridge's own messages in a thread.
const NoticeMeta = "org.agentos"

// proxy carries ACP lines between the editor and the phone. It keeps
// every message in order and changes one thing: stdio MCP servers in
// session requests are left out (the phone accepts only Streamable HTTP
// servers on public hosts), and the session is told so right after the
// request's answer.
type proxy struct {
	mu sync.Mutex // guards the fields below
	// pending are the requests whose answer gets a notice, by id
	// (compact JSON), oldest first in order.
	pending map[string]notice
	order   []string
}

// notice is what to tell a session about its left-out servers.
type notice struct {
	// sessionID is the request's (load, resume); empty means the
	// answer's (new, fork).
	sessionID string
	servers   []string
}

func newProxy() *proxy { return &proxy{pending: map[string]notice{}} }

// copyLines copies src to dst line by line. each returns what to write
// for a complete line and what to write after it; a line longer than
// maxLineBytes is copied as it comes, unparsed.
func copyLines(dst io.Writer, src io.Reader, each func(line []byte) (out, after []byte)) error {
	br := bufio.NewReaderSize(src, maxLineBytes)
	passing := false // inside an over-long line
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			passing = true
			if _, werr := dst.Write(line); werr != nil {
				return werr
			}
			continue
		case passing:
			passing = false
			if _, werr := dst.Write(line); werr != nil {
				return werr
			}
		case len(line) > 0:
			out, after := each(line)
			if _, werr := dst.Write(out); werr != nil {
				return werr
			}
			if len(after) > 0 {
				if _, werr := dst.Write(after); werr != nil {
					return werr
				}
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// fromEditor is the line to send the phone for an editor line.
func (p *proxy) fromEditor(line []byte) (out, after []byte) {
	if !bytes.Contains(line, []byte(`"mcpServers"`)) {
		return line, nil
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(line, &msg) != nil {
		return line, nil
	}
	var method string
	json.Unmarshal(msg["method"], &method)
	id := msg["id"]
	if !sessionMethods[method] || len(id) == 0 || string(id) == "null" {
		return line, nil
	}
	var params map[string]json.RawMessage
	if json.Unmarshal(msg["params"], &params) != nil {
		return line, nil
	}
	kept, dropped, ok := dropStdio(params["mcpServers"])
	if !ok || len(dropped) == 0 {
		return line, nil
	}
	params["mcpServers"] = kept
	msg["params"] = mustJSON(params)
	n := notice{servers: dropped}
	json.Unmarshal(params["sessionId"], &n.sessionID)
	p.remember(compactID(id), n)
	return append(mustJSON(msg), '\n'), nil
}

// dropStdio splits a mcpServers list into what the phone gets and the
// names of the stdio servers left out. ok is false when the list is not
// a JSON array (the phone then answers invalid_params as usual).
func dropStdio(raw json.RawMessage) (kept json.RawMessage, dropped []string, ok bool) {
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, nil, false
	}
	keep := make([]json.RawMessage, 0, len(list))
	for _, s := range list {
		var m map[string]json.RawMessage
		if json.Unmarshal(s, &m) != nil {
			keep = append(keep, s)
			continue
		}
		var typ, name string
		json.Unmarshal(m["type"], &typ)
		_, hasCommand := m["command"]
		// ACP's stdio variant has no "type"; it has "command".
		if typ == "stdio" || (typ == "" && hasCommand) {
			json.Unmarshal(m["name"], &name)
			dropped = append(dropped, displayName(name))
			continue
		}
		keep = append(keep, s)
	}
	return mustJSON(keep), dropped, true
}

// displayName is a server name as the notice shows it: control
// characters removed, at most 64 characters.
func displayName(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if r := []rune(s); len(r) > 64 {
		s = string(r[:64]) + "…"
	}
	if s == "" {
		s = "(unnamed)"
	}
	return s
}

func (p *proxy) remember(id string, n notice) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.pending[id]; !ok {
		p.order = append(p.order, id)
	}
	p.pending[id] = n
	for len(p.order) > maxPending {
		delete(p.pending, p.order[0])
		p.order = p.order[1:]
	}
}

// take removes and returns the notice waiting for the answer with id.
func (p *proxy) take(id string) (notice, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, ok := p.pending[id]
	if !ok {
		return notice{}, false
	}
	delete(p.pending, id)
	for i, x := range p.order {
		if x == id {
			p.order = append(p.order[:i:i], p.order[i+1:]...)
			break
		}
	}
	return n, true
}

func (p *proxy) waiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.pending) > 0
}

// fromPhone passes a phone line to the editor and, after the answer to a
// session request that lost stdio servers, the notice for its session.
func (p *proxy) fromPhone(line []byte) (out, after []byte) {
	if !p.waiting() {
		return line, nil
	}
	var msg map[string]json.RawMessage
	if json.Unmarshal(line, &msg) != nil {
		return line, nil
	}
	if _, isCall := msg["method"]; isCall || len(msg["id"]) == 0 {
		return line, nil
	}
	n, ok := p.take(compactID(msg["id"]))
	if !ok {
		return line, nil
	}
	if _, failed := msg["error"]; failed {
		return line, nil
	}
	if n.sessionID == "" {
		var res struct {
			SessionID string `json:"sessionId"`
		}
		json.Unmarshal(msg["result"], &res)
		n.sessionID = res.SessionID
	}
	if n.sessionID == "" {
		return line, nil
	}
	return line, noticeLine(n)
}

// NoticeText is what the thread is told about left-out stdio servers.
func NoticeText(servers []string) string {
	quoted := make([]string, len(servers))
	for i, s := range servers {
		quoted[i] = `"` + s + `"`
	}
	if len(servers) == 1 {
		return "[agentlab bridge] The MCP server " + quoted[0] + " runs over stdio on this computer; " +
			"the phone cannot reach it, so it was left out of this session.\n\n"
	}
	return "[agentlab bridge] The MCP servers " + strings.Join(quoted, ", ") + " run over stdio on this computer; " +
		"the phone cannot reach them, so they were left out of this session.\n\n"
}

// noticeLine is the session/update (an agent_message_chunk) telling n's
// session about its left-out servers.
func noticeLine(n notice) []byte {
	b := mustJSON(map[string]any{
		"jsonrpc": "2.0",
		"method":  "session/update",
		"params": map[string]any{
			"sessionId": n.sessionID,
			"update": map[string]any{
				"sessionUpdate": "agent_message_chunk",
				"content":       map[string]any{"type": "text", "text": NoticeText(n.servers)},
				"_meta":         map[string]any{NoticeMeta: map[string]any{"bridge": map[string]any{"droppedMcpServers": n.servers}}},
			},
		},
	})
	return append(b, '\n')
}

// compactID is a JSON-RPC id as a map key.
func compactID(id json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, id) != nil {
		return string(id)
	}
	return b.String()
}

// mustJSON encodes v without HTML escaping (a rewritten line keeps its
// length); v is built from decoded JSON, so it always encodes.
func mustJSON(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic("bridge: encode: " + err.Error())
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
