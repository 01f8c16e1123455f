// Package service declares the browser's capabilities to the ACI SDK:
// the thin shell around the SDK-free engine (sampleapps/browser). Each
// declaration says exactly which result keys and types the engine
// returns (the SDK refuses any other), and every call is recorded in the
// browser's audit after its handler ran.
package service

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/agentoslab/agentlab/runtime/aci/wire"
	"github.com/agentoslab/agentlab/runtime/sdk/aci"
	"github.com/agentoslab/agentlab/sampleapps/browser"
)

// Name is the browser's ACI service (app.json's services[].server).
const Name = "browser"

// New returns the browser's ACI server over b.
func New(b *browser.Browser, opts *aci.Options) (*aci.Server, error) {
	srv := aci.NewServer(Name, opts)
	for _, c := range Capabilities(b) {
		if err := srv.Add(c); err != nil {
			return nil, err
		}
	}
	return srv, nil
}

type handler = func(ctx context.Context, c *aci.Call) (aci.Bundle, error)

// audited wraps h so the browser records the call once it ran: params by
// name only, ok and the code decided by the outcome.
func audited(b *browser.Browser, id string, h handler) handler {
	return func(ctx context.Context, c *aci.Call) (aci.Bundle, error) {
		r, err := h(ctx, c)
		code := 0
		if err != nil {
			code = int(wire.Internal)
			var e *wire.Error
			if errors.As(err, &e) {
				code = int(e.Code)
			}
		}
		names := make([]string, 0, len(c.Params))
		for k := range c.Params {
			names = append(names, k)
		}
		slices.Sort(names)
		b.Audited(id, names, code)
		return r, err
	}
}

