package browser_test

import (
	"context"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/lab/testsite"
	"github.com/agentoslab/agentlab/sampleapps/browser"
)

// BenchmarkHTTPRequest10MB is http_request on a 10 MB body without a
// Content-Length (a declared one over 2 MB is skipped unread), over
// loopback HTTP: read, cut at 150,000 characters, gzip-attached. Target:
// within 150 ms, memory bounded by the prefix and the attachment (B/op
// far below the body's 10 MB: nothing holds the body whole).
func BenchmarkHTTPRequest10MB(b *testing.B) {
	site := httptest.NewServer(testsite.Handler())
	defer site.Close()
	br := browser.New(nil)
	req := browser.HTTPRequest{URL: site.URL + "/stream?kb=10240", TLSVerify: true}
	b.ReportAllocs()
	b.SetBytes(10 << 20)
	for b.Loop() {
		r, err := br.HTTPDo(context.Background(), req)
		if err != nil {
			b.Fatal(err)
		}
		if r["response_body_len"].IntVal() != 10<<20 || r["response_body_gz"].IsZero() {
			b.Fatalf("not cut and attached: %d", r["response_body_len"].IntVal())
		}
	}
}

// http_request on a 10 MB chunked body allocates far less than the body
// (the site's own writes included): nothing holds the body whole, which
// would take at least its 10 MB.
func TestHTTPRequest10MBMemoryBounded(t *testing.T) {
	site := httptest.NewServer(testsite.Handler())
	defer site.Close()
	br := browser.New(nil)
	req := browser.HTTPRequest{URL: site.URL + "/stream?kb=10240", TLSVerify: true}
	allocated := func() uint64 {
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.TotalAlloc
	}
	before := allocated()
	r, err := br.HTTPDo(context.Background(), req)
	used := allocated() - before
	require.NoError(t, err)
	require.Equal(t, int64(10<<20), r["response_body_len"].IntVal())
	require.False(t, r["response_body_gz"].IsZero(), "the body is gzip-attached")
	assert.Less(t, used, uint64(5<<20), "allocated %d bytes for a 10 MB body", used)
}
