package steps

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakePhone is the desktop socket of a phone: it pairs the code 123456
// (or the token it handed out), answers initialize, session/new and
// session/prompt (echoing the prompt, or waiting for session/cancel when
// the text is "hang"), and closes every connection when told.
type fakePhone struct {
	ln    net.Listener
	mu    sync.Mutex
	conns []net.Conn
	pairs []string // what each connection paired with: code or token
	inits int      // initialize requests answered
}

const fakeToken = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"

func newFakePhone(t *testing.T) *fakePhone {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &fakePhone{ln: ln}
	t.Cleanup(func() { ln.Close(); p.closeAll() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			p.conns = append(p.conns, c)
			p.mu.Unlock()
			go p.serve(c)
		}
	}()
	return p
}

func (p *fakePhone) port() int { return p.ln.Addr().(*net.TCPAddr).Port }

func (p *fakePhone) closeAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *fakePhone) serve(c net.Conn) {
	defer c.Close()
	r := bufio.NewReader(c)
	send := func(v any) {
		b, _ := json.Marshal(v)
		c.Write(append(b, '\n'))
	}
	var cancel chan struct{}
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			return
		}
		var m struct {
			ID     any             `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		json.Unmarshal(line, &m)
		switch m.Method {
		case "_org.agentos/pair":
			var pp struct{ Code, Token string }
			json.Unmarshal(m.Params, &pp)
			p.mu.Lock()
			p.pairs = append(p.pairs, pp.Code+pp.Token)
			p.mu.Unlock()
			if pp.Code != "123456" && pp.Token != fakeToken {
				send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32000, "message": "refused",
					"data": map[string]any{"reason": "invalid_code"}}})
				return
			}
			res := map[string]any{"pairingId": "p1", "version": 1}
			if pp.Code != "" {
				res["token"] = fakeToken
			}
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": res})
		case "initialize":
			p.mu.Lock()
			p.inits++
			p.mu.Unlock()
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"protocolVersion": 1}})
		case "session/new":
			send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"sessionId": "ses_1"}})
		case "session/cancel":
			if cancel != nil {
				close(cancel)
				cancel = nil
			}
		case "session/prompt":
			var pp struct {
				Prompt []struct{ Text string } `json:"prompt"`
			}
			json.Unmarshal(m.Params, &pp)
			text := pp.Prompt[0].Text
			id := m.ID
			if text == "hang" {
				cancel = make(chan struct{})
				go func(done chan struct{}) {
					<-done
					send(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"stopReason": "cancelled"}})
				}(cancel)
				continue
			}
			send(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": "ses_1",
				"update": map[string]any{"sessionUpdate": "agent_message_chunk", "content": map[string]any{"type": "text", "text": text}}}})
			send(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"stopReason": "end_turn"}})
		}
	}
}

func TestBridgeStep(t *testing.T) {
	phone := newFakePhone(t)
	rt := newRuntime()
	dev := &fakeDevice{serial: "127.0.0.1:5000", forwardTo: phone.port()}
	e, _ := env(t, rt, dev)
	var secrets []string
	e.Secret = func(s reports.Secret) { secrets = append(secrets, string(s.Value)) }
	s := parse(t, `
name: t
steps:
  - bridge: {text: hello}
    save: first
  - bridge: {token: true, text: hang, cancel_after: 100ms}
    save: cancelled
  - bridge: {token: true, hold: 1m}
    background: true
    save: held
  - await: held
  - bridge: {token: true}
    save: plain
`)
	go func() {
		// The phone goes away while the held bridge waits (access off).
		assert.Eventually(t, func() bool { phone.mu.Lock(); defer phone.mu.Unlock(); return phone.inits >= 3 }, 10*time.Second, 10*time.Millisecond)
		phone.mu.Lock()
		held := phone.conns[2]
		phone.mu.Unlock()
		held.Close()
	}()
	r := Run(context.Background(), s, e)
	require.NoError(t, r.Err)
	out := func(name string) map[string]any {
		v, err := r.run.savedValue(name)
		require.NoError(t, err)
		b, _ := json.Marshal(v)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		return m
	}
	first := out("first")
	assert.Equal(t, 0.0, first["exitCode"])
	assert.Equal(t, "ses_1", first["sessionId"])
	assert.Equal(t, "end_turn", first["stopReason"])
	assert.Equal(t, "hello", first["text"])
	assert.Equal(t, 0.0, first["nonJSON"])
	assert.Equal(t, map[string]any{"protocolVersion": 1.0}, first["initialize"])
	assert.Equal(t, "cancelled", out("cancelled")["stopReason"])
	assert.Equal(t, 6.0, out("held")["exitCode"], "the phone closed the held bridge")
	assert.Equal(t, 0.0, out("plain")["exitCode"])
	phone.mu.Lock()
	assert.Equal(t, []string{"123456", fakeToken, fakeToken, fakeToken}, phone.pairs, "later steps pair with the stored token")
	phone.mu.Unlock()
	assert.Contains(t, secrets, "123456", "the pairing code is reported as a secret")
	assert.Equal(t, []string{"tcp:" + strconv.Itoa(phone.port())}, dev.removed, "the forward is removed once, at the end")
	assert.True(t, strings.Contains(strings.Join(rt.verbs(), ","), "desktop code"))
}
