// Package xsd validates XML documents against the subset of W3C XML Schema
// that report formats such as JUnit XML are described with: global and
// local element declarations, element references, sequence and choice
// groups with occurrence bounds, mixed content, attributes with use="required"
// and simple types restricted by pattern, enumeration and length or range
// facets over the common built-in types.
//
// Anything outside that subset (namespaces, xs:any, xs:all, identity
// constraints, substitution groups, extension, …) is refused when the
// schema is parsed, so a schema is never half-checked in silence. Content
// models are matched greedily, which is exact for the deterministic models
// XSD's Unique Particle Attribution rule requires.
package xsd

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

const xsNS = "http://www.w3.org/2001/XMLSchema"

// maxDepth bounds element nesting in both schemas and documents.
const maxDepth = 256

// ErrUnsupported reports a schema construct outside the supported subset.
var ErrUnsupported = errors.New("unsupported schema construct")

// ErrInvalid reports a document that does not satisfy the schema.
var ErrInvalid = errors.New("document does not satisfy the schema")

// Schema is a parsed schema.
type Schema struct {
	elements     map[string]*elementDecl
	complexTypes map[string]*complexType
	simpleTypes  map[string]*simpleType
	// refs to resolve after the whole schema is read
	pending []func() error
}

type elementDecl struct {
	name    string
	simple  *simpleType  // set for simple content
	complex *complexType // set for complex content
}

type complexType struct {
	mixed   bool
	content *particle // nil: empty content
	attrs   map[string]*attrDecl
}

type attrDecl struct {
	name     string
	typ      *simpleType
	required bool
}

type particleKind int

const (
	pElement particleKind = iota
	pSequence
	pChoice
)

type particle struct {
	kind     particleKind
	min, max int // max < 0: unbounded
	elem     *elementDecl
	children []*particle
}

type simpleType struct {
	name      string
	base      *simpleType // nil for a built-in
	builtin   func(string) error
	patterns  []*regexp.Regexp
	enums     []string
	minLength int
	maxLength int // < 0: none
	minIncl   *float64
	maxIncl   *float64
}

// node is a parsed XML element.
type node struct {
	name     string
	attrs    []xml.Attr
	children []*node
	text     strings.Builder
}

func parseTree(r io.Reader) (*node, error) {
	dec := xml.NewDecoder(r)
	var stack []*node
	var root *node
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if len(stack) >= maxDepth {
				return nil, fmt.Errorf("nesting deeper than %d", maxDepth)
			}
			n := &node{name: t.Name.Local, attrs: t.Attr}
			if t.Name.Space != "" && t.Name.Space != xsNS {
				n.name = "{" + t.Name.Space + "}" + t.Name.Local
			}
			if len(stack) > 0 {
				p := stack[len(stack)-1]
				p.children = append(p.children, n)
			} else if root != nil {
				return nil, errors.New("more than one root element")
			} else {
				root = n
			}
			stack = append(stack, n)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if len(stack) > 0 {
				stack[len(stack)-1].text.Write(t)
			} else if strings.TrimSpace(string(t)) != "" {
				return nil, errors.New("text outside the root element")
			}
		}
	}
	if root == nil {
		return nil, errors.New("no root element")
	}
	return root, nil
}

func attr(n *node, name string) (string, bool) {
	for _, a := range n.attrs {
		if a.Name.Local == name && a.Name.Space == "" {
			return a.Value, true
		}
	}
	return "", false
}

