package scenario

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// compiled is what a Matcher needs at run time, prepared once.
type compiled struct {
	path Path
	re   *regexp.Regexp
}

// errRefInPath explains why a path may not hold a ${…} reference.
const errRefInPath = "paths are literal, ${…} is not substituted here: select with a literal path and put " +
	"the reference in a matcher value, e.g. path: '.callers[*].packageName', any: {eq: '${vars.pkg}'}"

// compile parses the matcher's path and regular expression, recursively.
// Problems are reported through add with the field they concern.
func (m *Matcher) compile(add func(field, msg string)) {
	c := &compiled{}
	if m.Path != "" {
		p, err := ParsePath(m.Path)
		switch {
		case strings.Contains(m.Path, "${"):
			// A path is parsed once, when the scenario is read, before any
			// step ran; a reference in it would be compared as text.
			add("path", errRefInPath)
		case err != nil:
			add("path", err.Error())
		}
		c.path = p
	}
	if m.Matches != "" {
		re, err := regexp.Compile(m.Matches)
		if err != nil {
			add("matches", "bad regular expression: "+err.Error())
		}
		c.re = re
	}
	for name, sub := range m.subs() {
		sub.compile(func(field, msg string) { add(name+"."+field, msg) })
	}
	for name, v := range m.values() {
		checkRefs(v.V, func(msg string) { add(name, msg) })
	}
	m.c = c
}

func checkRefs(v any, add func(string)) {
	switch t := v.(type) {
	case string:
		if _, err := Refs(t); err != nil {
			add(err.Error())
		}
	case []any:
		for _, e := range t {
			checkRefs(e, add)
		}
	case map[string]any:
		for _, e := range t {
			checkRefs(e, add)
		}
	}
}

func (m *Matcher) subs() map[string]*Matcher {
	out := map[string]*Matcher{}
	for name, s := range map[string]*Matcher{"len": m.Len, "count": m.Count, "all": m.All, "any": m.Any, "none": m.None, "not": m.Not} {
		if s != nil {
			out[name] = s
		}
	}
	return out
}

func (m *Matcher) values() map[string]*Value {
	out := map[string]*Value{}
	for name, v := range map[string]*Value{"eq": m.Eq, "ne": m.Ne, "contains": m.Contains} {
		if v != nil {
			out[name] = v
		}
	}
	for i := range m.In {
		out["in["+strconv.Itoa(i)+"]"] = &m.In[i]
	}
	return out
}

// hasTest reports whether the matcher tests anything beyond its path.
func (m *Matcher) hasTest() bool {
	return m.Exists != nil || m.Eq != nil || m.Ne != nil || m.Gt != nil || m.Ge != nil || m.Lt != nil || m.Le != nil ||
		m.In != nil || m.Contains != nil || m.Matches != "" || len(m.subs()) > 0
}

// needsOne reports whether the matcher tests exactly one value.
func (m *Matcher) needsOne() bool {
	return m.Eq != nil || m.Ne != nil || m.Gt != nil || m.Ge != nil || m.Lt != nil || m.Le != nil ||
		m.In != nil || m.Contains != nil || m.Matches != "" || m.Len != nil
}

