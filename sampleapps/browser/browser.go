// Package browser is the sample controlled app of ACI: upstream's ZorvAI
// browser on a Go HTML engine (golang.org/x/net/html, CSS selectors by
// github.com/andybalholm/cascadia) instead of a WebView. This package is
// the SDK-free engine — tabs, navigation with a real ready gate, reading,
// crawling, search, forms that submit over HTTP, snapshots, events,
// request capture, an audit, http_request and the SDUI console — whose
// methods return ACI result bundles; capabilities.go declares them to the
// SDK (runtime/sdk/aci) and cmd/browser serves them.
//
// What a Go engine cannot do it says: browser_screenshot, browser_mouse,
// browser_script, browser_share and browser_console answer Unsupported
// ("not supported by this engine"). Without a renderer "visible" means
// not hidden by the hidden attribute, an inline display:none or
// visibility:hidden, or a hidden ancestor; stylesheets and scripts do not
// run, so a page is its HTML.
package browser

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/andybalholm/cascadia"
	"golang.org/x/net/html"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/platform"
)

// Limits of the engine.
const (
	// MaxPageBytes is the most of a page the engine loads.
	MaxPageBytes = 16 << 20
	// LoadTimeout bounds one navigation (the ready gate): below the 20 s
	// browser_open declares, so the controller hears back.
	LoadTimeout = 15 * time.Second
	// MaxTabs bounds the open tabs.
	MaxTabs = 32
	maxRing = 500
	// MaxLinks is the most links crawl and search return.
	MaxLinks = 200
	// MaxCrawlChars caps crawl text before the 150,000-character cut
	// (upstream's JS-side cap).
	MaxCrawlChars = 200_000
	// MaxSnapshots bounds the saved snapshots.
	MaxSnapshots = 50
)

// Options configure a Browser. The zero value works.
type Options struct {
	// Client loads pages; nil is a client with a cookie jar (redirects
	// followed, at most 10).
	Client *http.Client
	// SearchEngines maps an engine name to a URL template in which {q}
	// is the escaped query; nil is DefaultEngines. The lab adds its own.
	SearchEngines map[string]string
	// DefaultEngine is browser_search's engine when none is named; "" is "bing".
	DefaultEngine string
	// Package, VersionName and VersionCode are what browser_info reports.
	Package     string
	VersionName string
	VersionCode int64
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// DefaultEngines are the search engines upstream offers.
var DefaultEngines = map[string]string{
	"bing":   "https://www.bing.com/search?q={q}",
	"google": "https://www.google.com/search?q={q}",
	"baidu":  "https://www.baidu.com/s?wd={q}",
	"ddg":    "https://duckduckgo.com/html/?q={q}",
}

// Browser is the engine: tabs and everything recorded about them. Safe
// for concurrent use (calls may overlap; each tab's document changes
// atomically).
type Browser struct {
	o Options

	mu        sync.Mutex
	tabs      []*tab // guarded by mu
	active    string
	nextTab   int
	events    []Event
	capture   []Request
	capturing bool
	snapshots []snapshot
	nextSnap  int
	audit     []AuditEntry
	inflight  int
	changed   chan struct{} // closed and replaced on every change (browser_wait)
	find      findState
	console   string // the last console action's message
}

type tab struct {
	id    string
	page  *page // nil before the first load
	back  []*page
	fwd   []*page
	title string // the title asked for at open
}

type findState struct {
	text  string
	count int
	index int
}

// Event is one navigation event (browser_events).
type Event struct {
	Type string `json:"type"`
	URL  string `json:"url"`
	Time int64  `json:"time"`
}

// Request is one captured request (browser_capture).
type Request struct {
	URL         string            `json:"url"`
	Method      string            `json:"method"`
	Headers     map[string]string `json:"headers"`
	IsMainFrame bool              `json:"is_main_frame"`
	Time        int64             `json:"time"`
}

// AuditEntry is one capability call (browser_audit): which params were
// given (names only: values may be secrets), whether it succeeded and its
// code, recorded after the handler ran.
type AuditEntry struct {
	Cap    string   `json:"cap"`
	Params []string `json:"params"`
	OK     bool     `json:"ok"`
	Code   int      `json:"code"`
	Time   int64    `json:"time"`
}

type snapshot struct {
	ID    string `json:"id"`
	URL   string `json:"url"`
	Title string `json:"title"`
	Len   int    `json:"html_len"`
	Time  int64  `json:"time"`
	label string
	html  string
}

// New returns a browser with no tabs.
func New(o *Options) *Browser {
	b := &Browser{capturing: true, changed: make(chan struct{})}
	if o != nil {
		b.o = *o
	}
	if b.o.Client == nil {
		jar, _ := cookiejar.New(nil)
		b.o.Client = &http.Client{Jar: jar, Transport: Transport()}
	}
	if b.o.SearchEngines == nil {
		b.o.SearchEngines = DefaultEngines
	}
	if b.o.DefaultEngine == "" {
		b.o.DefaultEngine = "bing"
	}
	if b.o.Now == nil {
		b.o.Now = time.Now
	}
	// Every request the engine makes is captured, redirects included.
	inner := b.o.Client.Transport
	if inner == nil {
		inner = http.DefaultTransport
	}
	c := *b.o.Client
	c.Transport = captureTransport{b: b, next: inner}
	b.o.Client = &c
	return b
}

// Transport is http.DefaultTransport's setup dialing through the
// platform's resolver: on Android, Go's own resolver asks a DNS server
// at resolv.conf's address, which devices do not have, while the hosts
// file and netd (where the lab publishes its test site) answer.
func Transport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	d := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	// Current at dial time: the binary calls platform.Setup in main.
	tr.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
		return platform.Current().DialContext(d)(ctx, network, address)
	}
	return tr
}

