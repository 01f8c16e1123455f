package console

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/transport"
)

var pagePaths = []string{"/", "/apps", "/plugins", "/plugins?tools=notes", "/sessions", "/sessions?id=ses_1", "/desktop", "/model",
	"/status", "/aci", "/aci?package=org.example.aci&service=console"}

// TestPagesEscapeThirdPartyText renders every page with hostile strings
// in tool arguments, app labels, plugin names, session text and SDUI
// text: each shows as text, never as markup.
func TestPagesEscapeThirdPartyText(t *testing.T) {
	s, _ := newTestServer(t, fullAdmin(2))
	for _, p := range pagePaths {
		t.Run(p, func(t *testing.T) {
			w := s.do(t, req{path: p})
			require.Equal(t, http.StatusOK, w.Code, w.Body.String())
			body := w.Body.String()
			assert.NotContains(t, body, "<script>alert")
			assert.NotContains(t, body, "<img src=x")
			assert.Contains(t, body, "&lt;script&gt;alert(1)&lt;/script&gt;", "the hostile text is shown, escaped")
			assert.Equal(t, csp, w.Header().Get("Content-Security-Policy"))
			assert.Equal(t, "text/html; charset=utf-8", w.Header().Get("Content-Type"))
		})
	}
}

// TestConsentCard checks what the owner sees on a card: the real
// package in the initiator line, the options the risk allows, Deny
// focused on the head card, the countdown and the signed render time.
func TestConsentCard(t *testing.T) {
	s, _ := newTestServer(t, fullAdmin(2))
	body := s.do(t, req{path: "/"}).Body.String()
	assert.Contains(t, body, "（org.agentos.sample.notes）")
	assert.Contains(t, body, `value="ALLOW_ONCE"`)
	assert.Contains(t, body, `value="ALLOW_FOR_SESSION"`)
	assert.NotContains(t, body, `value="ALWAYS_ALLOW"`, "an option the card does not offer is not shown")
	assert.Equal(t, 1, strings.Count(body, "autofocus"), "one focused button on the page")
	assert.Contains(t, body, `value="DENY" data-choice="DENY" autofocus class="deny"`)
	assert.Contains(t, body, `data-ms-left="60000">60</span>`)
	assert.Contains(t, body, `name="shown" value="`+s.shown()+`"`)
	assert.Contains(t, body, `id="auth-auth-1"`)
	assert.Contains(t, body, "0123456789ab")
}

// TestGuardRefuses: without the token, with a foreign Host or Origin, a
// stale CSRF field or a peer that is not the owner, nothing reaches the
// admin API.
func TestGuardRefuses(t *testing.T) {
	form := func() url.Values {
		return url.Values{"op": {"callers.revoke"}, "package": {"org.example.evil"}, "back": {"/apps"}}
	}
	withCSRF := func(v url.Values, csrf string) url.Values { v.Set("csrf", csrf); return v }
	tests := []struct {
		name string
		r    req
		code int
	}{
		{"no token", req{path: "/", noCookie: true}, http.StatusUnauthorized},
		{"wrong token in the link", req{path: "/?token=nope", noCookie: true}, http.StatusUnauthorized},
		{"foreign host (DNS rebinding)", req{path: "/", host: "attacker.example:8765"}, http.StatusMisdirectedRequest},
		{"foreign host resolving to loopback", req{path: "/", host: "127.0.0.1.nip.io"}, http.StatusMisdirectedRequest},
		{"app uid", req{path: "/", uid: 10123}, http.StatusForbidden},
		{"no peer credentials", req{path: "/", uid: -1}, http.StatusForbidden},
		{"post without origin", req{method: http.MethodPost, path: "/act", form: withCSRF(form(), testCSRF())}, http.StatusForbidden},
		{"post from a foreign origin", req{method: http.MethodPost, path: "/act", origin: "http://attacker.example", form: withCSRF(form(), testCSRF())}, http.StatusForbidden},
		{"post with another port's origin", req{method: http.MethodPost, path: "/act", origin: "http://127.0.0.1:9999", form: withCSRF(form(), testCSRF())}, http.StatusForbidden},
		{"post with a wrong csrf field", req{method: http.MethodPost, path: "/act", origin: "http://127.0.0.1:8765", form: withCSRF(form(), "x")}, http.StatusForbidden},
		{"post without the token", req{method: http.MethodPost, path: "/act", origin: "http://127.0.0.1:8765", noCookie: true, form: withCSRF(form(), testCSRF())}, http.StatusUnauthorized},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := fullAdmin(1)
			s, _ := newTestServer(t, a)
			w := s.do(t, tt.r)
			assert.Equal(t, tt.code, w.Code, w.Body.String())
			assert.Empty(t, a.calls, "nothing reached the admin API")
			assert.Equal(t, csp, w.Header().Get("Content-Security-Policy"))
		})
	}
	t.Run("the same form from the console is served", func(t *testing.T) {
		a := fullAdmin(1)
		s, _ := newTestServer(t, a)
		w := s.post(t, form())
		assert.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
		require.Len(t, a.called("callers.revoke"), 1)
		assert.JSONEq(t, `{"package":"org.example.evil"}`, a.called("callers.revoke")[0].Params)
	})
}