// Parse reads a schema.
func Parse(r io.Reader) (*Schema, error) {
	root, err := parseTree(r)
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	if root.name != "schema" {
		return nil, fmt.Errorf("parse schema: root element is %q, not xs:schema", root.name)
	}
	if _, ok := attr(root, "targetNamespace"); ok {
		return nil, fmt.Errorf("parse schema: targetNamespace: %w", ErrUnsupported)
	}
	s := &Schema{
		elements:     map[string]*elementDecl{},
		complexTypes: map[string]*complexType{},
		simpleTypes:  map[string]*simpleType{},
	}
	// Named types first, so elements can use them in any order.
	for _, c := range root.children {
		name, _ := attr(c, "name")
		switch c.name {
		case "simpleType":
			if name == "" {
				return nil, errors.New("parse schema: a global simpleType has no name")
			}
			st, err := s.parseSimpleType(c, name)
			if err != nil {
				return nil, err
			}
			s.simpleTypes[name] = st
		case "complexType":
			if name == "" {
				return nil, errors.New("parse schema: a global complexType has no name")
			}
			s.complexTypes[name] = &complexType{}
		}
	}
	for _, c := range root.children {
		name, _ := attr(c, "name")
		switch c.name {
		case "annotation", "simpleType":
		case "complexType":
			ct, err := s.parseComplexType(c)
			if err != nil {
				return nil, err
			}
			*s.complexTypes[name] = *ct
		case "element":
			if name == "" {
				return nil, errors.New("parse schema: a global element has no name")
			}
			e, err := s.parseElement(c)
			if err != nil {
				return nil, err
			}
			s.elements[name] = e
		default:
			return nil, fmt.Errorf("parse schema: xs:%s: %w", c.name, ErrUnsupported)
		}
	}
	for _, f := range s.pending {
		if err := f(); err != nil {
			return nil, fmt.Errorf("parse schema: %w", err)
		}
	}
	s.pending = nil
	return s, nil
}

func (s *Schema) parseElement(n *node) (*elementDecl, error) {
	name, _ := attr(n, "name")
	for _, a := range []string{"substitutionGroup", "abstract", "nillable", "fixed", "default"} {
		if _, ok := attr(n, a); ok {
			return nil, fmt.Errorf("parse schema: element %q: attribute %s: %w", name, a, ErrUnsupported)
		}
	}
	e := &elementDecl{name: name}
	typ, hasType := attr(n, "type")
	var inline []*node
	for _, c := range n.children {
		if c.name != "annotation" {
			inline = append(inline, c)
		}
	}
	switch {
	case hasType && len(inline) > 0:
		return nil, fmt.Errorf("parse schema: element %q has both a type and an inline type", name)
	case hasType:
		if st, err := s.lookupSimple(typ); err == nil {
			e.simple = st
		} else if ct, ok := s.complexTypes[typ]; ok {
			e.complex = ct
		} else {
			return nil, fmt.Errorf("parse schema: element %q: %w", name, err)
		}
	case len(inline) == 1 && inline[0].name == "complexType":
		ct, err := s.parseComplexType(inline[0])
		if err != nil {
			return nil, fmt.Errorf("parse schema: element %q: %w", name, err)
		}
		e.complex = ct
	case len(inline) == 1 && inline[0].name == "simpleType":
		st, err := s.parseSimpleType(inline[0], name)
		if err != nil {
			return nil, err
		}
		e.simple = st
	case len(inline) == 0:
		// No type: xs:anyType. Refuse rather than accept anything.
		return nil, fmt.Errorf("parse schema: element %q has no type: %w", name, ErrUnsupported)
	default:
		return nil, fmt.Errorf("parse schema: element %q: xs:%s: %w", name, inline[0].name, ErrUnsupported)
	}
	return e, nil
}

func (s *Schema) parseComplexType(n *node) (*complexType, error) {
	ct := &complexType{attrs: map[string]*attrDecl{}}
	if m, ok := attr(n, "mixed"); ok {
		ct.mixed = m == "true" || m == "1"
	}
	for _, c := range n.children {
		switch c.name {
		case "annotation":
		case "sequence", "choice":
			if ct.content != nil {
				return nil, errors.New("complexType has two content groups")
			}
			p, err := s.parseGroup(c, 0)
			if err != nil {
				return nil, err
			}
			ct.content = p
		case "attribute":
			a, err := s.parseAttribute(c)
			if err != nil {
				return nil, err
			}
			if a != nil {
				ct.attrs[a.name] = a
			}
		default:
			return nil, fmt.Errorf("xs:%s in complexType: %w", c.name, ErrUnsupported)
		}
	}
	return ct, nil
}

func occurs(n *node) (lo, hi int, err error) {
	lo, hi = 1, 1
	if v, ok := attr(n, "minOccurs"); ok {
		if lo, err = strconv.Atoi(v); err != nil || lo < 0 {
			return 0, 0, fmt.Errorf("minOccurs %q is not a count", v)
		}
	}
	if v, ok := attr(n, "maxOccurs"); ok {
		if v == "unbounded" {
			hi = -1
		} else if hi, err = strconv.Atoi(v); err != nil || hi < 0 {
			return 0, 0, fmt.Errorf("maxOccurs %q is not a count", v)
		}
	}
	if hi >= 0 && hi < lo {
		return 0, 0, fmt.Errorf("maxOccurs %d is below minOccurs %d", hi, lo)
	}
	return lo, hi, nil
}

