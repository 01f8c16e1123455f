package apptool

import (
	"encoding/json"
	"testing"
)

func TestArgs(t *testing.T) {
	tests := []struct {
		name string
		raw  string
		read func(a *Args)
		want string // "" = no error
	}{
		{"empty is an object", ``, func(a *Args) { a.String("x") }, ""},
		{"null is an object", `null`, func(a *Args) { a.String("x") }, ""},
		{"missing required", `{}`, func(a *Args) { a.Int("id", Required) }, `Missing required parameter "id".`},
		{"null required", `{"id":null}`, func(a *Args) { a.Int("id", Required) }, `Missing required parameter "id".`},
		{"wrong type int", `{"id":"7"}`, func(a *Args) { a.Int("id", Required) }, `Parameter "id" must be an integer.`},
		{"fraction", `{"id":7.5}`, func(a *Args) { a.Int("id") }, `Parameter "id" must be an integer.`},
		{"range", `{"n":61}`, func(a *Args) { a.Int("n", Range(1, 60)) }, `Parameter "n" must be between 1 and 60.`},
		{"min", `{"n":-1}`, func(a *Args) { a.Int("n", Min(0)) }, `Parameter "n" must be at least 0.`},
		{"too long", `{"s":"abcd"}`, func(a *Args) { a.String("s", MaxLen(3)) }, `Parameter "s" is too long (4 characters; the limit is 3).`},
		{"code points not bytes", `{"s":"闹钟闹"}`, func(a *Args) { a.String("s", MaxLen(3)) }, ""},
		{"blank", `{"s":"  "}`, func(a *Args) { a.String("s", NonEmpty) }, `Parameter "s" must not be empty.`},
		{"one of", `{"r":"hourly"}`, func(a *Args) { a.String("r", OneOf("daily", "weekly")) }, `Parameter "r" must be one of daily, weekly.`},
		{"bool type", `{"b":"yes"}`, func(a *Args) { a.Bool("b", false) }, `Parameter "b" must be true or false.`},
		{"strings", `{"d":["mon",3]}`, func(a *Args) { a.Strings("d") }, `Parameter "d" must be an array of strings.`},
		{"strings values", `{"d":["mon","xyz"]}`, func(a *Args) { a.Strings("d", OneOf("mon", "tue")) }, `Items of "d" must be one of mon, tue.`},
		{"first error wins", `{}`, func(a *Args) { a.Int("a", Required); a.Int("b", Required) }, `Missing required parameter "a".`},
		{"unknown", `{"id":1,"zzz":2}`, func(a *Args) { a.Int("id"); a.RejectUnknown() }, `Unknown parameter "zzz".`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := ParseArgs(json.RawMessage(tt.raw))
			if err != nil {
				t.Fatal(err)
			}
			tt.read(a)
			got := ""
			if err := a.Err(); err != nil {
				s, ok := IsUserError(err)
				if !ok {
					t.Fatalf("not a user error: %v", err)
				}
				got = s
			}
			if got != tt.want {
				t.Fatalf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseArgsRejectsNonObjects(t *testing.T) {
	for _, raw := range []string{`[]`, `"x"`, `3`, `{`, `{"a":}`} {
		if _, err := ParseArgs(json.RawMessage(raw)); err == nil {
			t.Errorf("ParseArgs(%s) accepted", raw)
		} else if s, _ := IsUserError(err); s != "Arguments must be a JSON object." {
			t.Errorf("ParseArgs(%s) = %q", raw, s)
		}
	}
}

func FuzzArgs(f *testing.F) {
	for _, s := range []string{`{}`, `{"id":1,"s":"x","b":true,"l":["a"],"n":[1,2]}`, `{"id":1e400}`, `null`, `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := ParseArgs(raw)
		if err != nil {
			if _, ok := IsUserError(err); !ok {
				t.Fatalf("non-user error %v", err)
			}
			return
		}
		a.Int("id", Required, Range(1, 100))
		a.String("s", MaxLen(5), NonEmpty)
		a.Bool("b", false)
		a.Strings("l", MaxLen(3))
		a.Ints("n", Range(0, 9))
		a.Float("f", Min(0))
		a.RejectUnknown()
		if err := a.Err(); err != nil {
			if _, ok := IsUserError(err); !ok {
				t.Fatalf("non-user error %v", err)
			}
		}
	})
}