func testCSRF() string {
	s, _ := New(&Options{Admin: &fakeAdmin{}, Token: testToken})
	return s.csrf
}

// TestTokenLink: the link sets the cookie and takes the token out of
// the address bar.
func TestTokenLink(t *testing.T) {
	s, _ := newTestServer(t, fullAdmin(0))
	w := s.do(t, req{path: s.Path(), noCookie: true})
	require.Equal(t, http.StatusSeeOther, w.Code)
	assert.Equal(t, "/", w.Header().Get("Location"))
	c := w.Result().Cookies()
	require.Len(t, c, 1)
	assert.Equal(t, testToken, c[0].Value)
	assert.True(t, c[0].HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, c[0].SameSite)
	for _, h := range []string{"localhost:1234", "[::1]:1", "127.0.0.1"} {
		assert.Equal(t, http.StatusOK, s.do(t, req{path: "/", host: h}).Code, h)
	}
}

// TestTapDelay: an answer within TapDelay of the card's render is not
// sent; one after it is, with the choice tapped.
func TestTapDelay(t *testing.T) {
	tests := []struct {
		name  string
		after time.Duration
		sent  bool
	}{
		{"at once", 0, false},
		{"just before the delay", TapDelay - time.Millisecond, false},
		{"at the delay", TapDelay, true},
		{"later", 5 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := fullAdmin(1)
			s, clk := newTestServer(t, a)
			shown := s.shown()
			clk.Advance(tt.after)
			w := s.post(t, url.Values{"op": {"consent.respond"}, "id": {"req-a"}, "choice": {"ALLOW_ONCE"}, "shown": {shown}})
			if !tt.sent {
				assert.Equal(t, http.StatusConflict, w.Code)
				assert.Empty(t, a.called("consent.respond"))
				return
			}
			assert.Equal(t, http.StatusSeeOther, w.Code, w.Body.String())
			require.Len(t, a.called("consent.respond"), 1)
			assert.JSONEq(t, `{"id":"req-a","choice":"ALLOW_ONCE"}`, a.called("consent.respond")[0].Params)
		})
	}
	t.Run("a forged render time", func(t *testing.T) {
		a := fullAdmin(1)
		s, _ := newTestServer(t, a)
		w := s.post(t, url.Values{"op": {"callers.answer"}, "requestId": {"auth-1"}, "allow": {"true"}, "shown": {"0.forged"}})
		assert.Equal(t, http.StatusConflict, w.Code)
		assert.Empty(t, a.called("callers.answer"))
	})
}

