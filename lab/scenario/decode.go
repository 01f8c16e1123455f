package scenario

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"
)

// pos is a position in a file, 1-based.
type pos struct{ line, col int }

func (p pos) String(file string) string {
	if file == "" {
		file = "<scenario>"
	}
	return fmt.Sprintf("%s:%d:%d", file, p.line, p.col)
}

// positions maps field paths ("steps[2].wait.timeout") to where their
// key was written.
type positions map[string]pos

// decoder turns a yaml.Node tree into the scenario types strictly: every
// unknown or repeated key, wrong type and alias is a problem with its
// position, and decoding goes on so that one pass reports them all.
type decoder struct {
	file     string
	pos      positions
	problems []Problem
}

func (d *decoder) addf(n *yaml.Node, path, format string, args ...any) {
	line, col := 0, 0
	if n != nil {
		line, col = n.Line, n.Column
	}
	d.problems = append(d.problems, Problem{File: d.file, Line: line, Col: col, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// nodeDecoder is implemented by types with their own YAML forms. Only
// the exact types in customTypes use it: the method is promoted into
// structs that embed Matcher, which decode field by field.
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, path string)
}

var customTypes = map[reflect.Type]bool{
	reflect.TypeFor[Duration](): true,
	reflect.TypeFor[Value]():    true,
	reflect.TypeFor[Devices]():  true,
	reflect.TypeFor[Model]():    true,
	reflect.TypeFor[Matcher]():  true,
	reflect.TypeFor[Step]():     true,
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// decode decodes n into v (addressable).
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		d.addf(n, path, "anchors and aliases are not allowed")
		return
	}
	if customTypes[v.Type()] && v.CanAddr() {
		v.Addr().Interface().(nodeDecoder).decodeNode(d, n, path)
		return
	}
	if v.Kind() == reflect.Pointer {
		if isNull(n) {
			return
		}
		nv := reflect.New(v.Type().Elem())
		before := len(d.problems)
		d.decode(n, nv.Elem(), path)
		if len(d.problems) == before {
			v.Set(nv)
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		d.decodeSlice(n, v, path)
	case reflect.Map:
		d.decodeMap(n, v, path)
	case reflect.String:
		if s, ok := d.scalarString(n, path); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			d.addf(n, path, "want true or false, got %s", describe(n))
			return
		}
		b, _ := strconv.ParseBool(strings.ToLower(n.Value))
		v.SetBool(b)
	case reflect.Int:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			d.addf(n, path, "want an integer, got %s", describe(n))
			return
		}
		i, err := strconv.ParseInt(n.Value, 0, 32)
		if err != nil {
			d.addf(n, path, "integer out of range: %s", n.Value)
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		f, ok := number(n)
		if !ok {
			d.addf(n, path, "want a number, got %s", describe(n))
			return
		}
		v.SetFloat(f)
	default:
		panic("scenario: no decoding for " + v.Type().String())
	}
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func number(n *yaml.Node) (float64, bool) {
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		return 0, false
	}
	var f float64
	if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, false
	}
	return f, true
}

// scalarString accepts any non-null scalar as text (a number or a bool in
// an argument list is meant as its text).
func (d *decoder) scalarString(n *yaml.Node, path string) (string, bool) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.addf(n, path, "want a string, got %s", describe(n))
		return "", false
	}
	return n.Value, true
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	switch n.ShortTag() {
	case "!!null":
		return "nothing (null)"
	case "!!str":
		return strconv.Quote(clip(n.Value, 40))
	}
	return clip(n.Value, 40)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// structField is one YAML key of a struct, possibly inside an inlined
// struct.
type structField struct {
	index []int
}

var fieldCache sync.Map // reflect.Type → map[string]structField

// fieldsOf returns the YAML keys of t, inlined structs flattened.
func fieldsOf(t reflect.Type) map[string]structField {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string]structField)
	}
	m := map[string]structField{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			if tag == "-" || !f.IsExported() {
				continue
			}
			name, opt, _ := strings.Cut(tag, ",")
			idx := append(slices.Clone(prefix), i)
			if opt == "inline" {
				walk(f.Type, idx)
				continue
			}
			if name == "" {
				panic("scenario: field without a yaml name: " + t.String() + "." + f.Name)
			}
			m[name] = structField{index: idx}
		}
	}
	walk(t, nil)
	fieldCache.Store(t, m)
	return m
}

