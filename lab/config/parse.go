package config

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// MaxFileSize bounds a lab.yaml: far more than any real configuration,
// small enough that a wrong file cannot exhaust memory.
const MaxFileSize = 1 << 20

// FileName is the configuration Load looks for in the working directory.
const FileName = "lab.yaml"

//go:embed default.yaml
var defaultYAML []byte

// DefaultYAML returns the embedded default configuration: two virtual
// devices, the model stub, the whole suite.
func DefaultYAML() []byte { return append([]byte(nil), defaultYAML...) }

// Default returns the embedded default configuration, parsed.
func Default() *Config {
	c, err := parse(defaultYAML, DefaultSource, nil, nil)
	if err != nil {
		// The embedded file is checked by the package's tests.
		panic("config: embedded default: " + err.Error())
	}
	return c
}

// ErrInvalid is wrapped by every *Error.
var ErrInvalid = errors.New("invalid lab configuration")

// Problem is one thing wrong with a configuration.
type Problem struct {
	File string
	// Line is 0 when the field was not in the file (a default broke a
	// rule together with a field that was).
	Line int
	// Field is the field's path ("devices.virtual.count"); empty for the
	// document.
	Field string
	Msg   string
}

func (p Problem) String() string {
	pos := p.File
	if p.Line > 0 {
		pos += ":" + strconv.Itoa(p.Line)
	}
	if p.Field == "" {
		return pos + ": " + p.Msg
	}
	return pos + ": " + p.Field + ": " + p.Msg
}

// Error lists every problem of a configuration. It wraps ErrInvalid.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Is makes errors.Is(err, ErrInvalid) hold.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// Options tune Parse and Load. The zero value (or nil) works.
type Options struct {
	// LookupEnv resolves ${NAME} interpolations and model keys; nil
	// means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

func (o *Options) lookup() func(string) (string, bool) {
	if o == nil || o.LookupEnv == nil {
		return os.LookupEnv
	}
	return o.LookupEnv
}

// Parse reads a lab.yaml from r; name is used in messages ("lab.yaml",
// a path). See the package doc for the rules.
func Parse(r io.Reader, name string, opts *Options) (*Config, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > MaxFileSize {
		return nil, &Error{Problems: []Problem{{File: name, Msg: fmt.Sprintf("larger than %d bytes", MaxFileSize)}}}
	}
	return parse(data, name, Default(), opts.lookup())
}

// Load reads the configuration at path. An empty path means lab.yaml in
// the working directory if there is one, else the embedded default.
func Load(path string, opts *Options) (*Config, error) {
	if path == "" {
		if _, err := os.Stat(FileName); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return Default(), nil
			}
			return nil, fmt.Errorf("load config: %w", err)
		}
		path = FileName
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load config: %w", err)
	}
	defer f.Close()
	return Parse(f, path, opts)
}

// parse decodes data over base (nil: the zero configuration).
func parse(data []byte, name string, base *Config, lookup func(string) (string, bool)) (*Config, error) {
	p := &parser{file: name, lookup: lookup, lines: map[string]int{}}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, &Error{Problems: []Problem{p.yamlProblem(err)}}
	}
	c := &Config{}
	if base != nil {
		*c = *base
	}
	c.Source = name
	c.lines = p.lines
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		root := doc.Content[0]
		if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
			root = nil
		}
		if root != nil {
			p.decodeRoot(root, c)
		}
	}
	if len(p.problems) > 0 {
		return nil, &Error{Problems: p.problems}
	}
	c.fill()
	c.validate(p)
	if len(p.problems) > 0 {
		return nil, &Error{Problems: p.problems}
	}
	return c, nil
}

type parser struct {
	file     string
	lookup   func(string) (string, bool)
	lines    map[string]int
	problems []Problem
}

