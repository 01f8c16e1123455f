// Package modeltest holds what the HTTP providers' tests share: local
// servers that fail in every way spec §3.2 names (status answers, resets
// before and after headers, an untrusted TLS certificate, a server that
// never answers), each counting the requests and connections it saw, and
// one table of those failures with the model error each must produce.
// It is imported by tests only.
package modeltest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/syncbuf"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
)

// FastRetry is the retry policy of the tests: the spec's rules with
// millisecond waits and two retries, so a retried failure is seen exactly
// three times.
var FastRetry = model.RetryPolicy{Base: time.Millisecond, Cap: 4 * time.Millisecond, MaxRetries: 2, MaxRetryAfter: 3 * time.Second}

// Key is the API key every provider test configures. It is unique, so a
// test can prove it never shows up in an error, a detail or a log line.
const Key = "sk-agentlab-LEAKCANARY-7f3a9c2e51d04b8f"

// HeaderTimeout is the connect and header timeout the tests configure:
// short, but long enough for a TLS handshake on a loaded machine under the
// race detector (a handshake that times out is rightly retried, which
// would change the counts).
const HeaderTimeout = time.Second

// Server is a local model endpoint for one test.
type Server struct {
	URL string
	// Requests counts requests that reached the handler (or, for raw
	// servers, connections that sent a request).
	Requests atomic.Int32
	// Conns counts accepted connections.
	Conns  atomic.Int32
	mu     sync.Mutex
	times  []time.Time // arrival time of each request
	bodies []string    // body of each request (HTTP servers only)
	peers  []string    // remote address of each connection (HTTP servers only)
}

// Bodies returns the body of each request an HTTP server saw.
func (s *Server) Bodies() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.bodies...)
}

// Times returns the arrival time of each request.
func (s *Server) Times() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.times...)
}

func (s *Server) hit() {
	s.Requests.Add(1)
	s.mu.Lock()
	s.times = append(s.times, time.Now())
	s.mu.Unlock()
}

// HTTP starts an HTTP server (TLS with a self-signed certificate when tls
// is set) running h, closed at the end of the test.
func HTTP(t testing.TB, tls bool, h http.HandlerFunc) *Server {
	t.Helper()
	s := &Server{}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		s.mu.Lock()
		s.bodies = append(s.bodies, string(b))
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		s.hit()
		h(w, r)
	}))
	ts.Config.ConnState = func(c net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.Conns.Add(1)
			s.mu.Lock()
			s.peers = append(s.peers, c.RemoteAddr().String())
			s.mu.Unlock()
		}
	}
	// The standard library logs TLS handshake errors; they are expected.
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	if tls {
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	s.URL = ts.URL
	return s
}

// Raw starts a TCP server that reads each request and then hands the
// connection to serve, closed at the end of the test.
func Raw(t testing.TB, serve func(c *net.TCPConn)) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{URL: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	done := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.Conns.Add(1)
			wg.Add(2)
			served := make(chan struct{})
			go func() {
				defer wg.Done()
				// Closing the connection at the end of the test ends a
				// serve that waits on it.
				select {
				case <-done:
				case <-served:
				}
				c.Close()
			}()
			go func() {
				defer wg.Done()
				defer close(served)
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				s.hit()
				serve(c.(*net.TCPConn))
			}()
		}
	}()
	t.Cleanup(func() {
		close(done)
		ln.Close()
		wg.Wait()
	})
	return s
}

// RawConn starts a TCP server that hands each accepted connection to
// serve without reading anything, closed at the end of the test.
func RawConn(t testing.TB, serve func(c *net.TCPConn)) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{URL: "http://" + ln.Addr().String()}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.Conns.Add(1)
			serve(c.(*net.TCPConn))
			c.Close()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return s
}

// Hang reads r's body and blocks until the client goes away (or the
// server is closed at the end of the test). Reading the body first lets
// the server notice a closed connection.
func Hang(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// Refused returns a URL whose port refuses connections: a socket is bound
// to it but never listens, so no other test's server can take the port
// while this test runs (a closed listener's port could be reused).
func Refused(t testing.TB) string {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(fd) })
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port)
}

