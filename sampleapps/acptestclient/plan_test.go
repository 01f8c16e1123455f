package acptestclient_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/sampleapps/acptestclient"
)

func TestParsePlan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		args  []string
		names []string // the ops' as, when accepted
		err   string   // a substring of the error, when refused
	}{
		{"one op", []string{`{"op":"connect"}`}, []string{"c"}, ""},
		{"array", []string{`[{"op":"connect"},{"op":"new","as":"s1"},{"op":"prompt","session":"s1","text":"hi"}]`}, []string{"c", "s1", "prompt3"}, ""},
		{"ops object", []string{`{"ops":[{"op":"connect"},{"op":"list"}]}`}, []string{"c", "list2"}, ""},
		{"several arguments", []string{`{"op":"connect"}`, `[{"op":"connect"}]`}, []string{"c", "connect2"}, ""},
		{"raw line", []string{`{"op":"raw_open","as":"x"}`, `{"op":"raw","line":"not json"}`}, []string{"x", "raw2"}, ""},
		{"dial", []string{`{"op":"dial","socket":"admin","line":"{}"}`}, []string{"dial1"}, ""},
		{"empty", nil, nil, "no operations"},
		{"not json", []string{`connect`}, nil, "not a JSON object"},
		{"unknown key", []string{`{"op":"connect","colour":"blue"}`}, nil, "unknown field"},
		{"unknown op", []string{`{"op":"teleport"}`}, nil, "unknown op"},
		{"as twice", []string{`[{"op":"connect","as":"a"},{"op":"connect","as":"a"}]`}, nil, "used twice"},
		{"bad as", []string{`{"op":"connect","as":"1a"}`}, nil, "want a letter"},
		{"prompt without session", []string{`{"op":"prompt","text":"x"}`}, nil, "needs session"},
		{"load without id", []string{`{"op":"load"}`}, nil, "needs id"},
		{"raw with neither", []string{`{"op":"raw"}`}, nil, "exactly one of send and line"},
		{"raw with both", []string{`{"op":"raw","send":{"jsonrpc":"2.0"},"line":"x"}`}, nil, "exactly one of send and line"},
		{"line with newline", []string{`{"op":"dial","socket":"acp","line":"a\nb"}`}, nil, "newline"},
		{"pad too big", []string{`{"op":"prompt","session":"s","pad":300001}`}, nil, "pad"},
		{"negative wait", []string{`{"op":"connect","maxWaitMs":-1}`}, nil, "duration"},
		{"background times", []string{`{"op":"prompt","session":"s","background":true,"times":3}`}, nil, "do not mix"},
		{"trailing text", []string{`{"op":"connect"} {"op":"list"}`}, nil, "argument 1"},
		{"trailing array text", []string{`[{"op":"connect"}] [{"op":"list"}]`}, nil, "after the JSON"},
		{"await without prompt", []string{`{"op":"await"}`}, nil, "needs prompt"},
		{"dial without socket", []string{`{"op":"dial"}`}, nil, "needs socket"},
	}
	for _, tt := range tests {
		ops, err := acptestclient.ParsePlan(tt.args)
		if tt.err != "" {
			if err == nil || !errors.Is(err, acptestclient.ErrPlan) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s: err = %v, want %q", tt.name, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.name, err)
			continue
		}
		var names []string
		for _, op := range ops {
			names = append(names, op.As)
		}
		if !slices.Equal(names, tt.names) {
			t.Errorf("%s: names %q, want %q", tt.name, names, tt.names)
		}
	}
}

func TestPromptPad(t *testing.T) {
	t.Parallel()
	ops, err := acptestclient.ParsePlan([]string{`{"op":"prompt","session":"s","text":"表😀","pad":16001}`})
	if err != nil {
		t.Fatal(err)
	}
	// pad counts UTF-16 units: 表 is one, 😀 two.
	got := acptestclient.PromptTextForTest(&ops[0])
	if !strings.HasPrefix(got, "表😀x") || len(got) != len("表😀")+16001-3 {
		t.Errorf("padded text of %d bytes", len(got))
	}
}

// FuzzParsePlan: any argument either is refused with ErrPlan or gives
// operations of known kinds with distinct, valid names.
func FuzzParsePlan(f *testing.F) {
	for _, s := range []string{
		`{"op":"connect"}`, `[{"op":"connect"},{"op":"new","as":"s1","scope":[]}]`, `{"ops":[{"op":"list"}]}`,
		`{"op":"raw","send":{"jsonrpc":"2.0","id":1,"method":"initialize"}}`, `{"op":"prompt","session":"s","pad":16001,"times":3}`,
		`{"op":"dial","socket":"acp","line":"{\"jsonrpc\":\"2.0\"}"}`, `[{"op":"await","prompt":"p"}]`, `{}`, `[]`, `{"ops":null}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, arg string) {
		ops, err := acptestclient.ParsePlan([]string{arg})
		if err != nil {
			if !errors.Is(err, acptestclient.ErrPlan) {
				t.Fatalf("error without ErrPlan: %v", err)
			}
			return
		}
		seen := map[string]bool{}
		for _, op := range ops {
			if !slices.Contains(acptestclient.Ops, op.Op) || op.As == "" || seen[op.As] {
				t.Fatalf("accepted %+v", op)
			}
			seen[op.As] = true
		}
	})
}
