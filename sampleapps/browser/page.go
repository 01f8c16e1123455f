package browser

import (
	"bytes"
	"encoding/json"
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// page is one loaded document.
type page struct {
	url    string
	title  string
	status int
	raw    string // the bytes as loaded
	doc    *html.Node
	nextID int // next data-aci-eid number
}

func parsePage(u string, status int, raw string) *page {
	doc, err := html.Parse(strings.NewReader(raw))
	if err != nil {
		doc = &html.Node{Type: html.DocumentNode}
	}
	p := &page{url: u, status: status, raw: raw, doc: doc}
	if t := find(doc, func(n *html.Node) bool { return n.DataAtom == atom.Title }); t != nil {
		p.title = strings.TrimSpace(textOf(t))
	}
	return p
}

// html is the document as it stands (after typing into forms, stamping
// element ids), rendered.
func (p *page) html() string {
	var b bytes.Buffer
	html.Render(&b, p.doc)
	return b.String()
}

func (p *page) resolve(ref string) string {
	base, err := url.Parse(p.url)
	if err != nil {
		return ref
	}
	r, err := url.Parse(strings.TrimSpace(ref))
	if err != nil {
		return ref
	}
	return base.ResolveReference(r).String()
}

func find(n *html.Node, pred func(*html.Node) bool) *html.Node {
	if pred(n) {
		return n
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if f := find(c, pred); f != nil {
			return f
		}
	}
	return nil
}

func walk(n *html.Node, fn func(*html.Node) bool) {
	if !fn(n) {
		return
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walk(c, fn)
	}
}

func attr(n *html.Node, key string) (string, bool) {
	for _, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			return a.Val, true
		}
	}
	return "", false
}

func attrOr(n *html.Node, key string) string { v, _ := attr(n, key); return v }

func setAttr(n *html.Node, key, val string) {
	for i, a := range n.Attr {
		if a.Namespace == "" && a.Key == key {
			n.Attr[i].Val = val
			return
		}
	}
	n.Attr = append(n.Attr, html.Attribute{Key: key, Val: val})
}

func delAttr(n *html.Node, key string) {
	out := n.Attr[:0]
	for _, a := range n.Attr {
		if !(a.Namespace == "" && a.Key == key) {
			out = append(out, a)
		}
	}
	n.Attr = out
}

// invisible are elements whose content is never shown.
var invisible = map[atom.Atom]bool{atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true, atom.Head: true, atom.Title: true}

// hiddenSelf reports whether n hides itself: the hidden attribute, an
// inline display:none or visibility:hidden, or a hidden input. Without a
// renderer that is what "visible" can mean; stylesheets are not applied.
func hiddenSelf(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return false
	}
	if _, ok := attr(n, "hidden"); ok {
		return true
	}
	if n.DataAtom == atom.Input && strings.EqualFold(attrOr(n, "type"), "hidden") {
		return true
	}
	style := strings.ToLower(strings.ReplaceAll(attrOr(n, "style"), " ", ""))
	return strings.Contains(style, "display:none") || strings.Contains(style, "visibility:hidden")
}

// visible reports whether n and every ancestor are shown.
func visible(n *html.Node) bool {
	for a := n; a != nil; a = a.Parent {
		if hiddenSelf(a) || (a.Type == html.ElementNode && invisible[a.DataAtom]) {
			return false
		}
	}
	return true
}

var blocks = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Br: true, atom.Li: true, atom.H1: true, atom.H2: true, atom.H3: true,
	atom.H4: true, atom.H5: true, atom.H6: true, atom.Tr: true, atom.Table: true, atom.Ul: true, atom.Ol: true,
	atom.Section: true, atom.Article: true, atom.Header: true, atom.Footer: true, atom.Nav: true, atom.Form: true,
	atom.Dt: true, atom.Dd: true, atom.Dl: true, atom.Pre: true, atom.Blockquote: true, atom.Hr: true,
}