// Match evaluates m against v (a JSON value). Detail says what was wrong,
// Evidence shows what the path selected.
func (m *Matcher) Match(v any, look Lookup) (ok bool, detail, evidence string) {
	if m.c == nil {
		m.compile(func(string, string) {})
	}
	vals := []any{v}
	if !m.c.path.IsZero() {
		vals = m.c.path.Select(v)
	}
	evidence = evidenceOf(vals)
	var fails []string
	fail := func(format string, args ...any) { fails = append(fails, fmt.Sprintf(format, args...)) }

	present := false
	for _, x := range vals {
		if x != nil {
			present = true
			break
		}
	}
	if !m.hasTest() && !present {
		fail("%s selects nothing", m.where())
	}
	if m.Exists != nil && *m.Exists != present {
		if *m.Exists {
			fail("%s selects nothing", m.where())
		} else {
			fail("%s selects %s, want nothing", m.where(), evidence)
		}
	}
	if m.needsOne() {
		switch len(vals) {
		case 0:
			fail("%s selects nothing", m.where())
		case 1:
			m.matchOne(vals[0], look, fail)
		default:
			fail("%s selects %d values; test them with all, any or none", m.where(), len(vals))
		}
	}
	if m.Count != nil {
		n := len(vals)
		if m.c.path.IsZero() {
			// Without a path nothing is selected but the subject itself:
			// count a list's elements ({of: cards, count: 2}).
			if l, isList := v.([]any); isList {
				n = len(l)
			}
		}
		if ok, d, _ := m.Count.Match(float64(n), look); !ok {
			fail("count: %s", d)
		}
	}
	if m.All != nil || m.Any != nil || m.None != nil {
		elems := vals
		if len(vals) == 1 {
			if l, isList := vals[0].([]any); isList {
				elems = l
			}
		}
		if m.All != nil {
			for i, e := range elems {
				if ok, d, _ := m.All.Match(e, look); !ok {
					fail("all: element %d: %s", i, d)
					break
				}
			}
		}
		if m.Any != nil {
			found := false
			var first string
			for _, e := range elems {
				ok, d, _ := m.Any.Match(e, look)
				if ok {
					found = true
					break
				}
				if first == "" {
					first = d
				}
			}
			if !found {
				if first == "" {
					first = "no elements"
				}
				fail("any: no element matches (first: %s)", first)
			}
		}
		if m.None != nil {
			for i, e := range elems {
				if ok, _, _ := m.None.Match(e, look); ok {
					fail("none: element %d matches: %s", i, clip(asText(e), 120))
					break
				}
			}
		}
	}
	if m.Not != nil {
		var x any = vals
		if len(vals) == 1 {
			x = vals[0]
		}
		if ok, _, _ := m.Not.Match(x, look); ok {
			fail("not: the value matches: %s", clip(asText(x), 120))
		}
	}
	if len(fails) > 0 {
		return false, strings.Join(fails, "; "), evidence
	}
	return true, "", evidence
}

func (m *Matcher) where() string {
	if m.Path == "" {
		return "the value"
	}
	return m.Path
}

func (m *Matcher) matchOne(v any, look Lookup, fail func(string, ...any)) {
	want := func(val *Value) (any, bool) {
		x, err := ExpandValue(val.V, look)
		if err != nil {
			fail("%v", err)
			return nil, false
		}
		return x, true
	}
	got := clip(asText(v), 120)
	if m.Eq != nil {
		if w, ok := want(m.Eq); ok && !equal(v, w) {
			fail("got %s, want %s", got, clip(asText(w), 120))
		}
	}
	if m.Ne != nil {
		if w, ok := want(m.Ne); ok && equal(v, w) {
			fail("got %s, want anything else", got)
		}
	}
	for _, c := range []struct {
		op    string
		bound *float64
	}{{">", m.Gt}, {">=", m.Ge}, {"<", m.Lt}, {"<=", m.Le}} {
		if c.bound == nil {
			continue
		}
		f, ok := v.(float64)
		if !ok {
			fail("got %s, want a number %s %s", got, c.op, fmtNum(*c.bound))
			continue
		}
		if !compare(c.op, f, *c.bound, nil) {
			fail("got %s, want %s %s", fmtNum(f), c.op, fmtNum(*c.bound))
		}
	}
	if m.In != nil {
		found := false
		var opts []string
		for i := range m.In {
			w, ok := want(&m.In[i])
			if !ok {
				return
			}
			opts = append(opts, clip(asText(w), 40))
			if equal(v, w) {
				found = true
			}
		}
		if !found {
			fail("got %s, want one of [%s]", got, strings.Join(opts, ", "))
		}
	}
	if m.Contains != nil {
		if w, ok := want(m.Contains); ok && !contains(v, w) {
			fail("%s does not contain %s", got, clip(asText(w), 80))
		}
	}
	if m.Matches != "" && m.c.re != nil {
		s, ok := v.(string)
		if !ok {
			s = asText(v)
		}
		if !m.c.re.MatchString(s) {
			fail("%s does not match /%s/", got, m.Matches)
		}
	}
	if m.Len != nil {
		n, ok := length(v)
		if !ok {
			fail("got %s, which has no length", got)
		} else if ok, d, _ := m.Len.Match(float64(n), look); !ok {
			fail("len: %s", d)
		}
	}
}