func (b *Browser) now() int64 { return b.o.Now().UnixMilli() }

// notifyLocked wakes browser_wait; called with mu held.
func (b *Browser) notifyLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *Browser) eventLocked(typ, u string) {
	b.events = appendRing(b.events, Event{Type: typ, URL: u, Time: b.now()})
}

func appendRing[T any](s []T, v T) []T {
	s = append(s, v)
	if len(s) > maxRing {
		s = slices.Delete(s, 0, len(s)-maxRing)
	}
	return s
}

type captureTransport struct {
	b    *Browser
	next http.RoundTripper
}

// sensitive are request headers the capture never shows.
var sensitive = map[string]bool{"Authorization": true, "Cookie": true, "Proxy-Authorization": true}

func (t captureTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	b := t.b
	b.mu.Lock()
	b.inflight++
	if b.capturing {
		h := map[string]string{}
		for k := range r.Header {
			h[k] = r.Header.Get(k)
			if sensitive[http.CanonicalHeaderKey(k)] {
				h[k] = "[redacted]"
			}
		}
		b.capture = appendRing(b.capture, Request{URL: r.URL.String(), Method: r.Method, Headers: h, IsMainFrame: true, Time: b.now()})
	}
	b.eventLocked("request", r.URL.String())
	b.mu.Unlock()
	resp, err := t.next.RoundTrip(r)
	b.mu.Lock()
	b.inflight--
	b.notifyLocked()
	b.mu.Unlock()
	return resp, err
}

// Errors callers see as codes.
var (
	errNoPage = wire.Errorf(wire.PreconditionFailed, "no page is open: call browser_open first")
)

func badRequest(format string, args ...any) error {
	return wire.Errorf(wire.BadRequest, format, args...)
}

// Unsupported is the answer of the capabilities a Go engine cannot serve.
func Unsupported(capability, why string) error {
	return wire.Errorf(wire.Unsupported, "%s is not supported by this engine: %s", capability, why)
}

// checkURL accepts absolute http(s) URLs.
func checkURL(raw string) (string, error) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return "", badRequest("no url")
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "", badRequest("%q is not an absolute URL", clip(raw))
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", badRequest("only http and https URLs can be opened, not %q", u.Scheme)
	}
	return u.String(), nil
}

// fetch loads one document; the page comes back whatever its status.
func (b *Browser) fetch(ctx context.Context, method, rawURL, contentType string, body io.Reader) (*page, error) {
	ctx, cancel := context.WithTimeout(ctx, LoadTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, rawURL, body)
	if err != nil {
		return nil, badRequest("bad request: %v", err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("User-Agent", "AgentOS-Browser/1.0 (Go HTML engine)")
	b.mu.Lock()
	b.eventLocked("page_started", rawURL)
	b.mu.Unlock()
	resp, err := b.o.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxPageBytes))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rawURL, err)
	}
	p := parsePage(resp.Request.URL.String(), resp.StatusCode, string(raw))
	b.mu.Lock()
	b.eventLocked("page_finished", p.url)
	b.mu.Unlock()
	return p, nil
}

