package browser

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
)

// Action is browser_action: click (a link navigates, a submit button or
// input submits its form over HTTP, a checkbox or radio toggles), type
// (sets an input's or textarea's value), select (picks an option by
// value or text) or scroll_to (nothing to scroll without a renderer; it
// only checks the element exists). The element is id (browser_elements)
// or the first match of selector.
func (b *Browser) Action(ctx context.Context, id, selector, op, arg string) (wire.Bundle, error) {
	if op == "" {
		return nil, badRequest("no op")
	}
	t, p, err := b.current()
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	n, err := p.target(id, selector)
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	r := wire.Bundle{"ok": wire.Bool(true), "op": wire.String(op)}
	switch op {
	case "type":
		switch {
		case n.DataAtom == atom.Textarea:
			for c := n.FirstChild; c != nil; c = n.FirstChild {
				n.RemoveChild(c)
			}
			n.AppendChild(&html.Node{Type: html.TextNode, Data: arg})
		case n.DataAtom == atom.Input && !isButton(n):
			setAttr(n, "value", arg)
		default:
			b.mu.Unlock()
			return nil, badRequest("cannot type into a <%s>", n.Data)
		}
		b.notifyLocked()
		b.mu.Unlock()
		return r, nil
	case "select":
		if n.DataAtom != atom.Select {
			b.mu.Unlock()
			return nil, badRequest("select needs a <select>, not a <%s>", n.Data)
		}
		var chosen *html.Node
		walk(n, func(o *html.Node) bool {
			if o.Type == html.ElementNode && o.DataAtom == atom.Option && chosen == nil && (optionValue(o) == arg || textOf(o) == arg) {
				chosen = o
			}
			return true
		})
		if chosen == nil {
			b.mu.Unlock()
			return nil, badRequest("no option %q", clip(arg))
		}
		walk(n, func(o *html.Node) bool {
			if o.Type == html.ElementNode && o.DataAtom == atom.Option {
				delAttr(o, "selected")
			}
			return true
		})
		setAttr(chosen, "selected", "")
		b.notifyLocked()
		b.mu.Unlock()
		r["value"] = wire.String(optionValue(chosen))
		return r, nil
	case "scroll_to":
		b.mu.Unlock()
		return r, nil
	case "click":
	default:
		b.mu.Unlock()
		return nil, badRequest("op must be click, type, select or scroll_to, not %q", clip(op))
	}
	// click
	var method, target, ctype string
	var body string
	switch {
	case n.DataAtom == atom.A && attrOr(n, "href") != "":
		method, target = http.MethodGet, p.resolve(attrOr(n, "href"))
	case isSubmit(n):
		form := enclosingForm(n)
		if form == nil {
			b.mu.Unlock()
			r["note"] = wire.String("a submit button outside a form does nothing without scripts")
			return r, nil
		}
		method, target, ctype, body = p.submission(form, n)
	case n.DataAtom == atom.Input && (strings.EqualFold(attrOr(n, "type"), "checkbox") || strings.EqualFold(attrOr(n, "type"), "radio")):
		if _, on := attr(n, "checked"); on && strings.EqualFold(attrOr(n, "type"), "checkbox") {
			delAttr(n, "checked")
		} else {
			if strings.EqualFold(attrOr(n, "type"), "radio") {
				uncheckGroup(p.doc, attrOr(n, "name"))
			}
			setAttr(n, "checked", "")
		}
		_, on := attr(n, "checked")
		r["checked"] = wire.Bool(on)
		b.notifyLocked()
		b.mu.Unlock()
		return r, nil
	default:
		b.mu.Unlock()
		r["note"] = wire.String("clicking a <" + n.Data + "> does nothing without scripts")
		return r, nil
	}
	b.mu.Unlock()
	if u, err := url.Parse(target); err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, badRequest("the link goes to %q, which this browser cannot open", clip(target))
	}
	var rd *strings.Reader
	if method == http.MethodPost {
		rd = strings.NewReader(body)
	}
	var np *page
	if rd != nil {
		np, err = b.fetch(ctx, method, target, ctype, rd)
	} else {
		np, err = b.fetch(ctx, method, target, "", nil)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		r["ok"] = wire.Bool(false)
		r["error"] = wire.String("navigation failed: " + err.Error())
		return r, nil
	}
	b.show(t, np)
	r["url"] = wire.String(np.url)
	r["status"] = wire.Int(int64(np.status))
	return r, nil
}

func isButton(n *html.Node) bool {
	switch strings.ToLower(attrOr(n, "type")) {
	case "submit", "button", "image", "reset", "checkbox", "radio", "file", "hidden":
		return true
	}
	return false
}

func isSubmit(n *html.Node) bool {
	switch n.DataAtom {
	case atom.Button:
		t := strings.ToLower(attrOr(n, "type"))
		return t == "" || t == "submit"
	case atom.Input:
		t := strings.ToLower(attrOr(n, "type"))
		return t == "submit" || t == "image"
	}
	return false
}

