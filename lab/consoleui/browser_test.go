package consoleui

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/console"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// hostile is markup a third party controls: it must show as text.
const hostile = `<script>window.pwned=1</script><img src="http://203.0.113.9/x.png" onerror="window.pwned=2">`

// owner is the runtime's side as the console sees it: pending cards that
// an answer removes, and a record of every call.
type owner struct {
	mu       sync.Mutex
	cards    []consent.Card
	answered map[string]string
	calls    []string
	safeMode bool
}

func newOwner(ids ...string) *owner {
	o := &owner{answered: map[string]string{}}
	for i, id := range ids {
		o.cards = append(o.cards, consent.Card{RequestID: id, Title: "要允许「Create a note" + hostile + "」吗？",
			InitiatorLine: "由 Notes" + hostile + " 发起（org.agentos.sample.notes）", ToolName: "mcp__notes__notes__note_create",
			ToolDisplayName: "Create a note", ArgumentsPreview: `{"title":"` + hostile + `"}`, Risk: catalog.RiskWrite, Severity: consent.SeverityElevated,
			RiskLabel: "会修改数据", Options: []consent.CardOption{{Choice: consent.AllowOnce, Label: "允许一次"}, {Choice: consent.Deny, Label: "拒绝"}},
			DeadlineMillis: time.Now().Add(time.Minute).UnixMilli(), QueuePosition: i, QueueSize: len(ids)})
	}
	return o
}

func (o *owner) Invoke(_ context.Context, _ transport.Cred, method string, params any) (json.RawMessage, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, method)
	var res any
	switch method {
	case "consent.pending":
		views := []consent.View{}
		for _, c := range o.cards {
			views = append(views, consent.View{RequestID: c.RequestID, Risk: c.Risk, Card: c, RemainingMs: 60000})
		}
		res = views
	case "consent.respond":
		p := params.(map[string]string)
		accepted := false
		for i, c := range o.cards {
			if c.RequestID == p["id"] {
				o.cards = append(o.cards[:i], o.cards[i+1:]...)
				o.answered[p["id"]] = p["choice"]
				accepted = true
				break
			}
		}
		res = map[string]bool{"accepted": accepted}
	case "callers.list":
		res = map[string]any{"callers": []map[string]any{{"packageName": "org.example.evil", "label": "Evil" + hostile, "state": "allowed",
			"usage": map[string]any{"promptsTotal": 7, "promptsLastHour": 4, "activeTasks": 1}}},
			"cards": []any{}, "health": "ok"}
	case "quota.show":
		res = map[string]any{"limits": map[string]any{"maxPromptChars": 16000, "maxConcurrent": 1, "maxPerHour": 30, "windowMs": 3600000}}
	case "plugins.list":
		res = []map[string]any{{"id": "p" + hostile, "displayName": "Plugin" + hostile, "enabled": true, "servers": []any{}}}
	case "aci.list":
		res = []map[string]any{{"package": "org.example.aci", "service": "main", "capabilities": []string{"console_ui"}}}
	case "aci.console":
		res = map[string]any{"package": "org.example.aci", "service": "main", "snapshot": map[string]any{"title": "ACI" + hostile,
			"components": []map[string]any{{"type": "text", "text": hostile}, {"type": "button", "action": "go", "label": hostile}}}}
	case "status":
		res = map[string]any{"version": "test", "safeMode": o.safeMode}
	case "safemode.enter", "safemode.leave":
		o.safeMode = method == "safemode.enter"
		res = map[string]any{"safeMode": o.safeMode, "note": "safe mode " + map[bool]string{true: "entered", false: "left"}[o.safeMode]}
	case "model.show":
		res = map[string]any{"configured": false}
	case "sessions.list", "desktop.list":
		res = []any{}
	case "desktop.status", "plugins.policy":
		res = map[string]any{}
	default:
		return nil, errcode.Newf(errcode.Unsupported, "unknown admin method %q", method)
	}
	b, _ := json.Marshal(res)
	return b, nil
}

