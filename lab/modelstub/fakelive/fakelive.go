// Package fakelive is a stand-in for a live model provider in tests: an
// HTTP server that speaks OpenAI-compatible Chat Completions and Anthropic
// Messages (streamed and plain, the stub's own wire code) and answers
// every call differently — random text chunks, random thinking, and, while
// the turn is young, a random choice of calling one of the offered tools
// with random string arguments. A recording made through it is only
// reproducible if the recorder captured what was actually answered.
//
// It takes one key (Key, or the one given) like a provider and refuses
// others with 401, and can echo that key back in a response header, so
// tests can show that a key never reaches what the stub relays or
// records.
package fakelive

import (
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/agentoslab/agentlab/lab/modelstub/internal/wire"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/script"
)

// Key is the default key the fake provider accepts.
const Key = "sk-fakelive-0123456789abcdef"

// Options configure a fake provider.
type Options struct {
	// Key replaces the default Key.
	Key string
	// Seed seeds the answers; 0 picks a random seed (every server
	// answers differently).
	Seed uint64
	// EchoKey sends the key back in a response header, as a careless
	// proxy might, to test that it is not relayed.
	EchoKey bool
	// MaxToolSteps is how many model calls of a turn may call a tool;
	// later calls only answer text. Default 2.
	MaxToolSteps int
	// ToolProbability is the chance (0–1) that a call may call a tool;
	// default 0.6.
	ToolProbability float64
}

// Server is a running fake provider.
type Server struct {
	*httptest.Server
	key   string
	echo  bool
	steps int
	prob  float64
	calls atomic.Int64

	mu  sync.Mutex
	rnd *rand.Rand
}

// Start serves a fake provider on loopback until Close.
func Start(o *Options) *Server {
	var opts Options
	if o != nil {
		opts = *o
	}
	if opts.Key == "" {
		opts.Key = Key
	}
	if opts.MaxToolSteps == 0 {
		opts.MaxToolSteps = 2
	}
	if opts.ToolProbability == 0 {
		opts.ToolProbability = 0.6
	}
	seed := opts.Seed
	if seed == 0 {
		seed = rand.Uint64()
	}
	s := &Server{key: opts.Key, echo: opts.EchoKey, steps: opts.MaxToolSteps, prob: opts.ToolProbability,
		rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	s.Server = httptest.NewServer(s)
	return s
}

// OpenAIBaseURL is the base URL an OpenAI-compatible client takes.
func (s *Server) OpenAIBaseURL() string { return s.URL + "/v1" }

// AnthropicBaseURL is the base URL an Anthropic client takes (it appends
// /v1/messages).
func (s *Server) AnthropicBaseURL() string { return s.URL }

// Calls is how many model calls were answered.
func (s *Server) Calls() int { return int(s.calls.Load()) }

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var a wire.API
	var key string
	switch {
	case r.URL.Path == "/v1/chat/completions":
		a = wire.OpenAI{}
		key, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	case r.URL.Path == "/v1/messages":
		a = wire.Anthropic{}
		key = r.Header.Get("x-api-key")
	default:
		http.NotFound(w, r)
		return
	}
	if s.echo {
		w.Header().Set("X-Echo-Key", key)
	}
	if subtle.ConstantTimeCompare([]byte(key), []byte(s.key)) != 1 {
		a.WriteError(w, http.StatusUnauthorized, "authentication_error", "invalid key")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	p, err := a.Parse(body)
	if err != nil {
		a.WriteError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	n := s.calls.Add(1)
	resp := s.answer(&p.Req)
	a.WriteResponse(r.Context(), w, p, &resp, strconv.FormatInt(n, 10))
}

var words = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
	"kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "$ierra", "tango", "ünïcode", "{json}"}

// answer makes a random answer to req.
func (s *Server) answer(req *model.Request) script.Response {
	s.mu.Lock()
	defer s.mu.Unlock()
	step := 0
	for _, m := range req.Messages {
		switch m.Role {
		case model.RoleUser:
			step = 0
		case model.RoleAssistant:
			step++
		}
	}
	var resp script.Response
	if s.rnd.IntN(3) == 0 {
		for range 1 + s.rnd.IntN(3) {
			resp.Events = append(resp.Events, model.Event{Kind: model.ThinkingDelta, Text: s.phrase() + " "})
		}
	}
	if step < s.steps && len(req.Tools) > 0 && s.rnd.Float64() < s.prob {
		if s.rnd.IntN(2) == 0 {
			resp.Events = append(resp.Events, model.Event{Kind: model.TextDelta, Text: "Calling " + s.phrase() + "."})
		}
		for i := range 1 + s.rnd.IntN(2) {
			t := req.Tools[s.rnd.IntN(len(req.Tools))]
			args, _ := json.Marshal(s.arguments(t.InputSchema))
			resp.Events = append(resp.Events, model.Event{Kind: model.ToolCallDone, Call: model.ToolCall{
				ID: fmt.Sprintf("call_%x_%d", s.rnd.Uint32(), i), Name: t.Name, Arguments: args}})
		}
		resp.Stop = model.StopToolUse
		return resp
	}
	for range 1 + s.rnd.IntN(4) {
		resp.Events = append(resp.Events, model.Event{Kind: model.TextDelta, Text: s.phrase() + " "})
	}
	resp.Stop = model.StopEndTurn
	return resp
}

func (s *Server) phrase() string {
	n := 1 + s.rnd.IntN(3)
	out := make([]string, n)
	for i := range out {
		out[i] = words[s.rnd.IntN(len(words))]
	}
	return strings.Join(out, " ")
}

// arguments fills the string properties a schema declares (all of them,
// required or not) with random phrases; an untyped schema gets "text".
func (s *Server) arguments(schema json.RawMessage) map[string]any {
	var sc struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	json.Unmarshal(schema, &sc)
	args := map[string]any{}
	for name, p := range sc.Properties {
		switch p.Type {
		case "integer", "number":
			args[name] = s.rnd.IntN(100)
		case "boolean":
			args[name] = s.rnd.IntN(2) == 0
		case "string", "":
			args[name] = s.phrase()
		}
	}
	if len(sc.Properties) == 0 {
		args["text"] = s.phrase()
	}
	return args
}