func enclosingForm(n *html.Node) *html.Node {
	for a := n.Parent; a != nil; a = a.Parent {
		if a.Type == html.ElementNode && a.DataAtom == atom.Form {
			return a
		}
	}
	return nil
}

func uncheckGroup(doc *html.Node, name string) {
	walk(doc, func(n *html.Node) bool {
		if n.Type == html.ElementNode && n.DataAtom == atom.Input && strings.EqualFold(attrOr(n, "type"), "radio") && attrOr(n, "name") == name {
			delAttr(n, "checked")
		}
		return true
	})
}

// submission is how form submits with submitter: the HTML form data set
// (named, enabled controls; checked boxes only; the clicked button only),
// URL-encoded into the query (GET) or the body (POST).
func (p *page) submission(form, submitter *html.Node) (method, target, ctype, body string) {
	vals := url.Values{}
	walk(form, func(n *html.Node) bool {
		if n.Type != html.ElementNode {
			return true
		}
		name, named := attr(n, "name")
		if _, off := attr(n, "disabled"); !named || name == "" || off {
			return true
		}
		switch n.DataAtom {
		case atom.Input:
			switch t := strings.ToLower(attrOr(n, "type")); t {
			case "checkbox", "radio":
				if _, on := attr(n, "checked"); on {
					v, ok := attr(n, "value")
					if !ok {
						v = "on"
					}
					vals.Add(name, v)
				}
			case "submit", "image", "button", "reset":
				if n == submitter {
					vals.Add(name, attrOr(n, "value"))
				}
			case "file":
			default:
				vals.Add(name, attrOr(n, "value"))
			}
		case atom.Button:
			if n == submitter {
				vals.Add(name, attrOr(n, "value"))
			}
		case atom.Select:
			if o := selectedOption(n); o != nil {
				vals.Add(name, optionValue(o))
			}
		case atom.Textarea:
			vals.Add(name, textOf(n))
		}
		return true
	})
	action := attrOr(form, "action")
	if fa, ok := attr(submitter, "formaction"); ok {
		action = fa
	}
	target = p.url
	if action != "" {
		target = p.resolve(action)
	}
	method = http.MethodGet
	if strings.EqualFold(attrOr(form, "method"), "post") {
		method = http.MethodPost
	}
	if method == http.MethodGet {
		u, _ := url.Parse(target)
		u.RawQuery = vals.Encode()
		return method, u.String(), "", ""
	}
	return method, target, "application/x-www-form-urlencoded", vals.Encode()
}

// Wait is browser_wait: until cond holds (visible or hidden: the element
// id, or the CSS selector in arg; text_contains: arg is in the visible
// text; network_idle: no request in flight) or timeout_ms (8000 by
// default, 200–60000) passes. The answer says which (ok, waited_ms, and
// reason when it timed out); it re-checks whenever a page changes.
func (b *Browser) Wait(ctx context.Context, cond, id, arg string, timeoutMS int64) (wire.Bundle, error) {
	if cond == "" {
		return nil, badRequest("no cond")
	}
	if timeoutMS <= 0 {
		timeoutMS = 8000
	}
	timeoutMS = min(max(timeoutMS, 200), 60000)
	check, err := b.condition(cond, id, arg)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	deadline := time.NewTimer(time.Duration(timeoutMS) * time.Millisecond)
	defer deadline.Stop()
	for {
		b.mu.Lock()
		ok, err := check()
		changed := b.changed
		b.mu.Unlock()
		if err != nil {
			return nil, err
		}
		if ok {
			return wire.Bundle{"ok": wire.Bool(true), "waited_ms": wire.Int(time.Since(start).Milliseconds())}, nil
		}
		select {
		case <-changed:
		case <-deadline.C:
			return wire.Bundle{"ok": wire.Bool(false), "waited_ms": wire.Int(time.Since(start).Milliseconds()),
				"reason": wire.String("timeout: " + cond + " did not hold")}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// condition returns the check of a wait; it runs with mu held.
func (b *Browser) condition(cond, id, arg string) (func() (bool, error), error) {
	switch cond {
	case "visible", "hidden":
		if id == "" && arg == "" {
			return nil, badRequest("%s needs id or a selector in arg", cond)
		}
		if id == "" {
			if _, err := parseSelector(arg); err != nil {
				return nil, err
			}
		}
		return func() (bool, error) {
			t := b.activeTabLocked()
			if t == nil || t.page == nil {
				return cond == "hidden", nil
			}
			n, err := t.page.target(id, arg)
			shown := err == nil && visible(n)
			return shown == (cond == "visible"), nil
		}, nil
	case "text_contains":
		if arg == "" {
			return nil, badRequest("text_contains needs the text in arg")
		}
		return func() (bool, error) {
			t := b.activeTabLocked()
			return t != nil && t.page != nil && strings.Contains(strings.ToLower(t.page.visibleText()), strings.ToLower(arg)), nil
		}, nil
	case "network_idle":
		return func() (bool, error) { return b.inflight == 0, nil }, nil
	}
	return nil, badRequest("cond must be visible, hidden, text_contains or network_idle, not %q", clip(cond))
}
