package httpfail

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
)

func TestMapStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		want   errcode.Code
	}{
		{100, errcode.ModelProtocol},
		{101, errcode.ModelProtocol},
		{200, errcode.ModelProtocol},
		{301, errcode.ModelProtocol},
		{302, errcode.ModelProtocol},
		{307, errcode.ModelProtocol},
		{308, errcode.ModelProtocol},
		{400, errcode.ModelBadRequest},
		{401, errcode.ModelAuthFailed},
		{402, errcode.ModelQuotaExhausted},
		{403, errcode.ModelAuthFailed},
		{404, errcode.ModelBadRequest},
		{408, errcode.ModelTimeout},
		{409, errcode.ModelBadRequest},
		{413, errcode.ModelRequestTooLarge},
		{422, errcode.ModelBadRequest},
		{425, errcode.ModelRateLimited},
		{429, errcode.ModelRateLimited},
		{499, errcode.ModelBadRequest},
		{500, errcode.ModelUnavailable},
		{502, errcode.ModelUnavailable},
		{503, errcode.ModelUnavailable},
		{529, errcode.ModelUnavailable},
		{599, errcode.ModelUnavailable},
		{600, errcode.ModelProtocol},
	} {
		e := Map(Failure{Status: tc.status})
		if e.Code != tc.want {
			t.Errorf("status %d: %s, want %s", tc.status, e.Code, tc.want)
		}
		if e.Details["status"] != tc.status {
			t.Errorf("status %d: details %v", tc.status, e.Details)
		}
		if want := "provider returned " + strconv.Itoa(tc.status); e.Text != want {
			t.Errorf("status %d: text %q, want %q", tc.status, e.Text, want)
		}
	}
}

func TestMapRetryAfterDetails(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		header string
		want   any // nil: absent
	}{
		{"", nil},
		{"20", 20},
		{" 7 ", 7},
		{"0", 0},
		{"-1", nil},
		{"1.5", nil},
		{"soon", nil},
		{"99999999999", 86400},
		{now.Add(30 * time.Second).Format(http.TimeFormat), 30},
		{now.Add(-time.Minute).Format(http.TimeFormat), 0},
		{now.Add(45 * time.Second).Format(time.RFC850), 45},
		{now.Add(12 * time.Second).Format(time.ANSIC), 12},
	} {
		h := http.Header{}
		if tc.header != "" {
			h.Set("Retry-After", tc.header)
		}
		e := Map(Failure{Status: 429, Header: h, Now: now})
		got, ok := e.Details["retryAfterSeconds"]
		if tc.want == nil {
			if ok {
				t.Errorf("%q: retryAfterSeconds = %v, want none", tc.header, got)
			}
			continue
		}
		if got != tc.want {
			t.Errorf("%q: retryAfterSeconds = %v, want %v", tc.header, got, tc.want)
		}
	}
}

func TestMapTransport(t *testing.T) {
	t.Parallel()
	wrap := func(err error) error {
		return &url.Error{Op: "Post", URL: "https://example.invalid/v1?key=secret", Err: err}
	}
	for _, tc := range []struct {
		name string
		f    Failure
		want errcode.Code
	}{
		{"refused", Failure{Err: wrap(&net.OpError{Op: "dial", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)})}, errcode.ModelNetwork},
		{"reset", Failure{Err: wrap(&net.OpError{Op: "read", Err: os.NewSyscallError("read", syscall.ECONNRESET)}), Connected: true}, errcode.ModelNetwork},
		{"dns", Failure{Err: wrap(&net.OpError{Op: "dial", Err: &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}})}, errcode.ModelNetwork},
		{"dns timeout", Failure{Err: wrap(&net.DNSError{Err: "timeout", Name: "x", IsTimeout: true})}, errcode.ModelTimeout},
		{"eof", Failure{Err: wrap(io.EOF), Connected: true}, errcode.ModelNetwork},
		{"deadline", Failure{Err: wrap(os.ErrDeadlineExceeded)}, errcode.ModelTimeout},
		{"ctx deadline", Failure{Err: wrap(context.DeadlineExceeded)}, errcode.ModelTimeout},
		{"unknown authority", Failure{Err: wrap(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}})}, errcode.ModelTLSFailed},
		{"hostname", Failure{Err: wrap(x509.HostnameError{Host: "x"})}, errcode.ModelTLSFailed},
		{"expired", Failure{Err: wrap(x509.CertificateInvalidError{Reason: x509.Expired})}, errcode.ModelTLSFailed},
		{"alert", Failure{Err: wrap(tls.AlertError(40))}, errcode.ModelTLSFailed},
		{"record header", Failure{Err: wrap(tls.RecordHeaderError{Msg: "bad"})}, errcode.ModelTLSFailed},
		{"http to https", Failure{Err: wrap(http.ErrSchemeMismatch)}, errcode.ModelTLSFailed},
		{"reset after headers", Failure{Err: &ReadError{Err: syscall.ECONNRESET}, AfterHeaders: true}, errcode.ModelStreamInterrupted},
		// Spec §3.2's order: TLS, then timeout, then "after headers".
		{"timeout after headers", Failure{Err: &ReadError{Err: os.ErrDeadlineExceeded}, AfterHeaders: true}, errcode.ModelTimeout},
		{"tls after headers", Failure{Err: tls.AlertError(20), AfterHeaders: true}, errcode.ModelTLSFailed},
		{"eof after headers", Failure{Err: &ReadError{Err: io.ErrUnexpectedEOF}, AfterHeaders: true}, errcode.ModelStreamInterrupted},
	} {
		e := Map(tc.f)
		if e.Code != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, e.Code, tc.want)
		}
		if e.Details != nil {
			t.Errorf("%s: details %v, want none", tc.name, e.Details)
		}
		var ue *url.Error
		if errors.As(e, &ue) {
			t.Errorf("%s: the cause keeps the URL", tc.name)
		}
		if !errors.Is(e, tc.want) {
			t.Errorf("%s: errors.Is(e, code) = false", tc.name)
		}
	}
}

