package modelstub

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/agentoslab/agentlab/lab/modelstub/internal/wire"
	"github.com/agentoslab/agentlab/runtime/model"
	"gopkg.in/yaml.v3"
)

// Upstream is the live provider a recording stub forwards to (lab.yaml's
// model.mode record). The stub then answers every bound token by
// forwarding the request, streams the provider's answer back unchanged,
// and records it as a model script step (Recording).
type Upstream struct {
	// API is APIOpenAI or APIAnthropic: the dialect the runtimes must
	// speak to the stub, since requests and answers pass through as
	// they are.
	API string
	// BaseURL is the provider's endpoint; "" is the public one. OpenAI:
	// the URL that /chat/completions is appended to; Anthropic: the URL
	// that /v1/messages is appended to, as the SDKs do.
	BaseURL string
	// Key is the provider's key. It replaces the stub's fake key on the
	// way out and is never recorded, logged or sent back.
	Key string
	// Client makes the requests; nil is a client without a timeout (a
	// stream lasts as long as the provider sends).
	Client *http.Client
}

// Public endpoints of the providers.
const (
	DefaultOpenAIBaseURL    = "https://api.openai.com/v1"
	DefaultAnthropicBaseURL = "https://api.anthropic.com"
)

// maxCapture bounds the answer kept to record one call; a longer answer
// is still passed through, but its step records only a failure note.
const maxCapture = 8 << 20

// url is where a request of the upstream's dialect goes.
func (u *Upstream) url() string {
	base := strings.TrimRight(u.BaseURL, "/")
	if u.API == APIAnthropic {
		if base == "" {
			base = DefaultAnthropicBaseURL
		}
		return base + "/v1/messages"
	}
	if base == "" {
		base = DefaultOpenAIBaseURL
	}
	return base + "/chat/completions"
}

// forwardedHeaders are the request headers passed to the provider; the
// key headers are replaced, everything else (cookies, tracing) stays
// behind.
var forwardedHeaders = []string{"Content-Type", "Accept", "Anthropic-Version", "Anthropic-Beta", "OpenAI-Beta"}

// returnedHeaders are the provider's response headers passed back.
var returnedHeaders = []string{"Content-Type", "Cache-Control", "Retry-After"}

// forward sends body to the provider, copies its answer to w as it comes
// and returns the step that reproduces it.
func (s *Stub) forward(ctx context.Context, w http.ResponseWriter, r *http.Request, api string, body []byte) (*recStep, int, bool) {
	u := s.upstream
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.url(), bytes.NewReader(body))
	if err != nil {
		st, status := s.forwardFailed(w, api, err)
		return st, status, false
	}
	for _, h := range forwardedHeaders {
		if v := r.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
	if api == APIAnthropic {
		req.Header.Set("x-api-key", u.Key)
		if req.Header.Get("Anthropic-Version") == "" {
			req.Header.Set("Anthropic-Version", "2023-06-01")
		}
	} else {
		req.Header.Set("Authorization", "Bearer "+u.Key)
	}
	client := u.Client
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			// The runtime gave up before the provider answered.
			return &recStep{Fail: &recFail{Hang: true}}, 0, false
		}
		st, status := s.forwardFailed(w, api, err)
		return st, status, false
	}
	defer resp.Body.Close()
	for _, h := range returnedHeaders {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	var got bytes.Buffer
	buf := make([]byte, 32<<10)
	over, broken := false, false
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			if got.Len()+n <= maxCapture {
				got.Write(buf[:n])
			} else {
				over = true
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				broken = true
				break
			}
			rc.Flush()
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			broken = true
			break
		}
	}
	status := resp.StatusCode
	if status < 200 || status > 299 {
		retry := resp.Header.Get("Retry-After")
		if _, err := strconv.Atoi(retry); err != nil {
			if _, err := http.ParseTime(retry); err != nil {
				retry = ""
			}
		}
		return &recStep{Fail: &recFail{Status: status, RetryAfter: retry}}, status, broken
	}
	if over {
		return &recStep{Comment: "the answer was larger than the recorder keeps; replayed as an empty answer"}, status, broken
	}
	// An answer that reached its stop reason is whole, even if the runtime
	// hung up before the last bytes; one that did not is cut there.
	return parseAnswer(api, resp.Header.Get("Content-Type"), got.Bytes()), status, broken
}

// forwardFailed answers a provider that could not be reached with 502, and
// records the same.
func (s *Stub) forwardFailed(w http.ResponseWriter, api string, err error) (*recStep, int) {
	s.log.Info("model stub: provider unreachable", "err", errors.Unwrap(err))
	apiOf(api).WriteError(w, http.StatusBadGateway, wire.ErrorKind(http.StatusBadGateway), "the live provider could not be reached")
	return &recStep{Fail: &recFail{Status: http.StatusBadGateway}}, http.StatusBadGateway
}

