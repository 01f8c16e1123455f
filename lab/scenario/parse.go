package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/agentoslab/agentlab/runtime/model/script"
	"gopkg.in/yaml.v3"
)

// MaxFileSize bounds a scenario file.
const MaxFileSize = 1 << 20

// ErrInvalid is wrapped by every *Error.
var ErrInvalid = errors.New("invalid scenario")

// Problem is one thing wrong with a scenario, at a position in its file.
type Problem struct {
	File string
	// Line and Col are 1-based; 0 when the problem concerns the whole
	// file.
	Line, Col int
	// Path is the field ("steps[2].wait.timeout"); empty for the document.
	Path string
	Msg  string
}

func (p Problem) String() string {
	var b strings.Builder
	file := p.File
	if file == "" {
		file = "<scenario>"
	}
	b.WriteString(file)
	if p.Line > 0 {
		fmt.Fprintf(&b, ":%d:%d", p.Line, p.Col)
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error lists every problem found. It wraps ErrInvalid.
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

// Options tune Parse. The zero value (or nil) works.
type Options struct {
	// ReadFile reads model script files (model.file); nil means
	// os.ReadFile.
	ReadFile func(name string) ([]byte, error)
}

var schemaComment = regexp.MustCompile(`(?m)^#\s*yaml-language-server:\s*\$schema=(\S+)`)
var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// Parse reads and validates one scenario document; file names it in
// messages and anchors model.file. Every problem is reported, each with
// its file:line:column, in one *Error.
func Parse(data []byte, file string, opts *Options) (s *Scenario, err error) {
	if opts == nil {
		opts = &Options{}
	}
	d := &decoder{file: file, pos: positions{}}
	fail := func() (*Scenario, error) {
		slices.SortStableFunc(d.problems, func(a, b Problem) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Col - b.Col
		})
		return nil, &Error{Problems: d.problems}
	}
	if len(data) > MaxFileSize {
		d.addf(nil, "", "larger than %d bytes", MaxFileSize)
		return fail()
	}
	root, perr := parseYAML(data)
	if perr != nil {
		p := Problem{File: file, Msg: perr.Error()}
		if m := yamlLine.FindStringSubmatch(perr.Error()); m != nil {
			p.Line, _ = strconv.Atoi(m[1])
			p.Col, p.Msg = 1, m[2]
		}
		d.problems = append(d.problems, p)
		return fail()
	}
	if root == nil {
		d.addf(nil, "", "empty document: a scenario needs at least a name and steps")
		return fail()
	}
	s = &Scenario{File: file}
	d.pos[""] = pos{root.Line, root.Column}
	if m := schemaComment.FindSubmatch(data); m != nil {
		s.Schema = string(m[1])
	}
	d.decode(root, reflectValue(s), "")
	s.pos = d.pos
	v := &validator{s: s, d: d, opts: opts}
	v.validate()
	if len(d.problems) > 0 {
		return fail()
	}
	return s, nil
}

// parseYAML reads exactly one YAML document, turning the parser's panics
// on hostile input into errors.
func parseYAML(data []byte) (n *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			n, err = nil, fmt.Errorf("yaml: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, fmt.Errorf("yaml: line %d: a scenario file holds one document", extra.Line)
	} else if !errors.Is(err, io.EOF) {
		return nil, err
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) == 1 {
		return doc.Content[0], nil
	}
	return nil, nil
}

// Load reads the scenario file at path.
func Load(path string) (*Scenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return Parse(data, path, nil)
}

// IsScenarioFile reports whether a file found in a scenario directory is
// a scenario: *.yaml or *.yml, except model scripts (*.script.yaml,
// *.script.yml) and files whose name starts with "_" or ".".
func IsScenarioFile(name string) bool {
	base := filepath.Base(name)
	if strings.HasPrefix(base, "_") || strings.HasPrefix(base, ".") {
		return false
	}
	ext := filepath.Ext(base)
	if ext != ".yaml" && ext != ".yml" {
		return false
	}
	return !strings.HasSuffix(strings.TrimSuffix(base, ext), ".script")
}

// Files returns the scenario files under paths (files are taken as
// given; directories are walked), sorted, without duplicates.
func Files(paths []string) ([]string, error) {
	var out []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			out = append(out, filepath.Clean(p))
			continue
		}
		err = filepath.WalkDir(p, func(path string, de fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if de.IsDir() {
				if path != p && (strings.HasPrefix(de.Name(), ".") || de.Name() == "testdata") {
					return filepath.SkipDir
				}
				return nil
			}
			if IsScenarioFile(path) {
				out = append(out, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// LoadAll loads every scenario under paths. It reports the problems of
// every file, and scenario names used twice, in one *Error.
func LoadAll(paths []string) ([]*Scenario, error) {
	files, err := Files(paths)
	if err != nil {
		return nil, err
	}
	var out []*Scenario
	var problems []Problem
	byName := map[string]*Scenario{}
	for _, f := range files {
		s, err := Load(f)
		var se *Error
		switch {
		case errors.As(err, &se):
			problems = append(problems, se.Problems...)
			continue
		case err != nil:
			problems = append(problems, Problem{File: f, Msg: err.Error()})
			continue
		}
		if prev, dup := byName[s.Name]; dup {
			p := s.pos["name"]
			problems = append(problems, Problem{File: f, Line: p.line, Col: p.col, Path: "name",
				Msg: fmt.Sprintf("scenario %q is also defined in %s", s.Name, prev.Pos("name"))})
			continue
		}
		byName[s.Name] = s
		out = append(out, s)
	}
	if len(problems) > 0 {
		return out, &Error{Problems: problems}
	}
	return out, nil
}

// loadScript reads and parses the model script of a scenario.
func (v *validator) loadScript(m *Model, path string) {
	var data []byte
	switch {
	case m.Script != nil:
		b, err := yaml.Marshal(m.Script.V)
		if err != nil {
			v.errf(path+".script", "%v", err)
			return
		}
		data = b
	case m.File != "":
		name := m.File
		if !filepath.IsAbs(name) && v.s.File != "" {
			name = filepath.Join(filepath.Dir(v.s.File), name)
		}
		read := v.opts.ReadFile
		if read == nil {
			read = os.ReadFile
		}
		b, err := read(name)
		if err != nil {
			v.errf(path+".file", "cannot read the script: %v", err)
			return
		}
		data = b
	default:
		return
	}
	sc, err := script.Parse(data)
	if err != nil {
		v.errf(path, "%v", err)
		return
	}
	m.Parsed, m.Source = sc, data
}