func (o *owner) answer(id string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c, ok := o.answered[id]
	return c, ok
}

// forward is `adb forward tcp:0 localabstract:…` for a socket of this
// host: a loopback TCP port relaying to the console's socket.
func forward(t *testing.T, name string) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := transport.Dial(context.Background(), name)
				if err != nil {
					return
				}
				defer u.Close()
				go io.Copy(u, c)
				io.Copy(c, u)
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

// openConsole serves a console for o and opens it in Chromium.
func openConsole(t *testing.T, o console.Admin) *Browser {
	t.Helper()
	chromium := testenv.NeedChromium(t)
	var b [4]byte
	rand.Read(b[:])
	srv, err := console.New(&console.Options{Name: transport.Names{Prefix: "t" + hex.EncodeToString(b[:]) + "-"}.Console(), Admin: o})
	require.NoError(t, err)
	require.NoError(t, srv.Start(t.Context()))
	t.Cleanup(srv.Close)
	port := forward(t, srv.Name())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	br, err := Start(ctx, BrowserOptions{Chromium: chromium, URL: "http://127.0.0.1:" + itoa(port) + srv.Path()})
	require.NoError(t, err)
	t.Cleanup(br.Close)
	return br
}

func itoa(n int) string { return strconv.Itoa(n) }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestEveryPageInChromium: each page renders in a real browser with no
// console error (a CSP violation is one) and no request outside the
// console, and third-party markup stays text: no script of it ran, no
// image of it loaded.
func TestEveryPageInChromium(t *testing.T) {
	br := openConsole(t, newOwner("req-1", "req-2"))
	ctx := ctxT(t)
	for _, p := range []string{"/", "/apps", "/plugins", "/sessions", "/desktop", "/model", "/status", "/aci", "/aci?package=org.example.aci&service=main"} {
		text, err := br.Visit(ctx, p)
		require.NoError(t, err, p)
		assert.NotContains(t, text, "could not", p)
		pwned, err := Eval[bool](ctx, br, `window.pwned !== undefined`)
		require.NoError(t, err)
		assert.False(t, pwned, "%s ran injected script", p)
		n, err := Eval[int](ctx, br, `document.scripts.length + document.images.length`)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "%s: only the console's own script, no injected element", p)
		if p == "/apps" {
			row, err := Eval[string](ctx, br, `document.querySelector('tr[data-package="org.example.evil"]').innerText`)
			require.NoError(t, err)
			assert.Contains(t, row, "4 / 30", "usage against the hourly quota")
			assert.Contains(t, row, "1 / 1", "tasks against the quota at once")
		}
		if p != "/sessions" && p != "/desktop" && p != "/model" && p != "/status" && p != "/aci" {
			assert.Contains(t, text, "<script>window.pwned=1</script>", "%s shows the markup as text", p)
		}
	}
	// Let the consent page's script poll once more.
	_, err := br.Visit(ctx, "/")
	require.NoError(t, err)
	require.NoError(t, br.do(ctx, waitArmed("#card-req-1")))
	errs, outside := br.Problems()
	assert.Empty(t, errs, "console errors")
	assert.Empty(t, outside, "requests outside the console")
}

// TestTapDelayInChromium: a tap within the delay does nothing; the
// driver waits it out, taps, and the runtime gets the choice. Deny has
// the focus on the head card.
func TestTapDelayInChromium(t *testing.T) {
	o := newOwner("req-1", "req-2")
	br := openConsole(t, o)
	ctx := ctxT(t)

	dropped, err := br.TapNow(ctx, KindConsent, "req-1", "ALLOW_ONCE")
	require.NoError(t, err)
	assert.Equal(t, 1, dropped, "the page dropped the early tap")
	focused, err := Eval[string](ctx, br, `document.activeElement.dataset.choice || ""`)
	require.NoError(t, err)
	assert.Equal(t, "DENY", focused)
	_, answered := o.answer("req-1")
	assert.False(t, answered, "a tap within 400 ms answered the card")

	a, err := br.Answer(ctx, KindConsent, "req-1", "ALLOW_ONCE")
	require.NoError(t, err)
	assert.True(t, a.Accepted, a.Note)
	assert.NotEmpty(t, a.Screenshot)
	assert.True(t, strings.HasPrefix(string(a.Screenshot), "\x89PNG"))
	assert.Contains(t, a.Text, "org.agentos.sample.notes")
	choice, answered := o.answer("req-1")
	require.True(t, answered)
	assert.Equal(t, "ALLOW_ONCE", choice)

	a, err = br.Answer(ctx, KindConsent, "req-2", "DENY")
	require.NoError(t, err)
	assert.True(t, a.Accepted)
	choice, _ = o.answer("req-2")
	assert.Equal(t, "DENY", choice)
}

