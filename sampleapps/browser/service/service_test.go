package service

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/lab/testsite"
	"github.com/agentoslab/agentlab/runtime/aci/sdui"
	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/agentoslab/agentlab/sampleapps/browser"
)

var seq atomic.Int64

type harness struct {
	t    *testing.T
	site *httptest.Server
	cl   *wire.Client
}

// start serves the browser's capabilities on a real socket, with the
// lab's test site on loopback as the web.
func start(t *testing.T) *harness {
	t.Helper()
	if !transport.AbstractSupported() {
		t.Skip("needs abstract unix sockets (Linux)")
	}
	site := httptest.NewServer(testsite.Handler())
	t.Cleanup(site.Close)
	b := browser.New(&browser.Options{
		SearchEngines: map[string]string{"lab": site.URL + "/search?q={q}"}, DefaultEngine: "lab",
		Package: "org.agentos.sample.browser", VersionName: "1.0.0", VersionCode: 7,
	})
	srv, err := New(b, nil)
	require.NoError(t, err)
	name := fmt.Sprintf("@aci-browser-test-%d-%d", os.Getpid(), seq.Add(1))
	ctx, cancel := context.WithCancel(context.Background())
	sv, err := srv.Start(ctx, name)
	require.NoError(t, err)
	t.Cleanup(func() { cancel(); require.NoError(t, sv.Wait()) })
	cl := &wire.Client{Socket: name, UID: os.Getuid(), CallerPkg: "org.agentos.runtime"}
	return &harness{t: t, site: site, cl: cl}
}

// call makes one call and requires success.
func (h *harness) call(capability string, params map[string]any) wire.Bundle {
	h.t.Helper()
	resp := h.raw(capability, params)
	require.NoError(h.t, resp.Err(), capability)
	return resp.Result
}

// raw converts params the way the runtime will (the declared types) and
// calls.
func (h *harness) raw(capability string, params map[string]any) *wire.Response {
	h.t.Helper()
	caps, _, err := h.cl.Capabilities(context.Background())
	require.NoError(h.t, err)
	var decl *wire.Capability
	for i := range caps {
		if caps[i].ID == capability {
			decl = &caps[i]
		}
	}
	require.NotNil(h.t, decl, "no capability %s", capability)
	args, _ := json.Marshal(params)
	bundle, err := wire.ConvertArgs(decl, args)
	require.NoError(h.t, err)
	timeout := decl.SyncTimeout
	resp, err := h.cl.Call(context.Background(), capability, bundle, timeout)
	require.NoError(h.t, err)
	return resp
}

func (h *harness) url(path string) string { return h.site.URL + path }

func jsonOf(t *testing.T, v wire.Value, into any) {
	t.Helper()
	require.Equal(t, wire.TypeString, v.Type())
	require.NoError(t, json.Unmarshal([]byte(v.Str()), into), v.Str())
}

// Upstream counted 42 calls by hand on a device; every capability the
// browser declares is called here, on a real socket.
func TestEveryCapabilityIsDeclaredAndAnswers(t *testing.T) {
	h := start(t)
	caps, problems, err := h.cl.Capabilities(context.Background())
	require.NoError(t, err)
	require.Empty(t, problems, "the browser's own list parses cleanly")
	var ids []string
	for _, c := range caps {
		ids = append(ids, c.ID)
		assert.False(t, wire.LooksLikeVersion(c.Description), c.ID)
		if c.ID == wire.ProtocolCapability {
			assert.Equal(t, []wire.Flag{wire.FlagNoUI}, c.Flags)
		} else if c.ID == "browser_share" {
			assert.Equal(t, []wire.Flag{wire.FlagBackground}, c.Flags)
		} else {
			assert.Equal(t, []wire.Flag{wire.FlagBackground, wire.FlagNoUI}, c.Flags, c.ID)
		}
	}
	want := []string{"browser_open", "browser_read", "browser_crawl", "browser_search", "browser_script", "browser_list",
		"browser_info", "browser_capture", "browser_find", "browser_nav", "browser_screenshot", "console_ui", "console_action",
		"browser_elements", "browser_action", "browser_wait", "browser_snapshot", "browser_restore", "browser_events",
		"browser_audit", "browser_media", "browser_share", "browser_console", "browser_query", "browser_tabnew",
		"browser_tabs", "browser_tab", "browser_tabclose", "browser_mouse", "http_request", "aci_protocol"}
	assert.Equal(t, want, ids)
}

