package console

import (
	"crypto/subtle"
	"embed"
	"io/fs"
	"net"
	"net/http"
	"strings"
)

//go:embed assets
var assets embed.FS

// csp allows nothing but the console's own script, style and fetches: no
// inline code, no outside origin, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

const cookieName = "agentos_console"

func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.page("consent", s.consentPage))
	mux.HandleFunc("GET /apps", s.page("apps", s.appsPage))
	mux.HandleFunc("GET /plugins", s.page("plugins", s.pluginsPage))
	mux.HandleFunc("GET /sessions", s.page("sessions", s.sessionsPage))
	mux.HandleFunc("GET /desktop", s.page("desktop", s.desktopPage))
	mux.HandleFunc("GET /model", s.page("model", s.modelPage))
	mux.HandleFunc("GET /status", s.page("status", s.statusPage))
	mux.HandleFunc("GET /aci", s.page("aci", s.aciPage))
	mux.HandleFunc("GET /live.json", s.live)
	// Browsers ask for it on their own; no content, no error in the console.
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	mux.HandleFunc("POST /act", s.act)
	return s.guard(mux)
}

// guard is every check before a handler: the peer, the Host, the token,
// and for a POST the Origin and the CSRF field. Refusals are plain text
// and say why (the person at the browser is the owner).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		// same-origin, not no-referrer: under no-referrer a form POST
		// carries "Origin: null", and the Origin check would refuse it.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cache-Control", "no-store")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		peer, ok := peerOf(r.Context())
		if !ok || !s.owner(peer.UID) {
			s.refuse(w, r, http.StatusForbidden, "this console is for the owner of the device only")
			return
		}
		if !loopbackHost(r.Host) {
			// A page of another site that resolved its name to 127.0.0.1
			// (DNS rebinding) arrives with its own Host.
			s.refuse(w, r, http.StatusMisdirectedRequest, "the console answers loopback addresses only (open it as 127.0.0.1 or localhost)")
			return
		}
		if t := r.URL.Query().Get("token"); t != "" && r.Method == http.MethodGet {
			if !s.tokenOK(t) {
				s.refuse(w, r, http.StatusUnauthorized, "this console link is not valid (the runtime restarted?): run agentlab console again")
				return
			}
			http.SetCookie(w, &http.Cookie{Name: cookieName, Value: s.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q := r.URL.Query()
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
			return
		}
		c, err := r.Cookie(cookieName)
		if err != nil || !s.tokenOK(c.Value) {
			s.refuse(w, r, http.StatusUnauthorized, "open the console with the link agentlab console prints (it carries this start's token)")
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if r.Header.Get("Origin") != "http://"+r.Host {
				s.refuse(w, r, http.StatusForbidden, "cross-origin request refused")
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
			if err := r.ParseForm(); err != nil {
				s.refuse(w, r, http.StatusBadRequest, "the form could not be read")
				return
			}
			if subtle.ConstantTimeCompare([]byte(r.PostForm.Get("csrf")), []byte(s.csrf)) != 1 {
				s.refuse(w, r, http.StatusForbidden, "the form is stale or foreign (reload the page)")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (s *Server) tokenOK(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

func (s *Server) refuse(w http.ResponseWriter, r *http.Request, code int, why string) {
	s.log.Info("console: refused", "path", r.URL.Path, "status", code)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	w.Write([]byte(why + "\n"))
}

// loopbackHost reports whether a Host header names this machine by a
// loopback name or address (any port: adb forward picks it).
func loopbackHost(host string) bool {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	h = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