func (p *parser) add(line int, field, format string, args ...any) {
	p.problems = append(p.problems, Problem{File: p.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// yamlProblem turns a yaml syntax error into a Problem with its line.
func (p *parser) yamlProblem(err error) Problem {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		n, _ := strconv.Atoi(m[1])
		return Problem{File: p.file, Line: n, Msg: m[2]}
	}
	return Problem{File: p.file, Msg: strings.TrimPrefix(msg, "yaml: ")}
}

var (
	configType   = reflect.TypeFor[Config]()
	modelType    = reflect.TypeFor[Model]()
	durationType = reflect.TypeFor[Duration]()
)

// decodeRoot checks the document against Config, then decodes each
// top-level section present over the defaults, replacing that section.
func (p *parser) decodeRoot(root *yaml.Node, c *Config) {
	p.interpolate(root)
	if !p.check(root, configType, "") {
		return
	}
	if len(p.problems) > 0 {
		return
	}
	v := reflect.ValueOf(c).Elem()
	for i := 0; i+1 < len(root.Content); i += 2 {
		key, val := root.Content[i], root.Content[i+1]
		f, ok := fieldByTag(configType, key.Value)
		if !ok {
			continue
		}
		fv := v.FieldByIndex(f.Index)
		fv.Set(reflect.Zero(fv.Type()))
		if err := val.Decode(fv.Addr().Interface()); err != nil {
			p.decodeProblem(err, key.Value, val.Line)
		}
	}
}

func (p *parser) decodeProblem(err error, field string, line int) {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		for _, e := range te.Errors {
			pr := p.yamlProblem(errors.New("yaml: " + e))
			pr.Field = field
			p.problems = append(p.problems, pr)
		}
		return
	}
	p.add(line, field, "%v", err)
}

// fieldByTag finds the struct field whose yaml name is name.
func fieldByTag(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func yamlName(f reflect.StructField) string {
	tag := f.Tag.Get("yaml")
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" || !f.IsExported() {
		return ""
	}
	return name
}

func yamlNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		if n := yamlName(t.Field(i)); n != "" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if isNull(n) {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// check walks n against type t: unknown and repeated keys, wrong shapes,
// integers and booleans that do not parse, durations. It records every
// field's line. It reports whether n has the right shape at all.
func (p *parser) check(n *yaml.Node, t reflect.Type, path string) bool {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	for t.Kind() == reflect.Pointer {
		if isNull(n) {
			return true
		}
		t = t.Elem()
	}
	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode || isNull(n) {
			p.add(n.Line, path, "want a duration such as 30s or 5m, got %s", kindName(n))
			return false
		}
		d, err := time.ParseDuration(n.Value)
		if err != nil {
			p.add(n.Line, path, "want a duration such as 30s or 5m, got %q", n.Value)
			return false
		}
		if d <= 0 {
			p.add(n.Line, path, "must be positive, got %s", n.Value)
			return false
		}
		return true
	case t == modelType && n.Kind == yaml.ScalarNode && !isNull(n):
		// "model: stub" is the shorthand for "model: {mode: stub}".
		return true
	}
	switch t.Kind() {
	case reflect.Struct:
		if isNull(n) {
			return true
		}
		if n.Kind != yaml.MappingNode {
			p.add(n.Line, path, "want a mapping, got %s", kindName(n))
			return false
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				p.add(k.Line, path, "keys must be plain words")
				continue
			}
			fp := join(path, k.Value)
			if first, dup := seen[k.Value]; dup {
				p.add(k.Line, fp, "repeated key (first at line %d)", first)
				continue
			}
			seen[k.Value] = k.Line
			p.lines[fp] = k.Line
			f, ok := fieldByTag(t, k.Value)
			if !ok {
				p.unknownKey(k, t, path)
				continue
			}
			p.check(v, f.Type, fp)
		}
		return true
	case reflect.Map:
		if isNull(n) {
			return true
		}
		if n.Kind != yaml.MappingNode {
			p.add(n.Line, path, "want a mapping, got %s", kindName(n))
			return false
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				p.add(k.Line, path, "keys must be plain words")
				continue
			}
			fp := join(path, k.Value)
			if first, dup := seen[k.Value]; dup {
				p.add(k.Line, fp, "repeated key (first at line %d)", first)
				continue
			}
			seen[k.Value] = k.Line
			p.lines[fp] = k.Line
			p.check(v, t.Elem(), fp)
		}
		return true
	case reflect.Slice:
		if isNull(n) {
			return true
		}
		if n.Kind != yaml.SequenceNode {
			p.add(n.Line, path, "want a list, got %s", kindName(n))
			return false
		}
		for i, e := range n.Content {
			ep := fmt.Sprintf("%s[%d]", path, i)
			p.lines[ep] = e.Line
			p.check(e, t.Elem(), ep)
		}
		return true
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			p.add(n.Line, path, "want text, got %s", kindName(n))
			return false
		}
		return true
	case reflect.Int:
		if n.Kind != yaml.ScalarNode || isNull(n) {
			p.add(n.Line, path, "want an integer, got %s", kindName(n))
			return false
		}
		if _, err := strconv.Atoi(n.Value); err != nil || n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
			p.add(n.Line, path, "want an integer, got %q", n.Value)
			return false
		}
		return true
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			p.add(n.Line, path, "want true or false, got %s", kindName(n))
			return false
		}
		return true
	}
	return true
}