func apiOf(name string) wire.API {
	if name == APIAnthropic {
		return wire.Anthropic{}
	}
	return wire.OpenAI{}
}

// A recording: per token, the answers by (user messages, step index),
// the key the script's step index is computed from.

type recKey struct{ users, step int }

type recording struct {
	steps map[recKey]*recStep
	// conflicts counts answers at a key already answered differently
	// (a retried call, or a second session of the attempt).
	conflicts int
}

// keyOf is where the answer to req sits in a script: the number of user
// messages, and the assistant messages after the last one.
func keyOf(req *model.Request) recKey {
	var k recKey
	for _, m := range req.Messages {
		switch m.Role {
		case model.RoleUser:
			k.users++
			k.step = 0
		case model.RoleAssistant:
			k.step++
		}
	}
	return k
}

// add records st at k: a successful answer replaces a failure (the
// runtime retried), otherwise the first answer stays.
func (rec *recording) add(k recKey, st *recStep) {
	old, ok := rec.steps[k]
	switch {
	case !ok:
		rec.steps[k] = st
	case old.Fail != nil && st.Fail == nil:
		rec.steps[k] = st
	default:
		rec.conflicts++
	}
}

// ErrNotRecording: Recording was asked of a stub without an upstream, or
// of a token that was never bound.
var ErrNotRecording = errors.New("the stub is not recording this token")

// Recording returns the model script (runtime/model/script format, YAML)
// that reproduces the answers the provider gave to token's requests since
// it was bound, and whether it holds any answer. Only the first turn's
// answers are a script's steps; answers of later turns are counted in the
// description, since a script answers every turn from the same steps.
// It first waits, within ctx, for answers still being relayed: a client
// may have read an answer's last byte before the stub recorded it.
func (s *Stub) Recording(ctx context.Context, token string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bindings[token]
	if b == nil || b.rec == nil {
		return nil, false, fmt.Errorf("model stub: recording %s: %w", short(token), ErrNotRecording)
	}
	for b.inflight > 0 {
		idle := b.idle
		s.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			s.mu.Lock()
			return nil, false, fmt.Errorf("model stub: recording %s: %w", short(token), ctx.Err())
		}
		s.mu.Lock()
	}
	rec := b.rec
	var keys []recKey
	for k := range rec.steps {
		keys = append(keys, k)
	}
	first, later := 0, 0
	for _, k := range keys {
		if first == 0 || k.users < first {
			first = k.users
		}
	}
	doc := recDoc{Description: "Recorded from the live provider."}
	last := -1
	for _, k := range keys {
		if k.users != first {
			later++
			continue
		}
		last = max(last, k.step)
	}
	for i := 0; i <= last; i++ {
		st := rec.steps[recKey{first, i}]
		if st == nil {
			st = &recStep{Comment: "no call was recorded at this step"}
		}
		doc.Steps = append(doc.Steps, *st)
	}
	if later > 0 {
		doc.Description += fmt.Sprintf(" %d answers of later turns are not in the steps (a script answers every turn alike).", later)
	}
	if rec.conflicts > 0 {
		doc.Description += fmt.Sprintf(" %d further answers at an already recorded step were left out.", rec.conflicts)
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, false, fmt.Errorf("model stub: recording: %w", err)
	}
	return out, len(doc.Steps) > 0, nil
}

// recDoc is the script document a recording is written as.
type recDoc struct {
	Description string    `yaml:"description,omitempty"`
	Steps       []recStep `yaml:"steps"`
}

type recStep struct {
	Thinking  []string  `yaml:"thinking,omitempty"`
	Text      []string  `yaml:"text,omitempty"`
	ToolCalls []recCall `yaml:"toolCalls,omitempty"`
	Stop      string    `yaml:"stop,omitempty"`
	CutAfter  *int      `yaml:"cutAfter,omitempty"`
	Fail      *recFail  `yaml:"fail,omitempty"`
	Comment   string    `yaml:"comment,omitempty"`
}

// events counts the step's events as the script counts them.
func (st *recStep) events() int { return len(st.Thinking) + len(st.Text) + len(st.ToolCalls) }

type recFail struct {
	Status     int    `yaml:"status,omitempty"`
	RetryAfter string `yaml:"retryAfter,omitempty"`
	Hang       bool   `yaml:"hang,omitempty"`
}

type recCall struct {
	ID        string     `yaml:"id,omitempty"`
	Name      string     `yaml:"name"`
	Arguments *yaml.Node `yaml:"arguments"`
}

// callAcc accumulates one tool call from its fragments.
type callAcc struct {
	id, name string
	args     strings.Builder
}