// TestActions: each form becomes its admin method's params; the key is
// only sent when typed, and is never shown back.
func TestActions(t *testing.T) {
	tests := []struct {
		name   string
		form   url.Values
		method string
		params string
		code   int
	}{
		{"model keeps the stored key", url.Values{"op": {"model.set"}, "provider": {"openai"}, "model": {"gpt"}, "key": {""}}, "model.set", `{"provider":"openai","model":"gpt"}`, http.StatusSeeOther},
		{"model with a new key", url.Values{"op": {"model.set"}, "provider": {"openai"}, "key": {"sk-secret"}}, "model.set", `{"provider":"openai","key":"sk-secret"}`, http.StatusSeeOther},
		{"pairing code is shown", url.Values{"op": {"desktop.code"}}, "desktop.code", `null`, http.StatusOK},
		{"aci input", url.Values{"op": {"aci.console_action"}, "package": {"p"}, "service": {"s"}, "action": {"set"}, "key": {"q"}, "value": {"v"}},
			methodACIConsole, `{"package":"p","service":"s","action":"set","payload":"{\"key\":\"q\",\"q\":\"v\",\"value\":\"v\"}"}`, http.StatusSeeOther},
		{"authorization deny", url.Values{"op": {"callers.answer"}, "requestId": {"auth-1"}, "allow": {"false"}}, "callers.answer", `{"requestId":"auth-1","allow":false}`, http.StatusSeeOther},
		{"enter safe mode", url.Values{"op": {"safemode.enter"}, "back": {"/status"}}, "safemode.enter", `null`, http.StatusSeeOther},
		{"leave safe mode", url.Values{"op": {"safemode.leave"}, "back": {"/status"}}, "safemode.leave", `null`, http.StatusSeeOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := fullAdmin(0)
			s, clk := newTestServer(t, a)
			tt.form.Set("shown", s.shown())
			clk.Advance(time.Second)
			w := s.post(t, tt.form)
			assert.Equal(t, tt.code, w.Code, w.Body.String())
			require.Len(t, a.called(tt.method), 1)
			assert.JSONEq(t, tt.params, a.called(tt.method)[0].Params)
			assert.NotContains(t, w.Body.String(), "sk-secret")
		})
	}
	t.Run("the runtime's note goes back to the page", func(t *testing.T) {
		s, _ := newTestServer(t, fullAdmin(0))
		w := s.post(t, url.Values{"op": {"safemode.leave"}, "back": {"/status"}})
		require.Equal(t, http.StatusSeeOther, w.Code)
		loc, err := url.Parse(w.Header().Get("Location"))
		require.NoError(t, err)
		assert.Equal(t, "/status", loc.Path)
		assert.Equal(t, "safemode.leave: it restarts the runtime normally", loc.Query().Get("note"))
	})
	t.Run("the status page offers the switch the state allows", func(t *testing.T) {
		for on, op := range map[bool]string{false: "safemode.enter", true: "safemode.leave"} {
			a := fullAdmin(0)
			a.results["status"] = js(map[string]any{"version": "test", "safeMode": on})
			s, _ := newTestServer(t, a)
			body := s.do(t, req{path: "/status"}).Body.String()
			assert.Contains(t, body, `<button type="submit" data-op="`+op+`">`, "safe mode %v", on)
			assert.Equal(t, 1, strings.Count(body, `data-op="safemode.`), "one switch")
		}
	})
	t.Run("unknown op", func(t *testing.T) {
		a := fullAdmin(0)
		s, _ := newTestServer(t, a)
		assert.Equal(t, http.StatusBadRequest, s.post(t, url.Values{"op": {"app.install"}}).Code)
		assert.Empty(t, a.calls)
	})
	t.Run("the model page never shows the key", func(t *testing.T) {
		s, _ := newTestServer(t, fullAdmin(0))
		body := s.do(t, req{path: "/model"}).Body.String()
		assert.Contains(t, body, `type="password" name="key" autocomplete="off" placeholder="stored; leave empty to keep it"`)
	})
}

// TestUnavailableFeatures: a feature this runtime runs without is a
// notice on its page, not a broken page.
func TestUnavailableFeatures(t *testing.T) {
	s, _ := newTestServer(t, &fakeAdmin{results: map[string]string{}})
	for _, p := range pagePaths {
		w := s.do(t, req{path: p})
		assert.Equal(t, http.StatusOK, w.Code, p)
		assert.Contains(t, w.Body.String(), `class="problem"`, p)
	}
}

func FuzzShownAge(f *testing.F) {
	s, _ := newTestServer(f, &fakeAdmin{})
	f.Add(s.shown())
	f.Add("1.x")
	f.Add("")
	f.Fuzz(func(t *testing.T, v string) {
		if _, ok := s.shownAge(v); ok {
			require.Contains(t, v, ".")
		}
	})
}

