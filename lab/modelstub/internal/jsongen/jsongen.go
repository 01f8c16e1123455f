// Package jsongen generates tool arguments from a tool's JSON Schema for
// the chaos model: values the schema accepts, values at its edges, and
// values it refuses. Everything is drawn from the caller's random source,
// so one seed gives the same arguments every time.
//
// It reads the schema keywords tools use (type, properties, required,
// items, enum, const, minimum/maximum and their exclusive forms,
// minLength/maxLength, minItems/maxItems, anyOf/oneOf/allOf, format
// date-time) and ignores the rest: a pattern is not honoured, so a
// "valid" string may still fail one. Any input, even one that is no
// schema, gives a JSON object.
package jsongen

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/runtime/model/script"
)

// Kind is what sort of arguments to make.
type Kind int

const (
	// Valid arguments satisfy the schema (but for patterns).
	Valid Kind = iota
	// Boundary arguments satisfy it at its edges: the shortest and
	// longest strings, the extreme numbers, empty and full arrays, and
	// strings with control, bidi and non-BMP characters.
	Boundary
	// Invalid arguments break it once: a required property missing, a
	// wrong type, a number or length out of range, a value outside the
	// enum, an unknown property where additionalProperties is false. A
	// schema with no rule to break gets an unknown property anyway.
	Invalid
)

func (k Kind) String() string {
	switch k {
	case Valid:
		return "valid"
	case Boundary:
		return "boundary"
	case Invalid:
		return "invalid"
	}
	return "kind?"
}

// Limits keep arguments small whatever the schema allows.
const (
	maxDepth  = 6
	maxString = 64
	maxItems  = 4
)

// Generate returns arguments for a tool whose input schema is schema: always a
// JSON object.
func Generate(r *rand.Rand, schema json.RawMessage, k Kind) json.RawMessage {
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil || s == nil {
		s = map[string]any{}
	}
	if all := schemas(s["allOf"]); len(all) > 0 {
		s = merge(s, all)
	}
	g := gen{r: r, boundary: k == Boundary}
	v, ok := g.value(s, 0).(map[string]any)
	if !ok {
		// A schema whose top is not an object: arguments are one still.
		v = map[string]any{}
	}
	if k == Invalid {
		g.breakObject(s, v)
	}
	b, err := script.MarshalArguments(v)
	if err != nil {
		return json.RawMessage(`{}`)
	}
	return b
}

type gen struct {
	r        *rand.Rand
	boundary bool
}

func (g *gen) value(s map[string]any, depth int) any {
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[g.r.IntN(len(e))]
	}
	if depth >= maxDepth {
		return nil
	}
	for _, key := range []string{"anyOf", "oneOf"} {
		if alts := schemas(s[key]); len(alts) > 0 {
			return g.value(alts[g.r.IntN(len(alts))], depth+1)
		}
	}
	if all := schemas(s["allOf"]); len(all) > 0 {
		return g.value(merge(s, all), depth+1)
	}
	switch typeOf(g.r, s) {
	case "object":
		return g.object(s, depth)
	case "array":
		return g.array(s, depth)
	case "string":
		return g.str(s)
	case "integer":
		return g.integer(s)
	case "number":
		return g.number(s)
	case "boolean":
		return g.r.IntN(2) == 0
	case "null":
		return nil
	}
	return g.str(s)
}

func (g *gen) object(s map[string]any, depth int) map[string]any {
	out := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	req := required(s)
	for _, name := range sortedKeys(props) {
		ps, _ := props[name].(map[string]any)
		if ps == nil {
			ps = map[string]any{}
		}
		if slices.Contains(req, name) || (!g.boundary && g.r.IntN(2) == 0) || (g.boundary && g.r.IntN(4) != 0) {
			out[name] = g.value(ps, depth+1)
		}
	}
	return out
}

