package config

import (
	"fmt"
	"strings"
)

// MaxTagExprLen bounds a tag expression (it also comes from command
// lines).
const MaxTagExprLen = 1024

// maxTagDepth bounds nesting, so a hostile expression cannot exhaust the
// stack.
const maxTagDepth = 64

// TagExpr is a parsed tag expression.
type TagExpr interface {
	// Eval reports whether a scenario with these tags satisfies the
	// expression.
	Eval(tags map[string]bool) bool
	String() string
}

type (
	tagLit struct{ name string }
	tagNot struct{ x TagExpr }
	tagAnd struct{ l, r TagExpr }
	tagOr  struct{ l, r TagExpr }
)

func (t tagLit) Eval(m map[string]bool) bool { return m[t.name] }
func (t tagNot) Eval(m map[string]bool) bool { return !t.x.Eval(m) }
func (t tagAnd) Eval(m map[string]bool) bool { return t.l.Eval(m) && t.r.Eval(m) }
func (t tagOr) Eval(m map[string]bool) bool  { return t.l.Eval(m) || t.r.Eval(m) }
func (t tagLit) String() string              { return t.name }
func (t tagNot) String() string              { return "!" + t.x.String() }
func (t tagAnd) String() string              { return "(" + t.l.String() + " && " + t.r.String() + ")" }
func (t tagOr) String() string               { return "(" + t.l.String() + " || " + t.r.String() + ")" }

// ParseTagExpr parses a tag expression:
//
//	expr := and ("||" and)*
//	and  := not ("&&" not)*
//	not  := "!" not | "(" expr ")" | TAG
//
// TAG is [A-Za-z0-9_.:/-]+. Errors name the column.
func ParseTagExpr(s string) (TagExpr, error) {
	if len(s) > MaxTagExprLen {
		return nil, fmt.Errorf("tag expression longer than %d bytes", MaxTagExprLen)
	}
	p := &tagParser{s: s}
	e, err := p.or(0)
	if err != nil {
		return nil, err
	}
	p.space()
	if p.i < len(p.s) {
		return nil, p.errf("unexpected %q", p.s[p.i:])
	}
	return e, nil
}

type tagParser struct {
	s string
	i int
}

func (p *tagParser) errf(format string, args ...any) error {
	return fmt.Errorf("tag expression %q, column %d: %s", p.s, p.i+1, fmt.Sprintf(format, args...))
}

func (p *tagParser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *tagParser) eat(tok string) bool {
	p.space()
	if strings.HasPrefix(p.s[p.i:], tok) {
		p.i += len(tok)
		return true
	}
	return false
}

func (p *tagParser) or(depth int) (TagExpr, error) {
	l, err := p.and(depth)
	if err != nil {
		return nil, err
	}
	for p.eat("||") {
		r, err := p.and(depth)
		if err != nil {
			return nil, err
		}
		l = tagOr{l, r}
	}
	return l, nil
}

func (p *tagParser) and(depth int) (TagExpr, error) {
	l, err := p.not(depth)
	if err != nil {
		return nil, err
	}
	for p.eat("&&") {
		r, err := p.not(depth)
		if err != nil {
			return nil, err
		}
		l = tagAnd{l, r}
	}
	return l, nil
}

func isTagByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
		c == '_' || c == '.' || c == ':' || c == '/' || c == '-'
}

func (p *tagParser) not(depth int) (TagExpr, error) {
	if depth > maxTagDepth {
		return nil, p.errf("nested deeper than %d", maxTagDepth)
	}
	if p.eat("!") {
		x, err := p.not(depth + 1)
		if err != nil {
			return nil, err
		}
		return tagNot{x}, nil
	}
	if p.eat("(") {
		x, err := p.or(depth + 1)
		if err != nil {
			return nil, err
		}
		if !p.eat(")") {
			return nil, p.errf("missing )")
		}
		return x, nil
	}
	p.space()
	start := p.i
	for p.i < len(p.s) && isTagByte(p.s[p.i]) {
		p.i++
	}
	if p.i == start {
		if p.i == len(p.s) {
			return nil, p.errf("expression ends where a tag was expected")
		}
		return nil, p.errf("want a tag, !, or (, got %q", p.s[p.i:p.i+1])
	}
	return tagLit{p.s[start:p.i]}, nil
}
