package console

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/agentoslab/agentlab/runtime/aci/sdui"
	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// navItem is one entry of the page menu.
type navItem struct{ Page, Path, Label string }

var nav = []navItem{
	{"consent", "/", "Consent"},
	{"apps", "/apps", "Authorized apps"},
	{"plugins", "/plugins", "Plugins"},
	{"sessions", "/sessions", "Sessions"},
	{"desktop", "/desktop", "Desktop access"},
	{"model", "/model", "Model"},
	{"status", "/status", "Status"},
	{"aci", "/aci", "ACI consoles"},
}

// layout is what every page template gets.
type layout struct {
	Page  string
	Title string
	Nav   []navItem
	CSRF  string
	Note  string
	Data  any
}

// problem is a section a page could not read, with the runtime's reason.
type problem struct{ What, Why string }

type pageFunc func(ctx context.Context, r *http.Request, peer transport.Cred) (any, error)

func (s *Server) page(name string, load pageFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		peer, _ := peerOf(r.Context())
		data, err := load(r.Context(), r, peer)
		if err != nil {
			s.refuse(w, r, http.StatusInternalServerError, "the page could not be built")
			return
		}
		s.render(w, r, name, data)
	}
}

func (s *Server) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	title := name
	for _, n := range nav {
		if n.Page == name {
			title = n.Label
		}
	}
	var buf bytes.Buffer
	if err := s.pages.ExecuteTemplate(&buf, name, layout{Page: name, Title: title, Nav: nav, CSRF: s.csrf,
		Note: r.URL.Query().Get("note"), Data: data}); err != nil {
		s.log.Warn("console: template", "page", name, "err", err)
		s.refuse(w, r, http.StatusInternalServerError, "the page could not be rendered")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	writeBody(w, r, buf.Bytes())
}

// writeBody sends a page in one piece: gzipped when the browser takes it,
// so that a page with many cards fits the server's first write. Through
// adb forward a response in two writes reaches the browser as two adb
// packets, and the adb server's socket (Nagle) holds the second until the
// browser's delayed ACK of the first: 40 ms. Compression is safe here:
// the console is plain HTTP on loopback, with nobody to measure sizes.
func writeBody(w http.ResponseWriter, r *http.Request, body []byte) {
	h := w.Header()
	h.Add("Vary", "Accept-Encoding")
	if len(body) > gzipMin && acceptsGzip(r) {
		var z bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&z, gzip.BestSpeed)
		zw.Write(body)
		if zw.Close() == nil {
			h.Set("Content-Encoding", "gzip")
			body = z.Bytes()
		}
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.Write(body)
}

// gzipMin is the size below which a page goes as it is: it fits one
// write anyway.
const gzipMin = 2 << 10

func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		enc, q, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(enc), "gzip") && strings.ReplaceAll(strings.TrimSpace(q), " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// call invokes an admin method for peer and decodes its result.
func (s *Server) call(ctx context.Context, peer transport.Cred, method string, params, out any) error {
	raw, err := s.admin.Invoke(ctx, peer, method, params)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		return errcode.Wrap(errcode.Internal, method+": unexpected result", err)
	}
	return nil
}

// why is an error as the owner reads it: the runtime's message.
func why(err error) string {
	var e *errcode.Error
	if errors.As(err, &e) {
		return e.Text
	}
	return "the runtime did not answer"
}

// shown signs the time a card is rendered; act refuses an answer
// carrying one younger than TapDelay.
func (s *Server) shown() string {
	ms := strconv.FormatInt(s.clock.Now().UnixMilli(), 10)
	return ms + "." + s.sign("shown:"+ms)
}

// shownAge is how long ago a signed shown value was made; ok is false for
// a value the console did not sign.
func (s *Server) shownAge(v string) (ms int64, ok bool) {
	t, sig, found := strings.Cut(v, ".")
	if !found || s.sign("shown:"+t) != sig {
		return 0, false
	}
	at, err := strconv.ParseInt(t, 10, 64)
	if err != nil {
		return 0, false
	}
	return s.clock.Now().UnixMilli() - at, true
}

type consentCard struct {
	consent.Card
	Shown  string
	MsLeft int64
	Head   bool
}

type authCard struct {
	callers.Card
	Shown  string
	MsLeft int64
}

type consentData struct {
	Cards    []consentCard
	Auth     []authCard
	Version  string
	Problems []problem
	TapMs    int64
}

func (s *Server) consentPage(ctx context.Context, r *http.Request, peer transport.Cred) (any, error) {
	d := consentData{TapMs: TapDelay.Milliseconds()}
	cards, auth, probs := s.pending(ctx, peer)
	d.Problems = probs
	now := s.clock.Now().UnixMilli()
	shown := s.shown()
	for i, v := range cards {
		// The runtime's remaining time, not its deadline: the console's
		// clock need not be the coordinator's.
		d.Cards = append(d.Cards, consentCard{Card: v.Card, Shown: shown, MsLeft: max(0, v.RemainingMs), Head: i == 0})
	}
	for _, c := range auth {
		d.Auth = append(d.Auth, authCard{Card: c, Shown: shown, MsLeft: max(0, c.DeadlineMillis-now)})
	}
	d.Version = version(cards, auth)
	return d, nil
}

