package acptestclient

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Codes and tokens (desktop pairing codes and tokens) never reach the
// output: an answer's string field named "code" or "token" is kept in
// memory under "<as>.<key>" and shown as "<redacted len=N …>". A later
// send or line refers to it as ${secret:<as>.<key>}, or as
// ${wrong:<as>.<key>} for a value of the same shape that is certainly
// not it (each digit of a code moved by one; a token's first character
// changed). ${r:<as>.<path>} inserts a value of an earlier result (a
// dotted path: keys and indexes), such as the session id a raw
// session/new answered; ${pad:N} is N times "x" (a prompt larger than an
// argument).

// secretKeys are the fields redacted in answers.
var secretKeys = map[string]bool{"code": true, "token": true}

var (
	tokenShape = regexp.MustCompile(`^[A-Za-z0-9_-]{43}$`)
	codeShape  = regexp.MustCompile(`^[0-9]{4,9}$`)
	secretRef  = regexp.MustCompile(`\$\{(secret|wrong):([A-Za-z][A-Za-z0-9_-]{0,63}\.(?:code|token))\}`)
	padRef     = regexp.MustCompile(`\$\{pad:([0-9]{1,6})\}`)
	resultRef  = regexp.MustCompile(`\$\{r:([A-Za-z][A-Za-z0-9_-]{0,63})((?:\.[A-Za-z0-9_-]+)*)\}`)
)

// reveal parses an answer line, keeps its secrets under the op's name and
// returns it with them redacted; a line that is not JSON comes back as a
// string (it holds no field to redact).
func (r *runner) reveal(as string, line []byte) any {
	var v any
	if json.Unmarshal(line, &v) != nil {
		return string(line)
	}
	return r.redact(as, v)
}

func (r *runner) redact(as string, v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			if s, ok := val.(string); ok && secretKeys[k] {
				if _, seen := r.secrets[as+"."+k]; !seen {
					r.secrets[as+"."+k] = s
				}
				x[k] = redacted(s)
				continue
			}
			x[k] = r.redact(as, val)
		}
	case []any:
		for i := range x {
			x[i] = r.redact(as, x[i])
		}
	}
	return v
}

// redacted describes a secret without showing it.
func redacted(s string) string {
	shape := ""
	switch {
	case tokenShape.MatchString(s):
		shape = " token-shape"
	case codeShape.MatchString(s):
		shape = " digits"
	}
	return fmt.Sprintf("<redacted len=%d%s>", len(s), shape)
}

// substitute replaces ${secret:…} and ${wrong:…} in text with the values
// (JSON-escaped, as they go inside JSON strings).
func (r *runner) substitute(text []byte) ([]byte, error) {
	var missing string
	out := secretRef.ReplaceAllFunc(text, func(m []byte) []byte {
		sub := secretRef.FindSubmatch(m)
		val, ok := r.secrets[string(sub[2])]
		if !ok {
			missing = string(sub[2])
			return m
		}
		if string(sub[1]) == "wrong" {
			val = wrongOf(val)
		}
		b, _ := json.Marshal(val)
		return b[1 : len(b)-1]
	})
	if missing != "" {
		return nil, planErrorf("no secret %q: an earlier answer must carry it", missing)
	}
	out = padRef.ReplaceAllFunc(out, func(m []byte) []byte {
		n, _ := strconv.Atoi(string(padRef.FindSubmatch(m)[1]))
		return bytes.Repeat([]byte("x"), min(n, MaxPad))
	})
	out = resultRef.ReplaceAllFunc(out, func(m []byte) []byte {
		sub := resultRef.FindSubmatch(m)
		v, ok := r.resultValue(string(sub[1]), strings.TrimPrefix(string(sub[2]), "."))
		if !ok {
			missing = string(m)
			return m
		}
		b, _ := json.Marshal(v)
		if s, isStr := v.(string); isStr {
			b, _ = json.Marshal(s)
			return b[1 : len(b)-1]
		}
		return b
	})
	if missing != "" {
		return nil, planErrorf("%s selects nothing in the results so far", missing)
	}
	return out, nil
}

// resultValue reads a dotted path from the result named as.
func (r *runner) resultValue(as, path string) (any, bool) {
	r.mu.Lock()
	res, ok := r.results[as]
	r.mu.Unlock()
	if !ok {
		return nil, false
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, false
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil, false
	}
	if path == "" {
		return v, true
	}
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			if v, ok = x[k]; !ok {
				return nil, false
			}
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil, false
			}
			v = x[i]
		default:
			return nil, false
		}
	}
	return v, v != nil
}

// wrongOf is a value of the same shape as s that is not s.
func wrongOf(s string) string {
	if codeShape.MatchString(s) {
		var b strings.Builder
		for _, c := range s {
			b.WriteRune('0' + (c-'0'+1)%10)
		}
		return b.String()
	}
	if s == "" {
		return "x"
	}
	first := "A"
	if s[0] == 'A' {
		first = "B"
	}
	return first + s[1:]
}