// Capabilities are the browser's capabilities, in upstream's order.
func Capabilities(b *browser.Browser) []*aci.Capability {
	bg := []aci.Flag{aci.FlagBackground, aci.FlagNoUI}
	var out []*aci.Capability
	add := func(c *aci.Capability, h handler) {
		out = append(out, c.Flags(bg...).Handle(audited(b, c.ID(), h)))
	}
	unsupported := func(id, why string) handler {
		return func(context.Context, *aci.Call) (aci.Bundle, error) { return nil, browser.Unsupported(id, why) }
	}
	page := func(c *aci.Capability) *aci.Capability {
		return c.Result("url", aci.TypeString, "The page's URL.").Result("title", aci.TypeString, "The page's title.")
	}

	add(aci.NewCapability("browser_open", "Open a URL in the active tab and wait until the page has loaded (ready).").
		Param("url", aci.TypeString, aci.Required, "The http or https URL to open.").
		Param("title", aci.TypeString, aci.Optional, "A title for a new tab.").
		Result("launched", aci.TypeBoolean, "The browser took the request.").
		Result("ready", aci.TypeBoolean, "The page loaded and was parsed.").
		Result("url", aci.TypeString, "The URL after redirects.").
		Result("title", aci.TypeString, "The page's title.").
		Result("status", aci.TypeInt, "The HTTP status.").
		Result("warn", aci.TypeString, "Why the page is not ready, or an HTTP error status.").
		Timeout(browser.LoadTimeout+5*time.Second),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) {
			return b.Open(ctx, c.String("url"), c.String("title"))
		})

	add(page(aci.NewCapability("browser_read", "Return the active page's HTML: full (as it stands) or clean (no scripts, styles or hidden parts).").
		Param("mode", aci.TypeString, aci.Optional, "full (default) or clean.").
		Result("mode", aci.TypeString, "The mode used.").
		Large("html", "The HTML.")),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.Read(c.String("mode")) })

	crawl := func(c *aci.Capability) *aci.Capability {
		return page(c).Result("text", aci.TypeString, "The visible text, cut at 150,000 characters.").
			Result("links", aci.TypeString, `JSON [{"text","href"}], at most 200.`).
			Result("link_count", aci.TypeInt, "How many links the page has.").
			Result("truncated", aci.TypeBoolean, "Whether the text was cut.")
	}
	add(crawl(aci.NewCapability("browser_crawl", "Return the active page's visible text and links.")),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.Crawl() })

	add(crawl(aci.NewCapability("browser_search", "Search the web with a configured engine and return the results page's text and links.").
		Param("query", aci.TypeString, aci.Required, "What to search for.").
		Param("engine", aci.TypeString, aci.Optional, "The engine's name (bing, google, baidu, ddg, or one the device configured).").
		Result("query", aci.TypeString, "The query.").
		Result("engine", aci.TypeString, "The engine used.").
		Result("error", aci.TypeString, "Why the results page did not load.")).
		Timeout(browser.LoadTimeout+5*time.Second),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) {
			return b.Search(ctx, c.String("query"), c.String("engine"))
		})

	add(aci.NewCapability("browser_script", "Run JavaScript in the page (needs a JavaScript engine).").
		Param("code", aci.TypeString, aci.Required, "The script."),
		unsupported("browser_script", "it has no JavaScript engine; use browser_query, browser_elements and browser_action"))

	add(aci.NewCapability("browser_list", "List the open tabs, one line each.").
		Result("tabs", aci.TypeString, `Lines "url=… title=…", the active tab marked.`).
		Result("count", aci.TypeInt, "How many tabs are open."),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.List(), nil })

	add(aci.NewCapability("browser_info", "Report the browser's package and version.").
		Result("package", aci.TypeString, "The package name.").
		Result("versionName", aci.TypeString, "The version for people.").
		Result("versionCode", aci.TypeInt, "The version code.").
		Result("engine", aci.TypeString, "The engine (go-html)."),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.Info(), nil })

	add(aci.NewCapability("browser_capture", "List, clear, enable or disable the capture of the requests the browser makes.").
		Param("action", aci.TypeString, aci.Optional, "list (default), clear, enable or disable.").
		Param("limit", aci.TypeInt, aci.Optional, "How many requests to list (200; 1-1000).").
		Param("filter", aci.TypeString, aci.Optional, "Only URLs containing this.").
		Result("requests", aci.TypeString, `JSON [{"url","method","headers","is_main_frame","time"}]; secret headers redacted.`).
		Result("count", aci.TypeInt, "How many are listed.").
		Result("enabled", aci.TypeBoolean, "Whether capture is on.").
		Result("note", aci.TypeString, "What the capture covers."),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) {
			return b.Capture(c.String("action"), c.Int("limit"), c.String("filter"))
		})

	add(aci.NewCapability("browser_find", "Find text in the active page and move through the matches.").
		Param("text", aci.TypeString, aci.Optional, "The text (needed for find).").
		Param("action", aci.TypeString, aci.Optional, "find (default), next, prev or clear.").
		Param("forward", aci.TypeBoolean, aci.Optional, "For next: false goes backwards.").
		Result("found", aci.TypeBoolean, "Whether there is a match.").
		Result("count", aci.TypeInt, "How many matches.").
		Result("index", aci.TypeInt, "The current match (0-based; -1 for none)."),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) {
			return b.Find(c.String("text"), c.String("action"), c.BoolOr("forward", true))
		})

	add(aci.NewCapability("browser_nav", "Go back, forward or reload in the active tab.").
		Param("action", aci.TypeString, aci.Required, "back, forward or reload.").
		Result("url", aci.TypeString, "The URL now shown.").
		Result("can_back", aci.TypeBoolean, "Whether back is possible.").
		Result("can_forward", aci.TypeBoolean, "Whether forward is possible.").
		Timeout(browser.LoadTimeout+5*time.Second),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.Nav(ctx, c.String("action")) })

	add(aci.NewCapability("browser_screenshot", "Save a screenshot of the page (needs a renderer)."),
		unsupported("browser_screenshot", "it does not render pages; use browser_read or browser_crawl"))

	add(aci.NewCapability("console_ui", "Return the browser console's UI snapshot (aci-sdui-v1).").
		Result("snapshot", aci.TypeString, "The snapshot as JSON.").
		Result("title", aci.TypeString, "The console's title."),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.ConsoleUI(), nil })

	add(aci.NewCapability("console_action", "Apply a console action: open, read, crawl, find, find_next, find_clear, nav_back, nav_forward, nav_reload, capture_toggle, capture_clear.").
		Param("action", aci.TypeString, aci.Required, "The action.").
		Param("payload", aci.TypeString, aci.Optional, `A JSON object; an input's text under its key or "value".`).
		Result("ok", aci.TypeBoolean, "Whether the action did what it says.").
		Result("action", aci.TypeString, "The action.").
		Result("message", aci.TypeString, "What happened.").
		Timeout(browser.LoadTimeout+5*time.Second),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) {
			return b.ConsoleAction(ctx, c.String("action"), c.String("payload"))
		})

	add(aci.NewCapability("browser_elements", "List the active page's interactive elements with ids for browser_action.").
		Result("count", aci.TypeInt, "How many elements.").
		Result("elements", aci.TypeString, `JSON [{"id","tag","type","text","value","href","placeholder","name","visible"}].`).
		Result("truncated", aci.TypeBoolean, "Whether the list was cut to fit.").
		Result("returned_len", aci.TypeInt, "Characters of elements returned.").
		Result("total_len", aci.TypeInt, "Characters of the whole list."),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.Elements() })

	add(aci.NewCapability("browser_action", "Click, type into, select or scroll to an element; clicking a link or a submit button loads the next page.").
		Param("id", aci.TypeString, aci.Optional, "The element's id from browser_elements (wins over selector).").
		Param("selector", aci.TypeString, aci.Optional, "A CSS selector; the first match is used.").
		Param("op", aci.TypeString, aci.Required, "click, type, select or scroll_to.").
		Param("arg", aci.TypeString, aci.Optional, "The text to type or the option to select.").
		Result("ok", aci.TypeBoolean, "Whether the action worked.").
		Result("op", aci.TypeString, "The op.").
		Result("url", aci.TypeString, "The page loaded by a click.").
		Result("status", aci.TypeInt, "Its HTTP status.").
		Result("value", aci.TypeString, "The selected option's value.").
		Result("checked", aci.TypeBoolean, "A checkbox's state after the click.").
		Result("note", aci.TypeString, "Why a click did nothing.").
		Result("error", aci.TypeString, "Why the navigation failed.").
		Timeout(browser.LoadTimeout+5*time.Second),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) {
			return b.Action(ctx, c.String("id"), c.String("selector"), c.String("op"), c.String("arg"))
		})

	add(aci.NewCapability("browser_wait", "Wait until an element is visible or hidden, the page contains a text, or no request is in flight.").
		Param("cond", aci.TypeString, aci.Required, "visible, hidden, text_contains or network_idle.").
		Param("id", aci.TypeString, aci.Optional, "The element's id (visible, hidden).").
		Param("arg", aci.TypeString, aci.Optional, "A CSS selector (visible, hidden) or the text (text_contains).").
		Param("timeout_ms", aci.TypeInt, aci.Optional, "How long to wait (8000; 200-60000).").
		Result("ok", aci.TypeBoolean, "Whether the condition held.").
		Result("waited_ms", aci.TypeInt, "How long it waited.").
		Result("reason", aci.TypeString, "Why it stopped without the condition.").
		Timeout(65*time.Second),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) {
			return b.Wait(ctx, c.String("cond"), c.String("id"), c.String("arg"), c.Int("timeout_ms"))
		})

	add(aci.NewCapability("browser_snapshot", "Save the active page as a snapshot, or list the snapshots.").
		Param("action", aci.TypeString, aci.Optional, "save (default) or list.").
		Param("label", aci.TypeString, aci.Optional, "A label for the snapshot.").
		Result("id", aci.TypeString, "The saved snapshot's id.").
		Result("ok", aci.TypeBoolean, "Whether it was saved.").
		Result("snapshots", aci.TypeString, `JSON [{"id","url","title","html_len","time"}].`).
		Result("count", aci.TypeInt, "How many snapshots."),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) {
			return b.Snapshot(c.String("action"), c.String("label"))
		})

	add(aci.NewCapability("browser_restore", "Show a saved snapshot in the active tab again.").
		Param("id", aci.TypeString, aci.Required, "The snapshot's id.").
		Result("ok", aci.TypeBoolean, "Whether it was restored.").
		Result("id", aci.TypeString, "The id.").
		Result("url", aci.TypeString, "The snapshot's URL."),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.Restore(c.String("id")) })

	limit := func(c *aci.Capability) *aci.Capability {
		return c.Param("limit", aci.TypeInt, aci.Optional, "How many (100; 1-500).").Result("count", aci.TypeInt, "How many are returned.")
	}
	add(limit(aci.NewCapability("browser_events", "List the latest navigation events (page_started, page_finished, request).")).
		Result("events", aci.TypeString, `JSON [{"type","url","time"}], oldest first.`),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.Events(c.Int("limit")), nil })

	add(limit(aci.NewCapability("browser_audit", "List the latest capability calls: which, with which params (names only), and whether they succeeded.")).
		Result("log", aci.TypeString, `JSON [{"cap","params","ok","code","time"}], oldest first.`),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.Audit(c.Int("limit")), nil })

	add(aci.NewCapability("browser_media", "List the active page's images, video, audio and downloads.").
		Result("count", aci.TypeInt, "How many resources.").
		Result("resources", aci.TypeString, `JSON [{"tag","src","type","text","page_url","poster","download"}].`),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.Media() })

	out = append(out, aci.NewCapability("browser_share", "Share the page or a text through the system (needs the system share sheet).").
		Param("type", aci.TypeString, aci.Optional, "page or text.").
		Param("text", aci.TypeString, aci.Optional, "The text to share.").
		Flags(aci.FlagBackground).
		Handle(audited(b, "browser_share", unsupported("browser_share", "there is no system share sheet"))))

	add(aci.NewCapability("browser_console", "List the page's JavaScript console (needs a JavaScript engine).").
		Param("action", aci.TypeString, aci.Optional, "list, clear, enable or disable.").
		Param("limit", aci.TypeInt, aci.Optional, "How many entries.").
		Param("filter", aci.TypeString, aci.Optional, "Only entries containing this."),
		unsupported("browser_console", "it runs no JavaScript, so there is no console"))

	add(aci.NewCapability("browser_query", "Return the active page's elements matching a CSS selector.").
		Param("selector", aci.TypeString, aci.Required, "A CSS selector.").
		Result("count", aci.TypeInt, "How many elements match.").
		Result("matches", aci.TypeString, `JSON [{"index","tag","text","value","href","id","cls","eid","visible"}], at most 200.`),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.Query(c.String("selector")) })

	add(aci.NewCapability("browser_tabnew", "Open a new tab with a URL and make it active.").
		Param("url", aci.TypeString, aci.Required, "The URL.").
		Param("title", aci.TypeString, aci.Optional, "A title for the tab.").
		Result("tab_id", aci.TypeString, "The new tab's id.").
		Result("url", aci.TypeString, "The URL loaded.").
		Result("active", aci.TypeBoolean, "The tab is active.").
		Result("ready", aci.TypeBoolean, "The page loaded.").
		Result("warn", aci.TypeString, "Why it did not load.").
		Timeout(browser.LoadTimeout+5*time.Second),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) {
			return b.TabNew(ctx, c.String("url"), c.String("title"))
		})

	add(aci.NewCapability("browser_tabs", "List the tabs.").
		Result("count", aci.TypeInt, "How many tabs.").
		Result("tabs", aci.TypeString, `JSON [{"id","url","title","active"}].`).
		Result("active_id", aci.TypeString, "The active tab's id."),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.Tabs(), nil })

	add(aci.NewCapability("browser_tab", "Make a tab active.").
		Param("id", aci.TypeString, aci.Required, "The tab's id.").
		Result("ok", aci.TypeBoolean, "Whether it is active now.").
		Result("url", aci.TypeString, "Its URL.").
		Result("id", aci.TypeString, "Its id."),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.Tab(c.String("id")) })

	add(aci.NewCapability("browser_tabclose", "Close a tab.").
		Param("id", aci.TypeString, aci.Required, "The tab's id.").
		Result("ok", aci.TypeBoolean, "Whether it was closed.").
		Result("remaining", aci.TypeInt, "How many tabs are left."),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) { return b.TabClose(c.String("id")) })

	add(aci.NewCapability("browser_mouse", "Move, click or drag the mouse at screen coordinates (needs a renderer).").
		Param("action", aci.TypeString, aci.Required, "move, click, dblclick, right, down, up, drag or scroll.").
		Param("x", aci.TypeInt, aci.Required, "X in pixels.").
		Param("y", aci.TypeInt, aci.Required, "Y in pixels.").
		Param("dx", aci.TypeInt, aci.Optional, "Drag or scroll distance in X.").
		Param("dy", aci.TypeInt, aci.Optional, "Drag or scroll distance in Y.").
		Param("button", aci.TypeString, aci.Optional, "left, right or middle."),
		unsupported("browser_mouse", "it has no screen coordinates; use browser_action with an element id"))

	add(aci.NewCapability("http_request", "Send an HTTP request (any method) and return the status, headers and body.").
		Param("url", aci.TypeString, aci.Required, "The http or https URL.").
		Param("method", aci.TypeString, aci.Optional, "The method (GET by default; any verb).").
		Param("headers", aci.TypeString, aci.Optional, `A JSON object of header names to values, e.g. {"Accept":"application/json"}.`).
		Param("body", aci.TypeString, aci.Optional, "The request body (sent as application/octet-stream unless headers say otherwise).").
		Param("tls_verify", aci.TypeBoolean, aci.Optional, "false trusts any certificate (test servers only; default true).").
		Param("tls_ca_pem", aci.TypeString, aci.Optional, "A CA certificate (PEM) to trust instead of the system's; wins over tls_verify.").
		Result("status_code", aci.TypeInt, "The HTTP status.").
		Result("response_headers", aci.TypeString, "JSON object; a repeated header keeps its last value.").
		Large("response_body", "The body.").
		Result("truncated_reason", aci.TypeString, "Why the body was not read in full.").
		Timeout(browser.HTTPTimeout+time.Second),
		func(ctx context.Context, c *aci.Call) (aci.Bundle, error) {
			return b.HTTPDo(ctx, browser.HTTPRequest{URL: c.String("url"), Method: c.String("method"), Headers: c.String("headers"),
				Body: c.String("body"), TLSVerify: c.BoolOr("tls_verify", true), TLSCAPEM: c.String("tls_ca_pem")})
		})

	// aci_protocol: upstream flags it no_ui only.
	out = append(out, aci.NewCapability(wire.ProtocolCapability, "Report the ACI protocol versions this app speaks, for negotiation.").
		Result(wire.ResultProtocolVersion, aci.TypeString, "The protocol this app prefers.").
		Result(wire.ResultSemver, aci.TypeString, "Its semantic version.").
		Result(wire.ResultSupported, aci.TypeString, "Every protocol it speaks, comma-separated.").
		Flags(aci.FlagNoUI).
		Handle(audited(b, wire.ProtocolCapability, func(context.Context, *aci.Call) (aci.Bundle, error) { return wire.ProtocolResult(), nil })))
	return out
}
