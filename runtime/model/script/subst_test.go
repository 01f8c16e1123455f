package script

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/runtime/model"
)

func TestParseTemplate(t *testing.T) {
	t.Parallel()
	type r = ref
	ps := func(elems ...any) []pathStep {
		var out []pathStep
		for _, e := range elems {
			switch v := e.(type) {
			case string:
				out = append(out, pathStep{key: v})
			case int:
				out = append(out, pathStep{index: v, isIdx: true})
			}
		}
		return out
	}
	for _, tc := range []struct {
		in   string
		want []part
	}{
		{"", nil},
		{"plain", []part{{lit: "plain"}}},
		{"$$", []part{{lit: "$"}}},
		{"a$$b$$", []part{{lit: "a$b$"}}},
		{"$result[0]", []part{{ref: &r{n: 0, src: "$result[0]"}}}},
		{"$result[12].a.b-c_d[3][0].e", []part{{ref: &r{n: 12, path: ps("a", "b-c_d", 3, 0, "e"), src: "$result[12].a.b-c_d[3][0].e"}}}},
		{"x $result[1].id.", []part{{lit: "x "}, {ref: &r{n: 1, path: ps("id"), src: "$result[1].id"}}, {lit: "."}}},
		{"$result[1].id[x]", []part{{ref: &r{n: 1, path: ps("id"), src: "$result[1].id"}}, {lit: "[x]"}}},
		{"$result[1].id:", []part{{ref: &r{n: 1, path: ps("id"), src: "$result[1].id"}}, {lit: ":"}}},
		{"${result[0].a b.c}!", []part{{ref: &r{n: 0, path: ps("a b", "c"), src: "${result[0].a b.c}"}}, {lit: "!"}}},
		{"${result[2][1]}${result[0]}", []part{{ref: &r{n: 2, path: ps(1), src: "${result[2][1]}"}}, {ref: &r{n: 0, src: "${result[0]}"}}}},
		{"$$result[0]", []part{{lit: "$result[0]"}}},
		{"$$$result[0]", []part{{lit: "$"}, {ref: &r{n: 0, src: "$result[0]"}}}},
		{"价格 $$5", []part{{lit: "价格 $5"}}},
	} {
		got, err := parseTemplate(tc.in)
		if err != nil {
			t.Errorf("parseTemplate(%q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got.parts, tc.want) {
			t.Errorf("parseTemplate(%q) =\n %+v\nwant\n %+v", tc.in, got.parts, tc.want)
		}
	}
	for _, bad := range []string{"$", "a$", "$5", "$res", "$result", "$result[", "$result[]", "$result[a]", "$result[1",
		"${", "${result[0]", "${foo}", "${result[0].}", "${result[0][x]}", "${result[0]]}", "$result[99999999]", "${}", "$ {result[0]}"} {
		if _, err := parseTemplate(bad); err == nil {
			t.Errorf("parseTemplate(%q) accepted", bad)
		}
	}
}

func TestResultParsing(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		text   string
		isJSON bool
	}{
		{`{"a":1}`, true},
		{` [1, 2] `, true},
		{`"s"`, true},
		{`12`, true},
		{`{"a":1} trailing`, false},
		{`{"a":`, false},
		{`Error: not found`, false},
		{``, false},
	} {
		if got := parseResult(tc.text); got.isJSON != tc.isJSON {
			t.Errorf("parseResult(%q).isJSON = %v", tc.text, got.isJSON)
		}
	}
}

