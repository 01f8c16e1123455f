// Package testsite is the web site the lab host serves to devices for
// the ACI browser and http_request: plain pages with links and media, a
// form that really submits, a search engine, a single-page app over
// 1 MB, large and gzip-worthy bodies, incompressible ones, bodies
// without a length, redirects (chains and a loop), slow pages and any
// status code. Everything is deterministic (the same URL gives the same
// bytes), so tests and scenarios can assert on content.
//
// Tests mount Handler on an httptest server (loopback only); the lab
// serves it on the host and reaches it from a device through adb reverse.
//
// Routes:
//
//	/                       index: links to every page
//	/page/{name}            a small page (a, b, c): title, headings, text, links
//	/media                  img, video (poster), audio, a download link
//	/form                   a form (text, password, select, checkbox, textarea) posting to /form/submit
//	/form/submit            echoes the submitted fields as a page (POST; GET says use POST) and sets a cookie
//	/login                  a form whose POST answers 303 to /welcome, which greets the cookie's user
//	/search?q=…             a results page with ten links mentioning q (the lab's search engine)
//	/spa                    a single-page app over 1 MB (inline data + a rendered list)
//	/large?kb=N             N KiB of repetitive HTML text (gzip-worthy), Content-Length set
//	/random?kb=N            N KiB of incompressible hex text
//	/stream?kb=N            N KiB without Content-Length (chunked)
//	/redirect?n=N           N redirects (302) then /page/a
//	/redirect/loop          redirects to itself forever
//	/slow?ms=N              answers after N ms (at most 60000), or when the client goes away
//	/status/{code}          answers that status with a small body
//	/echo                   any method: JSON of method, path, query, headers and body
//	/hidden                 elements hidden by attribute and style, for wait and visibility
package testsite

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Limits of the generated bodies.
const (
	MaxKB     = 64 << 10 // 64 MiB
	MaxSlowMS = 60_000
	// SPABytes is the size of /spa (over 1 MB, upstream's failure case).
	SPABytes = 1_200_000
)

// Handler returns the site.
func Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", index)
	mux.HandleFunc("GET /page/{name}", page)
	mux.HandleFunc("GET /media", media)
	mux.HandleFunc("GET /form", form)
	mux.HandleFunc("/form/submit", formSubmit)
	mux.HandleFunc("GET /login", login)
	mux.HandleFunc("POST /login", loginPost)
	mux.HandleFunc("GET /welcome", welcome)
	mux.HandleFunc("GET /search", search)
	mux.HandleFunc("GET /spa", spa)
	mux.HandleFunc("GET /large", large)
	mux.HandleFunc("GET /random", random)
	mux.HandleFunc("GET /stream", stream)
	mux.HandleFunc("GET /redirect", redirect)
	mux.HandleFunc("GET /redirect/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/redirect/loop", http.StatusFound)
	})
	mux.HandleFunc("GET /slow", slow)
	mux.HandleFunc("/status/{code}", status)
	mux.HandleFunc("/echo", echo)
	mux.HandleFunc("GET /hidden", hidden)
	return mux
}

func writePage(w http.ResponseWriter, title, body string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>%s</title>"+
		"<style>.x{color:red}</style><script>var analytics = 1;</script></head>\n<body>\n%s\n</body></html>\n", html.EscapeString(title), body)
}

func index(w http.ResponseWriter, r *http.Request) {
	writePage(w, "Test site", `<h1>Test site</h1>
<ul>
<li><a href="/page/a">Page A</a></li>
<li><a href="/page/b">Page B</a></li>
<li><a href="/media">Media</a></li>
<li><a href="/form">Form</a></li>
<li><a href="/login">Login</a></li>
<li><a href="/search?q=agentos">Search</a></li>
<li><a href="/spa">Single-page app</a></li>
<li><a href="/large?kb=1024">Large page</a></li>
<li><a href="/redirect?n=3">Redirects</a></li>
<li><a href="/slow?ms=500">Slow page</a></li>
</ul>`)
}