// activeTabLocked is the active tab, nil when none.
func (b *Browser) activeTabLocked() *tab {
	for _, t := range b.tabs {
		if t.id == b.active {
			return t
		}
	}
	return nil
}

// current is the active tab's page.
func (b *Browser) current() (*tab, *page, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.activeTabLocked()
	if t == nil || t.page == nil {
		return nil, nil, errNoPage
	}
	return t, t.page, nil
}

// show makes p t's page, pushing the old one on the back stack.
func (b *Browser) show(t *tab, p *page) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if t.page != nil {
		t.back = append(t.back, t.page)
		if len(t.back) > 50 {
			t.back = t.back[1:]
		}
	}
	t.page, t.fwd = p, nil
	b.notifyLocked()
}

func (b *Browser) newTabLocked(title string) (*tab, error) {
	if len(b.tabs) >= MaxTabs {
		return nil, wire.Errorf(wire.PreconditionFailed, "%d tabs are open; close one first", MaxTabs)
	}
	b.nextTab++
	t := &tab{id: "t" + itoa(b.nextTab), title: title}
	b.tabs = append(b.tabs, t)
	b.active = t.id
	return t, nil
}

// loadResult is browser_open's and browser_tabnew's answer about a load.
func loadResult(p *page, err error) wire.Bundle {
	r := wire.Bundle{"launched": wire.Bool(true)}
	if err != nil {
		r["ready"] = wire.Bool(false)
		r["warn"] = wire.String("the page did not load: " + err.Error())
		return r
	}
	r["ready"] = wire.Bool(true)
	r["url"] = wire.String(p.url)
	r["title"] = wire.String(p.title)
	r["status"] = wire.Int(int64(p.status))
	if p.status >= 400 {
		r["warn"] = wire.String(fmt.Sprintf("the server answered HTTP %d", p.status))
	}
	return r
}

// Open loads url in the active tab (opening one when there is none) and
// returns once the document arrived and was parsed (the ready gate), or
// the load failed (ready false and why in warn).
func (b *Browser) Open(ctx context.Context, rawURL, title string) (wire.Bundle, error) {
	u, err := checkURL(rawURL)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	t := b.activeTabLocked()
	if t == nil {
		if t, err = b.newTabLocked(title); err != nil {
			b.mu.Unlock()
			return nil, err
		}
	}
	b.mu.Unlock()
	p, err := b.fetch(ctx, http.MethodGet, u, "", nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r := loadResult(nil, err)
		r["url"] = wire.String(u)
		return r, nil
	}
	b.show(t, p)
	return loadResult(p, nil), nil
}

// Read returns the page's HTML (mode full: as loaded and since changed
// by actions; clean: without scripts, styles, comments, hidden elements
// and presentational attributes), by the large-result rules.
func (b *Browser) Read(mode string) (wire.Bundle, error) {
	if mode == "" {
		mode = "full"
	}
	if mode != "full" && mode != "clean" {
		return nil, badRequest("mode must be full or clean, not %q", clip(mode))
	}
	_, p, err := b.current()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	text := p.html()
	if mode == "clean" {
		text = p.cleanHTML()
	}
	b.mu.Unlock()
	r := wire.Bundle{"url": wire.String(p.url), "title": wire.String(p.title), "mode": wire.String(mode)}
	wire.PutText(r, "html", text, true, wire.MarkerHTML)
	return r, nil
}

// Crawl returns the page's visible text and links.
func (b *Browser) Crawl() (wire.Bundle, error) {
	_, p, err := b.current()
	if err != nil {
		return nil, err
	}
	return b.crawl(p), nil
}

func (b *Browser) crawl(p *page) wire.Bundle {
	b.mu.Lock()
	text := p.visibleText()
	links, total := p.links(MaxLinks)
	b.mu.Unlock()
	if links == nil {
		links = []link{}
	}
	if len(text) > MaxCrawlChars*3 {
		text = strings.ToValidUTF8(text[:MaxCrawlChars*3], "")
	}
	r := wire.Bundle{"url": wire.String(p.url), "title": wire.String(p.title),
		"links": wire.String(jsonText(links)), "link_count": wire.Int(int64(total))}
	wire.PutText(r, "text", text, false, nil)
	return r
}