// textOf is the text under n, whitespace collapsed.
func textOf(n *html.Node) string {
	var b strings.Builder
	walk(n, func(c *html.Node) bool {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		return true
	})
	return strings.Join(strings.Fields(b.String()), " ")
}

// visibleText is what a reader sees: visible text, one line per block.
func (p *page) visibleText() string {
	var b strings.Builder
	var rec func(n *html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.ElementNode && (invisible[n.DataAtom] || hiddenSelf(n)) {
			return
		}
		if n.Type == html.TextNode {
			if s := strings.Join(strings.Fields(n.Data), " "); s != "" {
				if b.Len() > 0 {
					last := b.String()[b.Len()-1]
					if last != '\n' && last != ' ' {
						b.WriteByte(' ')
					}
				}
				b.WriteString(s)
			}
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
		if n.Type == html.ElementNode && blocks[n.DataAtom] && b.Len() > 0 && b.String()[b.Len()-1] != '\n' {
			b.WriteByte('\n')
		}
	}
	rec(p.doc)
	return strings.TrimSpace(b.String())
}

// link is one <a href> of a page.
type link struct {
	Text string `json:"text"`
	Href string `json:"href"`
}

func (p *page) links(max int) (out []link, total int) {
	walk(p.doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.A {
			if href, ok := attr(n, "href"); ok && !strings.HasPrefix(strings.ToLower(strings.TrimSpace(href)), "javascript:") {
				total++
				if len(out) < max {
					out = append(out, link{Text: textOf(n), Href: p.resolve(href)})
				}
			}
		}
		return true
	})
	return out, total
}

// cleanAttrs are the attributes the clean mode keeps.
var cleanAttrs = map[string]bool{"href": true, "src": true, "alt": true, "title": true, "name": true, "type": true,
	"value": true, "placeholder": true, "id": true, "action": true, "method": true, "for": true, "data-aci-eid": true}

var cleanDrop = map[atom.Atom]bool{atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Iframe: true, atom.Svg: true, atom.Link: true, atom.Meta: true, atom.Object: true, atom.Embed: true}

// cleanHTML is the document without scripts, styles, comments, hidden
// elements and presentational attributes: what a model needs of a page.
func (p *page) cleanHTML() string {
	var clone func(n *html.Node) *html.Node
	clone = func(n *html.Node) *html.Node {
		c := &html.Node{Type: n.Type, DataAtom: n.DataAtom, Data: n.Data, Namespace: n.Namespace}
		for _, a := range n.Attr {
			if cleanAttrs[a.Key] {
				c.Attr = append(c.Attr, a)
			}
		}
		for k := n.FirstChild; k != nil; k = k.NextSibling {
			switch {
			case k.Type == html.CommentNode, k.Type == html.ElementNode && (cleanDrop[k.DataAtom] || hiddenSelf(k)):
				continue
			case k.Type == html.TextNode && strings.TrimSpace(k.Data) == "":
				continue
			}
			c.AppendChild(clone(k))
		}
		return c
	}
	var b bytes.Buffer
	for k := p.doc.FirstChild; k != nil; k = k.NextSibling {
		if k.Type == html.ElementNode {
			html.Render(&b, clone(k))
		}
	}
	return b.String()
}

// element is one interactive element, as browser_elements lists it.
type element struct {
	ID          string `json:"id"`
	Tag         string `json:"tag"`
	Type        string `json:"type,omitempty"`
	Text        string `json:"text,omitempty"`
	Value       string `json:"value,omitempty"`
	Href        string `json:"href,omitempty"`
	Placeholder string `json:"placeholder,omitempty"`
	Name        string `json:"name,omitempty"`
	Visible     bool   `json:"visible"`
}