// answer is what a provider's answer said, in stream order.
type answer struct {
	thinking, text []string
	calls          []*callAcc
	stop           string
	done           bool // a stop reason arrived
}

func (a *answer) step() *recStep {
	st := &recStep{Thinking: a.thinking, Text: a.text, Stop: a.stop}
	dropped := 0
	for _, c := range a.calls {
		if c.name == "" {
			// A script names every call; a provider's nameless call
			// (which the runtime refuses anyway) cannot be replayed.
			dropped++
			continue
		}
		st.ToolCalls = append(st.ToolCalls, recCall{ID: c.id, Name: c.name, Arguments: argumentsNode(c.args.String())})
	}
	if dropped > 0 {
		st.Comment = fmt.Sprintf("%d tool calls without a name were left out", dropped)
	}
	if !a.done {
		n := st.events()
		st.CutAfter = &n
		st.Stop = ""
	}
	return st
}

// parseAnswer reads a provider's answer, an SSE stream or one JSON
// document, into the step that reproduces it.
func parseAnswer(api, contentType string, body []byte) *recStep {
	var a answer
	stream := strings.HasPrefix(strings.TrimSpace(contentType), "text/event-stream")
	switch {
	case api == APIAnthropic && stream:
		for _, data := range sseData(body) {
			a.anthropicEvent(data)
		}
	case api == APIAnthropic:
		a.anthropicJSON(body)
	case stream:
		for _, data := range sseData(body) {
			a.openaiChunk(data)
		}
	default:
		a.openaiJSON(body)
	}
	return a.step()
}

// sseData returns the data of each event of an SSE stream.
func sseData(body []byte) [][]byte {
	var out [][]byte
	var cur []byte
	has := false
	for _, line := range bytes.Split(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			if has {
				out = append(out, cur)
			}
			cur, has = nil, false
			continue
		}
		if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			v = bytes.TrimPrefix(v, []byte(" "))
			if has {
				cur = append(cur, '\n')
			}
			cur = append(cur, v...)
			has = true
		}
	}
	if has {
		out = append(out, cur)
	}
	return out
}

// openaiStops map OpenAI finish reasons to the script's stop reasons.
var openaiStops = map[string]string{
	"stop":           model.StopEndTurn,
	"tool_calls":     model.StopToolUse,
	"function_call":  model.StopToolUse,
	"length":         model.StopMaxTokens,
	"content_filter": model.StopRefusal,
}

// anthropicStops map Anthropic stop reasons to the script's.
var anthropicStops = map[string]string{
	"end_turn":      model.StopEndTurn,
	"stop_sequence": model.StopEndTurn,
	"pause_turn":    model.StopEndTurn,
	"tool_use":      model.StopToolUse,
	"max_tokens":    model.StopMaxTokens,
	"refusal":       model.StopRefusal,
}

func stopOf(table map[string]string, reason string) string {
	if s, ok := table[reason]; ok {
		return s
	}
	return model.StopEndTurn
}

