package reports

import (
	"bytes"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func parseHTML(t *testing.T, data []byte) *html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

func attrOf(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func hasClass(n *html.Node, class string) bool {
	v, _ := attrOf(n, "class")
	for _, c := range strings.Fields(v) {
		if c == class {
			return true
		}
	}
	return false
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	for d := range n.Descendants() {
		if d.Type == html.ElementNode && match(d) {
			out = append(out, d)
		}
	}
	return out
}

func tag(name string) func(*html.Node) bool {
	return func(n *html.Node) bool { return n.Data == name }
}

func textOf(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}

// TestHTMLStructure parses report.html of the sample run and checks what a
// reader relies on: one self-contained file, a timeline bar per event, a
// collapsible section per scenario with every check and relative artifact
// links, verdict filters, and escaped text.
func TestHTMLStructure(t *testing.T) {
	t.Parallel()
	r := sampleRun()
	out := renderT(t, r, FormatHTML)
	doc := parseHTML(t, out)

	// Self-contained: no external stylesheet, script, image or frame.
	for _, n := range findAll(doc, func(n *html.Node) bool { return true }) {
		for _, key := range []string{"src", "href"} {
			v, ok := attrOf(n, key)
			if !ok {
				continue
			}
			if n.Data == "link" || n.Data == "script" || n.Data == "img" || n.Data == "iframe" {
				t.Errorf("<%s %s=%q>: report.html must not load anything", n.Data, key, v)
			}
			u, err := url.Parse(v)
			if err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(v, "/") {
				t.Errorf("<%s %s=%q>: links must be relative", n.Data, key, v)
			}
		}
	}
	if n := len(findAll(doc, tag("style"))); n != 1 {
		t.Errorf("%d <style> elements, want 1 inline", n)
	}

	// The timeline: one row per device, one bar per timeline event.
	svgs := findAll(doc, tag("svg"))
	if len(svgs) != 1 {
		t.Fatalf("%d <svg>, want one timeline", len(svgs))
	}
	rows := findAll(svgs[0], func(n *html.Node) bool { return n.Data == "g" && hasClass(n, "device-row") })
	if len(rows) != len(r.Devices) {
		t.Errorf("%d timeline rows, want %d", len(rows), len(r.Devices))
	}
	events := 0
	for _, d := range r.Devices {
		events += len(d.Timeline)
	}
	bars := findAll(svgs[0], tag("rect"))
	if len(bars) != events {
		t.Errorf("%d timeline bars, want %d", len(bars), events)
	}
	for _, b := range bars {
		if len(findAll(b, tag("title"))) != 1 {
			t.Errorf("timeline bar without a tooltip")
		}
	}

	// One <details> per scenario, failures first, with every check.
	secs := findAll(doc, func(n *html.Node) bool { return n.Data == "details" && hasClass(n, "sc") })
	if len(secs) != len(r.Scenarios) {
		t.Fatalf("%d scenario sections, want %d", len(secs), len(r.Scenarios))
	}
	if v, _ := attrOf(secs[0], "data-verdict"); v != "fail" {
		t.Errorf("first section is %s, want the failure first", v)
	}
	byName := map[string]*html.Node{}
	for _, s := range secs {
		sum := findAll(s, tag("summary"))
		if len(sum) == 0 {
			t.Fatal("scenario section without <summary>")
		}
		for _, sc := range r.Scenarios {
			if strings.Contains(textOf(sum[0]), sc.Name) {
				byName[sc.Name] = s
			}
		}
	}
	for _, sc := range r.Scenarios {
		sec := byName[sc.Name]
		if sec == nil {
			t.Errorf("no section for %s", sc.Name)
			continue
		}
		_, open := attrOf(sec, "open")
		if wantOpen := sc.Verdict != VerdictPass && sc.Verdict != VerdictSkipped; open != wantOpen {
			t.Errorf("%s: open=%v, want %v", sc.Name, open, wantOpen)
		}
		rows := findAll(sec, func(n *html.Node) bool { return n.Data == "tr" && n.Parent.Data == "tbody" })
		if len(rows) != len(sc.Checks) {
			t.Errorf("%s: %d check rows, want %d", sc.Name, len(rows), len(sc.Checks))
		}
		text := textOf(sec)
		for _, c := range sc.Checks {
			if !strings.Contains(text, c.Name) || !strings.Contains(text, c.Detail) || !strings.Contains(text, c.Upstream) {
				t.Errorf("%s: check %s, its detail or upstream name is missing", sc.Name, c.Name)
			}
		}
		links := map[string]bool{}
		for _, a := range findAll(sec, tag("a")) {
			href, _ := attrOf(a, "href")
			links[href] = true
		}
		for _, a := range sc.Artifacts {
			if !links[a.Path] {
				t.Errorf("%s: no link to artifact %s", sc.Name, a.Path)
			}
		}
	}

	// Filters: a checkbox per verdict, driven by CSS so they work without
	// JavaScript.
	for _, v := range verdictOrder {
		boxes := findAll(doc, func(n *html.Node) bool {
			id, _ := attrOf(n, "id")
			return n.Data == "input" && id == "f-"+string(v)
		})
		if len(boxes) != 1 {
			t.Errorf("no filter checkbox for %s", v)
		}
		if !bytes.Contains(out, []byte("#f-"+string(v)+":not(:checked)")) {
			t.Errorf("no CSS rule for the %s filter", v)
		}
	}

	// Hostile evidence is text, not markup.
	if bytes.Contains(out, []byte(`<b>"cancelRequested"`)) {
		t.Error("evidence markup reached the page unescaped")
	}
	if !strings.Contains(textOf(byName["third-party/revoke-closes"]), `<b>"cancelRequested": []</b>`) {
		t.Error("escaped evidence does not read back as the original text")
	}
}

// TestHTMLHostileText renders a run whose names, details, serials and
// artifact paths carry markup and scheme tricks: the page must hold them as
// text, with no extra element and no link leaving the report.
func TestHTMLHostileText(t *testing.T) {
	t.Parallel()
	r := sampleRun()
	r.RunID = `</title><script>alert("id")</script>`
	r.Host = `"><img src=x onerror=alert(1)>`
	r.Devices[0].Serial = `<svg onload=alert(2)>`
	r.Devices[0].Timeline[0].Label = `</title><script>alert(3)</script>`
	s := &r.Scenarios[0]
	s.Name = `<script>alert(4)</script>`
	s.File = `a' onmouseover='alert(5)`
	s.Checks[0].Detail = `<iframe src="https://evil.example">`
	s.Checks[1].Evidence = "artifact:javascript:alert(6)"
	s.Artifacts = append(s.Artifacts, Artifact{Path: "javascript:alert(7)", Kind: `"><b>`, SHA256: `<i>`})
	s.Attempts[0].Error = "\x00 nul and </li></ol>"
	out := renderT(t, r, FormatHTML)
	doc := parseHTML(t, out)

	for _, bad := range []string{"img", "iframe", "b", "i"} {
		if n := findAll(doc, tag(bad)); len(n) > 0 {
			t.Errorf("hostile text became a <%s> element", bad)
		}
	}
	if n := len(findAll(doc, tag("script"))); n != 1 {
		t.Errorf("%d <script> elements, want only the report's own", n)
	}
	for _, n := range findAll(doc, func(*html.Node) bool { return true }) {
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") {
				t.Errorf("<%s> got an event handler attribute %s=%q", n.Data, a.Key, a.Val)
			}
			if a.Key == "href" {
				u, err := url.Parse(a.Val)
				if err != nil || u.Scheme != "" || u.Host != "" {
					t.Errorf("href %q leaves the report", a.Val)
				}
			}
		}
	}
	title := findAll(doc, tag("title"))
	if len(title) == 0 || !strings.Contains(textOf(title[0]), r.RunID) {
		t.Errorf("the run id does not read back as text in <title>")
	}
	if !strings.Contains(textOf(doc), s.Name) || !strings.Contains(textOf(doc), r.Host) {
		t.Error("hostile names do not read back as text")
	}
}