func (p *parser) unknownKey(k *yaml.Node, t reflect.Type, path string) {
	fp := join(path, k.Value)
	names := yamlNames(t)
	switch lower := strings.ToLower(k.Value); {
	case t == modelType && (strings.Contains(lower, "key") || strings.Contains(lower, "token") || strings.Contains(lower, "secret")):
		p.add(k.Line, fp, "lab.yaml never holds a key: name the environment variable that holds it with keyEnv: NAME")
		return
	}
	if s := suggest(k.Value, names); s != "" {
		p.add(k.Line, fp, "unknown key (did you mean %q?)", s)
		return
	}
	p.add(k.Line, fp, "unknown key (known: %s)", strings.Join(names, ", "))
}

// suggest returns the known name closest to s, if it is close.
func suggest(s string, names []string) string {
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), strings.ToLower(n)); d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

// interpolate expands ${NAME} and ${NAME:-default} in every scalar value
// (never in keys).
func (p *parser) interpolate(n *yaml.Node) {
	switch n.Kind {
	case yaml.ScalarNode:
		if !strings.Contains(n.Value, "$") {
			return
		}
		v, err := Interpolate(n.Value, p.lookup)
		if err != nil {
			p.add(n.Line, "", "%v", err)
			return
		}
		if v != n.Value {
			n.Value = v
			if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
				// A plain scalar's type follows its new value
				// ("count: ${N:-2}" is an integer).
				n.Tag = ""
			}
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			p.interpolate(n.Content[i])
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			p.interpolate(c)
		}
	}
}

// ErrUnsetVariable is wrapped by Interpolate's error for ${NAME} without
// a default when NAME is unset.
var ErrUnsetVariable = errors.New("environment variable not set")

var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Interpolate expands ${NAME}, ${NAME:-default} and $$ in s. A $ followed
// by anything else is kept as it is.
func Interpolate(s string, lookup func(string) (string, bool)) (string, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '$' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
			continue
		case '{':
		default:
			b.WriteByte(c)
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q (write $$ for a literal $)", s)
		}
		expr := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !envName.MatchString(name) {
			return "", fmt.Errorf("${%s}: %q is not a variable name", expr, name)
		}
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", fmt.Errorf("${%s}: %w (export it, or give a default: ${%s:-value})", name, ErrUnsetVariable, name)
		}
		b.WriteString(v)
		i += 2 + end
	}
	return b.String(), nil
}

// UnmarshalYAML reads a Go duration string.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s, got %q", n.Value)
	}
	*d = Duration(v)
	return nil
}

// UnmarshalYAML accepts "stub" or "live" as a shorthand for the mode.
func (m *Model) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		*m = Model{Mode: n.Value}
		return nil
	}
	type plain Model
	return n.Decode((*plain)(m))
}
