package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentoslab/agentlab/runtime/errcode"
)

type se = ScopeEntry

func sc(plugin, tool string) se { return se{Plugin: plugin, Tool: tool} }

func scopeMeta(scope string) json.RawMessage {
	return json.RawMessage(`{"org.agentos":{"toolScope":` + scope + `}}`)
}

func entries(n int) string {
	var parts []string
	for i := range n {
		parts = append(parts, fmt.Sprintf(`{"plugin":"p%d","tool":"t"}`, i))
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func TestParseToolScope(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 128)
	tests := []struct {
		name    string
		meta    string
		want    []se
		present bool
		errText string // "" = no error
	}{
		{name: "meta absent", meta: ``},
		{name: "meta null", meta: `null`},
		{name: "meta not an object", meta: `[1,2]`},
		{name: "meta a string", meta: `"x"`},
		{name: "org.agentos absent", meta: `{"other":{}}`},
		{name: "org.agentos null", meta: `{"org.agentos":null}`},
		{name: "org.agentos not an object", meta: `{"org.agentos":[{"plugin":"p","tool":"t"}]}`},
		{name: "toolScope absent", meta: `{"org.agentos":{"autoSelect":{"query":"x"}}}`},
		{name: "keys are case-sensitive", meta: `{"org.agentos":{"ToolScope":"bad"}}`},
		{name: "empty array = no tools", meta: string(scopeMeta(`[]`)), want: []se{}, present: true},
		{
			name:    "normalized: duplicates merged, sorted by plugin then tool, extra keys ignored",
			meta:    string(scopeMeta(`[{"plugin":"calendar","tool":"event_create"},{"plugin":"alarm","tool":"b","server":"x"},{"plugin":"alarm","tool":"a"},{"plugin":"calendar","tool":"event_create"}]`)),
			want:    []se{sc("alarm", "a"), sc("alarm", "b"), sc("calendar", "event_create")},
			present: true,
		},
		{name: "32 entries allowed", meta: string(scopeMeta(entries(32))), present: true},
		{name: "33 entries", meta: string(scopeMeta(entries(33))), present: true, errText: "toolScope has more than 32 entries"},
		{
			name:    "33 entries counted as sent, duplicates included",
			meta:    string(scopeMeta("[" + strings.TrimSuffix(strings.Repeat(`{"plugin":"p","tool":"t"},`, 33), ",") + "]")),
			present: true, errText: "toolScope has more than 32 entries",
		},
		{name: "null toolScope", meta: string(scopeMeta(`null`)), present: true, errText: "toolScope must be an array"},
		{name: "object toolScope", meta: string(scopeMeta(`{"plugin":"p","tool":"t"}`)), present: true, errText: "toolScope must be an array"},
		{name: "string toolScope", meta: string(scopeMeta(`"alarm"`)), present: true, errText: "toolScope must be an array"},
		{name: "element not an object", meta: string(scopeMeta(`[{"plugin":"p","tool":"t"},"alarm"]`)), present: true, errText: "toolScope[1] must be an object"},
		{name: "element null", meta: string(scopeMeta(`[null]`)), present: true, errText: "toolScope[0] must be an object"},
		{name: "plugin missing", meta: string(scopeMeta(`[{"tool":"t"}]`)), present: true, errText: "toolScope[0].plugin is missing"},
		{name: "tool missing", meta: string(scopeMeta(`[{"plugin":"p"}]`)), present: true, errText: "toolScope[0].tool is missing"},
		{name: "plugin not a string", meta: string(scopeMeta(`[{"plugin":7,"tool":"t"}]`)), present: true, errText: "toolScope[0].plugin must be a string"},
		{name: "tool null", meta: string(scopeMeta(`[{"plugin":"p","tool":null}]`)), present: true, errText: "toolScope[0].tool must be a string"},
		{name: "plugin empty", meta: string(scopeMeta(`[{"plugin":"","tool":"t"}]`)), present: true, errText: "toolScope[0].plugin must be 1 to 128 characters long"},
		{name: "tool 128 chars", meta: string(scopeMeta(`[{"plugin":"p","tool":"` + long + `"}]`)), want: []se{sc("p", long)}, present: true},
		{name: "tool 129 chars", meta: string(scopeMeta(`[{"plugin":"p","tool":"` + long + `x"}]`)), present: true, errText: "toolScope[0].tool must be 1 to 128 characters long"},
		{
			// 64 emoji = 128 UTF-16 units: allowed; 65 = 130: refused.
			name: "length counted in UTF-16 units", meta: string(scopeMeta(`[{"plugin":"p","tool":"` + strings.Repeat("😀", 65) + `"}]`)),
			present: true, errText: "toolScope[0].tool must be 1 to 128 characters long",
		},
		{name: "64 emoji fit", meta: string(scopeMeta(`[{"plugin":"p","tool":"` + strings.Repeat("😀", 64) + `"}]`)), want: []se{sc("p", strings.Repeat("😀", 64))}, present: true},
	}
	for _, tt := range tests {
		got, present, err := ParseToolScope(json.RawMessage(tt.meta))
		if present != tt.present {
			t.Errorf("%s: present = %v, want %v", tt.name, present, tt.present)
		}
		if tt.errText != "" {
			var e *errcode.Error
			if !errors.As(err, &e) || e.Code != errcode.InvalidParams || e.Text != tt.errText {
				t.Errorf("%s: err = %v, want invalid_params %q", tt.name, err, tt.errText)
			}
			if got != nil {
				t.Errorf("%s: scope %v returned with an error", tt.name, got)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: unexpected error %v", tt.name, err)
			continue
		}
		if !tt.present {
			if got != nil {
				t.Errorf("%s: absent scope must be nil, got %v", tt.name, got)
			}
			continue
		}
		if got == nil {
			t.Errorf("%s: present scope must be non-nil", tt.name)
		}
		if tt.want != nil && !ScopeEqual(got, tt.want) || tt.want != nil && len(got) != len(tt.want) {
			t.Errorf("%s: scope = %v, want %v", tt.name, got, tt.want)
		}
		for i := range tt.want {
			if i < len(got) && got[i] != tt.want[i] {
				t.Errorf("%s: order %v, want %v", tt.name, got, tt.want)
				break
			}
		}
	}
}

// TestParseToolScopeNeverEchoes: messages name rule and index only.
func TestParseToolScopeNeverEchoes(t *testing.T) {
	t.Parallel()
	secret := "SECRET-VALUE"
	for _, scope := range []string{
		`[{"plugin":"` + secret + strings.Repeat("x", 200) + `","tool":"t"}]`,
		`[{"plugin":"p","tool":{"` + secret + `":1}}]`,
		`"` + secret + `"`,
		`[` + `"` + secret + `"]`,
	} {
		_, _, err := ParseToolScope(scopeMeta(scope))
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("error %v for %s echoes the value (or is nil)", err, scope)
		}
	}
}

func TestNarrow(t *testing.T) {
	t.Parallel()
	a, b, c := sc("alarm", "alarm_create"), sc("calendar", "event_create"), sc("notes", "note_delete")
	tests := []struct {
		name              string
		parent, requested []se
		want              []se // nil = no scope
	}{
		{"no parent, no request", nil, nil, nil},
		{"no parent: requested wins", nil, []se{b, a}, []se{a, b}},
		{"no request: parent kept", []se{a, b}, nil, []se{a, b}},
		{"intersection", []se{a, b}, []se{b, c}, []se{b}},
		{"empty intersection = no tools", []se{a}, []se{c}, []se{}},
		{"request cannot widen an empty scope", []se{}, []se{a, b, c}, []se{}},
		{"empty request narrows to nothing", []se{a, b}, []se{}, []se{}},
		{"duplicates merged", []se{a, a, b}, []se{a, a}, []se{a}},
	}
	for _, tt := range tests {
		got := Narrow(tt.parent, tt.requested)
		if (got == nil) != (tt.want == nil) || !ScopeEqual(got, tt.want) {
			t.Errorf("%s: Narrow = %#v, want %#v", tt.name, got, tt.want)
		}
	}
}

func TestScopeEqual(t *testing.T) {
	t.Parallel()
	a, b := sc("alarm", "x"), sc("calendar", "y")
	tests := []struct {
		x, y []se
		want bool
	}{
		{nil, nil, true},
		{nil, []se{}, false},
		{[]se{}, []se{}, true},
		{[]se{a, b}, []se{b, a, a}, true},
		{[]se{a}, []se{a, b}, false},
		{[]se{a}, []se{b}, false},
		{[]se{sc("p", "t")}, []se{sc("t", "p")}, false},
	}
	for _, tt := range tests {
		if got := ScopeEqual(tt.x, tt.y); got != tt.want {
			t.Errorf("ScopeEqual(%v, %v) = %v", tt.x, tt.y, got)
		}
	}
}

func TestStoredScope(t *testing.T) {
	t.Parallel()
	s := []se{sc("b", "t"), sc("a", "t"), sc("a", "t")}
	enc := EncodeStoredScope(s)
	if string(enc) != `[{"plugin":"a","tool":"t"},{"plugin":"b","tool":"t"}]` {
		t.Errorf("encoded %s", enc)
	}
	if got := DecodeStoredScope(enc); !ScopeEqual(got, s) {
		t.Errorf("round trip %v", got)
	}
	if EncodeStoredScope(nil) != nil || DecodeStoredScope(nil) != nil {
		t.Error("nil scope must stay nil")
	}
	if got := DecodeStoredScope([]byte(`[]`)); got == nil || len(got) != 0 {
		t.Errorf("empty scope decoded as %#v", got)
	}
	// Unreadable stored values fail closed: no tools, never "no scope".
	for _, bad := range []string{`{`, `null`, `"x"`, `[{"plugin":"","tool":"t"}]`, `[1]`, "[" + strings.Repeat(`{"plugin":"p","tool":"t"},`, 32) + `{"plugin":"p","tool":"t"}]`} {
		got := DecodeStoredScope([]byte(bad))
		if got == nil || len(got) != 0 {
			t.Errorf("DecodeStoredScope(%q) = %#v, want empty non-nil", bad, got)
		}
	}
}

// FuzzParseToolScope: never panics; either absent (nil, no error), an
// invalid_params error without a scope, or a normalized scope of ≤ 32
// entries with 1..128-unit fields that survives a round trip.
func FuzzParseToolScope(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, `{"org.agentos":null}`, `{"org.agentos":{}}`,
		string(scopeMeta(`[]`)), string(scopeMeta(`[{"plugin":"alarm","tool":"alarm_create"}]`)),
		string(scopeMeta(entries(33))), string(scopeMeta(`[{"plugin":"p","tool":"t","x":1},{"plugin":"p","tool":"t"}]`)),
		string(scopeMeta(`[{"plugin":"😀","tool":"\u0000"}]`)), string(scopeMeta(`null`)), `{"org.agentos":{"toolScope":[{"plugin":"p"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		scope, present, err := ParseToolScope(json.RawMessage(data))
		if err != nil {
			var e *errcode.Error
			if !errors.As(err, &e) || e.Code != errcode.InvalidParams || scope != nil || !present {
				t.Fatalf("bad error result: %v %v %v", scope, present, err)
			}
			return
		}
		if !present {
			if scope != nil {
				t.Fatal("absent scope is not nil")
			}
			return
		}
		if scope == nil || len(scope) > MaxScopeEntries {
			t.Fatalf("scope %v", scope)
		}
		for i, e := range scope {
			for _, s := range []string{e.Plugin, e.Tool} {
				if n := utf16Len(s); n < 1 || n > MaxScopeFieldLen || !utf8.ValidString(s) {
					t.Fatalf("entry %d field %q", i, s)
				}
			}
			if i > 0 && !(scope[i-1].Plugin < e.Plugin || scope[i-1].Plugin == e.Plugin && scope[i-1].Tool < e.Tool) {
				t.Fatalf("not sorted/distinct: %v", scope)
			}
		}
		again, p2, err := ParseToolScope(json.RawMessage(`{"org.agentos":{"toolScope":` + string(EncodeStoredScope(scope)) + `}}`))
		if err != nil || !p2 || !ScopeEqual(again, scope) {
			t.Fatalf("round trip: %v %v %v", again, p2, err)
		}
	})
}
