package consoleui

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// Browser is one headless Chromium with the console open.
type Browser struct {
	base   *url.URL
	ctx    context.Context // the tab; calls derive theirs from it
	cancel func()

	mu       sync.Mutex
	errs     []string // console errors, exceptions, CSP reports
	outside  []string // requests to anything but the console
	requests int
}

// BrowserOptions configure Start.
type BrowserOptions struct {
	// Chromium is the binary; "" finds one (FindChromium).
	Chromium string
	// URL is the console link with its token (Link.URL).
	URL string
}

// Start runs Chromium headless and opens the console link (which turns
// the token into the session cookie). ctx bounds the browser's life.
func Start(ctx context.Context, o BrowserOptions) (*Browser, error) {
	bin, err := FindChromium(o.Chromium)
	if err != nil {
		return nil, err
	}
	u, err := url.Parse(o.URL)
	if err != nil || u.Host == "" {
		return nil, fmt.Errorf("consoleui: bad console URL")
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("no-first-run", true), chromedp.WindowSize(900, 1200))
	actx, acancel := chromedp.NewExecAllocator(context.WithoutCancel(ctx), opts...)
	tctx, tcancel := chromedp.NewContext(actx)
	b := &Browser{base: &url.URL{Scheme: u.Scheme, Host: u.Host}, ctx: tctx, cancel: func() { tcancel(); acancel() }}
	stop := context.AfterFunc(ctx, b.cancel)
	b.cancel = func() { stop(); tcancel(); acancel() }
	// Starts the browser, with no deadline of a call (API.md §21).
	if err := chromedp.Do(tctx); err != nil {
		b.Close()
		return nil, fmt.Errorf("consoleui: start %s: %w", bin, err)
	}
	if err := chromedp.Listen(tctx, b.observe); err != nil {
		b.Close()
		return nil, fmt.Errorf("consoleui: %w", err)
	}
	msgs := chromedp.Console(tctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.Type == chromedp.ConsoleException {
				b.mu.Lock()
				b.errs = append(b.errs, string(m.Type)+": "+m.Text)
				b.mu.Unlock()
			}
		}
	}()
	if err := b.do(ctx, chromedp.Navigate(o.URL), chromedp.WaitReady("body")); err != nil {
		b.Close()
		return nil, fmt.Errorf("consoleui: open the console: %w", err)
	}
	return b, nil
}

// observe keeps the requests the page makes: none may leave the console.
// It runs on the tab's reading loop, so it only appends.
func (b *Browser) observe(ev any) {
	e, ok := ev.(*network.EventRequestWillBeSent)
	if !ok {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requests++
	if u, err := url.Parse(e.Request.URL); err != nil || u.Host != b.base.Host || u.Scheme != b.base.Scheme {
		b.outside = append(b.outside, e.Request.URL)
	}
}

// Problems are the console errors and outside requests seen so far.
func (b *Browser) Problems() (errs, outside []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.errs...), append([]string(nil), b.outside...)
}

// Close ends the browser.
func (b *Browser) Close() { b.cancel() }

// callCtx is the tab's context bounded by ctx: the call fails when ctx
// ends, and the tab stays open.
func (b *Browser) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancel(b.ctx)
	stop := context.AfterFunc(ctx, cancel)
	return cctx, func() { stop(); cancel() }
}

func (b *Browser) do(ctx context.Context, steps ...chromedp.Action[chromedp.Void]) error {
	cctx, cancel := b.callCtx(ctx)
	defer cancel()
	return chromedp.Do(cctx, steps...)
}

func run[T any](ctx context.Context, b *Browser, a chromedp.Action[T]) (T, error) {
	cctx, cancel := b.callCtx(ctx)
	defer cancel()
	return chromedp.Run(cctx, a)
}

// Visit opens path of the console and returns the page's text.
func (b *Browser) Visit(ctx context.Context, path string) (string, error) {
	if err := b.do(ctx, chromedp.Navigate(b.base.String()+path), chromedp.WaitReady("body")); err != nil {
		return "", err
	}
	return run(ctx, b, chromedp.Text(chromedp.CSS("body")))
}

// Eval evaluates a JavaScript expression on the current page.
func Eval[T any](ctx context.Context, b *Browser, expr string) (T, error) {
	return run(ctx, b, chromedp.Evaluate[T](expr))
}

// Kinds of cards.
const (
	KindConsent = "consent"
	KindAuth    = "auth"
)