// Reset closes c with an RST instead of a FIN.
func Reset(c *net.TCPConn) {
	_ = c.SetLinger(0)
	_ = c.Close()
}

// Case is one failure and the model error it must produce.
type Case struct {
	Name string
	// Exactly one of Handler, Raw, Refused describes the server.
	Handler http.HandlerFunc
	TLS     bool
	Raw     func(c *net.TCPConn)
	// Conn serves the raw connection before any request is read; the
	// provider is pointed at it with https.
	Conn    func(c *net.TCPConn)
	Refused bool
	// Want is the code; Details must be a subset of the error's details.
	Want    errcode.Code
	Details map[string]any
	// Requests is how many requests the server must have seen with
	// FastRetry (0 = not checked); Conns likewise for connections.
	Requests int32
	Conns    int32
	// AfterHeaders says the error comes from Next, not Stream.
	AfterHeaders bool
	// More checks the error further, when set.
	More func(t testing.TB, e *errcode.Error)
	// Timeout overrides HeaderTimeout for this case.
	Timeout time.Duration
}

func status(code int, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		// Error bodies echo the credentials the request carried, as some
		// vendors do, so a leak through a body would be seen.
		fmt.Fprintf(w, `{"error":{"message":"bad %s %s","type":"x"}}`, r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"))
	}
}