func (g *gen) array(s map[string]any, depth int) []any {
	lo, hi := min(intBound(s, "minItems", 0), 2*maxItems), intBound(s, "maxItems", -1)
	hi = clampHi(lo, hi, maxItems)
	n := lo + g.r.IntN(hi-lo+1)
	if g.boundary {
		n = pick(g.r, lo, hi)
	}
	items, _ := s["items"].(map[string]any)
	if items == nil {
		items = map[string]any{}
	}
	out := make([]any, n)
	for i := range out {
		out[i] = g.value(items, depth+1)
	}
	return out
}

// odd are strings a boundary value is built from: each is one rune that
// tools and their consent previews must survive.
var odd = []string{"\u202e", "\u200b", "\x00", "\n", "\"", "\\", "😀", "王", "<", "'", "$", ".", "/"}

func (g *gen) str(s map[string]any) string {
	if f, _ := s["format"].(string); f == "date-time" && !g.boundary {
		return time.Date(2026, 1, 1+g.r.IntN(365), g.r.IntN(24), g.r.IntN(60), 0, 0, time.UTC).Format(time.RFC3339)
	}
	lo, hi := min(intBound(s, "minLength", 0), 4*maxString), intBound(s, "maxLength", -1)
	hi = clampHi(lo, hi, maxString)
	n := lo + g.r.IntN(min(hi-lo, 12)+1)
	if g.boundary {
		n = pick(g.r, lo, hi)
	}
	var b strings.Builder
	for range n {
		if g.boundary && g.r.IntN(3) == 0 {
			b.WriteString(odd[g.r.IntN(len(odd))])
			continue
		}
		b.WriteByte("abcdefghijklmnopqrstuvwxyz0123456789 "[g.r.IntN(37)])
	}
	return b.String()
}

// numRange is the closed range a number schema allows, within ±1e6
// where it is open.
func numRange(s map[string]any) (float64, float64) {
	lo, hi := -1e6, 1e6
	if v, ok := num(s["minimum"]); ok {
		lo = v
	}
	if v, ok := num(s["exclusiveMinimum"]); ok {
		lo = v + 1
	}
	if v, ok := num(s["maximum"]); ok {
		hi = v
	}
	if v, ok := num(s["exclusiveMaximum"]); ok {
		hi = v - 1
	}
	if hi < lo {
		hi = lo
	}
	return lo, hi
}

func (g *gen) integer(s map[string]any) int64 {
	lo, hi := numRange(s)
	l, h := int64(math.Ceil(lo)), int64(math.Floor(hi))
	if h < l {
		h = l
	}
	if g.boundary {
		return []int64{l, h, max(l, min(h, 0))}[g.r.IntN(3)]
	}
	if span := h - l; span > 0 && span < math.MaxInt64 {
		// Small numbers are what a model writes most.
		return l + g.r.Int64N(min(span, 100)+1)
	}
	return l
}

func (g *gen) number(s map[string]any) float64 {
	lo, hi := numRange(s)
	if g.boundary {
		return []float64{lo, hi}[g.r.IntN(2)]
	}
	return lo + g.r.Float64()*(min(hi, lo+100)-lo)
}

// breakObject makes v, valid for s, invalid in one way.
func (g *gen) breakObject(s map[string]any, v map[string]any) {
	props, _ := s["properties"].(map[string]any)
	names := sortedKeys(props)
	req := required(s)
	type mutation func() bool
	muts := []mutation{
		func() bool { // a required property missing
			if len(req) == 0 {
				return false
			}
			delete(v, req[g.r.IntN(len(req))])
			return true
		},
		func() bool { // a property of the wrong type
			var typed []string
			for _, n := range names {
				if ps, _ := props[n].(map[string]any); ps != nil && ps["type"] != nil {
					typed = append(typed, n)
				}
			}
			if len(typed) == 0 {
				return false
			}
			n := typed[g.r.IntN(len(typed))]
			ps, _ := props[n].(map[string]any)
			v[n] = wrongType(g.r, ps)
			return true
		},
		func() bool { // out of range or too long
			for _, n := range names {
				ps, _ := props[n].(map[string]any)
				if bad, ok := outOfRange(ps); ok {
					v[n] = bad
					return true
				}
			}
			return false
		},
		func() bool { // an unknown property where none is allowed
			if s["additionalProperties"] != false {
				return false
			}
			v["chaos_unknown"] = "x"
			return true
		},
	}
	start := g.r.IntN(len(muts))
	for i := range muts {
		if muts[(start+i)%len(muts)]() {
			return
		}
	}
	// Nothing in s to break: an unknown property is the model's mistake
	// still, though the schema allows it.
	v["chaos_unknown"] = "x"
}