func TestOpenReadCrawl(t *testing.T) {
	h := start(t)
	resp := h.raw("browser_read", nil)
	assert.ErrorIs(t, resp.Err(), wire.PreconditionFailed, "nothing to read before browser_open")

	r := h.call("browser_open", map[string]any{"url": h.url("/redirect?n=2")})
	assert.True(t, r["ready"].BoolVal(), "the ready gate: the page arrived and was parsed")
	assert.Equal(t, h.url("/page/a"), r["url"].Str())
	assert.Equal(t, "Page A", r["title"].Str())
	assert.Equal(t, int64(200), r["status"].IntVal())

	r = h.call("browser_read", map[string]any{"mode": "full"})
	assert.Contains(t, r["html"].Str(), "<script>var analytics")
	assert.False(t, r["truncated"].BoolVal())
	r = h.call("browser_read", map[string]any{"mode": "clean"})
	assert.NotContains(t, r["html"].Str(), "analytics")
	assert.NotContains(t, r["html"].Str(), "comment the clean mode drops")
	assert.Contains(t, r["html"].Str(), `<h1 id="heading">Page A</h1>`)

	r = h.call("browser_crawl", nil)
	assert.Contains(t, r["text"].Str(), "Alpha is the first page.")
	assert.NotContains(t, r["text"].Str(), "analytics")
	var links []struct{ Text, Href string }
	jsonOf(t, r["links"], &links)
	assert.Equal(t, int64(3), r["link_count"].IntVal())
	assert.Equal(t, h.url("/page/b"), links[0].Href, "links are absolute")

	r = h.call("browser_open", map[string]any{"url": h.url("/status/404")})
	assert.True(t, r["ready"].BoolVal())
	assert.Equal(t, "the server answered HTTP 404", r["warn"].Str())

	r = h.call("browser_open", map[string]any{"url": "http://127.0.0.1:1/"})
	assert.False(t, r["ready"].BoolVal(), "a page that never loads is not ready")
	assert.Contains(t, r["warn"].Str(), "did not load")

	resp = h.raw("browser_open", map[string]any{"url": "file:///etc/passwd"})
	assert.ErrorIs(t, resp.Err(), wire.BadRequest)
}

// Upstream's SPA pages over 1 MB came back empty; here the page is cut at
// 150,000 characters with the marker and the full HTML rides along
// gzip-compressed.
func TestLargePageIsTruncatedAndAttached(t *testing.T) {
	h := start(t)
	h.call("browser_open", map[string]any{"url": h.url("/spa")})
	r := h.call("browser_read", nil)
	assert.True(t, r["truncated"].BoolVal())
	assert.Contains(t, r["html"].Str(), "…[内容已截断，完整 HTML 见 html_gz，共 ")
	full, errs := wire.Expand(r)
	require.Empty(t, errs)
	assert.Greater(t, len(full["html"]), testsite.SPABytes)
	assert.Equal(t, int64(len(full["html"])), r["html_len"].IntVal())
	assert.True(t, strings.HasSuffix(strings.TrimSpace(full["html"]), "</html>"))
}

func TestSearchUsesTheConfiguredEngine(t *testing.T) {
	h := start(t)
	r := h.call("browser_search", map[string]any{"query": "agent os"})
	assert.Equal(t, "lab", r["engine"].Str())
	assert.Equal(t, h.url("/search?q=agent+os"), r["url"].Str())
	assert.Contains(t, r["text"].Str(), "agent os result 1")
	assert.Equal(t, int64(10+3-3), r["link_count"].IntVal())
	resp := h.raw("browser_search", map[string]any{"query": "x", "engine": "altavista"})
	assert.ErrorIs(t, resp.Err(), wire.BadRequest)
	assert.Contains(t, resp.ErrorMessage, "configured: lab")
}