var pages = map[string]struct{ title, text, next string }{
	"a": {"Page A", "Alpha is the first page. It mentions the needle once.", "b"},
	"b": {"Page B", "Bravo is the second page. Needle, needle: twice here.", "c"},
	"c": {"Page C", "Charlie is the last page.", "a"},
}

func page(w http.ResponseWriter, r *http.Request) {
	p, ok := pages[r.PathValue("name")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	writePage(w, p.title, fmt.Sprintf(`<h1 id="heading">%s</h1>
<p class="lead">%s</p>
<nav><a id="next" href="/page/%s">Next page</a> <a href="/">Home</a> <a href="https://example.invalid/out">Outside</a></nav>
<!-- a comment the clean mode drops -->`, p.title, p.text, p.next))
}

func media(w http.ResponseWriter, r *http.Request) {
	writePage(w, "Media", `<h1>Media</h1>
<img src="/img/cat.png" alt="A cat">
<video src="/video/clip.mp4" poster="/img/poster.jpg" controls>A clip</video>
<audio src="/audio/song.mp3" controls>A song</audio>
<a href="/files/report.pdf" download="report.pdf">Report</a>`)
}

func form(w http.ResponseWriter, r *http.Request) {
	writePage(w, "Form", `<h1>Order</h1>
<form id="order" action="/form/submit" method="post">
<input id="name" name="name" type="text" placeholder="Your name">
<input id="secret" name="secret" type="password">
<select id="size" name="size"><option value="s">Small</option><option value="m" selected>Medium</option><option value="l">Large</option></select>
<input id="gift" name="gift" type="checkbox" value="yes">
<textarea id="note" name="note">no note</textarea>
<input type="hidden" name="token" value="t-123">
<button id="send" type="submit">Send</button>
</form>
<form id="lookup" action="/search" method="get"><input id="q" name="q"><input id="go" type="submit" value="Go"></form>`)
}

func formSubmit(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.WriteHeader(http.StatusMethodNotAllowed)
		writePage(w, "Use POST", "<p>Submit the form with POST.</p>")
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: "ordered", Value: "1", Path: "/"})
	var b strings.Builder
	b.WriteString(`<h1>Received</h1><dl id="fields">`)
	for _, k := range []string{"name", "secret", "size", "gift", "note", "token"} {
		fmt.Fprintf(&b, "<dt>%s</dt><dd id=\"f-%s\">%s</dd>", k, k, html.EscapeString(r.PostForm.Get(k)))
	}
	b.WriteString("</dl>")
	writePage(w, "Received", b.String())
}

func login(w http.ResponseWriter, r *http.Request) {
	writePage(w, "Login", `<form action="/login" method="post"><input id="user" name="user"><button id="enter">Enter</button></form>`)
}

func loginPost(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	http.SetCookie(w, &http.Cookie{Name: "user", Value: r.PostForm.Get("user"), Path: "/"})
	http.Redirect(w, r, "/welcome", http.StatusSeeOther)
}

func welcome(w http.ResponseWriter, r *http.Request) {
	user := "stranger"
	if c, err := r.Cookie("user"); err == nil && c.Value != "" {
		user = c.Value
	}
	writePage(w, "Welcome", fmt.Sprintf(`<h1 id="greeting">Welcome, %s</h1>`, html.EscapeString(user)))
}

func search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	var b strings.Builder
	fmt.Fprintf(&b, `<h1>Results for %s</h1><ol id="results">`, html.EscapeString(q))
	for i := 1; i <= 10; i++ {
		fmt.Fprintf(&b, `<li><a class="result" href="/page/%s?r=%d">%s result %d</a></li>`, []string{"a", "b", "c"}[i%3], i, html.EscapeString(q), i)
	}
	b.WriteString("</ol>")
	writePage(w, "Search: "+q, b.String())
}