// Search loads the engine's results page for query and crawls it.
func (b *Browser) Search(ctx context.Context, query, engine string) (wire.Bundle, error) {
	query = strings.TrimSpace(query)
	if query == "" {
		return nil, badRequest("no query")
	}
	if engine == "" {
		engine = b.o.DefaultEngine
	}
	tmpl, ok := b.o.SearchEngines[engine]
	if !ok {
		names := make([]string, 0, len(b.o.SearchEngines))
		for n := range b.o.SearchEngines {
			names = append(names, n)
		}
		slices.Sort(names)
		return nil, badRequest("unknown engine %q (configured: %s)", clip(engine), strings.Join(names, ", "))
	}
	u := strings.ReplaceAll(tmpl, "{q}", url.QueryEscape(query))
	open, err := b.Open(ctx, u, "")
	if err != nil {
		return nil, err
	}
	r := wire.Bundle{"query": wire.String(query), "engine": wire.String(engine), "url": wire.String(u)}
	if !open["ready"].BoolVal() {
		r["error"] = open["warn"]
		return r, nil
	}
	_, p, err := b.current()
	if err != nil {
		return nil, err
	}
	for k, v := range b.crawl(p) {
		r[k] = v
	}
	return r, nil
}

// List is browser_list: one line per tab, "url=… title=…", the active
// one marked.
func (b *Browser) List() wire.Bundle {
	b.mu.Lock()
	defer b.mu.Unlock()
	var lines []string
	for _, t := range b.tabs {
		u, title := "", t.title
		if t.page != nil {
			u, title = t.page.url, t.page.title
		}
		mark := ""
		if t.id == b.active {
			mark = " (active)"
		}
		lines = append(lines, fmt.Sprintf("url=%s title=%s%s", u, title, mark))
	}
	return wire.Bundle{"tabs": wire.String(strings.Join(lines, "\n")), "count": wire.Int(int64(len(b.tabs)))}
}

// Info is browser_info: the result keys it declares.
func (b *Browser) Info() wire.Bundle {
	return wire.Bundle{"package": wire.String(b.o.Package), "versionName": wire.String(b.o.VersionName),
		"versionCode": wire.Int(b.o.VersionCode), "engine": wire.String("go-html")}
}

// Capture is browser_capture.
func (b *Browser) Capture(action string, limit int64, filter string) (wire.Bundle, error) {
	if action == "" {
		action = "list"
	}
	if limit <= 0 {
		limit = 200
	}
	limit = min(max(limit, 1), 1000)
	b.mu.Lock()
	defer b.mu.Unlock()
	note := ""
	switch action {
	case "list":
	case "clear":
		b.capture = nil
		note = "cleared"
	case "enable":
		b.capturing = true
		note = "capturing requests"
	case "disable":
		b.capturing = false
		note = "not capturing"
	default:
		return nil, badRequest("action must be list, clear, enable or disable, not %q", clip(action))
	}
	out := []Request{}
	for i := len(b.capture) - 1; i >= 0 && int64(len(out)) < limit; i-- {
		if filter == "" || strings.Contains(b.capture[i].URL, filter) {
			out = append(out, b.capture[i])
		}
	}
	slices.Reverse(out)
	if note == "" {
		note = "request side only: the engine sees the requests it makes, not responses' sub-resources"
	}
	return wire.Bundle{"requests": wire.String(jsonText(out)), "count": wire.Int(int64(len(out))),
		"enabled": wire.Bool(b.capturing), "note": wire.String(note)}, nil
}

