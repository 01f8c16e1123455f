package scenario

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/agentoslab/agentlab/internal/strictyaml"
)

// MaxFileSize bounds a scenario file.
const MaxFileSize = 1 << 20

// ErrInvalid is wrapped by every *Error.
var ErrInvalid = errors.New("invalid scenario")

// Options tune Parse. The zero value (or nil) works.
type Options struct {
	// ReadFile reads model script files (model.file); nil means
	// os.ReadFile.
	ReadFile func(name string) ([]byte, error)
}

var schemaComment = regexp.MustCompile(`(?m)^#\s*yaml-language-server:\s*\$schema=(\S+)`)

// Parse reads and validates one scenario document; file names it in
// messages and anchors model.file, scripts' files and fragments. Every
// problem is reported, each with its file:line:column, in one *Error.
func Parse(data []byte, file string, opts *Options) (*Scenario, error) {
	if opts == nil {
		opts = &Options{}
	}
	d := newDecoder(file)
	if len(data) > MaxFileSize {
		d.Addf(nil, "", "larger than %d bytes", MaxFileSize)
		return nil, d.Err(ErrInvalid)
	}
	root, prob := strictyaml.ParseDocument(data, file)
	if prob != nil {
		if prob.File == "" {
			prob.File = "<scenario>"
		}
		d.Add(*prob)
		return nil, d.Err(ErrInvalid)
	}
	if root == nil {
		d.Addf(nil, "", "empty document: a scenario needs at least a name and steps")
		return nil, d.Err(ErrInvalid)
	}
	s := &Scenario{File: file}
	if m := schemaComment.FindSubmatch(data); m != nil {
		s.Schema = string(m[1])
	}
	v := &validator{s: s, d: d, opts: opts}
	v.expandIncludes(root)
	d.Record("", root)
	d.Decode(root, s, "")
	s.pos = d.Positions()
	v.validate()
	if err := d.Err(ErrInvalid); err != nil {
		return nil, err
	}
	return s, nil
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
// *.script.yml), fragments (*.fragment.yaml) and files whose name starts
// with "_" or ".".
func IsScenarioFile(name string) bool {
	base := filepath.Base(name)
	if strings.HasPrefix(base, "_") || strings.HasPrefix(base, ".") {
		return false
	}
	ext := filepath.Ext(base)
	if ext != ".yaml" && ext != ".yml" {
		return false
	}
	stem := strings.TrimSuffix(base, ext)
	return !strings.HasSuffix(stem, ".script") && !strings.HasSuffix(stem, ".fragment")
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
			problems = append(problems, Problem{File: f, Line: p.Line, Col: p.Col, Path: "name",
				Msg: fmt.Sprintf("scenario %q is also defined in %s", s.Name, prev.Pos("name"))})
			continue
		}
		byName[s.Name] = s
		out = append(out, s)
	}
	if len(problems) > 0 {
		return out, &Error{Problems: problems, Kind: ErrInvalid}
	}
	return out, nil
}

// read reads a file the scenario refers to.
func (v *validator) read(name string) ([]byte, error) {
	if v.opts.ReadFile != nil {
		return v.opts.ReadFile(name)
	}
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, MaxFileSize+1))
}