// Failures is the table every HTTP provider must pass. firstEvent is one
// complete, valid SSE event of the provider's dialect (sent before a
// reset after headers); garbage is a stream that cannot be parsed.
func Failures(firstEvent, garbage string) []Case {
	const retried = 1 + 2 // one attempt and FastRetry's two retries
	date := func() string { return time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat) }
	return []Case{
		{Name: "401", Handler: status(401), Want: errcode.ModelAuthFailed, Details: map[string]any{"status": 401}, Requests: 1},
		{Name: "402", Handler: status(402), Want: errcode.ModelQuotaExhausted, Details: map[string]any{"status": 402}, Requests: 1},
		{Name: "403", Handler: status(403), Want: errcode.ModelAuthFailed, Details: map[string]any{"status": 403}, Requests: 1},
		{Name: "408", Handler: status(408), Want: errcode.ModelTimeout, Details: map[string]any{"status": 408}, Requests: 1},
		{Name: "413", Handler: status(413), Want: errcode.ModelRequestTooLarge, Details: map[string]any{"status": 413}, Requests: 1},
		{Name: "400", Handler: status(400), Want: errcode.ModelBadRequest, Details: map[string]any{"status": 400}, Requests: 1},
		{Name: "404", Handler: status(404), Want: errcode.ModelBadRequest, Details: map[string]any{"status": 404}, Requests: 1},
		{Name: "425", Handler: status(425), Want: errcode.ModelRateLimited, Details: map[string]any{"status": 425}, Requests: retried},
		{Name: "429", Handler: status(429), Want: errcode.ModelRateLimited, Details: map[string]any{"status": 429}, Requests: retried},
		// A retry-after beyond MaxRetryAfter ends the call at once, with
		// the wait in the details.
		{Name: "429 retry-after seconds", Handler: status(429, "Retry-After", "20"), Want: errcode.ModelRateLimited,
			Details: map[string]any{"status": 429, "retryAfterSeconds": 20}, Requests: 1},
		{Name: "429 retry-after date", Handler: func(w http.ResponseWriter, r *http.Request) {
			status(429, "Retry-After", date())(w, r)
		}, Want: errcode.ModelRateLimited, Details: map[string]any{"status": 429}, Requests: 1,
			More: func(t testing.TB, e *errcode.Error) {
				// The date has a one-second resolution.
				if s, _ := e.Details["retryAfterSeconds"].(int); s < 85 || s > 90 {
					t.Errorf("retryAfterSeconds = %v, want about 90", e.Details["retryAfterSeconds"])
				}
			}},
		{Name: "500", Handler: status(500), Want: errcode.ModelUnavailable, Details: map[string]any{"status": 500}, Requests: retried},
		{Name: "503", Handler: status(503), Want: errcode.ModelUnavailable, Details: map[string]any{"status": 503}, Requests: retried},
		{Name: "529", Handler: status(529), Want: errcode.ModelUnavailable, Details: map[string]any{"status": 529}, Requests: retried},
		{Name: "302 not followed", Handler: status(302, "Location", "/elsewhere"), Want: errcode.ModelProtocol,
			Details: map[string]any{"status": 302}, Requests: 1},
		{Name: "304", Handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(304) }, Want: errcode.ModelProtocol,
			Details: map[string]any{"status": 304}, Requests: 1},
		{Name: "reset before headers", Raw: Reset, Want: errcode.ModelNetwork, Requests: retried},
		{Name: "close before headers", Raw: func(c *net.TCPConn) { c.Close() }, Want: errcode.ModelNetwork, Requests: retried},
		{Name: "reset after headers", Raw: func(c *net.TCPConn) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n%s", firstEvent)
			Reset(c)
		}, Want: errcode.ModelStreamInterrupted, Requests: 1, AfterHeaders: true},
		{Name: "clean close mid stream", Raw: func(c *net.TCPConn) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n%s", firstEvent)
		}, Want: errcode.ModelStreamInterrupted, Requests: 1, AfterHeaders: true},
		// A generous timeout: under load a handshake can take over a
		// second, and a handshake timeout is rightly retried.
		{Name: "untrusted certificate", TLS: true, Handler: status(200), Want: errcode.ModelTLSFailed, Requests: -1, Conns: 1,
			Timeout: 30 * time.Second},
		{Name: "plain HTTP server behind https", Conn: func(c *net.TCPConn) {
			// Answer the ClientHello in plain HTTP, then wait for the
			// client to give up, so it reads the answer before any RST.
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = c.Read(make([]byte, 1))
			io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
			_, _ = io.Copy(io.Discard, c)
		}, Want: errcode.ModelTLSFailed, Conns: 1, Timeout: 30 * time.Second},
		// The TCP connection opens but the TLS handshake never completes:
		// a connect timeout, the one timeout that is retried.
		{Name: "TLS handshake timeout", Conn: func(c *net.TCPConn) {
			_ = c.SetDeadline(time.Now().Add(5 * time.Second))
			_, _ = io.Copy(io.Discard, c)
		}, Want: errcode.ModelTimeout, Conns: retried},
		{Name: "no headers", Handler: func(w http.ResponseWriter, r *http.Request) { Hang(r) },
			Want: errcode.ModelTimeout, Requests: 1},
		{Name: "refused", Refused: true, Want: errcode.ModelNetwork},
		{Name: "garbage stream", Handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, garbage)
		}, Want: errcode.ModelProtocol, Requests: 1, AfterHeaders: true},
	}
}

// Open makes the provider under test for a base URL.
type Open func(t testing.TB, baseURL string, o Opts) model.Provider

// Opts configure the provider under test.
type Opts struct {
	Logger *slog.Logger
	// Timeout is the connect and header timeout; zero means
	// HeaderTimeout.
	Timeout time.Duration
}

// RunFailures runs every case against the provider made by open.
func RunFailures(t *testing.T, cases []Case, open Open) {
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			var srv *Server
			var url string
			switch {
			case tc.Refused:
				url = Refused(t)
			case tc.Raw != nil:
				srv = Raw(t, tc.Raw)
				url = srv.URL
			case tc.Conn != nil:
				srv = RawConn(t, tc.Conn)
				url = strings.Replace(srv.URL, "http://", "https://", 1)
			default:
				srv = HTTP(t, tc.TLS, tc.Handler)
				url = srv.URL
			}
			logs := &syncbuf.Buffer{}
			logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			p := open(t, url, Opts{Logger: logger, Timeout: tc.Timeout})
			afterHeaders, err := Drain(context.Background(), p)
			NoLeak(t, err, logs.String())
			e := Check(t, err, tc.Want, tc.Details)
			if tc.More != nil {
				tc.More(t, e)
			}
			if afterHeaders != tc.AfterHeaders {
				t.Errorf("error after headers = %v, want %v", afterHeaders, tc.AfterHeaders)
			}
			if srv != nil && tc.Requests > 0 {
				if got := srv.Requests.Load(); got != tc.Requests {
					t.Errorf("server saw %d requests, want %d", got, tc.Requests)
				}
			}
			if srv != nil && tc.Requests < 0 {
				if got := srv.Requests.Load(); got != 0 {
					t.Errorf("server saw %d requests, want none", got)
				}
			}
			if srv != nil && tc.Conns > 0 {
				if got := srv.Conns.Load(); got != tc.Conns {
					srv.mu.Lock()
					t.Errorf("server saw %d connections (from %v), want %d; log:\n%s", got, srv.peers, tc.Conns, logs.String())
					srv.mu.Unlock()
				}
			}
		})
	}
}