// wrongType is a value of a type s does not allow.
func wrongType(r *rand.Rand, s map[string]any) any {
	allowed := map[string]bool{}
	switch t := s["type"].(type) {
	case string:
		allowed[t] = true
	case []any:
		for _, x := range t {
			if x, ok := x.(string); ok {
				allowed[x] = true
			}
		}
	}
	var cands []any
	for _, c := range []any{"not-a-number", int64(-1), true, []any{}, map[string]any{}, nil} {
		t := jsonType(c)
		if !allowed[t] && !(t == "integer" && allowed["number"]) {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	return cands[r.IntN(len(cands))]
}

// outOfRange is a value just outside one of s's bounds.
func outOfRange(s map[string]any) (any, bool) {
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return "chaos-not-in-enum", true
	}
	if v, ok := num(s["maximum"]); ok {
		return v + 1, true
	}
	if v, ok := num(s["minimum"]); ok {
		return v - 1, true
	}
	if v, ok := num(s["maxLength"]); ok && v < maxString*4 {
		return strings.Repeat("x", int(v)+1), true
	}
	if v, ok := num(s["minLength"]); ok && v > 0 {
		return strings.Repeat("x", int(v)-1), true
	}
	return nil, false
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case int64:
		return "integer"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return "null"
}

// typeOf is s's type: its "type" (one of a list, not null where another
// is allowed), else what its keywords imply.
func typeOf(r *rand.Rand, s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		var ts []string
		for _, x := range t {
			if x, ok := x.(string); ok && x != "null" {
				ts = append(ts, x)
			}
		}
		if len(ts) > 0 {
			return ts[r.IntN(len(ts))]
		}
		return "null"
	}
	switch {
	case s["properties"] != nil:
		return "object"
	case s["items"] != nil:
		return "array"
	}
	return ""
}

func schemas(v any) []map[string]any {
	l, _ := v.([]any)
	var out []map[string]any
	for _, x := range l {
		if m, ok := x.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out
}

// merge folds allOf's members into one schema (their properties and
// required lists, the first type), enough for tools' schemas.
func merge(s map[string]any, all []map[string]any) map[string]any {
	out := map[string]any{}
	props := map[string]any{}
	var req []any
	for _, m := range append([]map[string]any{s}, all...) {
		for k, v := range m {
			switch k {
			case "allOf":
			case "properties":
				if p, ok := v.(map[string]any); ok {
					for pk, pv := range p {
						props[pk] = pv
					}
				}
			case "required":
				if l, ok := v.([]any); ok {
					req = append(req, l...)
				}
			default:
				if _, set := out[k]; !set {
					out[k] = v
				}
			}
		}
	}
	if len(props) > 0 {
		out["properties"] = props
	}
	if len(req) > 0 {
		out["required"] = req
	}
	return out
}

func required(s map[string]any) []string {
	l, _ := s["required"].([]any)
	var out []string
	for _, x := range l {
		if n, ok := x.(string); ok && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func sortedKeys(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func num(v any) (float64, bool) {
	f, ok := v.(float64)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e15 {
		return 0, false
	}
	return f, true
}

// intBound is a non-negative integer keyword, or def.
func intBound(s map[string]any, key string, def int) int {
	f, ok := num(s[key])
	if !ok || f < 0 {
		return def
	}
	return int(min(f, 1e6))
}

// clampHi is the upper bound to draw from: hi (-1 for none), within
// limit unless lo is above it, and never below lo.
func clampHi(lo, hi, limit int) int {
	if hi < 0 || hi > max(lo, limit) {
		hi = max(lo, limit)
	}
	return max(hi, lo)
}

// pick is one of lo and hi.
func pick(r *rand.Rand, lo, hi int) int {
	if r.IntN(2) == 0 {
		return lo
	}
	return hi
}