// Answered is a card the browser answered.
type Answered struct {
	// Text is the card as the person read it.
	Text string
	// Screenshot is a PNG of the card just before the tap.
	Screenshot []byte
	// Accepted says whether the runtime took the answer (the page's note).
	Accepted bool
	Note     string
}

// ErrNoCard means the card is not on the console's consent page.
var ErrNoCard = errors.New("consoleui: the card is not on the console")

// cardSel is the card's element on the consent page.
func cardSel(kind, id string) string {
	prefix := "#card-"
	if kind == KindAuth {
		prefix = "#auth-"
	}
	return prefix + cssIdent(id)
}

// Answer taps choice on a pending card as a person does: it opens the
// consent page, waits until the card is on screen and its tap delay has
// passed (the page marks the form armed), takes a screenshot of the
// card, taps the button and reads the page's note. A card that does not
// come on the page before ctx ends is ErrNoCard.
func (b *Browser) Answer(ctx context.Context, kind, id, choice string) (*Answered, error) {
	sel := cardSel(kind, id)
	if err := b.do(ctx, chromedp.Navigate(b.base.String()+"/"), chromedp.WaitReady("body")); err != nil {
		return nil, fmt.Errorf("consoleui: open the consent page: %w", err)
	}
	// The page reloads itself when cards come and go.
	if err := b.do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		return nil, fmt.Errorf("%w: %s %s: %w", ErrNoCard, kind, id, err)
	}
	if err := b.do(ctx, chromedp.WaitVisible(chromedp.CSS(sel+" form[data-armed]"))); err != nil {
		return nil, fmt.Errorf("consoleui: card %s never armed: %w", id, err)
	}
	var a Answered
	var err error
	if a.Text, err = run(ctx, b, chromedp.Text(chromedp.CSS(sel))); err != nil {
		return nil, fmt.Errorf("consoleui: card %s: %w", id, err)
	}
	if a.Screenshot, err = run(ctx, b, chromedp.Screenshot(chromedp.CSS(sel))); err != nil {
		return nil, fmt.Errorf("consoleui: screenshot of card %s: %w", id, err)
	}
	button := sel + ` button[data-choice="` + choice + `"]`
	n, err := Eval[int](ctx, b, `document.querySelectorAll(`+jsString(button)+`).length`)
	if err != nil {
		return nil, fmt.Errorf("consoleui: card %s: %w", id, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("consoleui: card %s offers no %s button", id, choice)
	}
	if err := b.do(ctx, chromedp.Click(chromedp.CSS(button))); err != nil {
		return nil, fmt.Errorf("consoleui: tap %s on %s: %w", choice, id, err)
	}
	if err := b.do(ctx, chromedp.WaitVisible(chromedp.CSS("p.note"))); err != nil {
		loc, _ := Eval[string](context.Background(), b, `location.href + " " + document.body.innerText.slice(0,300)`)
		return nil, fmt.Errorf("consoleui: tap %s on %s: no answer on the page (%s): %w", choice, id, loc, err)
	}
	if a.Note, err = run(ctx, b, chromedp.Text(chromedp.CSS("p.note"))); err != nil {
		return nil, fmt.Errorf("consoleui: tap %s on %s: %w", choice, id, err)
	}
	a.Accepted = strings.HasSuffix(strings.TrimSpace(a.Note), ": done")
	return &a, nil
}

// TapNow taps choice on the card the moment the page is ready, without
// waiting out the delay (what a hurried finger or an overlay does). It
// reports how many taps the page dropped.
func (b *Browser) TapNow(ctx context.Context, kind, id, choice string) (dropped int, err error) {
	button := cardSel(kind, id) + ` button[data-choice="` + choice + `"]`
	if err := b.do(ctx, chromedp.Navigate(b.base.String()+"/"), chromedp.WaitReady(chromedp.CSS(button))); err != nil {
		return 0, err
	}
	return Eval[int](ctx, b, `(function(){var b=document.querySelector(`+jsString(button)+`);b.click();return parseInt(b.form.dataset.early||"0",10)})()`)
}

// cssIdent escapes an id for a CSS selector.
func cssIdent(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r < 0x80 && !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			fmt.Fprintf(&b, `\%x `, r)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func jsString(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `'`, `\'`, "\n", `\n`, "<", `\x3c`)
	return "'" + r.Replace(s) + "'"
}

// waitArmed waits until the card's tap delay has passed.
func waitArmed(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.WaitVisible(chromedp.CSS(sel + " form[data-armed]"))
}
