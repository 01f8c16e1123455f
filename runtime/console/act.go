package console

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
)

// action is one form the console offers: the admin method it calls and
// how the form's fields become its params.
type action struct {
	method string
	params func(f url.Values) any
	// tap marks an answer to a card: it counts only TapDelay after the
	// card was shown.
	tap bool
	// show renders the result (a pairing code) instead of going back.
	show bool
}

func field(names ...string) func(url.Values) any {
	return func(f url.Values) any {
		p := map[string]string{}
		for _, n := range names {
			p[n] = f.Get(n)
		}
		return p
	}
}

func none(url.Values) any { return nil }

// actions are every form of the console, by op. Nothing else is sent to
// the admin API from a form.
var actions = map[string]action{
	"consent.respond": {method: "consent.respond", params: field("id", "choice"), tap: true},
	"callers.answer": {method: "callers.answer", tap: true, params: func(f url.Values) any {
		return map[string]any{"requestId": f.Get("requestId"), "allow": f.Get("allow") == "true"}
	}},
	"callers.allow":         {method: "callers.allow", params: field("package")},
	"callers.revoke":        {method: "callers.revoke", params: field("package")},
	"callers.remove":        {method: "callers.remove", params: field("package")},
	"plugins.enable":        {method: "plugins.enable", params: field("id")},
	"plugins.disable":       {method: "plugins.disable", params: field("id")},
	"plugins.confirm":       {method: "plugins.confirm", params: field("id")},
	"plugins.tool_enable":   {method: "plugins.tool_enable", params: field("name")},
	"plugins.tool_disable":  {method: "plugins.tool_disable", params: field("name")},
	"plugins.tool_approval": {method: "plugins.tool_approval", params: field("name", "mode")},
	"plugins.approval": {method: "plugins.approval", params: func(f url.Values) any {
		p := map[string]string{"plugin": f.Get("plugin"), "mode": f.Get("mode")}
		if p["mode"] == "clear" {
			p["mode"] = ""
		}
		return p
	}},
	"desktop.enable":  {method: "desktop.enable", params: none, show: true},
	"desktop.code":    {method: "desktop.code", params: none, show: true},
	"desktop.disable": {method: "desktop.disable", params: none},
	"desktop.revoke":  {method: "desktop.revoke", params: field("id")},
	"model.set": {method: "model.set", params: func(f url.Values) any {
		p := map[string]any{"provider": f.Get("provider")}
		for _, k := range []string{"baseUrl", "model"} {
			if v := strings.TrimSpace(f.Get(k)); v != "" {
				p[k] = v
			}
		}
		// Write-only: an empty field keeps the stored key.
		if k := f.Get("key"); k != "" {
			p["key"] = k
		}
		return p
	}},
	"model.clear": {method: "model.clear", params: none},
	// The status page's switch; leaving also ends the supervisor's safe
	// mode (the runtime asks it, as leave-safe-mode does).
	"safemode.enter": {method: "safemode.enter", params: none},
	"safemode.leave": {method: "safemode.leave", params: none},
	"aci.console_action": {method: methodACIConsole, params: func(f url.Values) any {
		payload := map[string]string{}
		if k := f.Get("key"); k != "" {
			// Both spellings upstream's renderers use (runtime/aci/sdui).
			payload["key"], payload["value"], payload[k] = k, f.Get("value"), f.Get("value")
		}
		b, _ := json.Marshal(payload)
		return map[string]any{"package": f.Get("package"), "service": f.Get("service"), "action": f.Get("action"), "payload": string(b)}
	}},
}

// backPaths are where a form may send the browser afterwards.
var backPaths = map[string]bool{"/": true, "/apps": true, "/plugins": true, "/sessions": true, "/desktop": true,
	"/model": true, "/status": true, "/aci": true}

type resultData struct {
	Op     string
	OK     bool
	Why    string
	Result any
	Back   string
}

// act runs one form: the guard has checked token, Origin and CSRF.
func (s *Server) act(w http.ResponseWriter, r *http.Request) {
	peer, _ := peerOf(r.Context())
	f := r.PostForm
	op := f.Get("op")
	a, ok := actions[op]
	if !ok {
		s.refuse(w, r, http.StatusBadRequest, "unknown action")
		return
	}
	back := f.Get("back")
	if !backPaths[back] {
		back = "/"
	}
	if q := f.Get("backQuery"); q != "" && back == "/aci" {
		back += "?" + url.Values{"package": {f.Get("package")}, "service": {f.Get("service")}}.Encode()
	}
	if a.tap {
		age, ok := s.shownAge(f.Get("shown"))
		if !ok || age < TapDelay.Milliseconds() {
			// Too early to be a person's tap on a card they could read:
			// nothing is answered.
			s.log.Info("console: tap before the delay", "op", op)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.WriteHeader(http.StatusConflict)
			w.Write([]byte("too quick: a card must be on screen for 400 ms before a tap counts; nothing was answered\n"))
			return
		}
	}
	var res any
	err := s.call(r.Context(), peer, a.method, a.params(f), &res)
	s.log.Info("console: action", "op", op, "uid", peer.UID, "ok", err == nil)
	if a.show || err != nil {
		d := resultData{Op: op, OK: err == nil, Result: res, Back: back}
		if err != nil {
			d.Why = why(err)
		}
		s.render(w, r, "result", d)
		return
	}
	note := "done"
	if m, ok := res.(map[string]any); ok {
		if acc, ok := m["accepted"].(bool); ok && !acc {
			note = "not accepted: the card was already answered or has expired"
		}
		// The runtime's own sentence, where it has one (safe mode).
		if n, ok := m["note"].(string); ok && n != "" {
			note = n
		}
	}
	sep := "?"
	if strings.Contains(back, "?") {
		sep = "&"
	}
	http.Redirect(w, r, back+sep+"note="+url.QueryEscape(op+": "+note), http.StatusSeeOther)
}