// Find is browser_find: matches of text in the visible text,
// case-insensitively; next and prev move through them.
func (b *Browser) Find(text, action string, forward bool) (wire.Bundle, error) {
	if action == "" {
		action = "find"
	}
	_, p, err := b.current()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	switch action {
	case "find":
		if text == "" {
			return nil, badRequest("no text")
		}
		n := strings.Count(strings.ToLower(p.visibleText()), strings.ToLower(text))
		b.find = findState{text: text, count: n}
	case "next", "prev":
		if b.find.count == 0 {
			return wire.Bundle{"found": wire.Bool(false), "count": wire.Int(0), "index": wire.Int(-1)}, nil
		}
		step := 1
		if action == "prev" || !forward {
			step = -1
		}
		b.find.index = (b.find.index + step + b.find.count) % b.find.count
	case "clear":
		b.find = findState{}
		return wire.Bundle{"found": wire.Bool(false), "count": wire.Int(0), "index": wire.Int(-1)}, nil
	default:
		return nil, badRequest("action must be find, next, prev or clear, not %q", clip(action))
	}
	idx := int64(b.find.index)
	if b.find.count == 0 {
		idx = -1
	}
	return wire.Bundle{"found": wire.Bool(b.find.count > 0), "count": wire.Int(int64(b.find.count)), "index": wire.Int(idx)}, nil
}