// Forms submit for real: type, select, check, click submit → the server
// receives the fields and the next page shows them.
func TestFormsSubmitOverHTTP(t *testing.T) {
	h := start(t)
	h.call("browser_open", map[string]any{"url": h.url("/form")})
	r := h.call("browser_elements", nil)
	var els []struct{ ID, Tag, Name, Type string }
	jsonOf(t, r["elements"], &els)
	ids := map[string]string{}
	for _, e := range els {
		if e.Name != "" {
			ids[e.Name] = e.ID
		}
	}
	require.Contains(t, ids, "name")
	h.call("browser_action", map[string]any{"id": ids["name"], "op": "type", "arg": "Ann Lee"})
	h.call("browser_action", map[string]any{"selector": "#note", "op": "type", "arg": "ring twice"})
	r = h.call("browser_action", map[string]any{"selector": "#size", "op": "select", "arg": "Large"})
	assert.Equal(t, "l", r["value"].Str())
	r = h.call("browser_action", map[string]any{"selector": "#gift", "op": "click"})
	assert.True(t, r["checked"].BoolVal())
	r = h.call("browser_action", map[string]any{"selector": "#send", "op": "click"})
	assert.True(t, r["ok"].BoolVal())
	assert.Equal(t, h.url("/form/submit"), r["url"].Str())
	r = h.call("browser_query", map[string]any{"selector": "dd"})
	var dd []struct{ ID, Text string }
	jsonOf(t, r["matches"], &dd)
	got := map[string]string{}
	for _, d := range dd {
		got[d.ID] = d.Text
	}
	assert.Equal(t, map[string]string{"f-name": "Ann Lee", "f-secret": "", "f-size": "l", "f-gift": "yes", "f-note": "ring twice", "f-token": "t-123"}, got)

	// A GET form goes to its action with the query.
	h.call("browser_open", map[string]any{"url": h.url("/form")})
	h.call("browser_action", map[string]any{"selector": "#q", "op": "type", "arg": "go lang"})
	r = h.call("browser_action", map[string]any{"selector": "#go", "op": "click"})
	assert.Equal(t, h.url("/search?q=go+lang"), r["url"].Str())

	// Login: POST, 303, cookie kept by the browser's jar.
	h.call("browser_open", map[string]any{"url": h.url("/login")})
	h.call("browser_action", map[string]any{"selector": "#user", "op": "type", "arg": "ann"})
	r = h.call("browser_action", map[string]any{"selector": "#enter", "op": "click"})
	assert.Equal(t, h.url("/welcome"), r["url"].Str())
	r = h.call("browser_crawl", nil)
	assert.Contains(t, r["text"].Str(), "Welcome, ann")

	// A link click navigates.
	h.call("browser_open", map[string]any{"url": h.url("/page/a")})
	r = h.call("browser_action", map[string]any{"selector": "#next", "op": "click"})
	assert.Equal(t, h.url("/page/b"), r["url"].Str())

	resp := h.raw("browser_action", map[string]any{"op": "click"})
	assert.ErrorIs(t, resp.Err(), wire.BadRequest, "no id or selector")
	resp = h.raw("browser_action", map[string]any{"selector": "#nope", "op": "click"})
	assert.ErrorIs(t, resp.Err(), wire.PreconditionFailed)
	resp = h.raw("browser_action", map[string]any{"selector": "#heading", "op": "fly"})
	assert.ErrorIs(t, resp.Err(), wire.BadRequest)
}

func TestNavFindQueryMedia(t *testing.T) {
	h := start(t)
	h.call("browser_open", map[string]any{"url": h.url("/page/a")})
	h.call("browser_open", map[string]any{"url": h.url("/page/b")})
	r := h.call("browser_nav", map[string]any{"action": "back"})
	assert.Equal(t, h.url("/page/a"), r["url"].Str())
	assert.True(t, r["can_forward"].BoolVal())
	r = h.call("browser_nav", map[string]any{"action": "forward"})
	assert.Equal(t, h.url("/page/b"), r["url"].Str())
	r = h.call("browser_nav", map[string]any{"action": "reload"})
	assert.Equal(t, h.url("/page/b"), r["url"].Str())
	resp := h.raw("browser_nav", map[string]any{"action": "sideways"})
	assert.ErrorIs(t, resp.Err(), wire.BadRequest, "upstream reloaded on an unknown action")

	r = h.call("browser_find", map[string]any{"text": "NEEDLE"})
	assert.Equal(t, int64(2), r["count"].IntVal())
	r = h.call("browser_find", map[string]any{"action": "next"})
	assert.Equal(t, int64(1), r["index"].IntVal())
	r = h.call("browser_find", map[string]any{"action": "next", "forward": "false"})
	assert.Equal(t, int64(0), r["index"].IntVal(), "forward:false given as text is honoured")
	r = h.call("browser_find", map[string]any{"action": "clear"})
	assert.False(t, r["found"].BoolVal())

	r = h.call("browser_query", map[string]any{"selector": "nav a[href^='/']"})
	assert.Equal(t, int64(2), r["count"].IntVal())
	resp = h.raw("browser_query", map[string]any{"selector": "a[["})
	assert.ErrorIs(t, resp.Err(), wire.BadRequest)

	h.call("browser_open", map[string]any{"url": h.url("/media")})
	r = h.call("browser_media", nil)
	var media []struct{ Tag, Src, Poster, Download string }
	jsonOf(t, r["resources"], &media)
	require.Len(t, media, 4)
	assert.Equal(t, h.url("/img/poster.jpg"), media[1].Poster)
	assert.Equal(t, "report.pdf", media[3].Download)
}