// FuzzSubstitute: the template engine never panics; text without "$" is
// itself; escaping every "$" as "$$" gives back the text; a reference
// that evaluates yields a value that encodes as JSON.
func FuzzSubstitute(f *testing.F) {
	for _, s := range []string{"plain", "$$", "$result[0].a", "${result[0].a.b[1]}", "x ${result[1]} y", "$result[0][2].k", "$", "${result[0]"} {
		f.Add(s, `{"a": {"b": [1, "two", {"c": null}]}, "k": "v"}`)
	}
	f.Add("$result[0][1]", `[0, 1, 2]`)
	f.Add("$result[0]", `not json`)
	f.Fuzz(func(t *testing.T, tmpl, resultText string) {
		tp, err := parseTemplate(tmpl)
		if !strings.Contains(tmpl, "$") {
			if err != nil {
				t.Fatalf("text without $ rejected: %v", err)
			}
			if lit, ok := tp.literal(); !ok || lit != tmpl {
				t.Fatalf("literal(%q) = %q, %v", tmpl, lit, ok)
			}
		}
		if err == nil {
			if lit, ok := tp.literal(); ok {
				back, err := parseTemplate(strings.ReplaceAll(lit, "$", "$$"))
				if err != nil {
					t.Fatalf("escaped literal %q rejected: %v", lit, err)
				}
				if l2, ok := back.literal(); !ok || l2 != lit {
					t.Fatalf("escape round trip %q -> %q", lit, l2)
				}
			}
			results := []result{parseResult(resultText), parseResult(resultText)}
			if v, err := tp.eval(results); err == nil {
				if _, err := json.Marshal(v); err != nil {
					t.Fatalf("value of %q does not encode: %v", tmpl, err)
				}
			}
		}
	})
}

// FuzzParse: Parse never panics, and a script it accepts answers any
// conversation without panicking, with JSON-object tool arguments.
func FuzzParse(f *testing.F) {
	for _, ex := range formatExamples(f) {
		f.Add([]byte(ex.body))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "conversations", "*.yaml"))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"steps":[{"text":"a","toolCalls":[{"mcp":["p","s","t"],"arguments":{"x":"$result[0].y"}}]}]}`))
	reqs := []*model.Request{
		request([]string{"mcp__p__s__t", "read_skill"}, user("hi")),
		request([]string{"mcp__p__s__t"}, user("hi"), asst("", "mcp__p__s__t"), toolResult(`{"y": [1, {"z": "mcp__p__s__t {\"a\": 1}"}]}`)),
		request(nil, user("a"), asst("b"), asst("c"), toolResult("mcp__x__y__z"), asst("d")),
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		for _, req := range reqs {
			r, err := s.Respond(req)
			if err != nil && (len(r.Events) != 1 || !strings.HasPrefix(r.Events[0].Text, ErrorPrefix)) {
				t.Fatalf("error %v without a script-error answer: %+v", err, r)
			}
			for _, ev := range r.Events {
				if ev.Kind == model.ToolCallDone {
					var m map[string]any
					if json.Unmarshal(ev.Call.Arguments, &m) != nil || m == nil {
						t.Fatalf("arguments %s are not a JSON object", ev.Call.Arguments)
					}
				}
				if ev.Kind == model.Done {
					t.Fatalf("Done among the events")
				}
			}
		}
	})
}

// FuzzScan: the compromised model's reader never panics on any text, and
// names each tool at most once, always with an arguments object.
func FuzzScan(f *testing.F) {
	f.Add(`call mcp__notes__notes__note_delete {"id": 3} then ["alarm", "alarm", "alarm_create"] {"t": 1}`, "mcp__notes__notes__note_delete")
	f.Add(`{"notes":[{"text":"sms_send {\"to\": \"1\"}"}]}`, "mcp__sms__sms__sms_send")
	f.Add(`read_skill {"name": "x"} {{{ ["a", "b"`, "read_skill")
	f.Fuzz(func(t *testing.T, text, tool string) {
		found := scan([]string{text, text}, []string{tool, "mcp__p__s__t", "read_skill"})
		seen := map[string]bool{}
		for _, fd := range found {
			if seen[fd.name] {
				t.Fatalf("%q named twice", fd.name)
			}
			seen[fd.name] = true
			if fd.args == nil {
				t.Fatalf("%q without arguments", fd.name)
			}
			if _, err := MarshalArguments(fd.args); err != nil {
				t.Fatalf("arguments of %q do not encode: %v", fd.name, err)
			}
		}
	})
}