func interactive(n *html.Node) bool {
	if n.Type != html.ElementNode {
		return false
	}
	switch n.DataAtom {
	case atom.A:
		_, ok := attr(n, "href")
		return ok
	case atom.Button, atom.Input, atom.Select, atom.Textarea:
		return true
	}
	_, click := attr(n, "onclick")
	return click || attrOr(n, "role") == "button"
}

// eid returns n's data-aci-eid, stamping a new one the first time.
func (p *page) eid(n *html.Node) string {
	if id, ok := attr(n, "data-aci-eid"); ok {
		return id
	}
	p.nextID++
	id := "e" + itoa(p.nextID)
	setAttr(n, "data-aci-eid", id)
	return id
}

func (p *page) byEID(id string) *html.Node {
	return find(p.doc, func(n *html.Node) bool { v, ok := attr(n, "data-aci-eid"); return ok && v == id })
}

func (p *page) describe(n *html.Node) element {
	e := element{ID: p.eid(n), Tag: n.Data, Type: attrOr(n, "type"), Name: attrOr(n, "name"),
		Placeholder: attrOr(n, "placeholder"), Visible: visible(n)}
	switch n.DataAtom {
	case atom.A:
		e.Href = p.resolve(attrOr(n, "href"))
		e.Text = textOf(n)
	case atom.Input:
		e.Value = attrOr(n, "value")
		if t := strings.ToLower(e.Type); t == "checkbox" || t == "radio" {
			if _, on := attr(n, "checked"); on {
				e.Value += " (checked)"
			}
		}
	case atom.Textarea:
		e.Value = textOf(n)
	case atom.Select:
		if o := selectedOption(n); o != nil {
			e.Value = optionValue(o)
			e.Text = textOf(o)
		}
	default:
		e.Text = textOf(n)
	}
	if len(e.Text) > 200 {
		e.Text = e.Text[:200]
	}
	return e
}

func (p *page) elements() []element {
	var out []element
	walk(p.doc, func(n *html.Node) bool {
		if interactive(n) {
			out = append(out, p.describe(n))
		}
		return true
	})
	return out
}

func selectedOption(sel *html.Node) *html.Node {
	var first, chosen *html.Node
	walk(sel, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.Option {
			if first == nil {
				first = n
			}
			if _, ok := attr(n, "selected"); ok && chosen == nil {
				chosen = n
			}
		}
		return true
	})
	if chosen != nil {
		return chosen
	}
	return first
}

func optionValue(o *html.Node) string {
	if v, ok := attr(o, "value"); ok {
		return v
	}
	return textOf(o)
}

// mediaResource is one media element of a page.
type mediaResource struct {
	Tag      string `json:"tag"`
	Src      string `json:"src"`
	Type     string `json:"type,omitempty"`
	Text     string `json:"text,omitempty"`
	PageURL  string `json:"page_url"`
	Poster   string `json:"poster,omitempty"`
	Download string `json:"download,omitempty"`
}

func (p *page) media() []mediaResource {
	var out []mediaResource
	walk(p.doc, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		m := mediaResource{Tag: n.Data, PageURL: p.url, Type: attrOr(n, "type")}
		switch n.DataAtom {
		case atom.Img, atom.Video, atom.Audio, atom.Source:
			src, ok := attr(n, "src")
			if !ok {
				return true
			}
			m.Src = p.resolve(src)
			m.Text = attrOr(n, "alt")
			if m.Text == "" {
				m.Text = textOf(n)
			}
			if poster, ok := attr(n, "poster"); ok {
				m.Poster = p.resolve(poster)
			}
		case atom.A:
			d, ok := attr(n, "download")
			if !ok {
				return true
			}
			m.Src, m.Text, m.Download = p.resolve(attrOr(n, "href")), textOf(n), d
			if m.Download == "" {
				m.Download = "true"
			}
		default:
			return true
		}
		out = append(out, m)
		return true
	})
	return out
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

func jsonText(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(v)
	return strings.TrimSuffix(b.String(), "\n")
}