func TestWait(t *testing.T) {
	h := start(t)
	h.call("browser_open", map[string]any{"url": h.url("/hidden")})
	r := h.call("browser_wait", map[string]any{"cond": "visible", "arg": "#shown"})
	assert.True(t, r["ok"].BoolVal())
	for _, sel := range []string{"#by-attr", "#by-style", "#inside"} {
		r = h.call("browser_wait", map[string]any{"cond": "hidden", "arg": sel, "timeout_ms": 200})
		assert.True(t, r["ok"].BoolVal(), sel)
	}
	r = h.call("browser_wait", map[string]any{"cond": "visible", "arg": "#by-style", "timeout_ms": 200})
	assert.False(t, r["ok"].BoolVal())
	assert.Contains(t, r["reason"].Str(), "timeout")

	// A wait wakes when another call changes the page.
	done := make(chan wire.Bundle, 1)
	go func() {
		done <- h.call("browser_wait", map[string]any{"cond": "text_contains", "arg": "Slow page", "timeout_ms": 20000})
	}()
	h.call("browser_open", map[string]any{"url": h.url("/slow?ms=100")})
	r = <-done
	assert.True(t, r["ok"].BoolVal())
	r = h.call("browser_wait", map[string]any{"cond": "network_idle"})
	assert.True(t, r["ok"].BoolVal())
	resp := h.raw("browser_wait", map[string]any{"cond": "moon"})
	assert.ErrorIs(t, resp.Err(), wire.BadRequest)
}

func TestTabsSnapshotsEventsCapture(t *testing.T) {
	h := start(t)
	r := h.call("browser_tabnew", map[string]any{"url": h.url("/page/a")})
	t1 := r["tab_id"].Str()
	r = h.call("browser_tabnew", map[string]any{"url": h.url("/page/b")})
	t2 := r["tab_id"].Str()
	r = h.call("browser_tabs", nil)
	assert.Equal(t, int64(2), r["count"].IntVal())
	assert.Equal(t, t2, r["active_id"].Str())
	r = h.call("browser_list", nil)
	assert.Contains(t, r["tabs"].Str(), "title=Page B (active)")
	r = h.call("browser_tab", map[string]any{"id": t1})
	assert.Equal(t, h.url("/page/a"), r["url"].Str())
	r = h.call("browser_tabclose", map[string]any{"id": t2})
	assert.Equal(t, int64(1), r["remaining"].IntVal())
	resp := h.raw("browser_tab", map[string]any{"id": "t99"})
	assert.ErrorIs(t, resp.Err(), wire.PreconditionFailed)

	r = h.call("browser_snapshot", map[string]any{"action": "save", "label": "a"})
	sid := r["id"].Str()
	h.call("browser_open", map[string]any{"url": h.url("/page/c")})
	r = h.call("browser_snapshot", map[string]any{"action": "list"})
	assert.Equal(t, int64(1), r["count"].IntVal())
	r = h.call("browser_restore", map[string]any{"id": sid})
	assert.Equal(t, h.url("/page/a"), r["url"].Str())
	r = h.call("browser_crawl", nil)
	assert.Contains(t, r["text"].Str(), "Alpha")

	r = h.call("browser_events", map[string]any{"limit": 500})
	var events []browser.Event
	jsonOf(t, r["events"], &events)
	types := map[string]bool{}
	for _, e := range events {
		types[e.Type] = true
	}
	assert.True(t, types["page_started"] && types["page_finished"] && types["request"], "%v", types)

	r = h.call("browser_capture", map[string]any{"filter": "/page/c"})
	assert.Equal(t, int64(1), r["count"].IntVal())
	assert.True(t, r["enabled"].BoolVal())
	h.call("browser_capture", map[string]any{"action": "disable"})
	h.call("browser_open", map[string]any{"url": h.url("/page/b")})
	r = h.call("browser_capture", map[string]any{"filter": "/page/b", "action": "list"})
	assert.Equal(t, int64(1), r["count"].IntVal(), "the tabnew's request only; none while disabled")
	r = h.call("browser_capture", map[string]any{"action": "clear"})
	assert.Equal(t, int64(0), r["count"].IntVal())
}