func (s *Schema) parseGroup(n *node, depth int) (*particle, error) {
	if depth > maxDepth {
		return nil, errors.New("groups nested too deep")
	}
	lo, hi, err := occurs(n)
	if err != nil {
		return nil, err
	}
	p := &particle{kind: pSequence, min: lo, max: hi}
	if n.name == "choice" {
		p.kind = pChoice
	}
	for _, c := range n.children {
		switch c.name {
		case "annotation":
		case "sequence", "choice":
			q, err := s.parseGroup(c, depth+1)
			if err != nil {
				return nil, err
			}
			p.children = append(p.children, q)
		case "element":
			lo, hi, err := occurs(c)
			if err != nil {
				return nil, err
			}
			q := &particle{kind: pElement, min: lo, max: hi}
			if ref, ok := attr(c, "ref"); ok {
				s.pending = append(s.pending, func() error {
					e, ok := s.elements[ref]
					if !ok {
						return fmt.Errorf("element ref %q names no global element", ref)
					}
					q.elem = e
					return nil
				})
			} else {
				e, err := s.parseElement(c)
				if err != nil {
					return nil, err
				}
				q.elem = e
			}
			p.children = append(p.children, q)
		default:
			return nil, fmt.Errorf("xs:%s in a content group: %w", c.name, ErrUnsupported)
		}
	}
	return p, nil
}

func (s *Schema) parseAttribute(n *node) (*attrDecl, error) {
	name, _ := attr(n, "name")
	if name == "" {
		return nil, fmt.Errorf("attribute without a name (ref is not supported): %w", ErrUnsupported)
	}
	a := &attrDecl{name: name}
	switch use, _ := attr(n, "use"); use {
	case "required":
		a.required = true
	case "", "optional":
	case "prohibited":
		return nil, nil
	default:
		return nil, fmt.Errorf("attribute %q: use %q is not a use", name, use)
	}
	if typ, ok := attr(n, "type"); ok {
		st, err := s.lookupSimple(typ)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", name, err)
		}
		a.typ = st
		return a, nil
	}
	for _, c := range n.children {
		if c.name == "simpleType" {
			st, err := s.parseSimpleType(c, name)
			if err != nil {
				return nil, err
			}
			a.typ = st
			return a, nil
		}
	}
	a.typ = builtins["string"]
	return a, nil
}

func (s *Schema) parseSimpleType(n *node, name string) (*simpleType, error) {
	var restr *node
	for _, c := range n.children {
		switch c.name {
		case "annotation":
		case "restriction":
			restr = c
		default:
			return nil, fmt.Errorf("parse schema: simpleType %q: xs:%s: %w", name, c.name, ErrUnsupported)
		}
	}
	if restr == nil {
		return nil, fmt.Errorf("parse schema: simpleType %q has no restriction: %w", name, ErrUnsupported)
	}
	baseName, _ := attr(restr, "base")
	base, err := s.lookupSimple(baseName)
	if err != nil {
		return nil, fmt.Errorf("parse schema: simpleType %q: %w", name, err)
	}
	st := &simpleType{name: name, base: base, maxLength: -1}
	for _, f := range restr.children {
		v, _ := attr(f, "value")
		switch f.name {
		case "annotation":
		case "pattern":
			re, err := regexp.Compile(`^(?:` + v + `)$`)
			if err != nil {
				return nil, fmt.Errorf("parse schema: simpleType %q: pattern: %w", name, err)
			}
			st.patterns = append(st.patterns, re)
		case "enumeration":
			st.enums = append(st.enums, v)
		case "minLength", "maxLength", "length":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return nil, fmt.Errorf("parse schema: simpleType %q: %s %q is not a length", name, f.name, v)
			}
			if f.name != "maxLength" {
				st.minLength = n
			}
			if f.name != "minLength" {
				st.maxLength = n
			}
		case "minInclusive", "maxInclusive":
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return nil, fmt.Errorf("parse schema: simpleType %q: %s %q is not a number", name, f.name, v)
			}
			if f.name == "minInclusive" {
				st.minIncl = &x
			} else {
				st.maxIncl = &x
			}
		default:
			return nil, fmt.Errorf("parse schema: simpleType %q: facet xs:%s: %w", name, f.name, ErrUnsupported)
		}
	}
	return st, nil
}