func spa(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	var b strings.Builder
	b.Grow(SPABytes + 4096)
	b.WriteString(`<!DOCTYPE html><html><head><meta charset="utf-8"><title>SPA</title></head><body><div id="app"><h1>Dashboard</h1><ul id="items">`)
	for i := 0; b.Len() < SPABytes/2; i++ {
		fmt.Fprintf(&b, `<li class="item" data-i="%d">Item %d</li>`, i, i)
	}
	b.WriteString(`</ul></div><script id="state" type="application/json">{"rows":[`)
	for i := 0; b.Len() < SPABytes; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"row %d"}`, i, i)
	}
	b.WriteString(`]}</script></body></html>`)
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	io.WriteString(w, b.String())
}

func kb(r *http.Request, def int) int {
	n, err := strconv.Atoi(r.URL.Query().Get("kb"))
	if err != nil || n < 0 {
		return def
	}
	return min(n, MaxKB)
}

// largeChunk is one KiB of repetitive HTML.
var largeChunk = func() string {
	s := strings.Repeat("<p>The quick brown fox jumps over the lazy dog.</p>\n", 20)
	return (s + strings.Repeat(" ", 1024))[:1024]
}()

func large(w http.ResponseWriter, r *http.Request) {
	n := kb(r, 1024)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(n*1024))
	for range n {
		io.WriteString(w, largeChunk)
	}
}

// randomKB is 1 KiB of hex derived from i, so the body is the same on
// every request but does not compress.
func randomKB(i int) []byte {
	out := make([]byte, 0, 1024)
	for j := 0; len(out) < 1024; j++ {
		h := sha256.Sum256([]byte(fmt.Sprintf("%d/%d", i, j)))
		out = hex.AppendEncode(out, h[:])
	}
	return out[:1024]
}

func random(w http.ResponseWriter, r *http.Request) {
	n := kb(r, 1024)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(n*1024))
	for i := range n {
		w.Write(randomKB(i))
	}
}

func stream(w http.ResponseWriter, r *http.Request) {
	n := kb(r, 1024)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	f, _ := w.(http.Flusher)
	for i := range n {
		io.WriteString(w, largeChunk)
		if f != nil && i%64 == 0 {
			f.Flush() // no Content-Length: the body goes out chunked
		}
	}
}

func redirect(w http.ResponseWriter, r *http.Request) {
	n, _ := strconv.Atoi(r.URL.Query().Get("n"))
	if n <= 0 {
		http.Redirect(w, r, "/page/a", http.StatusFound)
		return
	}
	http.Redirect(w, r, fmt.Sprintf("/redirect?n=%d", n-1), http.StatusFound)
}

func slow(w http.ResponseWriter, r *http.Request) {
	ms, _ := strconv.Atoi(r.URL.Query().Get("ms"))
	ms = max(0, min(ms, MaxSlowMS))
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
	case <-r.Context().Done():
		return
	}
	writePage(w, "Slow", fmt.Sprintf(`<h1 id="slow">Slow page</h1><p>Answered after %d ms.</p>`, ms))
}

func status(w http.ResponseWriter, r *http.Request) {
	code, err := strconv.Atoi(r.PathValue("code"))
	if err != nil || code < 200 || code > 599 {
		http.Error(w, "bad status", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	fmt.Fprintf(w, "status %d\n", code)
}

func echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	headers := map[string]string{}
	for k := range r.Header {
		headers[k] = r.Header.Get(k)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Add("X-Echo", "one")
	w.Header().Add("X-Echo", "two")
	json.NewEncoder(w).Encode(map[string]any{
		"method": r.Method, "path": r.URL.Path, "query": r.URL.RawQuery, "headers": headers, "body": string(body),
	})
}

func hidden(w http.ResponseWriter, r *http.Request) {
	writePage(w, "Hidden", `<h1>Visibility</h1>
<p id="shown">Shown text</p>
<p id="by-attr" hidden>Hidden by attribute</p>
<p id="by-style" style="display: none">Hidden by style</p>
<div style="visibility:hidden"><span id="inside">Inside a hidden div</span></div>`)
}