// Every call is in the audit, with its real outcome (upstream logged
// before the handler, so ok was always true, and kept one entry), and
// param values never appear (upstream echoed params, tokens included).
func TestAuditRecordsOutcomesNotValues(t *testing.T) {
	h := start(t)
	h.call("browser_open", map[string]any{"url": h.url("/page/a")})
	h.raw("browser_read", map[string]any{"mode": "weird"})
	h.call("http_request", map[string]any{"url": h.url("/echo"), "headers": `{"Authorization":"Bearer sk-secret-123"}`})
	r := h.call("browser_audit", map[string]any{"limit": 10})
	assert.NotContains(t, r["log"].Str(), "sk-secret-123")
	assert.NotContains(t, r["log"].Str(), h.url("/page/a"))
	var log []browser.AuditEntry
	jsonOf(t, r["log"], &log)
	require.Len(t, log, 3)
	assert.Equal(t, browser.AuditEntry{Cap: "browser_open", Params: []string{"url"}, OK: true, Time: log[0].Time}, log[0])
	assert.Equal(t, "browser_read", log[1].Cap)
	assert.False(t, log[1].OK)
	assert.Equal(t, int(wire.BadRequest), log[1].Code)
	assert.Equal(t, []string{"headers", "url"}, log[2].Params)
}

func TestHTTPRequest(t *testing.T) {
	h := start(t)
	r := h.call("http_request", map[string]any{"url": h.url("/echo?x=1"), "method": "PATCH", "body": "hello",
		"headers": map[string]any{"X-Test": "v", "X-Num": 5}})
	assert.Equal(t, int64(200), r["status_code"].IntVal())
	var echo struct {
		Method  string
		Body    string
		Headers map[string]string
	}
	require.NoError(t, json.Unmarshal([]byte(r["response_body"].Str()), &echo))
	assert.Equal(t, "PATCH", echo.Method)
	assert.Equal(t, "hello", echo.Body)
	assert.Equal(t, "v", echo.Headers["X-Test"])
	assert.Equal(t, "5", echo.Headers["X-Num"], "a headers object (not text) from the model still arrives")
	assert.Equal(t, "application/octet-stream", echo.Headers["Content-Type"])
	var hs map[string]string
	jsonOf(t, r["response_headers"], &hs)
	assert.Equal(t, "two", hs["X-Echo"], "a repeated header keeps its last value")

	r = h.call("http_request", map[string]any{"url": h.url("/status/503")})
	assert.Equal(t, int64(503), r["status_code"].IntVal(), "an HTTP error status is an answer, not a failure")

	r = h.call("http_request", map[string]any{"url": h.url("/large?kb=1024")})
	assert.True(t, r["truncated"].BoolVal())
	full, errs := wire.Expand(r)
	require.Empty(t, errs)
	assert.Len(t, full["response_body"], 1024*1024)

	r = h.call("http_request", map[string]any{"url": h.url("/large?kb=4096")})
	assert.Equal(t, "", r["response_body"].Str())
	assert.Contains(t, r["truncated_reason"].Str(), "Content-Length")

	r = h.call("http_request", map[string]any{"url": h.url("/stream?kb=3072")})
	assert.True(t, r["truncated"].BoolVal(), "a body without a length is streamed through the cut")
	assert.Equal(t, int64(3072*1024), r["response_body_len"].IntVal())

	resp := h.raw("http_request", map[string]any{"url": "http://127.0.0.1:1/"})
	assert.ErrorIs(t, resp.Err(), wire.HTTPConnectFailed)
	e := resp.Err().(*wire.Error)
	require.NotNil(t, e.Detail, "structured: %s", resp.ErrorMessage)
	assert.Equal(t, wire.LayerHTTP, e.Detail.Layer)
	resp = h.raw("http_request", map[string]any{"url": h.url("/echo"), "method": "GE T"})
	assert.ErrorIs(t, resp.Err(), wire.BadParam)
	resp = h.raw("http_request", map[string]any{"url": h.url("/echo"), "headers": "[1]"})
	assert.ErrorIs(t, resp.Err(), wire.BadParam)
	resp = h.raw("http_request", map[string]any{"url": "http://no-such-host.invalid/"})
	assert.ErrorIs(t, resp.Err(), wire.HTTPDNSFailed)
}

