package config

import (
	_ "embed"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/internal/strictyaml"
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

// Problem is one thing wrong with a configuration, at its file:line:col
// (no line when the field was not in the file: a default broke a rule
// together with a field that was).
type Problem = strictyaml.Problem

// Error lists every problem of a configuration. It wraps ErrInvalid.
type Error = strictyaml.Error

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
		return nil, &Error{Problems: []Problem{{File: name, Msg: fmt.Sprintf("larger than %d bytes", MaxFileSize)}}, Kind: ErrInvalid}
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

// parse decodes data over base (nil: the zero configuration): every
// top-level section written replaces the default's.
func parse(data []byte, name string, base *Config, lookup func(string) (string, bool)) (*Config, error) {
	root, prob := strictyaml.ParseDocument(data, name)
	if prob != nil {
		return nil, &Error{Problems: []Problem{*prob}, Kind: ErrInvalid}
	}
	d := strictyaml.NewDecoder(strictyaml.Options{File: name, Types: decodeTypes, AllowAliases: true, NullIsZero: true, UnknownKey: keyHint})
	c := &Config{}
	if base != nil {
		*c = *base
	}
	c.Source = name
	if root != nil && !strictyaml.IsNull(root) {
		p := &parser{d: d, lookup: lookup}
		p.interpolate(root)
		if len(d.Problems()) == 0 {
			decodeRoot(d, root, c)
		}
	}
	c.lines = d.Positions()
	if err := d.Err(ErrInvalid); err != nil {
		return nil, err
	}
	c.fill()
	c.validate(d)
	if err := d.Err(ErrInvalid); err != nil {
		return nil, err
	}
	return c, nil
}

type parser struct {
	d      *strictyaml.Decoder
	lookup func(string) (string, bool)
}

// decodeTypes are the configuration's own YAML forms.
var decodeTypes = map[reflect.Type]strictyaml.DecodeFunc{
	reflect.TypeFor[Duration](): decodeDuration,
	reflect.TypeFor[Model]():    decodeModel,
}

var configType = reflect.TypeFor[Config]()

// decodeRoot decodes the document into a fresh Config, then copies each
// top-level section written over c.
func decodeRoot(d *strictyaml.Decoder, root *yaml.Node, c *Config) {
	var fresh Config
	before := len(d.Problems())
	d.Decode(root, &fresh, "")
	if len(d.Problems()) > before || root.Kind != yaml.MappingNode {
		return
	}
	dst, src := reflect.ValueOf(c).Elem(), reflect.ValueOf(&fresh).Elem()
	for i := 0; i+1 < len(root.Content); i += 2 {
		if idx, ok := strictyaml.FieldIndex(configType, root.Content[i].Value); ok {
			dst.FieldByIndex(idx).Set(src.FieldByIndex(idx))
		}
	}
}

// keyHint words an unknown key of the model that looks like a secret.
func keyHint(t reflect.Type, key string) string {
	lower := strings.ToLower(key)
	if t == reflect.TypeFor[Model]() && (strings.Contains(lower, "key") || strings.Contains(lower, "token") || strings.Contains(lower, "secret")) {
		return "lab.yaml never holds a key: name the environment variable that holds it with keyEnv: NAME"
	}
	return ""
}

// decodeDuration reads a positive Go duration string.
func decodeDuration(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode || strictyaml.IsNull(n) {
		d.Addf(n, path, "want a duration such as 30s or 5m, got %s", strictyaml.Describe(n))
		return
	}
	x, err := time.ParseDuration(n.Value)
	if err != nil {
		d.Addf(n, path, "want a duration such as 30s or 5m, got %q", n.Value)
		return
	}
	if x <= 0 {
		d.Addf(n, path, "must be positive, got %s", n.Value)
		return
	}
	v.SetInt(int64(x))
}

// decodeModel accepts a mode ("stub", "live", "chaos") as a shorthand.
func decodeModel(d *strictyaml.Decoder, n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.ScalarNode && !strictyaml.IsNull(n) {
		v.Set(reflect.ValueOf(Model{Mode: n.Value}))
		return
	}
	d.DecodeStruct(n, v, path)
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
			p.d.Addf(n, "", "%v", err)
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
