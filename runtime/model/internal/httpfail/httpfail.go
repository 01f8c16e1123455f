// Package httpfail maps failures of model HTTP calls to the model error
// codes of spec §3.2 and runs the retry policy of §3.5. The OpenAI and
// Anthropic providers and the scripted provider all go through it, so one
// failure always yields one error, whichever provider met it. NewSetup,
// SendError and StreamEnded are the parts of the two HTTP providers that
// do not depend on their SDK: the checked configuration and client, and
// the errors of a call that failed before or during its stream.
//
// Errors made here carry a neutral sentence ("provider returned 429") and
// details {status, retryAfterSeconds} only: never a key, a header, a
// response body, a prompt or tool arguments.
package httpfail

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
)

// Failure is one failed attempt of a model call: either a response with a
// status that is not 2xx, or an error without (or after) a response.
type Failure struct {
	// Status is the HTTP status of a non-2xx response, zero when the
	// attempt failed without a response.
	Status int
	// Header are the headers of that response (for retry-after).
	Header http.Header
	// Err is the transport or read error when Status is zero.
	Err error
	// AfterHeaders says the response headers had arrived when Err
	// happened: the body stream broke.
	AfterHeaders bool
	// Connected says a connection had been established before Err, so
	// a timeout was a wait for headers, not a connect timeout.
	Connected bool
	// Now is the time retry-after dates are measured from; zero means
	// time.Now().
	Now time.Time
}

// Map is the one mapping from a failed attempt to a model error:
//
//   - a response: 401/403 auth_failed, 402 quota_exhausted, 408 timeout,
//     413 request_too_large, 425/429 rate_limited, 5xx unavailable, other
//     4xx bad_request, 1xx/3xx protocol (redirects are not followed);
//     details carry status and, when the response had a valid
//     retry-after, retryAfterSeconds;
//   - an error, in the order of spec §3.2: TLS handshake or certificate
//     failures tls_failed; timeouts timeout, also after the headers
//     arrived (a read timeout is still a timeout); any other error after
//     the headers stream_interrupted; before them (DNS, refused, reset)
//     network.
func Map(f Failure) *errcode.Error {
	if f.Status != 0 {
		code := model.ErrorFor(f.Status)
		if f.Status >= 200 && f.Status <= 299 {
			code = errcode.ModelProtocol
		}
		d := map[string]any{"status": f.Status}
		if ra, ok := RetryAfter(f.Header, f.now()); ok {
			d["retryAfterSeconds"] = seconds(ra)
		}
		return errcode.Newf(code, "provider returned %d", f.Status).WithDetails(d)
	}
	cause := strip(f.Err)
	switch {
	case isTLS(f.Err):
		return errcode.Wrap(errcode.ModelTLSFailed, "the TLS handshake with the model provider failed", cause)
	case IsTimeout(f.Err) && f.AfterHeaders:
		return errcode.Wrap(errcode.ModelTimeout, "the model stream stopped sending in time", cause)
	case IsTimeout(f.Err):
		return errcode.Wrap(errcode.ModelTimeout, "the model provider did not answer in time", cause)
	case f.AfterHeaders:
		return errcode.Wrap(errcode.ModelStreamInterrupted, "the model stream was interrupted", cause)
	default:
		return errcode.Wrap(errcode.ModelNetwork, "the model provider could not be reached", cause)
	}
}

// Retryable reports whether the attempt f, mapped to e, may be retried:
// only before the response is handed on, and only for network,
// connect timeouts, rate_limited and unavailable (spec §3.5). A 408 is a
// server's answer, not a connect timeout, and is not retried.
func Retryable(f Failure, e *errcode.Error) bool {
	if f.AfterHeaders {
		return false
	}
	switch e.Code {
	case errcode.ModelNetwork, errcode.ModelRateLimited, errcode.ModelUnavailable:
		return true
	case errcode.ModelTimeout:
		return f.Status == 0 && !f.Connected
	}
	return false
}

// Protocol is the error for a stream that could not be understood. The
// cause is kept only when it is a decoding error, whose text names a
// position or a type; anything else may quote what the server sent.
func Protocol(cause error) *errcode.Error {
	var (
		serr *json.SyntaxError
		terr *json.UnmarshalTypeError
	)
	var own Reason
	if !errors.As(cause, &own) && !errors.As(cause, &serr) && !errors.As(cause, &terr) && !errors.Is(cause, bufio.ErrTooLong) {
		cause = nil
	}
	return errcode.Wrap(errcode.ModelProtocol, "the model provider sent a response that could not be parsed", cause)
}

// Reason is a cause written by the runtime itself (never quoting the
// server), which Protocol keeps.
type Reason string

func (r Reason) Error() string { return string(r) }

// Interrupted is the error for a stream that ended before its answer was
// complete without a read error (the server closed it cleanly too early).
func Interrupted() *errcode.Error {
	return errcode.New(errcode.ModelStreamInterrupted, "the model stream ended before the answer was complete")
}

// StatusError is the error a provider returns for an HTTP status answer
// with the given retry-after header value ("" for none). The scripted
// provider uses it to fail exactly as an HTTP provider would.
func StatusError(status int, retryAfter string) *errcode.Error {
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return Map(Failure{Status: status, Header: h})
}

// RetryAfter parses a retry-after header: delay-seconds or an HTTP date
// (a date in the past means 0). ok is false when the header is missing or
// unparseable.
func RetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		// A day is far beyond any wait we honour; clamp to avoid overflow.
		return time.Duration(min(n, 86400)) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// seconds rounds a retry-after up to whole seconds, as the spec reports it.
func seconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}

func (f Failure) now() time.Time {
	if f.Now.IsZero() {
		return time.Now()
	}
	return f.Now
}

// IsTimeout reports whether err is a timeout of any layer.
func IsTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isTLS(err error) bool {
	var (
		verr  *tls.CertificateVerificationError
		rerr  tls.RecordHeaderError
		aerr  tls.AlertError
		uaerr x509.UnknownAuthorityError
		cierr x509.CertificateInvalidError
		herr  x509.HostnameError
		srerr x509.SystemRootsError
	)
	// net/http turns a plain-HTTP answer to a ClientHello (a
	// RecordHeaderError) into ErrSchemeMismatch.
	return errors.Is(err, http.ErrSchemeMismatch) || errors.As(err, &verr) || errors.As(err, &rerr) || errors.As(err, &aerr) ||
		errors.As(err, &uaerr) || errors.As(err, &cierr) || errors.As(err, &herr) || errors.As(err, &srerr)
}

// strip drops the *url.Error layer so the kept cause names neither the
// method nor the URL (a vendor URL may carry a key in its query).
func strip(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// ReadError marks an error met while reading a response body, after the
// headers arrived. Providers use it to tell a broken stream
// (stream_interrupted) from one that could not be parsed (protocol).
type ReadError struct{ Err error }

func (e *ReadError) Error() string { return "read model stream: " + e.Err.Error() }

func (e *ReadError) Unwrap() error { return e.Err }

// ErrIdle is the cause of a stream that sent nothing for the idle timeout.
var ErrIdle = errors.New("model stream idle for too long")

// ErrClosed is returned by a stream's Next after Close.
var ErrClosed = fmt.Errorf("model stream closed: %w", net.ErrClosed)
