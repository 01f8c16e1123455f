package acptestclient

import (
	"errors"
	"strings"
	"testing"
)

func newTestRunner() *runner {
	r := &runner{secrets: map[string]string{}, results: map[string]any{}}
	r.results["rnew"] = &RawOut{Response: map[string]any{"result": map[string]any{"sessionId": "ses_X", "n": 7.0}}}
	return r
}

func TestRedactAndSubstitute(t *testing.T) {
	t.Parallel()
	r := newTestRunner()
	got := r.reveal("en", []byte(`{"id":1,"result":{"code":"123456","token":"`+strings.Repeat("a", 43)+`","error":{"code":-32000}}}`))
	res := got.(map[string]any)["result"].(map[string]any)
	if res["code"] != "<redacted len=6 digits>" || res["token"] != "<redacted len=43 token-shape>" {
		t.Fatalf("redacted: %v", res)
	}
	if res["error"].(map[string]any)["code"] != -32000.0 {
		t.Error("a numeric code was touched")
	}
	for _, tc := range []struct{ in, want string }{
		{`{"code":"${secret:en.code}"}`, `{"code":"123456"}`},
		{`{"code":"${wrong:en.code}"}`, `{"code":"234567"}`},
		{`${wrong:en.token}`, "A" + strings.Repeat("a", 42)},
		{`{"sessionId":"${r:rnew.response.result.sessionId}","n":${r:rnew.response.result.n}}`, `{"sessionId":"ses_X","n":7}`},
		{`x${pad:3}y`, "xxxxy"},
		{`no refs $ at all ${`, `no refs $ at all ${`},
	} {
		out, err := r.substitute([]byte(tc.in))
		if err != nil || string(out) != tc.want {
			t.Errorf("substitute(%s) = %s, %v; want %s", tc.in, out, err, tc.want)
		}
	}
	for _, in := range []string{`${secret:nope.code}`, `${r:rnew.response.result.missing}`, `${r:unknown}`} {
		var pe *planError
		if _, err := r.substitute([]byte(in)); !errors.As(err, &pe) {
			t.Errorf("substitute(%s): %v, want a plan error", in, err)
		}
	}
}

// FuzzSubstitute: any text is either substituted or refused with a plan
// error, and no reference to a known secret survives substitution.
func FuzzSubstitute(f *testing.F) {
	for _, s := range []string{`${secret:en.code}`, `{"a":"${wrong:en.token}"}`, `${r:rnew.response.result.sessionId}`, `${pad:16001}`, `${r:`, `$${x}`, `${secret:en.code}${secret:en.code}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		r := newTestRunner()
		r.secrets["en.code"] = "123456"
		r.secrets["en.token"] = strings.Repeat("z", 43)
		out, err := r.substitute([]byte(in))
		if err != nil {
			var pe *planError
			if !errors.As(err, &pe) {
				t.Fatalf("error without a plan error: %v", err)
			}
			return
		}
		if !strings.Contains(in, "${") && string(out) != in {
			t.Fatalf("text without references changed: %q → %q", in, out)
		}
		if strings.Count(string(out), "123456") < strings.Count(in, "${secret:en.code}") {
			t.Fatalf("a secret reference survived: %q → %q", in, out)
		}
	})
}
