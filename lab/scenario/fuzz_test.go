package scenario

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: the parser never panics, and what it accepts it accepts
// again (validation is deterministic) with every problem positioned.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.yaml")
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("name: a\nsteps: [{sleep: 1s}]\n"))
	f.Add([]byte("name: a\nsteps: [{wait: {until: {of: callers, path: '.a[?b==1]', all: {len: {gt: 0}}}}}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data, "fuzz.yaml", &Options{ReadFile: func(string) ([]byte, error) { return nil, os.ErrNotExist }})
		if err != nil {
			se, ok := err.(*Error)
			if !ok || len(se.Problems) == 0 {
				t.Fatalf("error is not a non-empty *Error: %v", err)
			}
			return
		}
		if s.Name == "" || len(s.Steps) == 0 {
			t.Fatalf("accepted a scenario without name or steps")
		}
		if _, err := Parse(data, "fuzz.yaml", &Options{ReadFile: func(string) ([]byte, error) { return nil, os.ErrNotExist }}); err != nil {
			t.Fatalf("accepted once, rejected the second time: %v", err)
		}
	})
}

// FuzzPath: ParsePath never panics; a parsed path selects without
// panicking; a matcher built around it evaluates without panicking.
func FuzzPath(f *testing.F) {
	for _, p := range []string{"", "$", ".a.b[0]", ".a[*]", ".*", `.a[?b=="x"].c`, `.a[?@>=2]`, `[?b=~"^x"]`,
		`["k y"][-1]`, `.a[?b[?c]]`, `.x[?.y!=null]`, `.callers[?packageName=="org.agentos.sample.notes"].usage.activeTasks`} {
		f.Add(p, `{"a":{"b":[1,2,{"c":"x"}]},"x":[{"y":null},{"y":3}],"k y":[true,false]}`)
	}
	f.Fuzz(func(t *testing.T, path, doc string) {
		p, err := ParsePath(path)
		if err != nil {
			if _, ok := err.(*PathError); !ok {
				t.Fatalf("error is not a *PathError: %v", err)
			}
			return
		}
		var v any
		if json.Unmarshal([]byte(doc), &v) != nil {
			v = map[string]any{"a": []any{1.0, "x", nil}}
		}
		_ = p.Select(v)
		yes := true
		one := 1.0
		m := &Matcher{Path: path, Exists: &yes, Gt: &one, Len: &Matcher{Ge: &one}, All: &Matcher{Path: path, Matches: "x"},
			Any: &Matcher{Eq: &Value{V: "x"}}, None: &Matcher{Contains: &Value{V: "${a.b}"}}, Count: &Matcher{Le: &one},
			Not: &Matcher{In: []Value{{V: 1.0}, {V: "x"}}}}
		m.compile(func(string, string) {})
		m.Match(v, func(string) (any, bool) { return v, true })
		_, _ = Expand("${a"+path+"}", func(string) (any, bool) { return v, true })
	})
}