func FuzzLoopbackHost(f *testing.F) {
	for _, h := range []string{"127.0.0.1:1", "localhost", "[::1]:2", "evil.com", "127.0.0.1.evil.com", "[::1"} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, h string) {
		if loopbackHost(h) {
			assert.NotContains(t, strings.ToLower(h), ".com")
		}
	})
}

func BenchmarkConsentPage16Cards(b *testing.B) {
	s, _ := newTestServer(b, fullAdmin(16))
	b.ReportAllocs()
	var took []time.Duration
	for b.Loop() {
		start := time.Now()
		w := s.do(b, req{path: "/"})
		took = append(took, time.Since(start))
		if w.Code != http.StatusOK {
			b.Fatal(w.Code)
		}
	}
	// The target is p95 < 50 ms on a device.
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)*95/100].Microseconds())/1000, "p95-ms")
}

// TestAppsPageQuota: each app's usage is shown against the quotas in
// force; a runtime that cannot say its quotas gets a notice, not a
// made-up limit.
func TestAppsPageQuota(t *testing.T) {
	s, _ := newTestServer(t, fullAdmin(0))
	body := s.do(t, req{path: "/apps"}).Body.String()
	assert.Contains(t, body, "Each app may send 30 prompts per 60 minutes, 1 at once, each up to 16000 characters.")
	assert.Contains(t, body, `<td class="quota-hour">1 / 30</td><td class="total">3</td>`)
	assert.Contains(t, body, `<td class="quota-tasks">1 / 1</td>`)

	a := fullAdmin(0)
	delete(a.results, "quota.show")
	s, _ = newTestServer(t, a)
	body = s.do(t, req{path: "/apps"}).Body.String()
	assert.Contains(t, body, "<strong>Quotas</strong>")
	assert.Contains(t, body, `<td class="quota-hour">1</td>`)
	assert.NotContains(t, body, "/ 30")
}

// TestPagesGoInOneWrite: a page is gzipped when the browser accepts it
// (so that 16 cards fit the server's first write, see writeBody) and sent
// as it is otherwise; either way it is the same page.
func TestPagesGoInOneWrite(t *testing.T) {
	s, _ := newTestServer(t, fullAdmin(16))
	plain := s.do(t, req{path: "/"})
	require.Equal(t, http.StatusOK, plain.Code)
	require.Greater(t, plain.Body.Len(), 16<<10, "16 cards are more than one 4 KiB write")
	for _, tc := range []struct {
		accept string
		gzip   bool
	}{
		{"gzip, deflate, br, zstd", true},
		{"br;q=1.0, GZIP;q=0.5", true},
		{"gzip;q=0", false},
		{"br", false},
		{"", false},
	} {
		t.Run(tc.accept, func(t *testing.T) {
			hr := httptest.NewRequest(http.MethodGet, "/", nil)
			hr.Host = "127.0.0.1:8765"
			hr.Header.Set("Accept-Encoding", tc.accept)
			hr.AddCookie(&http.Cookie{Name: cookieName, Value: s.token})
			hr = hr.WithContext(withPeer(hr.Context(), transport.Cred{UID: 2000}))
			w := httptest.NewRecorder()
			s.handler.ServeHTTP(w, hr)
			require.Equal(t, http.StatusOK, w.Code)
			assert.Equal(t, "Accept-Encoding", w.Header().Get("Vary"))
			assert.Equal(t, strconv.Itoa(w.Body.Len()), w.Header().Get("Content-Length"))
			body := w.Body.Bytes()
			if !tc.gzip {
				assert.Empty(t, w.Header().Get("Content-Encoding"))
				assert.Equal(t, plain.Body.String(), string(body))
				return
			}
			assert.Equal(t, "gzip", w.Header().Get("Content-Encoding"))
			assert.Less(t, len(body), 4<<10, "the page fits one write")
			zr, err := gzip.NewReader(bytes.NewReader(body))
			require.NoError(t, err)
			got, err := io.ReadAll(zr)
			require.NoError(t, err)
			assert.Equal(t, plain.Body.String(), string(got))
		})
	}
}