type oaiToolDelta struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func (a *answer) openaiChunk(data []byte) {
	if bytes.Equal(bytes.TrimSpace(data), []byte("[DONE]")) {
		return
	}
	var c struct {
		Choices []struct {
			Delta struct {
				Content          *string        `json:"content"`
				ReasoningContent *string        `json:"reasoning_content"`
				Reasoning        *string        `json:"reasoning"`
				ToolCalls        []oaiToolDelta `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &c) != nil || len(c.Choices) == 0 {
		return
	}
	ch := c.Choices[0]
	for _, th := range []*string{ch.Delta.ReasoningContent, ch.Delta.Reasoning} {
		if th != nil && *th != "" {
			a.thinking = append(a.thinking, *th)
		}
	}
	if t := ch.Delta.Content; t != nil && *t != "" {
		a.text = append(a.text, *t)
	}
	for _, td := range ch.Delta.ToolCalls {
		for len(a.calls) <= td.Index {
			a.calls = append(a.calls, &callAcc{})
		}
		c := a.calls[td.Index]
		if td.ID != "" {
			c.id = td.ID
		}
		c.name += td.Function.Name
		c.args.WriteString(td.Function.Arguments)
	}
	if f := ch.FinishReason; f != nil && *f != "" {
		a.stop, a.done = stopOf(openaiStops, *f), true
	}
}

func (a *answer) openaiJSON(body []byte) {
	var d struct {
		Choices []struct {
			Message struct {
				Content          *string `json:"content"`
				ReasoningContent *string `json:"reasoning_content"`
				ToolCalls        []struct {
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if json.Unmarshal(body, &d) != nil || len(d.Choices) == 0 {
		return
	}
	ch := d.Choices[0]
	if t := ch.Message.ReasoningContent; t != nil && *t != "" {
		a.thinking = append(a.thinking, *t)
	}
	if t := ch.Message.Content; t != nil && *t != "" {
		a.text = append(a.text, *t)
	}
	for _, tc := range ch.Message.ToolCalls {
		c := &callAcc{id: tc.ID, name: tc.Function.Name}
		c.args.WriteString(tc.Function.Arguments)
		a.calls = append(a.calls, c)
	}
	a.stop, a.done = stopOf(openaiStops, ch.FinishReason), true
}

func (a *answer) anthropicEvent(data []byte) {
	var e struct {
		Type         string `json:"type"`
		ContentBlock struct {
			Type string `json:"type"`
			ID   string `json:"id"`
			Name string `json:"name"`
		} `json:"content_block"`
		Delta struct {
			Type        string `json:"type"`
			Text        string `json:"text"`
			Thinking    string `json:"thinking"`
			PartialJSON string `json:"partial_json"`
			StopReason  string `json:"stop_reason"`
		} `json:"delta"`
	}
	if json.Unmarshal(data, &e) != nil {
		return
	}
	switch e.Type {
	case "content_block_start":
		if e.ContentBlock.Type == "tool_use" {
			a.calls = append(a.calls, &callAcc{id: e.ContentBlock.ID, name: e.ContentBlock.Name})
		}
	case "content_block_delta":
		switch e.Delta.Type {
		case "text_delta":
			if e.Delta.Text != "" {
				a.text = append(a.text, e.Delta.Text)
			}
		case "thinking_delta":
			if e.Delta.Thinking != "" {
				a.thinking = append(a.thinking, e.Delta.Thinking)
			}
		case "input_json_delta":
			if n := len(a.calls); n > 0 {
				a.calls[n-1].args.WriteString(e.Delta.PartialJSON)
			}
		}
	case "message_delta":
		if e.Delta.StopReason != "" {
			a.stop = stopOf(anthropicStops, e.Delta.StopReason)
		}
	case "message_stop":
		if a.stop == "" {
			a.stop = model.StopEndTurn
		}
		a.done = true
	}
}

func (a *answer) anthropicJSON(body []byte) {
	var d struct {
		Content []struct {
			Type     string          `json:"type"`
			Text     string          `json:"text"`
			Thinking string          `json:"thinking"`
			ID       string          `json:"id"`
			Name     string          `json:"name"`
			Input    json.RawMessage `json:"input"`
		} `json:"content"`
		StopReason string `json:"stop_reason"`
	}
	if json.Unmarshal(body, &d) != nil {
		return
	}
	for _, b := range d.Content {
		switch b.Type {
		case "text":
			if b.Text != "" {
				a.text = append(a.text, b.Text)
			}
		case "thinking":
			if b.Thinking != "" {
				a.thinking = append(a.thinking, b.Thinking)
			}
		case "tool_use":
			c := &callAcc{id: b.ID, name: b.Name}
			c.args.Write(b.Input)
			a.calls = append(a.calls, c)
		}
	}
	a.stop, a.done = stopOf(anthropicStops, d.StopReason), true
}

// argumentsNode turns a call's raw JSON arguments into the script's
// arguments mapping, keys in the model's order. A dollar sign is doubled,
// since the script reads $ as a reference to a tool result. Arguments
// that are not a JSON object cannot be replayed as sent; they become {}.
func argumentsNode(raw string) *yaml.Node {
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	n, err := jsonNode(dec)
	if err != nil || n.Kind != yaml.MappingNode {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}
	}
	if _, err := dec.Token(); err != io.EOF {
		return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Style: yaml.FlowStyle}
	}
	return n
}

// jsonNode reads one JSON value as a YAML node, preserving key order.
func jsonNode(dec *json.Decoder) (*yaml.Node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		switch v {
		case '{':
			n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, errors.New("object key is not a string")
				}
				val, err := jsonNode(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, strNode(k), val)
			}
			_, err := dec.Token()
			return n, err
		case '[':
			n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
			for dec.More() {
				val, err := jsonNode(dec)
				if err != nil {
					return nil, err
				}
				n.Content = append(n.Content, val)
			}
			_, err := dec.Token()
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", v)
	case string:
		return strNode(strings.ReplaceAll(v, "$", "$$")), nil
	case json.Number:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: numberTag(v), Value: v.String()}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}, nil
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null"}, nil
	}
	return nil, fmt.Errorf("unexpected token %T", tok)
}

func numberTag(n json.Number) string {
	if _, err := n.Int64(); err == nil {
		return "!!int"
	}
	return "!!float"
}

// strNode is a string scalar; the explicit tag keeps "true" or "12" a
// string when written.
func strNode(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}
