package acp

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agentoslab/agentlab/runtime/catalog"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/internal/chars"
)

// FuzzParsePrompt: any content array either flattens into a non-blank
// prompt whose content is kept verbatim, or is refused with
// invalid_params/unsupported — never a panic, never another code.
func FuzzParsePrompt(f *testing.F) {
	for _, s := range []string{
		`[{"type":"text","text":"hi"}]`,
		`[{"type":"resource_link","name":"n","uri":"file:///x"},{"type":"text","text":"a"}]`,
		`[{"type":"resource","resource":{"uri":"u","text":"body"}}]`,
		`[{"type":"resource","resource":{"uri":"u","blob":"AA=="}}]`,
		`[{"type":"image","data":"","mimeType":"image/png"}]`,
		`[]`, `{}`, `null`, `[1]`, `[{"type":1}]`, `[{"type":"text","text":"𝄞\u0000"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		p, err := parsePrompt(raw)
		if err != nil {
			if c := errcode.CodeOf(err); c != errcode.InvalidParams && c != errcode.Unsupported {
				t.Fatalf("code %s for %q", c, raw)
			}
			return
		}
		if strings.TrimSpace(p.Text) == "" {
			t.Fatalf("accepted a blank prompt %q", raw)
		}
		if string(p.Content) != string(raw) {
			t.Fatal("content not kept verbatim")
		}
		if p.Chars < 0 || p.Chars > chars.Len(p.Text) {
			t.Fatalf("chars %d for text of %d", p.Chars, chars.Len(p.Text))
		}
	})
}

// FuzzMeta: the _meta readers never panic, keep only supported extension
// names, and refuse only with invalid_params (or unsupported for servers).
func FuzzMeta(f *testing.F) {
	for _, s := range []string{
		`{"org.agentos":{"extensions":["sessionSetup","x",1,"sessionSetup"]}}`,
		`{"org.agentos":{"autoSelect":{"query":"find it"}}}`,
		`{"org.agentos":{"autoSelect":{"query":""}}}`,
		`{"org.agentos":null}`, `[]`, `null`, `{"org.agentos":{"extensions":"sessionSetup"}}`,
		`[{"type":"http","name":"a","url":"https://example.com","headers":[{"name":"x","value":"y"}]}]`,
		`[{"name":"a","command":"c"}]`,
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, raw []byte, negotiated bool) {
		exts := parseExtensions(raw)
		if !slices.IsSorted(exts) || len(slices.Compact(slices.Clone(exts))) != len(exts) {
			t.Fatalf("extensions %v", exts)
		}
		for _, e := range exts {
			if !slices.Contains(supportedExtensions, e) {
				t.Fatalf("unsupported extension %q kept", e)
			}
		}
		a, err := parseAutoSelect(raw, negotiated)
		if err != nil && errcode.CodeOf(err) != errcode.InvalidParams {
			t.Fatalf("autoSelect code %s", errcode.CodeOf(err))
		}
		if err == nil && a.present && (!negotiated || strings.TrimSpace(a.query) == "") {
			t.Fatalf("accepted autoSelect %+v (negotiated %v)", a, negotiated)
		}
		servers, err := parseServers(raw)
		if err == nil {
			err = catalog.ValidateSessionServers(servers)
		}
		if c := errcode.CodeOf(err); err != nil && c != errcode.InvalidParams && c != errcode.Unsupported && c != errcode.QuotaExceeded {
			t.Fatalf("servers code %s", c)
		}
		if err != nil && utf8.Valid(raw) {
			for _, s := range servers {
				if len(s.URL) > 12 && strings.Contains(err.Error(), s.URL) {
					t.Fatal("error echoes a server URL")
				}
			}
		}
	})
}

// FuzzToolScopeAtTheBoundary drives session/new's handler with arbitrary
// _meta: either the request is refused with invalid_params and no session
// exists, or the created session's scope is exactly what the catalog
// parser reads from the same bytes (normalized, at most 32 entries).
func FuzzToolScopeAtTheBoundary(f *testing.F) {
	for _, s := range []string{
		`{"org.agentos":{"toolScope":[{"plugin":"alarm","tool":"alarm_create"},{"plugin":"alarm","tool":"alarm_create"}]}}`,
		`{"org.agentos":{"toolScope":[]}}`,
		`{"org.agentos":{"toolScope":{}}}`,
		`{"org.agentos":{"toolScope":[{"plugin":"","tool":"t"}]}}`,
		`{"org.agentos":{"toolScope":[{"plugin":"p","tool":"t","extra":1}]}}`,
		`{"org.agentos":{"toolScope":null}}`,
		`{"other":1}`,
	} {
		f.Add([]byte(s))
	}
	h := newHarness(f, harnessOpts{})
	pr, pw := io.Pipe()
	f.Cleanup(func() { pw.Close() })
	cn := &conn{a: h.a, caller: desktop, ready: make(chan struct{}), prompts: map[string][]*promptState{}, base: context.Background()}
	cn.sdk = sdk.NewConnection(cn.handle, io.Discard, pr)
	cn.sdk.SetLogger(slog.New(slog.DiscardHandler))
	close(cn.ready)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, meta []byte) {
		if !json.Valid(meta) {
			return
		}
		p := params{"cwd": json.RawMessage(`"/w"`), "_meta": meta}
		res, err := cn.newSession(ctx, p)
		want, present, perr := catalog.ParseToolScope(meta)
		if err != nil {
			if errcode.CodeOf(err) != errcode.InvalidParams {
				t.Fatalf("code %s: %v", errcode.CodeOf(err), err)
			}
			_, aerr := parseAutoSelect(meta, false)
			if perr == nil && aerr == nil && firstByte(meta) == '{' {
				t.Fatalf("refused a scope the parser accepts: %v", err)
			}
			return
		}
		if perr != nil {
			t.Fatalf("accepted a scope the parser refuses: %v", perr)
		}
		id := string(res.(sdk.NewSessionResponse).SessionId)
		info, err := h.e.Session(ctx, desktop, id)
		if err != nil {
			t.Fatal(err)
		}
		got := catalog.ScopeOf(info.Scope)
		if !present {
			if got != nil {
				t.Fatalf("absent scope stored as %v", got)
			}
			return
		}
		if got == nil || len(got) > catalog.MaxScopeEntries || !catalog.ScopeEqual(got, want) {
			t.Fatalf("scope %v, parser %v", got, want)
		}
	})
}
