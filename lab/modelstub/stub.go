// Package modelstub is the lab's model stub: an HTTP server on the lab
// host that speaks OpenAI-compatible Chat Completions (streaming SSE and
// plain JSON) and Anthropic Messages (streaming SSE and plain JSON), and
// answers every request from a model script (runtime/model/script, the
// same scripts the runtime's scripted provider serves).
//
// One stub serves every device and scenario at once. Each (scenario
// attempt, device) gets a token; its script is bound to the token with
// Bind, and the runtime on the device is pointed at
//
//	http://127.0.0.1:<device port>/t/<token>/v1
//
// where the device port reaches the stub through `adb reverse tcp:<device
// port> tcp:<stub port>` (DeviceBaseURL). On devices whose resolver the lab
// controls (virtual devices: their netd answers from the lab's table) the
// host is DeviceHost instead of the address, so every request of the run
// goes through the device's DNS as a live provider's would. Requests under /t/<token>/ are
// answered from the token's script: Chat Completions at
// …/chat/completions, Messages at …/messages (with or without a further
// /v1, as the Anthropic SDK appends one), the model list at …/models.
//
// Everything a script can do is served over HTTP: text and thinking
// chunks with their delays, tool calls (raw [plugin, server, tool] names
// resolved by the script package against the tools the request offers),
// HTTP failures with retry-after, streams cut after some events (the
// connection is reset mid-body), streams that stall, requests that never
// get headers, and the compromised model.
//
// Every request is recorded per token (Requests): model id, system
// prompt, messages, offered tool names, time and the status answered, so a
// scenario can assert what the model was offered and what it saw.
//
// Started with an Upstream (lab.yaml model.mode record), the stub is a
// recorder: it forwards every bound token's requests unchanged to the live
// provider (with the provider's key, which never comes back), streams the
// answers through, and keeps per token the model script that reproduces
// them (Recording), which agentlab replay serves later.
//
// The stub accepts one fixed fake key (FakeKey) as "Authorization: Bearer"
// or "x-api-key" and never logs headers, prompts, tool arguments or
// results.
package modelstub

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/lab/modelstub/internal/wire"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/script"
)

// FakeKey is the key the stub accepts. It is not a secret: provisioning
// gives it to runtimes that talk to the stub.
const FakeKey = "agentlab-stub-key"

// Limits.
const (
	// MaxBodyBytes bounds one request body.
	MaxBodyBytes = 8 << 20
	// DefaultMaxRecorded bounds the requests kept per token; older ones
	// are dropped first.
	DefaultMaxRecorded = 512
	// MaxTokenLen bounds a token.
	MaxTokenLen = 64
)

// APIs a request can use.
const (
	APIOpenAI    = "openai"
	APIAnthropic = "anthropic"
)

// Recorded is one request the stub received for a token.
type Recorded struct {
	Time time.Time `json:"time"`
	// API is APIOpenAI or APIAnthropic.
	API string `json:"api"`
	// Stream says whether a streamed answer was asked for.
	Stream   bool            `json:"stream"`
	Model    string          `json:"model"`
	System   string          `json:"system"`
	Messages []model.Message `json:"messages"`
	// Tools are the names of the tools offered, in request order.
	Tools []string `json:"tools"`
	// Status is the HTTP status answered (200 for streams that were cut
	// or stalled afterwards).
	Status int `json:"status"`
	// ScriptError is the script error, when the answer was one.
	ScriptError string `json:"scriptError,omitempty"`
}

// Options configure a stub. The zero value works.
type Options struct {
	// Addr is where to listen; default "127.0.0.1:0" (a free port on
	// loopback; devices reach it through adb reverse).
	Addr string
	// MaxRecorded bounds the requests kept per token; default
	// DefaultMaxRecorded.
	MaxRecorded int
	// Logger gets one line per request (API, status, duration, a token
	// prefix) and failures; never headers, prompts, arguments or results.
	// Nil discards.
	Logger *slog.Logger
	// Upstream, when set, makes the stub a recorder: every bound token's
	// requests are forwarded to this live provider instead of answered
	// from a script, and the answers are kept for Recording.
	Upstream *Upstream
	// Chaos, when set, answers every token bound with no script (lab.yaml
	// model mode chaos); a token bound to a script keeps its script.
	Chaos *Chaos
}

// Stub is a running model stub. Its methods are safe for concurrent use.
type Stub struct {
	ln       net.Listener
	srv      *http.Server
	log      *slog.Logger
	maxRec   int
	upstream *Upstream
	chaos    *Chaos

	base   context.Context // request contexts; cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // Serve returned

	mu       sync.Mutex
	bindings map[string]*binding
	seq      uint64
}

type binding struct {
	script   *script.Script
	chaos    *Chaos // answers instead of script when set
	requests []Recorded
	dropped  int
	rec      *recording // recorder stubs only
	// inflight counts relays not yet recorded; idle is closed when the
	// count drops to zero, so a Recording waits for the last answer.
	inflight int
	idle     chan struct{}
}