// Request is a small request with one tool, for failure tests.
func Request() *model.Request {
	return &model.Request{
		System:   "be brief",
		Messages: []model.Message{{Role: model.RoleUser, Text: "hello"}},
		Tools: []model.Tool{{Name: "mcp__notes__notes__note_create", Description: "make a note",
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}},
		MaxTokens: 100,
	}
}

// Drain sends Request and reads the stream to its end. It returns the
// error (nil after Done and io.EOF) and whether it came from Next.
func Drain(ctx context.Context, p model.Provider) (fromNext bool, err error) {
	s, err := p.Stream(ctx, Request())
	if err != nil {
		return false, err
	}
	defer s.Close()
	for {
		ev, err := s.Next()
		if err != nil {
			return true, err
		}
		if ev.Kind == model.Done {
			if _, err := s.Next(); !errors.Is(err, io.EOF) {
				return true, fmt.Errorf("after Done, Next returned %v, want io.EOF", err)
			}
			return true, nil
		}
	}
}

// Collect sends req and returns every event up to and including Done.
func Collect(ctx context.Context, p model.Provider, req *model.Request) ([]model.Event, error) {
	s, err := p.Stream(ctx, req)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	var evs []model.Event
	for {
		ev, err := s.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
		if ev.Kind == model.Done {
			return evs, nil
		}
	}
}

// Check asserts err is an *errcode.Error with code want whose details
// contain details, and returns it.
func Check(t testing.TB, err error, want errcode.Code, details map[string]any) *errcode.Error {
	t.Helper()
	var e *errcode.Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *errcode.Error %s", err, err, want)
	}
	if e.Code != want {
		t.Fatalf("code = %s (%q), want %s", e.Code, e.Text, want)
	}
	if !errors.Is(err, want) {
		t.Errorf("errors.Is(err, %s) = false", want)
	}
	for k, v := range details {
		if got, ok := e.Details[k]; !ok || fmt.Sprint(got) != fmt.Sprint(v) {
			t.Errorf("details[%s] = %v, want %v (details %v)", k, got, v, e.Details)
		}
	}
	for k := range e.Details {
		if k != "status" && k != "retryAfterSeconds" {
			t.Errorf("unexpected detail %q", k)
		}
	}
	return e
}