// TLS: the system's roots refuse a self-signed server; tls_verify false
// (as a boolean or, from an older controller, as text) or pinning its CA
// gets through, and a wrong pin does not.
func TestHTTPRequestTLS(t *testing.T) {
	h := start(t)
	tlsSite := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("secure")) }))
	tlsSite.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	tlsSite.StartTLS()
	defer tlsSite.Close()
	resp := h.raw("http_request", map[string]any{"url": tlsSite.URL})
	assert.ErrorIs(t, resp.Err(), wire.HTTPTLSError)
	assert.Contains(t, resp.Err().(*wire.Error).Detail.Suggestion, "tls_ca_pem")

	for _, v := range []any{false, "false"} {
		r := h.call("http_request", map[string]any{"url": tlsSite.URL, "tls_verify": v})
		assert.Equal(t, "secure", r["response_body"].Str(), "tls_verify=%v", v)
	}
	pem := certPEM(t, tlsSite)
	r := h.call("http_request", map[string]any{"url": tlsSite.URL, "tls_ca_pem": pem})
	assert.Equal(t, "secure", r["response_body"].Str())
	resp = h.raw("http_request", map[string]any{"url": tlsSite.URL, "tls_ca_pem": otherCA(t), "tls_verify": false})
	assert.ErrorIs(t, resp.Err(), wire.HTTPTLSError, "the pin wins over tls_verify=false")
}

func TestConsole(t *testing.T) {
	h := start(t)
	r := h.call("console_ui", nil)
	s, warn, err := sdui.Parse([]byte(r["snapshot"].Str()))
	require.NoError(t, err)
	assert.Empty(t, warn)
	assert.Equal(t, browser.ConsoleTitle, s.Title)
	assert.NotZero(t, s.UpdatedAt)
	for _, c := range s.Components {
		assert.True(t, sdui.Known(c.Type), c.Type)
	}
	// Both spellings of an input's payload (upstream's two consoles).
	for _, payload := range []map[string]string{{"url": h.url("/page/a")}, sdui.InputPayload("url", h.url("/page/b"))} {
		b, _ := json.Marshal(payload)
		r = h.call("console_action", map[string]any{"action": "open", "payload": string(b)})
		assert.True(t, r["ok"].BoolVal(), r["message"].Str())
	}
	r = h.call("console_ui", nil)
	assert.Contains(t, r["snapshot"].Str(), h.url("/page/b"))
	r = h.call("console_action", map[string]any{"action": "open", "payload": "{}"})
	assert.False(t, r["ok"].BoolVal())
	assert.Contains(t, r["message"].Str(), "请输入网址")
	for _, a := range []string{"read", "crawl", "find_next", "find_clear", "nav_back", "nav_forward", "nav_reload", "capture_toggle", "capture_clear"} {
		r = h.call("console_action", map[string]any{"action": a})
		assert.True(t, r["ok"].BoolVal(), "%s: %s", a, r["message"].Str())
	}
	b, _ := json.Marshal(sdui.InputPayload("find", "needle"))
	r = h.call("console_action", map[string]any{"action": "find", "payload": string(b)})
	assert.Equal(t, "2 matches", r["message"].Str())
	r = h.call("console_action", map[string]any{"action": "increment"})
	assert.False(t, r["ok"].BoolVal(), "a stale action from upstream's description is unknown")
}

func TestRendererOnlyCapabilitiesSaySo(t *testing.T) {
	h := start(t)
	for id, params := range map[string]map[string]any{
		"browser_screenshot": nil, "browser_script": {"code": "1+1"}, "browser_share": {"type": "page"},
		"browser_mouse": {"action": "click", "x": 1, "y": 2}, "browser_console": nil,
	} {
		resp := h.raw(id, params)
		assert.ErrorIs(t, resp.Err(), wire.Unsupported, id)
		assert.Contains(t, resp.ErrorMessage, "not supported by this engine", id)
	}
	r := h.call("browser_info", nil)
	assert.Equal(t, "org.agentos.sample.browser", r["package"].Str())
	assert.Equal(t, int64(7), r["versionCode"].IntVal())
	r = h.call("aci_protocol", nil)
	assert.Equal(t, wire.ProtocolV1, r["protocol_version"].Str())
}