// Start listens and serves until Close.
func Start(opts *Options) (*Stub, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Addr == "" {
		o.Addr = "127.0.0.1:0"
	}
	if o.MaxRecorded <= 0 {
		o.MaxRecorded = DefaultMaxRecorded
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("model stub: %w", err)
	}
	base, cancel := context.WithCancel(context.Background())
	s := &Stub{ln: ln, log: log, maxRec: o.MaxRecorded, upstream: o.Upstream, chaos: o.Chaos, base: base, cancel: cancel,
		done: make(chan struct{}), bindings: map[string]*binding{}}
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln)
	}()
	return s, nil
}

// Close stops the stub: requests that hang or stall are ended, and Close
// returns once the server has stopped.
func (s *Stub) Close() error {
	s.cancel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if err != nil {
		s.srv.Close()
	}
	<-s.done
	if errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// Port is the stub's TCP port on the lab host.
func (s *Stub) Port() int { return s.ln.Addr().(*net.TCPAddr).Port }

// URL is the stub's root URL on the lab host.
func (s *Stub) URL() string { return "http://" + s.ln.Addr().String() }

// BaseURL is the OpenAI-compatible base URL of token on the lab host
// (for clients on the host itself).
func (s *Stub) BaseURL(token string) string { return s.URL() + "/t/" + token + "/v1" }

// AnthropicBaseURL is the Anthropic base URL of token on the lab host
// (the Anthropic SDK appends /v1/messages).
func (s *Stub) AnthropicBaseURL(token string) string { return s.URL() + "/t/" + token }

// DeviceHost is the name the lab publishes its stub under on devices
// whose resolver it controls; it resolves to the device's loopback, where
// adb reverse listens.
const DeviceHost = "model.agentlab.test"

// DeviceBaseURL is the base URL a device's runtime uses for token when
// `adb reverse tcp:<devicePort> tcp:<stub port>` is in place: host is
// DeviceHost on a device that resolves it, "" for the loopback address.
// Both OpenAI-compatible and Anthropic clients may use it.
func DeviceBaseURL(host string, devicePort int, token string) string {
	if host == "" {
		host = "127.0.0.1"
	}
	return "http://" + host + ":" + strconv.Itoa(devicePort) + "/t/" + token + "/v1"
}

// NewToken returns a fresh random token.
func NewToken() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func validToken(t string) bool {
	if t == "" || len(t) > MaxTokenLen {
		return false
	}
	for _, c := range t {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// ErrBadToken: a token with characters other than [A-Za-z0-9._-], or
// longer than MaxTokenLen.
var ErrBadToken = errors.New("bad stub token")

// Bind makes sc answer the requests of token, replacing an earlier
// binding and forgetting its recorded requests. A nil script echoes. On a
// recorder stub (Options.Upstream) the live provider answers instead of
// sc and Bind starts a new recording.
func (s *Stub) Bind(token string, sc *script.Script) error {
	if !validToken(token) {
		return fmt.Errorf("model stub: bind %q: %w", token, ErrBadToken)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := &binding{script: sc}
	if sc == nil {
		b.chaos = s.chaos
	}
	if s.upstream != nil {
		b.rec = &recording{steps: map[recKey]*recStep{}}
	}
	s.bindings[token] = b
	return nil
}

// BindChaos makes the chaos model c answer the requests of token, as Bind
// does a script.
func (s *Stub) BindChaos(token string, c *Chaos) error {
	if !validToken(token) {
		return fmt.Errorf("model stub: bind %q: %w", token, ErrBadToken)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bindings[token] = &binding{chaos: c}
	return nil
}

// Unbind forgets token; its requests are then refused with 404.
func (s *Stub) Unbind(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.bindings, token)
}

// Requests returns the requests recorded for token, oldest first, and
// how many older ones were dropped to keep within MaxRecorded.
func (s *Stub) Requests(token string) ([]Recorded, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bindings[token]
	if b == nil {
		return nil, 0
	}
	out := make([]Recorded, len(b.requests))
	copy(out, b.requests)
	return out, b.dropped
}

// responder answers a token's requests: its script or the chaos model.
type responder interface {
	Respond(*model.Request) (script.Response, error)
}

// lookup returns what answers token.
func (s *Stub) lookup(token string) (responder, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.bindings[token]
	if !ok {
		return nil, false
	}
	if b.chaos != nil {
		return b.chaos, true
	}
	return b.script, true
}

func (s *Stub) record(token string, r Recorded) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.bindings[token]
	if b == nil {
		return
	}
	if len(b.requests) >= s.maxRec {
		n := len(b.requests) - s.maxRec + 1
		b.requests = append(b.requests[:0], b.requests[n:]...)
		b.dropped += n
	}
	b.requests = append(b.requests, r)
}

// ServeHTTP routes /t/<token>/… to the token's script.
func (s *Stub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rest, ok := strings.CutPrefix(r.URL.Path, "/t/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	token, path, _ := strings.Cut(rest, "/")
	path = "/" + path
	var a wire.API
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		a = wire.OpenAI{}
	case strings.HasSuffix(path, "/messages"):
		a = wire.Anthropic{}
	case strings.HasSuffix(path, "/models") && r.Method == http.MethodGet:
		s.models(w)
		return
	default:
		wire.OpenAI{}.WriteError(w, http.StatusNotFound, "not_found", "no such endpoint: "+path)
		return
	}
	if r.Method != http.MethodPost {
		a.WriteError(w, http.StatusMethodNotAllowed, "invalid_request_error", "use POST")
		return
	}
	if !authorized(r) {
		a.WriteError(w, http.StatusUnauthorized, "authentication_error", "invalid API key (the lab's model stub takes its fixed fake key)")
		return
	}
	sc, bound := s.lookup(token)
	if !validToken(token) || !bound {
		a.WriteError(w, http.StatusNotFound, "not_found_error", "no script is bound to this stub token (the scenario attempt ended?)")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		a.WriteError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "request body too large")
		return
	}
	p, err := a.Parse(body)
	if err != nil {
		a.WriteError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	if s.upstream != nil {
		s.relay(w, r, a, p, body, token, start)
		return
	}
	resp, serr := sc.Respond(&p.Req)
	rec := Recorded{Time: start, API: a.Name(), Stream: p.Stream, Model: p.Req.Model, System: p.Req.System,
		Messages: p.Req.Messages, Tools: toolNames(p.Req.Tools), Status: http.StatusOK}
	if serr != nil {
		rec.ScriptError = serr.Error()
		s.log.Info("model stub: script error", "token", short(token), "err", serr)
	}
	if resp.Status != 0 && !resp.Hang {
		rec.Status = resp.Status
	}
	s.record(token, rec)

	s.mu.Lock()
	s.seq++
	id := strconv.FormatUint(s.seq, 10)
	s.mu.Unlock()
	err = s.answer(r.Context(), w, a, p, &resp, id)
	s.log.Debug("model stub: request", "token", short(token), "api", a.Name(), "stream", p.Stream, "status", rec.Status,
		"duration", time.Since(start), "err", err)
}

// relay forwards a request to the live provider and records the answer.
func (s *Stub) relay(w http.ResponseWriter, r *http.Request, a wire.API, p *wire.Parsed, body []byte, token string, start time.Time) {
	if a.Name() != s.upstream.API {
		a.WriteError(w, http.StatusBadRequest, "invalid_request_error",
			"the recording stub forwards "+s.upstream.API+" requests only (the runtime must use the live provider's API)")
		return
	}
	s.mu.Lock()
	b := s.bindings[token]
	if b == nil {
		s.mu.Unlock()
		a.WriteError(w, http.StatusNotFound, "not_found_error", "no script is bound to this stub token (the scenario attempt ended?)")
		return
	}
	if b.inflight == 0 {
		b.idle = make(chan struct{})
	}
	b.inflight++
	s.mu.Unlock()
	st, status, broken := s.forward(r.Context(), w, r, a.Name(), body)
	s.record(token, Recorded{Time: start, API: a.Name(), Stream: p.Stream, Model: p.Req.Model, System: p.Req.System,
		Messages: p.Req.Messages, Tools: toolNames(p.Req.Tools), Status: status})
	s.mu.Lock()
	if b.rec != nil {
		b.rec.add(keyOf(&p.Req), st)
	}
	if b.inflight--; b.inflight == 0 {
		close(b.idle)
	}
	s.mu.Unlock()
	s.log.Debug("model stub: relayed", "token", short(token), "api", a.Name(), "stream", p.Stream, "status", status,
		"duration", time.Since(start))
	if broken {
		// The provider's stream broke: so does the runtime's.
		panic(http.ErrAbortHandler)
	}
}

// answer serves resp: a hang, a status failure, or the events.
func (s *Stub) answer(ctx context.Context, w http.ResponseWriter, a wire.API, p *wire.Parsed, resp *script.Response, id string) error {
	if resp.Hang {
		<-ctx.Done()
		return ctx.Err()
	}
	if err := wire.Sleep(ctx, resp.Delay); err != nil {
		return err
	}
	if resp.Status != 0 {
		if resp.RetryAfter != "" {
			w.Header().Set("Retry-After", resp.RetryAfter)
		}
		a.WriteError(w, resp.Status, wire.ErrorKind(resp.Status), fmt.Sprintf("scripted failure: HTTP %d", resp.Status))
		return nil
	}
	err := a.WriteResponse(ctx, w, p, resp, id)
	if errors.Is(err, wire.ErrCut) {
		// Reset the connection mid-body: the client sees the stream
		// break, as when a provider's connection drops.
		panic(http.ErrAbortHandler)
	}
	return err
}

// authorized checks the fake key, by bearer token or x-api-key.
func authorized(r *http.Request) bool {
	key := r.Header.Get("x-api-key")
	if key == "" {
		key, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	}
	return subtle.ConstantTimeCompare([]byte(key), []byte(FakeKey)) == 1
}

func toolNames(ts []model.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name
	}
	return out
}

// short is a token prefix for logs.
func short(token string) string {
	if len(token) > 6 {
		return token[:6] + "…"
	}
	return token
}

// models answers GET …/models with the one model the stub plays.
func (s *Stub) models(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"object":"list","data":[{"id":"agentlab-stub","object":"model","created":0,"owned_by":"agentlab"}]}`)
}