func (s *Server) pending(ctx context.Context, peer transport.Cred) ([]consent.View, []callers.Card, []problem) {
	var probs []problem
	var cards []consent.View
	if err := s.call(ctx, peer, "consent.pending", nil, &cards); err != nil {
		probs = append(probs, problem{"Consent cards", why(err)})
	}
	var list struct {
		Cards []callers.Card `json:"cards"`
	}
	if err := s.call(ctx, peer, "callers.list", nil, &list); err != nil {
		probs = append(probs, problem{"Authorization cards", why(err)})
	}
	return cards, list.Cards, probs
}

// version names the set of pending cards, so that the page's script
// reloads only when it changed.
func version(cards []consent.View, auth []callers.Card) string {
	h := sha256.New()
	for _, c := range cards {
		h.Write([]byte("c" + c.RequestID + "\n"))
	}
	for _, c := range auth {
		h.Write([]byte("a" + c.RequestID + "\n"))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:12])
}

// live answers the page's script: the version of the pending cards.
func (s *Server) live(w http.ResponseWriter, r *http.Request) {
	peer, _ := peerOf(r.Context())
	cards, auth, _ := s.pending(r.Context(), peer)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"v": version(cards, auth), "pending": len(cards) + len(auth)})
}

type appsData struct {
	Apps        []callers.Item
	Revocations any
	Health      string
	Channels    any
	// Quota are the limits every app's usage counts against; nil when
	// the runtime could not say.
	Quota    *quotaLimits
	Problems []problem
}

// quotaLimits are quota.show's limits (runtime/quota.Limits).
type quotaLimits struct {
	MaxPromptChars int   `json:"maxPromptChars"`
	MaxConcurrent  int   `json:"maxConcurrent"`
	MaxPerHour     int   `json:"maxPerHour"`
	WindowMs       int64 `json:"windowMs"`
}

func (s *Server) appsPage(ctx context.Context, r *http.Request, peer transport.Cred) (any, error) {
	var d appsData
	var list struct {
		Callers     []callers.Item `json:"callers"`
		Health      string         `json:"health"`
		Channels    any            `json:"channels"`
		Revocations any            `json:"revocations"`
	}
	if err := s.call(ctx, peer, "callers.list", nil, &list); err != nil {
		d.Problems = append(d.Problems, problem{"Authorized apps", why(err)})
	}
	d.Apps, d.Health, d.Channels, d.Revocations = list.Callers, list.Health, list.Channels, list.Revocations
	var q struct {
		Limits *quotaLimits `json:"limits"`
	}
	if err := s.call(ctx, peer, "quota.show", nil, &q); err != nil {
		d.Problems = append(d.Problems, problem{"Quotas", why(err)})
	}
	d.Quota = q.Limits
	return d, nil
}

type pluginView struct {
	ID            string `json:"id"`
	Package       string `json:"package"`
	Name          string `json:"name"`
	DisplayName   string `json:"displayName"`
	Version       string `json:"version"`
	Status        string `json:"status"`
	Reason        string `json:"reason"`
	Enabled       bool   `json:"enabled"`
	Builtin       bool   `json:"builtin"`
	Problems      any    `json:"problems"`
	Unsupported   any    `json:"unsupported"`
	Servers       any    `json:"servers"`
	SkillProblems any    `json:"skillProblems"`
}

type pluginsData struct {
	Plugins  []pluginView
	Tools    any
	ToolsOf  string
	Policy   any
	Problems []problem
}

func (s *Server) pluginsPage(ctx context.Context, r *http.Request, peer transport.Cred) (any, error) {
	var d pluginsData
	if err := s.call(ctx, peer, "plugins.list", nil, &d.Plugins); err != nil {
		d.Problems = append(d.Problems, problem{"Plugins", why(err)})
	}
	if id := r.URL.Query().Get("tools"); id != "" {
		d.ToolsOf = id
		if err := s.call(ctx, peer, "plugins.tools", map[string]string{"id": id}, &d.Tools); err != nil {
			d.Problems = append(d.Problems, problem{"Tools of " + id, why(err)})
		}
	}
	if err := s.call(ctx, peer, "plugins.policy", nil, &d.Policy); err != nil {
		d.Problems = append(d.Problems, problem{"Approval policy", why(err)})
	}
	return d, nil
}

type sessionsData struct {
	Sessions []map[string]any
	History  []map[string]any
	Of       string
	Problems []problem
}

func (s *Server) sessionsPage(ctx context.Context, r *http.Request, peer transport.Cred) (any, error) {
	var d sessionsData
	if err := s.call(ctx, peer, "sessions.list", nil, &d.Sessions); err != nil {
		d.Problems = append(d.Problems, problem{"Sessions", why(err)})
	}
	if id := r.URL.Query().Get("id"); id != "" {
		d.Of = id
		if err := s.call(ctx, peer, "sessions.history", map[string]string{"id": id}, &d.History); err != nil {
			d.Problems = append(d.Problems, problem{"History of " + id, why(err)})
		}
	}
	return d, nil
}