// Keys returns the YAML keys of t, sorted.
func keysOf(t reflect.Type) []string {
	m := fieldsOf(t)
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.addf(n, path, "want a mapping, got %s", describe(n))
		return
	}
	fields := fieldsOf(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.addf(k, path, "keys must be strings")
			continue
		}
		key := k.Value
		kp := join(path, key)
		if seen[key] {
			d.addf(k, kp, "repeated key %q", key)
			continue
		}
		seen[key] = true
		f, ok := fields[key]
		if !ok {
			msg := fmt.Sprintf("unknown field %q", key)
			if s := suggest(key, keysOf(v.Type())); s != "" {
				msg += fmt.Sprintf(" (did you mean %q?)", s)
			}
			d.addf(k, kp, "%s", msg)
			continue
		}
		d.pos[kp] = pos{k.Line, k.Column}
		d.decode(val, v.FieldByIndex(f.index), kp)
	}
}

func (d *decoder) decodeSlice(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.ScalarNode && !isNull(n) && v.Type().Elem().Kind() == reflect.String {
		// A single string stands for a list of one: reset: notes.
		v.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, 1), reflect.ValueOf(n.Value).Convert(v.Type().Elem())))
		return
	}
	if n.Kind != yaml.SequenceNode {
		d.addf(n, path, "want a list, got %s", describe(n))
		return
	}
	s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
	for i, e := range n.Content {
		ip := index(path, i)
		d.pos[ip] = pos{e.Line, e.Column}
		d.decode(e, s.Index(i), ip)
	}
	v.Set(s)
}

func (d *decoder) decodeMap(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.addf(n, path, "want a mapping, got %s", describe(n))
		return
	}
	m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.addf(k, path, "keys must be strings")
			continue
		}
		kp := join(path, k.Value)
		if m.MapIndex(reflect.ValueOf(k.Value)).IsValid() {
			d.addf(k, kp, "repeated key %q", k.Value)
			continue
		}
		d.pos[kp] = pos{k.Line, k.Column}
		e := reflect.New(v.Type().Elem()).Elem()
		d.decode(val, e, kp)
		m.SetMapIndex(reflect.ValueOf(k.Value), e)
	}
	v.Set(m)
}

// decodeNode reads a Go duration string ("15s").
func (dur *Duration) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind != yaml.ScalarNode || isNull(n) {
		d.addf(n, path, "want a duration like 15s or 2m, got %s", describe(n))
		return
	}
	if n.Value == "0" {
		*dur = 0
		return
	}
	x, err := time.ParseDuration(n.Value)
	if err != nil {
		d.addf(n, path, "want a duration like 15s or 2m, got %s", describe(n))
		return
	}
	if x < 0 {
		d.addf(n, path, "duration must not be negative, got %s", n.Value)
		return
	}
	*dur = Duration(x)
}

// maxValueDepth bounds the nesting of free-form values.
const maxValueDepth = 32

// decodeNode reads any YAML value as its JSON equivalent.
func (val *Value) decodeNode(d *decoder, n *yaml.Node, path string) {
	v, ok := d.anyValue(n, path, 0)
	if ok {
		val.V = v
	}
}

func (d *decoder) anyValue(n *yaml.Node, path string, depth int) (any, bool) {
	if depth > maxValueDepth {
		d.addf(n, path, "value nested deeper than %d levels", maxValueDepth)
		return nil, false
	}
	if n.Kind == yaml.AliasNode || n.Anchor != "" {
		d.addf(n, path, "anchors and aliases are not allowed")
		return nil, false
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		ok := true
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if k.Kind != yaml.ScalarNode {
				d.addf(k, path, "keys must be strings")
				ok = false
				continue
			}
			if _, dup := m[k.Value]; dup {
				d.addf(k, join(path, k.Value), "repeated key %q", k.Value)
				ok = false
				continue
			}
			e, eok := d.anyValue(n.Content[i+1], join(path, k.Value), depth+1)
			ok = ok && eok
			m[k.Value] = e
		}
		return m, ok
	case yaml.SequenceNode:
		l := make([]any, len(n.Content))
		ok := true
		for i, e := range n.Content {
			var eok bool
			l[i], eok = d.anyValue(e, index(path, i), depth+1)
			ok = ok && eok
		}
		return l, ok
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!null":
			return nil, true
		case "!!bool":
			b, _ := strconv.ParseBool(strings.ToLower(n.Value))
			return b, true
		case "!!int", "!!float":
			f, ok := number(n)
			if !ok {
				d.addf(n, path, "not a finite number: %s", n.Value)
				return nil, false
			}
			return f, true
		case "!!str", "!!timestamp":
			return n.Value, true
		}
		d.addf(n, path, "unsupported value %s", describe(n))
		return nil, false
	}
	d.addf(n, path, "unsupported value")
	return nil, false
}