func fmtNum(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// contains: a substring of a string, an element of a list, a key of an
// object.
func contains(v, w any) bool {
	switch t := v.(type) {
	case string:
		s, ok := w.(string)
		return ok && strings.Contains(t, s)
	case []any:
		for _, e := range t {
			if equal(e, w) {
				return true
			}
		}
	case map[string]any:
		s, ok := w.(string)
		if ok {
			_, has := t[s]
			return has
		}
	}
	return false
}

func length(v any) (int, bool) {
	switch t := v.(type) {
	case string:
		return utf8.RuneCountInString(t), true
	case []any:
		return len(t), true
	case map[string]any:
		return len(t), true
	}
	return 0, false
}

// maxEvidence bounds the evidence text of one check.
const maxEvidence = 512

func evidenceOf(vals []any) string {
	var x any = vals
	if len(vals) == 1 {
		x = vals[0]
	}
	b, err := json.Marshal(x)
	if err != nil {
		return ""
	}
	return clip(string(b), maxEvidence)
}

// Noted is a subject value with a note that explains it, such as why a
// list is empty: Eval tests Value and puts the note before the evidence,
// and into the detail of a failure.
type Noted struct {
	Value any
	Note  string
}

// Subject fetches the value a leaf condition names. A nil Subject (or an
// error) makes the condition fail with the error as its detail; Eval
// returns the error too, so the caller can tell lab faults apart.
type Subject func(c *Condition) (any, error)

// Eval evaluates the condition: a leaf against the value fetch returns
// for it, a group by its members. It returns the first fetch error it
// met, for the caller to classify.
func (c *Condition) Eval(fetch Subject, look Lookup) (ok bool, detail, evidence string, err error) {
	switch {
	case c.AllOf != nil:
		var ev []string
		for i := range c.AllOf {
			ok, d, e, err := c.AllOf[i].Eval(fetch, look)
			if err != nil || !ok {
				return false, fmt.Sprintf("all_of[%d]: %s", i, d), e, err
			}
			ev = append(ev, e)
		}
		return true, "", clip(strings.Join(ev, "; "), maxEvidence), nil
	case c.AnyOf != nil:
		var ds []string
		var firstErr error
		for i := range c.AnyOf {
			ok, d, e, err := c.AnyOf[i].Eval(fetch, look)
			if err != nil && firstErr == nil {
				firstErr = err
			}
			if ok && err == nil {
				return true, fmt.Sprintf("outcome %d of %d", i+1, len(c.AnyOf)), e, nil
			}
			ds = append(ds, fmt.Sprintf("[%d] %s", i, d))
		}
		return false, "no accepted outcome: " + clip(strings.Join(ds, "; "), 800), "", firstErr
	}
	v, err := fetch(c)
	if err != nil {
		return false, "cannot read " + c.SubjectName() + ": " + err.Error(), "", err
	}
	if c.Timing != nil {
		d, _ := v.(time.Duration)
		ev := d.Round(time.Millisecond).String()
		switch {
		case c.Timing.Max > 0 && d > c.Timing.Max.D():
			return false, fmt.Sprintf("took %s, want at most %s", ev, c.Timing.Max), ev, nil
		case d < c.Timing.Min.D():
			return false, fmt.Sprintf("took %s, want at least %s", ev, c.Timing.Min), ev, nil
		}
		return true, "", ev, nil
	}
	subject := c.SubjectName()
	n, noted := v.(Noted)
	if noted {
		v, subject = n.Value, subject+" ("+n.Note+")"
	}
	ok, detail, evidence = c.Matcher.Match(toJSON(v), look)
	if noted {
		evidence = clip(n.Note+": "+evidence, maxEvidence)
	}
	if !ok {
		detail = subject + ": " + detail
	}
	return ok, detail, evidence, nil
}

// SubjectName names what a leaf condition reads ("dump notes", "callers").
func (c *Condition) SubjectName() string {
	switch {
	case c.Of != "":
		return c.Of
	case c.Dump != "":
		return "dump " + c.Dump
	case c.Saved != "":
		return "saved " + c.Saved
	case c.Events != "":
		return "events " + c.Events
	case c.Shell != "":
		return "shell " + strconv.Quote(clip(c.Shell, 40))
	case c.Timing != nil:
		return "timing"
	}
	return "condition"
}