func (s *Schema) lookupSimple(qname string) (*simpleType, error) {
	if local, ok := strings.CutPrefix(qname, "xs:"); ok {
		if b := builtins[local]; b != nil {
			return b, nil
		}
		return nil, fmt.Errorf("built-in type %q: %w", qname, ErrUnsupported)
	}
	if st := s.simpleTypes[qname]; st != nil {
		return st, nil
	}
	return nil, fmt.Errorf("type %q is not defined", qname)
}

var builtins = map[string]*simpleType{}

func init() {
	intIn := func(lo, hi float64) func(string) error {
		return func(v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || float64(n) < lo || float64(n) > hi {
				return fmt.Errorf("%q is not an integer in [%g, %g]", v, lo, hi)
			}
			return nil
		}
	}
	decimal := regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)$`)
	def := map[string]func(string) error{
		"string":             func(string) error { return nil },
		"normalizedString":   func(v string) error { return noneOf(v, "\r\n\t") },
		"token":              token,
		"NMTOKEN":            func(v string) error { return nmtoken(strings.TrimSpace(v)) },
		"integer":            intIn(math.MinInt64, math.MaxInt64),
		"long":               intIn(math.MinInt64, math.MaxInt64),
		"int":                intIn(math.MinInt32, math.MaxInt32),
		"nonNegativeInteger": intIn(0, math.MaxInt64),
		"positiveInteger":    intIn(1, math.MaxInt64),
		"decimal": func(v string) error {
			if !decimal.MatchString(strings.TrimSpace(v)) {
				return fmt.Errorf("%q is not a decimal", v)
			}
			return nil
		},
		"boolean": func(v string) error {
			switch strings.TrimSpace(v) {
			case "true", "false", "1", "0":
				return nil
			}
			return fmt.Errorf("%q is not a boolean", v)
		},
		"dateTime": func(v string) error {
			v = strings.TrimSpace(v)
			for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04:05Z07:00"} {
				if _, err := time.Parse(layout, v); err == nil {
					return nil
				}
			}
			if _, err := time.Parse(time.RFC3339Nano, v); err == nil {
				return nil
			}
			return fmt.Errorf("%q is not an xs:dateTime", v)
		},
	}
	for name, f := range def {
		builtins[name] = &simpleType{name: "xs:" + name, builtin: f, maxLength: -1}
	}
}

func noneOf(v, chars string) error {
	if strings.ContainsAny(v, chars) {
		return fmt.Errorf("%q holds a tab or line break", v)
	}
	return nil
}

func token(v string) error {
	if err := noneOf(v, "\r\n\t"); err != nil {
		return err
	}
	if strings.TrimSpace(v) != v || strings.Contains(v, "  ") {
		return fmt.Errorf("%q has leading, trailing or double spaces", v)
	}
	return nil
}

func nmtoken(v string) error {
	if v == "" {
		return errors.New("empty NMTOKEN")
	}
	for _, r := range v {
		if !(r == '.' || r == '-' || r == '_' || r == ':' || r >= '0' && r <= '9' || r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r > 0x7f) {
			return fmt.Errorf("%q is not an NMTOKEN", v)
		}
	}
	return nil
}

func (st *simpleType) check(v string) error {
	if st.base != nil {
		if err := st.base.check(v); err != nil {
			return err
		}
	}
	if st.builtin != nil {
		return st.builtin(v)
	}
	n := utf8.RuneCountInString(v)
	if n < st.minLength || st.maxLength >= 0 && n > st.maxLength {
		return fmt.Errorf("%q has length %d, outside the type %s's bounds", v, n, st.name)
	}
	for _, re := range st.patterns {
		if !re.MatchString(v) {
			return fmt.Errorf("%q does not match the pattern of type %s", v, st.name)
		}
	}
	if len(st.enums) > 0 {
		found := false
		for _, e := range st.enums {
			found = found || e == v
		}
		if !found {
			return fmt.Errorf("%q is not one of %s", v, strings.Join(st.enums, ", "))
		}
	}
	if st.minIncl != nil || st.maxIncl != nil {
		x, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return fmt.Errorf("%q is not a number", v)
		}
		if st.minIncl != nil && x < *st.minIncl || st.maxIncl != nil && x > *st.maxIncl {
			return fmt.Errorf("%q is out of range for type %s", v, st.name)
		}
	}
	return nil
}

// Validate checks the XML document read from r. The error wraps ErrInvalid
// and names the first offending element by path, e.g.
// "/testsuites/testsuite[2]/testcase[1]".
func (s *Schema) Validate(r io.Reader) error {
	root, err := parseTree(r)
	if err != nil {
		return fmt.Errorf("%w: not well-formed XML: %v", ErrInvalid, err)
	}
	decl, ok := s.elements[root.name]
	if !ok {
		return fmt.Errorf("%w: root element <%s> is not declared", ErrInvalid, root.name)
	}
	return s.validate(root, decl, "/"+root.name)
}

func (s *Schema) validate(n *node, decl *elementDecl, where string) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalid, where, fmt.Sprintf(format, args...))
	}
	if decl.simple != nil {
		if len(n.children) > 0 {
			return fail("element of simple type has child <%s>", n.children[0].name)
		}
		for _, a := range n.attrs {
			if !isNamespaceAttr(a) {
				return fail("element of simple type has attribute %q", a.Name.Local)
			}
		}
		if err := decl.simple.check(n.text.String()); err != nil {
			return fail("%v", err)
		}
		return nil
	}
	ct := decl.complex
	for _, a := range n.attrs {
		if isNamespaceAttr(a) {
			continue
		}
		ad, ok := ct.attrs[a.Name.Local]
		if !ok || a.Name.Space != "" {
			return fail("attribute %q is not declared", a.Name.Local)
		}
		if err := ad.typ.check(a.Value); err != nil {
			return fail("attribute %q: %v", a.Name.Local, err)
		}
	}
	for name, ad := range ct.attrs {
		if _, ok := attr(n, name); ad.required && !ok {
			return fail("required attribute %q is missing", name)
		}
	}
	if !ct.mixed && strings.TrimSpace(n.text.String()) != "" {
		return fail("text is not allowed in element-only content")
	}
	matched := make([]*elementDecl, len(n.children))
	if ct.content == nil {
		if len(n.children) > 0 {
			return fail("no child elements allowed, found <%s>", n.children[0].name)
		}
	} else {
		end, ok := match(ct.content, n.children, 0, matched)
		if !ok || end < len(n.children) {
			if end < len(n.children) {
				return fail("child <%s> (number %d) is not allowed here", n.children[end].name, end+1)
			}
			return fail("children do not satisfy the content model (a required element is missing)")
		}
	}
	counts := map[string]int{}
	for i, c := range n.children {
		counts[c.name]++
		if err := s.validate(c, matched[i], fmt.Sprintf("%s/%s[%d]", where, c.name, counts[c.name])); err != nil {
			return err
		}
	}
	return nil
}

func isNamespaceAttr(a xml.Attr) bool {
	return a.Name.Space == "xmlns" || a.Name.Local == "xmlns" ||
		a.Name.Space == "http://www.w3.org/2001/XMLSchema-instance" || a.Name.Space == "xsi"
}

// match consumes children from pos according to p, greedily, recording the
// declaration each consumed child matched. It reports the position after the
// last consumed child and whether p's minimum occurrences were met.
func match(p *particle, children []*node, pos int, matched []*elementDecl) (int, bool) {
	n := 0
	for p.max < 0 || n < p.max {
		next, ok := matchOnce(p, children, pos, matched)
		if !ok || next == pos {
			// No progress: an empty match satisfies any remaining minimum.
			if ok && next == pos {
				n = max(n, p.min)
			}
			break
		}
		pos = next
		n++
	}
	return pos, n >= p.min
}

func matchOnce(p *particle, children []*node, pos int, matched []*elementDecl) (int, bool) {
	switch p.kind {
	case pElement:
		if pos < len(children) && children[pos].name == p.elem.name {
			matched[pos] = p.elem
			return pos + 1, true
		}
		return pos, false
	case pSequence:
		for _, c := range p.children {
			next, ok := match(c, children, pos, matched)
			if !ok {
				return pos, false
			}
			pos = next
		}
		return pos, true
	default: // choice: the first branch that consumes something, else one that may be empty
		empty := false
		for _, c := range p.children {
			next, ok := match(c, children, pos, matched)
			if ok && next > pos {
				return next, true
			}
			empty = empty || ok
		}
		return pos, empty
	}
}