// RunRetries checks the retry policy's timing rules against the provider
// made by open; ok answers a request successfully.
func RunRetries(t *testing.T, open Open, ok http.HandlerFunc) {
	t.Run("retry-after seconds is honoured", func(t *testing.T) {
		t.Parallel()
		retryAfterThenOK(t, open, ok, func() string { return "1" })
	})
	t.Run("retry-after date is honoured", func(t *testing.T) {
		t.Parallel()
		retryAfterThenOK(t, open, ok, func() string { return time.Now().Add(2 * time.Second).UTC().Format(http.TimeFormat) })
	})
	t.Run("no wait past the deadline", func(t *testing.T) {
		t.Parallel()
		srv := HTTP(t, false, status(503, "Retry-After", "2"))
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		logs := &syncbuf.Buffer{}
		_, err := Drain(ctx, open(t, srv.URL, Opts{Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}))
		NoLeak(t, err, logs.String())
		Check(t, err, errcode.ModelUnavailable, map[string]any{"status": 503, "retryAfterSeconds": 2})
		if ctx.Err() != nil {
			t.Errorf("the call waited until the deadline")
		}
		if got := srv.Requests.Load(); got != 1 {
			t.Errorf("server saw %d requests, want 1", got)
		}
	})
	t.Run("cancel during backoff", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		srv := HTTP(t, false, func(w http.ResponseWriter, r *http.Request) {
			cancel()
			status(429, "Retry-After", "2")(w, r)
		})
		_, err := Drain(ctx, open(t, srv.URL, Opts{}))
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

func retryAfterThenOK(t *testing.T, open Open, ok http.HandlerFunc, retryAfter func() string) {
	var n atomic.Int32
	srv := HTTP(t, false, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			status(429, "Retry-After", retryAfter())(w, r)
			return
		}
		ok(w, r)
	})
	logs := &syncbuf.Buffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if _, err := Drain(context.Background(), open(t, srv.URL, Opts{Logger: logger})); err != nil {
		t.Fatalf("Drain: %v", err)
	}
	NoLeak(t, nil, logs.String())
	if !strings.Contains(logs.String(), "model call retry") {
		t.Errorf("the retry was not logged: %q", logs.String())
	}
	times := srv.Times()
	if len(times) != 2 {
		t.Fatalf("server saw %d requests, want 2", len(times))
	}
	if b := srv.Bodies(); b[0] == "" || b[0] != b[1] {
		t.Errorf("the retry sent a different body:\n%s\n%s", b[0], b[1])
	}
	// The backoff base is 1 ms, so only retry-after explains a wait of
	// most of a second (an HTTP date has a one-second resolution).
	if gap := times[1].Sub(times[0]); gap < 900*time.Millisecond {
		t.Errorf("retry came after %v, want about 1 s", gap)
	}
}

// NoLeak asserts that Key appears nowhere in err (its text, %+v form,
// every wrapped cause, wire and event-log forms) or in logs.
func NoLeak(t testing.TB, err error, logs string) {
	t.Helper()
	var texts []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		texts = append(texts, e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e))
	}
	var ee *errcode.Error
	if errors.As(err, &ee) {
		w, _ := json.Marshal(ee.Wire())
		i, _ := json.Marshal(ee.Info())
		texts = append(texts, string(w), string(i), fmt.Sprint(ee.Details))
	}
	texts = append(texts, logs)
	for _, s := range texts {
		if strings.Contains(s, Key) || strings.Contains(s, Key[8:]) {
			t.Errorf("the key leaked into %q", s)
		}
	}
}

// RunNeedsKeyAndModel checks that newProvider (the provider's New with
// default options) refuses a configuration without a key or without a
// model as model_not_configured.
func RunNeedsKeyAndModel(t *testing.T, newProvider func(model.Config) error) {
	for _, cfg := range []model.Config{{Model: "m"}, {Key: "k"}} {
		Check(t, newProvider(cfg), errcode.ModelNotConfigured, nil)
	}
}

// RunKeyNeverPrinted checks that the provider made by open never shows
// its key when printed with any of fmt's verbs.
func RunKeyNeverPrinted(t *testing.T, open Open) {
	p := open(t, "http://127.0.0.1:1", Opts{})
	for _, s := range []string{fmt.Sprint(p), fmt.Sprintf("%+v", p), fmt.Sprintf("%#v", p)} {
		if strings.Contains(s, Key) {
			t.Errorf("key printed: %s", s)
		}
	}
}

// RunConnectionReuse checks that three consecutive calls to a server
// that answers with ok share one connection (no new TCP and TLS
// handshake per model call): the provider reads each answer to its end.
func RunConnectionReuse(t *testing.T, open Open, ok http.HandlerFunc) {
	srv := HTTP(t, false, ok)
	p := open(t, srv.URL, Opts{})
	for range 3 {
		if _, err := Drain(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Conns.Load(); n != 1 {
		t.Errorf("3 calls used %d connections, want 1", n)
	}
}