// decodeNode reads a count (devices: 2) or role names (devices: [a, b]).
func (ds *Devices) decodeNode(d *decoder, n *yaml.Node, path string) {
	switch {
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int":
		i, err := strconv.Atoi(n.Value)
		if err != nil {
			d.addf(n, path, "want a device count or a list of roles, got %s", describe(n))
			return
		}
		ds.Count = i
	case n.Kind == yaml.SequenceNode:
		d.decodeSlice(n, reflect.ValueOf(&ds.Names).Elem(), path)
		ds.Count = len(ds.Names)
	default:
		d.addf(n, path, "want a device count or a list of roles, got %s", describe(n))
	}
}

// decodeNode reads "live" or a mapping.
func (m *Model) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
		if n.Value != ModelLive {
			d.addf(n, path, "want live, or a mapping with script or file, got %s", describe(n))
			return
		}
		m.Live = true
		return
	}
	d.decodeStruct(n, reflect.ValueOf(m).Elem(), path)
}

// decodeNode reads a matcher, or a bare value meaning eq (len: 3).
func (m *Matcher) decodeNode(d *decoder, n *yaml.Node, path string) {
	if n.Kind != yaml.MappingNode {
		var v Value
		v.decodeNode(d, n, path)
		m.Eq = &v
		return
	}
	d.decodeStruct(n, reflect.ValueOf(m).Elem(), path)
}

// decodeNode reads a step and works out its kind from the keys written.
func (s *Step) decodeNode(d *decoder, n *yaml.Node, path string) {
	d.decodeStruct(n, reflect.ValueOf(s).Elem(), path)
	if n.Kind != yaml.MappingNode {
		return
	}
	var kinds []string
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := n.Content[i].Value; slices.Contains(StepKinds, k) && !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	switch len(kinds) {
	case 0:
		d.addf(n, path, "a step needs one kind: %s", strings.Join(StepKinds, ", "))
	case 1:
		s.kind = kinds[0]
		if !s.hasValue() {
			before := len(d.problems)
			for _, p := range d.problems[:before] {
				if p.Path == join(path, s.kind) {
					return // its decoding problem is reported
				}
			}
			d.addf(n, join(path, s.kind), "%s needs a value", s.kind)
		}
	default:
		d.addf(n, path, "a step has one kind, this one has %s", strings.Join(kinds, " and "))
	}
}

// hasValue reports whether the field of the step's kind was decoded.
func (s *Step) hasValue() bool {
	switch s.kind {
	case KindReset:
		return s.Reset != nil
	case KindSeed:
		return s.Seed != nil
	case KindApp:
		return s.App != nil
	case KindCallers:
		return s.Callers != nil
	case KindAsk:
		return s.Ask != nil
	case KindPrompt:
		return s.Prompt != nil
	case KindConsent:
		return s.Consent != nil
	case KindTap:
		return s.Tap != nil
	case KindApproval:
		return s.Approval != nil
	case KindPlugins:
		return s.Plugins != nil
	case KindTools:
		return s.Tools != nil
	case KindWait:
		return s.Wait != nil
	case KindRun:
		return s.Run != nil
	case KindCheck:
		return s.Check != nil
	}
	return true
}

// suggest returns the closest of keys to k when it is close enough.
func suggest(k string, keys []string) string {
	best, bestD := "", 3
	for _, c := range keys {
		if dist := editDistance(strings.ToLower(k), strings.ToLower(c)); dist < bestD {
			best, bestD = c, dist
		}
	}
	return best
}

func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 99
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			c := 1
			if a[i-1] == b[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
