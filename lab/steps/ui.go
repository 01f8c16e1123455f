package steps

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/agentoslab/agentlab/lab/consoleui"
	"github.com/agentoslab/agentlab/lab/scenario"
)

// uiAnswerTimeout bounds one try of a tap through the console; a card
// still pending after it is tried once more (a loaded machine can make a
// browser slow), uiTries in all.
const (
	uiAnswerTimeout = 30 * time.Second
	uiTries         = 2
)

// hand is the owner's hand on one device: its web console open in
// headless Chromium (the ui consent driver).
type hand struct {
	link *consoleui.Link
	br   *consoleui.Browser
}

// shot is a card the hand answered, for the artifacts.
type shot struct {
	role, name string
	png        []byte
}

// consentDriver is the driver of this attempt: the run's override, else
// the scenario's, else admin.
func (a *attempt) consentDriver() string {
	switch {
	case a.env.ConsentDriver != "":
		return a.env.ConsentDriver
	case a.sc.ConsentDriver != "":
		return a.sc.ConsentDriver
	}
	return scenario.DriverAdmin
}

// handOf opens t's console in a browser on first use; it lives until the
// attempt ends. Not getting there is the lab's fault.
func (a *attempt) handOf(ctx context.Context, t *Target) (*hand, error) {
	a.uiMu.Lock()
	defer a.uiMu.Unlock()
	if h := a.hands[t.Role]; h != nil {
		return h, nil
	}
	link, err := consoleui.Open(ctx, t.Device, t.Ctl)
	if err != nil {
		return nil, labFault("open the owner console", err)
	}
	br, err := consoleui.Start(a.ctx, consoleui.BrowserOptions{Chromium: a.env.Chromium, URL: link.URL})
	if err != nil {
		link.Close(context.WithoutCancel(ctx))
		return nil, labFault("start the browser", err)
	}
	h := &hand{link: link, br: br}
	a.hands[t.Role] = h
	return h, nil
}

// tapUI answers a card on t's console as a person does. A card that is
// no longer on the console is not accepted (as ctl's answer to a card
// that ended); anything else going wrong is the lab's fault.
func (a *attempt) tapUI(ctx context.Context, t *Target, kind, id, choice string) (bool, error) {
	h, err := a.handOf(ctx, t)
	if err != nil {
		return false, err
	}
	// One tap at a time on a device: the browser has one tab.
	a.uiMu.Lock()
	defer a.uiMu.Unlock()
	// A card that already ended (answered, timed out) never shows on the
	// console: say so at once, as ctl does, instead of waiting a whole
	// try for it. The lab learns a card's id only once it is pending, so
	// a card not pending now is not coming.
	if pending, err := stillPending(ctx, t, kind, id); err != nil {
		return false, err
	} else if !pending {
		return false, nil
	}
	for range uiTries {
		tctx, cancel := context.WithTimeout(ctx, uiAnswerTimeout)
		var ans *consoleui.Answered
		ans, err = h.br.Answer(tctx, kind, id, choice)
		cancel()
		if err == nil {
			a.shots = append(a.shots, shot{role: t.Role, name: fmt.Sprintf("card-%02d-%s-%s.png", len(a.shots)+1, kind, safeName(choice)), png: ans.Screenshot})
			return ans.Accepted, nil
		}
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		pending, perr := stillPending(ctx, t, kind, id)
		if perr != nil {
			return false, perr
		}
		if !pending {
			// It ended before the tap: what ctl's answer says of it.
			return false, nil
		}
	}
	return false, labFault("tap on the owner console", err)
}

// stillPending asks the runtime whether a card is still waiting.
func stillPending(ctx context.Context, t *Target, kind, id string) (bool, error) {
	var ids []struct {
		RequestID string `json:"requestId"`
	}
	if kind == consoleui.KindAuth {
		var list struct {
			Cards []struct {
				RequestID string `json:"requestId"`
			} `json:"cards"`
		}
		if err := t.Ctl.Call(ctx, &list, "callers", "list"); err != nil {
			return false, err
		}
		ids = list.Cards
	} else if err := t.Ctl.Call(ctx, &ids, "consent", "pending"); err != nil {
		return false, err
	}
	for _, x := range ids {
		if x.RequestID == id {
			return true, nil
		}
	}
	return false, nil
}

// closeHands ends the browsers and removes the forwards, keeping what
// the browsers saw go wrong.
func (a *attempt) closeHands() {
	a.uiMu.Lock()
	defer a.uiMu.Unlock()
	for role, h := range a.hands {
		if errs, outside := h.br.Problems(); len(errs)+len(outside) > 0 {
			a.uiSeen[role] = map[string]any{"consoleErrors": errs, "outsideRequests": outside}
		}
		h.br.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		h.link.Close(ctx)
		cancel()
	}
	a.hands = map[string]*hand{}
}

// uiProblems are what the browsers saw that a console page must never
// do: console errors and requests outside the console.
func (a *attempt) uiProblems() map[string]any {
	a.uiMu.Lock()
	defer a.uiMu.Unlock()
	return maps.Clone(a.uiSeen)
}

func safeName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}