func TestRetryable(t *testing.T) {
	t.Parallel()
	reset := &net.OpError{Op: "read", Err: syscall.ECONNRESET}
	for _, tc := range []struct {
		name string
		f    Failure
		want bool
	}{
		{"network", Failure{Err: reset}, true},
		{"connect timeout", Failure{Err: os.ErrDeadlineExceeded}, true},
		{"header timeout", Failure{Err: os.ErrDeadlineExceeded, Connected: true}, false},
		{"408", Failure{Status: 408}, false},
		{"425", Failure{Status: 425}, true},
		{"429", Failure{Status: 429}, true},
		{"500", Failure{Status: 500}, true},
		{"529", Failure{Status: 529}, true},
		{"401", Failure{Status: 401}, false},
		{"402", Failure{Status: 402}, false},
		{"413", Failure{Status: 413}, false},
		{"400", Failure{Status: 400}, false},
		{"302", Failure{Status: 302}, false},
		{"tls", Failure{Err: x509.UnknownAuthorityError{}}, false},
		{"after headers", Failure{Err: reset, AfterHeaders: true}, false},
	} {
		if got := Retryable(tc.f, Map(tc.f)); got != tc.want {
			t.Errorf("%s: Retryable = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestStatusError(t *testing.T) {
	t.Parallel()
	e := StatusError(429, "20")
	if e.Code != errcode.ModelRateLimited || e.Details["retryAfterSeconds"] != 20 || e.Details["status"] != 429 {
		t.Errorf("StatusError = %+v", e)
	}
	if e := StatusError(503, ""); e.Code != errcode.ModelUnavailable || len(e.Details) != 1 {
		t.Errorf("StatusError(503) = %+v", e)
	}
}

// TestClientReplaysBody: every attempt sends the same body, and the
// retry count follows the policy.
func TestClientReplaysBody(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		if n < 3 {
			w.WriteHeader(503)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	c := &Client{HTTP: NewHTTPClient(time.Second, nil), Policy: model.RetryPolicy{Base: time.Millisecond, MaxRetries: 5}}
	req, err := http.NewRequest("POST", srv.URL, bytes.NewReader([]byte(`{"a":1}`)))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "ok" {
		t.Fatalf("body %q, %v", b, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 3 {
		t.Fatalf("%d attempts, want 3", len(bodies))
	}
	for i, b := range bodies {
		if b != `{"a":1}` {
			t.Errorf("attempt %d sent %q", i, b)
		}
	}
}

func TestClientNoRetries(t *testing.T) {
	t.Parallel()
	count := 0
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		count++
		mu.Unlock()
		w.WriteHeader(503)
	}))
	defer srv.Close()
	c := &Client{HTTP: NewHTTPClient(time.Second, nil), Policy: model.RetryPolicy{MaxRetries: -1}}
	req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader([]byte(`{}`)))
	_, err := c.Do(req)
	if !errors.Is(err, errcode.ModelUnavailable) {
		t.Fatalf("err = %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if count != 1 {
		t.Errorf("%d attempts, want 1", count)
	}
}

// FuzzRetryAfter: any header value parses to a wait between 0 and a day,
// or to nothing.
func FuzzRetryAfter(f *testing.F) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, s := range []string{"", "0", "20", " 7 ", "-1", "1.5", "99999999999999999999", now.Add(time.Minute).Format(http.TimeFormat),
		"Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{}
		h.Set("Retry-After", v)
		d, ok := RetryAfter(h, now)
		if !ok {
			if d != 0 {
				t.Fatalf("RetryAfter(%q) = %v without ok", v, d)
			}
			return
		}
		if d < 0 || (d > 24*time.Hour && !strings.Contains(v, " ")) {
			t.Fatalf("RetryAfter(%q) = %v", v, d)
		}
		e := Map(Failure{Status: 429, Header: h, Now: now})
		if s, _ := e.Details["retryAfterSeconds"].(int); s < 0 {
			t.Fatalf("retryAfterSeconds = %d", s)
		}
	})
}

// The waits between attempts (spec §3.5: 1 s doubling) run on the
// runtime's clock: the next attempt goes out when the clock has moved by
// the backoff, not a millisecond earlier, and not before it moved.
func TestClientRetryWaitsOnTheClock(t *testing.T) {
	t.Parallel()
	attempts := make(chan int, 8)
	var mu sync.Mutex
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		attempts <- k
		if k < 3 {
			w.WriteHeader(503)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	c := &Client{HTTP: NewHTTPClient(time.Second, nil), Clock: clk}
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest("POST", srv.URL, bytes.NewReader([]byte(`{}`)))
		resp, err := c.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	require.Equal(t, 1, <-attempts)
	for i, backoff := range []time.Duration{time.Second, 2 * time.Second} {
		require.Eventually(t, func() bool { return clk.Pending() == 1 }, 10*time.Second, time.Millisecond, "wait %d not armed", i)
		clk.Advance(backoff - time.Millisecond)
		require.Equal(t, 1, clk.Pending(), "attempt %d went out early", i+2)
		clk.Advance(time.Millisecond)
		require.Equal(t, i+2, <-attempts)
	}
	require.NoError(t, <-done)
}