// Nav is browser_nav: back and forward move through the tab's history
// (the documents as they were), reload loads the URL again.
func (b *Browser) Nav(ctx context.Context, action string) (wire.Bundle, error) {
	t, p, err := b.current()
	if err != nil {
		return nil, err
	}
	switch action {
	case "back", "forward":
		b.mu.Lock()
		from, to := &t.back, &t.fwd
		if action == "forward" {
			from, to = &t.fwd, &t.back
		}
		if len(*from) == 0 {
			b.mu.Unlock()
			return nil, wire.Errorf(wire.PreconditionFailed, "there is no page to go %s to", action)
		}
		*to = append(*to, t.page)
		t.page = (*from)[len(*from)-1]
		*from = (*from)[:len(*from)-1]
		b.eventLocked("page_finished", t.page.url)
		b.notifyLocked()
		b.mu.Unlock()
	case "reload":
		np, err := b.fetch(ctx, http.MethodGet, p.url, "", nil)
		if err != nil {
			return nil, wire.Errorf(wire.Internal, "reload failed: %v", err)
		}
		b.mu.Lock()
		t.page = np
		b.notifyLocked()
		b.mu.Unlock()
	default:
		return nil, badRequest("action must be back, forward or reload, not %q", clip(action))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return wire.Bundle{"url": wire.String(t.page.url), "can_back": wire.Bool(len(t.back) > 0), "can_forward": wire.Bool(len(t.fwd) > 0)}, nil
}

// Elements is browser_elements: the interactive elements, each with an
// id (data-aci-eid) that browser_action and browser_wait take.
func (b *Browser) Elements() (wire.Bundle, error) {
	_, p, err := b.current()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	els := p.elements()
	b.mu.Unlock()
	if els == nil {
		els = []element{}
	}
	full := jsonText(els)
	r := wire.Bundle{"count": wire.Int(int64(len(els))), "total_len": wire.Int(int64(len(full)))}
	// Cut the list, not the JSON, so the answer stays valid JSON.
	for len(full) > wire.MaxResultChars && len(els) > 0 {
		els = els[:len(els)*9/10]
		full = jsonText(els)
	}
	r["elements"] = wire.String(full)
	r["returned_len"] = wire.Int(int64(len(full)))
	r["truncated"] = wire.Bool(int64(len(els)) < r["count"].IntVal())
	return r, nil
}

// Query is browser_query: the elements matching a CSS selector.
func (b *Browser) Query(selector string) (wire.Bundle, error) {
	if strings.TrimSpace(selector) == "" {
		return nil, badRequest("no selector")
	}
	sel, err := cascadia.Parse(selector)
	if err != nil {
		return nil, badRequest("bad selector %q: %v", clip(selector), err)
	}
	_, p, err := b.current()
	if err != nil {
		return nil, err
	}
	type match struct {
		Index   int    `json:"index"`
		Tag     string `json:"tag"`
		Text    string `json:"text,omitempty"`
		Value   string `json:"value,omitempty"`
		Href    string `json:"href,omitempty"`
		ID      string `json:"id,omitempty"`
		Cls     string `json:"cls,omitempty"`
		EID     string `json:"eid"`
		Visible bool   `json:"visible"`
	}
	b.mu.Lock()
	nodes := cascadia.QueryAll(p.doc, sel)
	out := []match{}
	for i, n := range nodes {
		if i >= MaxLinks {
			break
		}
		m := match{Index: i, Tag: n.Data, Text: textOf(n), Value: attrOr(n, "value"), ID: attrOr(n, "id"), Cls: attrOr(n, "class"), EID: p.eid(n), Visible: visible(n)}
		if h, ok := attr(n, "href"); ok {
			m.Href = p.resolve(h)
		}
		if len(m.Text) > 500 {
			m.Text = strings.ToValidUTF8(m.Text[:500], "")
		}
		out = append(out, m)
	}
	b.mu.Unlock()
	r := wire.Bundle{"count": wire.Int(int64(len(nodes)))}
	wire.PutText(r, "matches", jsonText(out), false, nil)
	delete(r, wire.KeyTruncated)
	return r, nil
}

// Media is browser_media.
func (b *Browser) Media() (wire.Bundle, error) {
	_, p, err := b.current()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	m := p.media()
	b.mu.Unlock()
	if m == nil {
		m = []mediaResource{}
	}
	return wire.Bundle{"count": wire.Int(int64(len(m))), "resources": wire.String(jsonText(m))}, nil
}

// Events is browser_events: the latest navigation events, oldest first.
func (b *Browser) Events(limit int64) wire.Bundle {
	limit = clampLimit(limit, 100, 500)
	b.mu.Lock()
	defer b.mu.Unlock()
	ev := b.events[max(0, len(b.events)-int(limit)):]
	if ev == nil {
		ev = []Event{}
	}
	return wire.Bundle{"events": wire.String(jsonText(ev)), "count": wire.Int(int64(len(ev)))}
}

// Audited records a call after its handler ran (browser_audit):
// params by name only, so a token or header value is never echoed.
func (b *Browser) Audited(capability string, params []string, code int) {
	slices.Sort(params)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.audit = appendRing(b.audit, AuditEntry{Cap: capability, Params: params, OK: code == 0, Code: code, Time: b.now()})
}

// Audit is browser_audit: every recorded call (up to limit), oldest first.
func (b *Browser) Audit(limit int64) wire.Bundle {
	limit = clampLimit(limit, 100, 500)
	b.mu.Lock()
	defer b.mu.Unlock()
	log := slices.Clone(b.audit[max(0, len(b.audit)-int(limit)):])
	for i := range log {
		if log[i].Params == nil {
			log[i].Params = []string{}
		}
	}
	if log == nil {
		log = []AuditEntry{}
	}
	return wire.Bundle{"log": wire.String(jsonText(log)), "count": wire.Int(int64(len(log)))}
}

func clampLimit(n, def, most int64) int64 {
	if n <= 0 {
		return def
	}
	return min(n, most)
}

// Snapshot is browser_snapshot: save the active page (its document as it
// stands) or list the saved ones.
func (b *Browser) Snapshot(action, label string) (wire.Bundle, error) {
	if action == "" {
		action = "save"
	}
	switch action {
	case "save":
		_, p, err := b.current()
		if err != nil {
			return nil, err
		}
		b.mu.Lock()
		defer b.mu.Unlock()
		if len(b.snapshots) >= MaxSnapshots {
			b.snapshots = b.snapshots[1:]
		}
		b.nextSnap++
		h := p.html()
		s := snapshot{ID: "s" + itoa(b.nextSnap), URL: p.url, Title: p.title, Len: len(h), Time: b.now(), label: label, html: h}
		b.snapshots = append(b.snapshots, s)
		return wire.Bundle{"id": wire.String(s.ID), "ok": wire.Bool(true)}, nil
	case "list":
		b.mu.Lock()
		defer b.mu.Unlock()
		list := slices.Clone(b.snapshots)
		if list == nil {
			list = []snapshot{}
		}
		return wire.Bundle{"snapshots": wire.String(jsonText(list)), "count": wire.Int(int64(len(list)))}, nil
	}
	return nil, badRequest("action must be save or list, not %q", clip(action))
}

// Restore is browser_restore: the snapshot's document becomes the active
// tab's page again (as saved, without loading it).
func (b *Browser) Restore(id string) (wire.Bundle, error) {
	if id == "" {
		return nil, badRequest("no id")
	}
	b.mu.Lock()
	i := slices.IndexFunc(b.snapshots, func(s snapshot) bool { return s.ID == id })
	if i < 0 {
		b.mu.Unlock()
		return nil, wire.Errorf(wire.PreconditionFailed, "snapshot not found: %s", clip(id))
	}
	s := b.snapshots[i]
	t := b.activeTabLocked()
	var err error
	if t == nil {
		t, err = b.newTabLocked("")
	}
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	p := parsePage(s.URL, 200, s.html)
	b.show(t, p)
	return wire.Bundle{"ok": wire.Bool(true), "id": wire.String(id), "url": wire.String(s.URL)}, nil
}

// TabNew opens a tab, makes it active and loads url in it.
func (b *Browser) TabNew(ctx context.Context, rawURL, title string) (wire.Bundle, error) {
	u, err := checkURL(rawURL)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	t, err := b.newTabLocked(title)
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	r := wire.Bundle{"tab_id": wire.String(t.id), "active": wire.Bool(true)}
	p, err := b.fetch(ctx, http.MethodGet, u, "", nil)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r["url"], r["ready"], r["warn"] = wire.String(u), wire.Bool(false), wire.String("the page did not load: "+err.Error())
		return r, nil
	}
	b.show(t, p)
	r["url"], r["ready"] = wire.String(p.url), wire.Bool(true)
	return r, nil
}

