package browser

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
)

// Limits of http_request.
const (
	// HTTPTimeout bounds one request (upstream's 14 s, under the
	// controller's 15 s).
	HTTPTimeout = 14 * time.Second
	// MaxRequestBody bounds the body sent.
	MaxRequestBody = 1 << 20
	// MaxHeadersJSON bounds the headers param.
	MaxHeadersJSON = 64 << 10
	// MaxStreamBytes is the most of a body without a declared length
	// that is read; the rest is left unread and the answer says so.
	MaxStreamBytes = 32 << 20
)

var methodToken = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,32}$")

// HTTPRequest is the parameters of http_request.
type HTTPRequest struct {
	URL     string
	Method  string // "" is GET; any token
	Headers string // a JSON object of header names to strings
	Body    string
	// TLSVerify false trusts every certificate and name.
	TLSVerify bool
	// TLSCAPEM, when set, is the only CA trusted (pinning); it wins over TLSVerify.
	TLSCAPEM string
}

// HTTPDo is http_request: any method, headers, a body, TLS verification
// or a pinned CA. The answer carries the status, the headers (JSON,
// repeated names keep the last value, as upstream) and the body by the
// large-result rules: a declared length over 2 MB is not read
// (truncated_reason says so), a longer stream stops at MaxStreamBytes,
// and the body is streamed through the cut and the compression without
// ever being held whole. Transport failures are structured errors
// ({"aci_error":true,…,"layer":"http"}) with the governance codes.
func (b *Browser) HTTPDo(ctx context.Context, r HTTPRequest) (wire.Bundle, error) {
	u, err := checkURL(r.URL)
	if err != nil {
		return nil, httpError(wire.BadParam, err.(*wire.Error).Message, "pass an absolute http or https URL")
	}
	method := strings.ToUpper(strings.TrimSpace(r.Method))
	if method == "" {
		method = http.MethodGet
	}
	if !methodToken.MatchString(method) {
		return nil, httpError(wire.BadParam, fmt.Sprintf("bad method %q", clip(r.Method)), "use an HTTP method such as GET or POST")
	}
	if len(r.Body) > MaxRequestBody {
		return nil, httpError(wire.BadParam, fmt.Sprintf("the body is %d bytes; at most %d are sent", len(r.Body), MaxRequestBody), "send a smaller body")
	}
	headers, err := parseHeaders(r.Headers)
	if err != nil {
		return nil, httpError(wire.BadParam, err.Error(), `pass headers as a JSON object of strings, e.g. {"Accept":"text/html"}`)
	}
	client, err := httpClient(r)
	if err != nil {
		return nil, httpError(wire.BadParam, err.Error(), "pass the CA certificate as PEM in tls_ca_pem")
	}
	ctx, cancel := context.WithTimeout(ctx, HTTPTimeout)
	defer cancel()
	var body io.Reader
	if r.Body != "" || method == http.MethodPost || method == http.MethodPut || method == http.MethodPatch {
		body = strings.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, httpError(wire.BadParam, "bad request: "+err.Error(), "")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if body != nil && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, transportError(ctx, err)
	}
	defer resp.Body.Close()
	hs := map[string]string{}
	for k, vs := range resp.Header {
		hs[k] = vs[len(vs)-1]
	}
	out := wire.Bundle{"status_code": wire.Int(int64(resp.StatusCode)), "response_headers": wire.String(jsonText(hs))}
	if resp.ContentLength > wire.MaxBodyBytes {
		out["response_body"] = wire.String("")
		out[wire.KeyTruncated] = wire.Bool(true)
		out["truncated_reason"] = wire.String(fmt.Sprintf("the body is %d bytes (Content-Length), over the %d-byte limit; it was not read", resp.ContentLength, wire.MaxBodyBytes))
		return out, nil
	}
	l := wire.NewLarge("response_body", true, wire.MarkerBody)
	n, err := io.Copy(l, io.LimitReader(resp.Body, MaxStreamBytes))
	if err != nil {
		return nil, transportError(ctx, fmt.Errorf("reading the body: %w", err))
	}
	l.Put(out)
	if n == MaxStreamBytes {
		if extra, _ := resp.Body.Read(make([]byte, 1)); extra > 0 {
			out[wire.KeyTruncated] = wire.Bool(true)
			out["truncated_reason"] = wire.String(fmt.Sprintf("the body is longer than %d bytes; the rest was not read", MaxStreamBytes))
		}
	}
	return out, nil
}

func parseHeaders(s string) (map[string]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	if len(s) > MaxHeadersJSON {
		return nil, fmt.Errorf("headers are longer than %d bytes", MaxHeadersJSON)
	}
	var raw map[string]any
	if err := json.Unmarshal([]byte(s), &raw); err != nil || raw == nil {
		return nil, errors.New("headers must be a JSON object")
	}
	out := make(map[string]string, len(raw))
	for k, v := range raw {
		if !methodToken.MatchString(k) {
			return nil, fmt.Errorf("%q is not a header name", clip(k))
		}
		var val string
		switch x := v.(type) {
		case string:
			val = x
		case float64, bool:
			val = fmt.Sprint(x)
		default:
			return nil, fmt.Errorf("header %s must be a string", k)
		}
		if strings.ContainsAny(val, "\r\n\x00") {
			return nil, fmt.Errorf("header %s holds a line break", k)
		}
		out[k] = val
	}
	return out, nil
}

func httpClient(r HTTPRequest) (*http.Client, error) {
	tr := Transport()
	tr.Proxy = nil
	tr.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	switch {
	case strings.TrimSpace(r.TLSCAPEM) != "":
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(r.TLSCAPEM)) {
			return nil, errors.New("tls_ca_pem holds no PEM certificate")
		}
		tr.TLSClientConfig.RootCAs = pool
	case !r.TLSVerify:
		tr.TLSClientConfig.InsecureSkipVerify = true
	}
	return &http.Client{Transport: tr, Timeout: HTTPTimeout}, nil
}

// httpError is a structured http_request error.
func httpError(c wire.Code, message, suggestion string) error {
	s := &wire.Structured{Code: int(c), Message: message, Suggestion: suggestion, Layer: wire.LayerHTTP}
	return &wire.Error{Code: c, Raw: int(c), Known: true, Message: s.String()}
}

// transportError classifies a failed request by its error's type (never
// by its text): DNS, TLS, connection, timeout.
func transportError(ctx context.Context, err error) error {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var invalid x509.CertificateInvalidError
	var recErr tls.RecordHeaderError
	var alert tls.AlertError
	var opErr *net.OpError
	switch {
	case errors.As(err, &dnsErr):
		return httpError(wire.HTTPDNSFailed, "DNS lookup failed: "+err.Error(), "check the host name")
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &invalid):
		return httpError(wire.HTTPTLSError, "TLS certificate not accepted: "+err.Error(), "pin the server's CA with tls_ca_pem, or pass tls_verify=false for a test server")
	case errors.As(err, &recErr), errors.As(err, &alert):
		return httpError(wire.HTTPTLSError, "TLS handshake failed: "+err.Error(), "check that the server speaks TLS on this port")
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		return httpError(wire.Timeout, fmt.Sprintf("no answer within %s", HTTPTimeout), "try a faster server or a smaller request")
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return httpError(wire.HTTPConnectFailed, "cannot connect: "+err.Error(), "check the host, the port and the network")
	}
	return httpError(wire.HTTPUnknown, "the request failed: "+err.Error(), "")
}
