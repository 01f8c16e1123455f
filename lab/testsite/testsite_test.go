package testsite

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func get(t *testing.T, srv *httptest.Server, path string) (*http.Response, string) {
	t.Helper()
	resp, err := srv.Client().Get(srv.URL + path)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestSite(t *testing.T) {
	srv := httptest.NewServer(Handler())
	defer srv.Close()

	resp, body := get(t, srv, "/page/a")
	assert.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, body, "<title>Page A</title>")

	_, body = get(t, srv, "/spa")
	assert.Greater(t, len(body), 1_000_000, "the SPA page is over 1 MB")

	resp, body = get(t, srv, "/large?kb=2048")
	assert.Equal(t, int64(2048*1024), resp.ContentLength)
	assert.Len(t, body, 2048*1024)
	var z strings.Builder
	zw := gzip.NewWriter(&z)
	io.WriteString(zw, body)
	zw.Close()
	assert.Less(t, z.Len(), 900_000, "the large page is gzip-worthy")

	_, r1 := get(t, srv, "/random?kb=64")
	_, r2 := get(t, srv, "/random?kb=64")
	assert.Equal(t, r1, r2, "deterministic")
	z.Reset()
	zw = gzip.NewWriter(&z)
	io.WriteString(zw, r1)
	zw.Close()
	assert.Greater(t, z.Len(), len(r1)/3, "random text does not compress much")

	resp, body = get(t, srv, "/stream?kb=300")
	assert.Equal(t, int64(-1), resp.ContentLength, "no Content-Length")
	assert.Len(t, body, 300*1024)

	resp, _ = get(t, srv, "/redirect?n=3")
	assert.Equal(t, "/page/a", resp.Request.URL.Path)
	_, err := srv.Client().Get(srv.URL + "/redirect/loop")
	assert.Error(t, err, "a loop ends in the client's redirect limit")

	resp, _ = get(t, srv, "/status/503")
	assert.Equal(t, 503, resp.StatusCode)

	resp, err = srv.Client().PostForm(srv.URL+"/form/submit", url.Values{"name": {"Ann"}, "size": {"l"}})
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(b), `<dd id="f-name">Ann</dd>`)

	_, body = get(t, srv, "/search?q=go")
	assert.Equal(t, 10, strings.Count(body, `class="result"`))

	req, _ := http.NewRequest("PATCH", srv.URL+"/echo?x=1", strings.NewReader("hello"))
	req.Header.Set("X-Test", "v")
	resp, err = srv.Client().Do(req)
	require.NoError(t, err)
	b, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(b), `"method":"PATCH"`)
	assert.Contains(t, string(b), `"body":"hello"`)
	assert.Contains(t, string(b), `"X-Test":"v"`)
}

func TestStartServesOnTCP(t *testing.T) {
	s, err := Start("127.0.0.1:0")
	require.NoError(t, err)
	resp, err := http.Get(s.URL() + "/page/b")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(b), "<title>Page B</title>")
	assert.NotZero(t, s.Port())
	require.NoError(t, s.Close())
}