// Tabs is browser_tabs.
func (b *Browser) Tabs() wire.Bundle {
	type view struct {
		ID     string `json:"id"`
		URL    string `json:"url"`
		Title  string `json:"title"`
		Active bool   `json:"active"`
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	out := []view{}
	for _, t := range b.tabs {
		v := view{ID: t.id, Title: t.title, Active: t.id == b.active}
		if t.page != nil {
			v.URL, v.Title = t.page.url, t.page.title
		}
		out = append(out, v)
	}
	return wire.Bundle{"count": wire.Int(int64(len(out))), "tabs": wire.String(jsonText(out)), "active_id": wire.String(b.active)}
}

// Tab makes a tab active.
func (b *Browser) Tab(id string) (wire.Bundle, error) {
	if id == "" {
		return nil, badRequest("no id")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, t := range b.tabs {
		if t.id == id {
			b.active = id
			u := ""
			if t.page != nil {
				u = t.page.url
			}
			b.notifyLocked()
			return wire.Bundle{"ok": wire.Bool(true), "id": wire.String(id), "url": wire.String(u)}, nil
		}
	}
	return nil, wire.Errorf(wire.PreconditionFailed, "tab not found: %s", clip(id))
}

// TabClose closes a tab; the last one opened becomes active if it was.
func (b *Browser) TabClose(id string) (wire.Bundle, error) {
	if id == "" {
		return nil, badRequest("no id")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	i := slices.IndexFunc(b.tabs, func(t *tab) bool { return t.id == id })
	if i < 0 {
		return nil, wire.Errorf(wire.PreconditionFailed, "tab not found: %s", clip(id))
	}
	b.tabs = slices.Delete(b.tabs, i, i+1)
	if b.active == id {
		b.active = ""
		if n := len(b.tabs); n > 0 {
			b.active = b.tabs[n-1].id
		}
	}
	b.notifyLocked()
	return wire.Bundle{"ok": wire.Bool(true), "remaining": wire.Int(int64(len(b.tabs)))}, nil
}

// parseSelector is a CSS selector or a BadRequest.
func parseSelector(s string) (cascadia.Sel, error) {
	sel, err := cascadia.Parse(s)
	if err != nil {
		return nil, badRequest("bad selector %q: %v", clip(s), err)
	}
	return sel, nil
}

// target finds the element of an action or wait: by data-aci-eid id
// first, else the first match of a CSS selector.
func (p *page) target(id, selector string) (*html.Node, error) {
	switch {
	case id != "":
		if n := p.byEID(id); n != nil {
			return n, nil
		}
		return nil, wire.Errorf(wire.PreconditionFailed, "no element %s on this page; call browser_elements for the ids", clip(id))
	case selector != "":
		sel, err := parseSelector(selector)
		if err != nil {
			return nil, err
		}
		if n := cascadia.Query(p.doc, sel); n != nil {
			return n, nil
		}
		return nil, wire.Errorf(wire.PreconditionFailed, "nothing matches %q", clip(selector))
	}
	return nil, badRequest("no id or selector")
}

func clip(s string) string {
	if len(s) > 80 {
		return strings.ToValidUTF8(s[:80], "") + "…"
	}
	return s
}

var errStop = errors.New("stop")
