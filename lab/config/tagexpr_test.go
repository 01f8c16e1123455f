package config

import (
	"strings"
	"testing"
)

func TestTagExpr(t *testing.T) {
	cases := []struct {
		expr string
		tags []string
		want bool
	}{
		{"nightly", []string{"nightly"}, true},
		{"nightly", nil, false},
		{"nightly && !slow", []string{"nightly"}, true},
		{"nightly && !slow", []string{"nightly", "slow"}, false},
		{"a || b && c", []string{"a"}, true}, // && binds tighter
		{"a || b && c", []string{"b"}, false},
		{"(a || b) && c", []string{"a"}, false},
		{"(a || b) && c", []string{"b", "c"}, true},
		{"!!a", []string{"a"}, true},
		{"!(a && b)", []string{"a", "b"}, false},
		{"  spaced\t&&  out ", []string{"spaced", "out"}, true},
		{"third-party && security:revoke", []string{"third-party", "security:revoke"}, true},
		{"v1.2/x_y", []string{"v1.2/x_y"}, true},
	}
	for _, tc := range cases {
		e, err := ParseTagExpr(tc.expr)
		if err != nil {
			t.Errorf("ParseTagExpr(%q): %v", tc.expr, err)
			continue
		}
		has := map[string]bool{}
		for _, x := range tc.tags {
			has[x] = true
		}
		if got := e.Eval(has); got != tc.want {
			t.Errorf("%q on %v = %v, want %v (parsed %s)", tc.expr, tc.tags, got, tc.want, e)
		}
		// The printed form parses to the same expression.
		again, err := ParseTagExpr(e.String())
		if err != nil || again.String() != e.String() {
			t.Errorf("%q: String %q does not round-trip: %v", tc.expr, e, err)
		}
	}
}

func TestTagExprErrors(t *testing.T) {
	for expr, want := range map[string]string{
		"":       "column 1: expression ends where a tag was expected",
		"a &&":   "column 5: expression ends where a tag was expected",
		"a & b":  `column 3: unexpected "& b"`,
		"(a":     "column 3: missing )",
		"a)":     `column 2: unexpected ")"`,
		"a b":    `column 3: unexpected "b"`,
		"a || #": `column 6: want a tag, !, or (, got "#"`,
		strings.Repeat("(", 100) + "a" + strings.Repeat(")", 100): "nested deeper than 64",
		strings.Repeat("a", MaxTagExprLen+1):                      "longer than",
	} {
		_, err := ParseTagExpr(expr)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseTagExpr(%.20q) = %v, want %q", expr, err, want)
		}
	}
}

func FuzzTagExpr(f *testing.F) {
	for _, s := range []string{"nightly && !slow", "(a || b) && c", "!!!x", "a ||", "((((", "a&&b||c&&!(d||e)"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseTagExpr(s)
		if err != nil {
			return
		}
		again, err := ParseTagExpr(e.String())
		if err != nil {
			t.Fatalf("%q printed as %q which does not parse: %v", s, e, err)
		}
		for _, tags := range []map[string]bool{{}, {"a": true, "b": true}} {
			if e.Eval(tags) != again.Eval(tags) {
				t.Fatalf("%q and its printed form %q disagree", s, e)
			}
		}
	})
}

func FuzzInterpolate(f *testing.F) {
	for _, s := range []string{"${A}", "${B:-x}", "$$", "a$b", "${", "${A}${B:-}", "$${A}"} {
		f.Add(s)
	}
	lookup := func(k string) (string, bool) {
		if k == "A" {
			return "alpha", true
		}
		return "", false
	}
	f.Fuzz(func(t *testing.T, s string) {
		out, err := Interpolate(s, lookup)
		if err != nil {
			return
		}
		if !strings.Contains(s, "$") && out != s {
			t.Fatalf("text without $ changed: %q → %q", s, out)
		}
		if len(out) > len(s)*len("alpha")+len(s) {
			t.Fatalf("output %d bytes for input %d", len(out), len(s))
		}
	})
}

func FuzzParse(f *testing.F) {
	f.Add(string(DefaultYAML()))
	f.Add("devices:\n  virtual: {count: ${N:-1}}\nmodel: live\n")
	f.Add("pools: [{name: a, api: {min: 1, max: 2}}]\n")
	f.Add("a: &x {b: 1}\nc: *x\n")
	f.Fuzz(func(t *testing.T, doc string) {
		c, err := Parse(strings.NewReader(doc), "fuzz.yaml", env(map[string]string{"N": "1"}))
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if c.Shard.Count < 1 || c.Retries.Attempts < 1 || c.Output == "" {
			t.Fatalf("accepted an invalid configuration: %+v", c)
		}
	})
}