type desktopData struct {
	Status   any
	Pairings []map[string]any
	Code     string
	Problems []problem
}

func (s *Server) desktopPage(ctx context.Context, r *http.Request, peer transport.Cred) (any, error) {
	var d desktopData
	if err := s.call(ctx, peer, "desktop.status", nil, &d.Status); err != nil {
		d.Problems = append(d.Problems, problem{"Desktop access", why(err)})
	}
	if err := s.call(ctx, peer, "desktop.list", nil, &d.Pairings); err != nil {
		d.Problems = append(d.Problems, problem{"Paired computers", why(err)})
	}
	return d, nil
}

type modelData struct {
	Info     map[string]any
	Problems []problem
}

func (s *Server) modelPage(ctx context.Context, r *http.Request, peer transport.Cred) (any, error) {
	var d modelData
	if err := s.call(ctx, peer, "model.show", nil, &d.Info); err != nil {
		d.Problems = append(d.Problems, problem{"Model", why(err)})
	}
	return d, nil
}

type statusData struct {
	Status   map[string]any
	Keys     []string
	Problems []problem
}

func (s *Server) statusPage(ctx context.Context, r *http.Request, peer transport.Cred) (any, error) {
	var d statusData
	if err := s.call(ctx, peer, "status", nil, &d.Status); err != nil {
		d.Problems = append(d.Problems, problem{"Status", why(err)})
	}
	for k := range d.Status {
		d.Keys = append(d.Keys, k)
	}
	sort.Strings(d.Keys)
	return d, nil
}

type aciData struct {
	Consoles []map[string]any
	Package  string
	Service  string
	Snapshot *sdui.Snapshot
	Warning  string
	Problems []problem
}

// The ACI methods the page calls (runtime/aci/controller): the apps'
// ACI services, and one app's console (console_ui), after applying an
// action (console_action) when the params name one.
const (
	methodACIList    = "aci.list"
	methodACIConsole = "aci.console"
)

func (s *Server) aciPage(ctx context.Context, r *http.Request, peer transport.Cred) (any, error) {
	var d aciData
	if err := s.call(ctx, peer, methodACIList, nil, &d.Consoles); err != nil {
		d.Problems = append(d.Problems, problem{"ACI consoles", why(err)})
	}
	q := r.URL.Query()
	if pkg, svc := q.Get("package"), q.Get("service"); pkg != "" {
		d.Package, d.Service = pkg, svc
		raw, err := s.admin.Invoke(ctx, peer, methodACIConsole, map[string]string{"package": pkg, "service": svc})
		if err == nil {
			var w struct {
				Warning string `json:"warning"`
			}
			json.Unmarshal(raw, &w)
			var warn string
			d.Snapshot, warn, err = sdui.Parse(unwrapSnapshot(raw))
			d.Warning = cmp.Or(w.Warning, warn)
		}
		if err != nil {
			d.Problems = append(d.Problems, problem{"Console of " + pkg, why(err)})
		}
	}
	return d, nil
}

// unwrapSnapshot accepts a snapshot as is or under "snapshot".
func unwrapSnapshot(raw json.RawMessage) []byte {
	var w struct {
		Snapshot json.RawMessage `json:"snapshot"`
	}
	if json.Unmarshal(raw, &w) == nil && len(w.Snapshot) > 0 {
		return w.Snapshot
	}
	return raw
}

// funcs are the templates' helpers; none of them returns markup.
var funcs = template.FuncMap{
	"seconds": func(ms int64) int64 { return (ms + 999) / 1000 },
	"minutes": func(ms int64) int64 { return ms / 60000 },
	"isMap":   func(v any) bool { _, ok := v.(map[string]any); return ok },
	"isList":  func(v any) bool { _, ok := v.([]any); return ok },
	"keys": func(m map[string]any) []string {
		ks := make([]string, 0, len(m))
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	},
	"clip": func(n int, v any) string {
		b, _ := json.Marshal(v)
		if s, ok := v.(string); ok {
			b = []byte(s)
		}
		if len(b) > n {
			return string(b[:n]) + "…"
		}
		return string(b)
	},
	"list": func(v ...string) []string { return v },
	"verb": func(op string) string {
		_, v, _ := strings.Cut(op, ".")
		return verbs[v]
	},
	"destructive": func(o consent.CardOption) bool { return o.Destructive },
	"isDeny":      func(c consent.Choice) bool { return c == consent.Deny },
}

var verbs = map[string]string{"allow": "Allow", "revoke": "Revoke", "remove": "Remove", "enable": "Turn on and show a code",
	"code": "New pairing code", "disable": "Turn off"}

//go:embed templates
var templates embed.FS

func parsePages() (*template.Template, error) {
	t, err := template.New("pages").Funcs(funcs).ParseFS(templates, "templates/*.html")
	if err != nil {
		return nil, fmt.Errorf("console: templates: %w", err)
	}
	return t, nil
}