// TestNoCardInChromium: a card that is not there is ErrNoCard when the
// caller's time runs out.
func TestNoCardInChromium(t *testing.T) {
	br := openConsole(t, newOwner())
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, err := br.Answer(ctx, KindConsent, "nope", "DENY")
	require.ErrorIs(t, err, ErrNoCard)
}

// TestCrossSiteFormInChromium: a page of another origin that posts a
// form to the console (CSRF) reaches nothing. Another port of 127.0.0.1
// is the same site, so the SameSite cookie does go along: the Origin
// check is what refuses it.
func TestCrossSiteFormInChromium(t *testing.T) {
	o := newOwner("req-1")
	br := openConsole(t, o)
	ctx := ctxT(t)
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<form method="post" action="%s/act"><input name="op" value="consent.respond"><input name="id" value="req-1">`+
			`<input name="choice" value="ALLOW_ONCE"></form><script>document.forms[0].submit()</script>`, br.base.String())
	}))
	t.Cleanup(attacker.Close)
	require.NoError(t, br.do(ctx, chromedp.Navigate(attacker.URL)))
	require.NoError(t, br.do(ctx, chromedp.WaitReady(chromedp.CSS("body"))))
	require.Eventually(t, func() bool {
		href, err := Eval[string](ctx, br, `location.href`)
		return err == nil && strings.HasSuffix(href, "/act")
	}, 10*time.Second, 50*time.Millisecond, "the form was posted")
	text, err := Eval[string](ctx, br, `document.body.innerText`)
	require.NoError(t, err)
	assert.Contains(t, text, "cross-origin request refused")
	_, answered := o.answer("req-1")
	assert.False(t, answered, "a cross-site form answered a card")
}

// TestSafeModeSwitchInChromium: the status page's switch, clicked in a
// real browser, enters safe mode and leaves it again through the admin
// methods, the page showing the state the runtime reports.
func TestSafeModeSwitchInChromium(t *testing.T) {
	o := newOwner()
	br := openConsole(t, o)
	ctx := ctxT(t)
	state := func() string {
		t.Helper()
		v, err := Eval[string](ctx, br, `document.querySelector("[data-safe-mode]").dataset.safeMode`)
		require.NoError(t, err)
		return v
	}
	_, err := br.Visit(ctx, "/status")
	require.NoError(t, err)
	require.Equal(t, "off", state())
	for _, step := range []struct{ op, want, note string }{
		{"safemode.enter", "on", "safe mode entered"},
		{"safemode.leave", "off", "safe mode left"},
	} {
		// The page after the form is the one showing the new state.
		require.NoError(t, br.do(ctx, chromedp.Click(chromedp.CSS(`button[data-op="`+step.op+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-safe-mode="`+step.want+`"]`)), chromedp.WaitVisible(chromedp.CSS("p.note"))), step.op)
		note, err := run(ctx, br, chromedp.Text(chromedp.CSS("p.note")))
		require.NoError(t, err)
		assert.Contains(t, note, step.note)
		assert.Equal(t, step.want, state(), "after %s", step.op)
		o.mu.Lock()
		assert.Contains(t, o.calls, step.op)
		o.mu.Unlock()
	}
	errs, outside := br.Problems()
	assert.Empty(t, errs, "console errors")
	assert.Empty(t, outside, "requests outside the console")
}
