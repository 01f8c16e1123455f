package scenario

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

const callersDoc = `{
  "callers": [
    {"packageName": "org.agentos.sample.notes", "state": "allowed", "usage": {"activeTasks": 1, "promptsTotal": 3},
     "signingDigest": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
    {"packageName": "org.agentos.sample.sms", "state": "pending", "requestId": "req_01", "usage": {"activeTasks": 0, "promptsTotal": 0}},
    {"packageName": "a.b", "state": "denied", "deniedUntil": 1700000000000, "usage": {"activeTasks": 0, "promptsTotal": 9}}
  ],
  "channels": {"thirdParty": 1, "open": 2},
  "tags": ["a", "b b", "c"],
  "empty": [],
  "null": null,
  "key with space": {"x": 1}
}`

func doc(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPathSelect(t *testing.T) {
	t.Parallel()
	v := doc(t, callersDoc)
	cases := []struct {
		path, want string
	}{
		{"", `[<doc>]`},
		{"$", `[<doc>]`},
		{".channels.thirdParty", `[1]`},
		{"$.channels.open", `[2]`},
		{".callers[0].state", `["allowed"]`},
		{".callers[-1].state", `["denied"]`},
		{".callers[3].state", `[]`},
		{".callers[*].state", `["allowed","pending","denied"]`},
		{".callers.*.state", `["allowed","pending","denied"]`},
		{".channels.*", `[2,1]`},
		{`.callers[?packageName=="org.agentos.sample.sms"].requestId`, `["req_01"]`},
		{`.callers[?.packageName=="a.b"].usage.promptsTotal`, `[9]`},
		{`.callers[?@.state!="allowed"].packageName`, `["org.agentos.sample.sms","a.b"]`},
		{`.callers[?usage.activeTasks>0].packageName`, `["org.agentos.sample.notes"]`},
		{`.callers[?usage.promptsTotal>=3].packageName`, `["org.agentos.sample.notes","a.b"]`},
		{`.callers[?usage.promptsTotal<3].packageName`, `["org.agentos.sample.sms"]`},
		{`.callers[?usage.promptsTotal<=0].packageName`, `["org.agentos.sample.sms"]`},
		{`.callers[?requestId].packageName`, `["org.agentos.sample.sms"]`},
		{`.callers[?packageName=~"^org\\.agentos"].state`, `["allowed","pending"]`},
		{`.callers[?state=="nobody"]`, `[]`},
		{`.tags[?@=="b b"]`, `["b b"]`},
		{`["key with space"].x`, `[1]`},
		{`.null`, `[null]`},
		{`.empty[*]`, `[]`},
		{`.missing.deeper[0]`, `[]`},
		{`.channels[0]`, `[]`},
		{`.tags.x`, `[]`},
		{`.callers[?usage[?@>0]].packageName`, `["org.agentos.sample.notes","a.b"]`},
	}
	for _, c := range cases {
		p, err := ParsePath(c.path)
		if err != nil {
			t.Errorf("ParsePath(%q): %v", c.path, err)
			continue
		}
		sel := p.Select(v)
		if sel == nil {
			sel = []any{}
		}
		got, _ := json.Marshal(sel)
		want := c.want
		if strings.Contains(want, "<doc>") {
			b, _ := json.Marshal(v)
			want = strings.ReplaceAll(want, "<doc>", string(b))
		}
		if string(got) != want {
			t.Errorf("%q selects %s, want %s", c.path, got, want)
		}
	}
}

func TestParsePathErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		path string
		col  int
		msg  string
	}{
		{"callers", 1, "want . or ["},
		{".", 2, "want a key"},
		{".a[", 4, "want an index"},
		{".a[1", 5, "want ]"},
		{".a[x]", 4, "want an index"},
		{`.a[?b==]`, 8, "JSON literal"},
		{`.a[?b=="x"`, 11, "want ]"},
		{`.a[?b=="x`, 8, "unterminated"},
		{`.a[?b~"x"]`, 6, "operator"},
		{`.a[?b=~3]`, 8, "quoted regular expression"},
		{`.a[?b=~"("]`, 8, "bad regular expression"},
		{`.a b`, 4, "unexpected"},
		{`.a[?!b]`, 5, "relative path"},
		{strings.Repeat(".a", 70), 129, "more than 64"},
		{strings.Repeat("[?a", 10) + strings.Repeat("]", 10), 27, "nested deeper"},
		{strings.Repeat("x", MaxPathLen+1), 1, "longer than"},
		{"\xff", 1, "UTF-8"},
	}
	for _, c := range cases {
		_, err := ParsePath(c.path)
		var pe *PathError
		if !errors.As(err, &pe) {
			t.Errorf("ParsePath(%q) = %v, want a *PathError", c.path, err)
			continue
		}
		if pe.Col != c.col || !strings.Contains(pe.Msg, c.msg) {
			t.Errorf("ParsePath(%q): column %d %q, want column %d containing %q", c.path, pe.Col, pe.Msg, c.col, c.msg)
		}
	}
}

func TestExpand(t *testing.T) {
	t.Parallel()
	saved := map[string]any{
		"run":  doc(t, `{"id": 7, "title": "plan", "list": [1, 2]}`),
		"vars": map[string]any{"pkg": "org.x"},
	}
	look := func(name string) (any, bool) { v, ok := saved[name]; return v, ok }
	cases := []struct {
		in   string
		want any
		err  string
	}{
		{"plain $1 $? $$", "plain $1 $? $$", ""},
		{"${run.id}", 7.0, ""},
		{"id=${run.id}", "id=7", ""},
		{"${run.list}", []any{1.0, 2.0}, ""},
		{"l=${run.list}", "l=[1,2]", ""},
		{"${vars.pkg}/x", "org.x/x", ""},
		{"$${run.id}", "${run.id}", ""},
		{"${run.nothing}", nil, "selects nothing"},
		{"${nobody}", nil, "unknown reference"},
		{"${run", nil, "unclosed"},
		{"${1x}", nil, "starts with a name"},
		{`${run[?title=="}"]}`, nil, "selects nothing"},
	}
	for _, c := range cases {
		got, err := Expand(c.in, look)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("Expand(%q) error %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !equal(got, c.want) {
			t.Errorf("Expand(%q) = %#v, %v; want %#v", c.in, got, err, c.want)
		}
	}
	if _, err := Expand("${nobody}", look); !errors.Is(err, ErrUnknownRef) {
		t.Errorf("want ErrUnknownRef, got %v", err)
	}
}
