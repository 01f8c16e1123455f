package reports

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
)

// Format is one rendering of a run.
type Format string

const (
	// FormatJSON is results.json, the versioned results document.
	FormatJSON Format = "json"
	// FormatJUnit is junit.xml.
	FormatJUnit Format = "junit"
	// FormatMarkdown is summary.md.
	FormatMarkdown Format = "markdown"
	// FormatHTML is report.html, one self-contained file.
	FormatHTML Format = "html"
	// FormatUpstream is upstream-checks.json: every named check in the
	// upstream device suites' shape, {checks:[{name, ok, detail}], passed,
	// total}, for line-by-line comparison with upstream results.
	FormatUpstream Format = "upstream"
	// FormatConsole is the console table; as a file, console.txt without
	// colour.
	FormatConsole Format = "console"
)

// allFormats lists every format in the order Write writes them.
var allFormats = []Format{FormatJSON, FormatJUnit, FormatMarkdown, FormatHTML, FormatUpstream, FormatConsole}

// Formats returns every format, in the order Write writes them.
func Formats() []Format { return slices.Clone(allFormats) }

// FileName is the name Write gives the file of format f.
func (f Format) FileName() string {
	switch f {
	case FormatJSON:
		return "results.json"
	case FormatJUnit:
		return "junit.xml"
	case FormatMarkdown:
		return "summary.md"
	case FormatHTML:
		return "report.html"
	case FormatUpstream:
		return "upstream-checks.json"
	case FormatConsole:
		return "console.txt"
	}
	return ""
}

// ErrUnknownFormat reports a format name ParseFormat does not know.
var ErrUnknownFormat = errors.New("unknown report format")

// ParseFormat turns a format name ("json", "junit", "markdown", "html",
// "upstream", "console") or its file name into a Format.
func ParseFormat(s string) (Format, error) {
	for _, f := range allFormats {
		if s == string(f) || s == f.FileName() {
			return f, nil
		}
	}
	names := make([]string, len(allFormats))
	for i, f := range allFormats {
		names[i] = string(f)
	}
	return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownFormat, s, strings.Join(names, ", "))
}

// Render writes r to w in format f. The console format decides colour and
// width from w (see WriteConsole).
func Render(w io.Writer, r *Run, f Format) error {
	if r == nil {
		return fmt.Errorf("render %s: nil run", f)
	}
	p := prepare(r)
	bw := bufio.NewWriterSize(w, 64<<10)
	err := render(bw, p, f, newConsoleSettings(w, nil))
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return fmt.Errorf("render %s: %w", f, err)
	}
	return nil
}

// Write renders r into dir, one file per format (all formats when none are
// given), creating dir if needed. Each file is written to a temporary name
// and renamed, so a reader never sees half a report. It writes every format
// it can and returns the errors of those it could not.
func Write(dir string, r *Run, formats ...Format) error {
	if r == nil {
		return errors.New("write reports: nil run")
	}
	if len(formats) == 0 {
		formats = allFormats
	}
	for _, f := range formats {
		if f.FileName() == "" {
			return fmt.Errorf("write reports: %w %q", ErrUnknownFormat, f)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write reports: %w", err)
	}
	p := prepare(r)
	// Render the formats side by side (they only read p), then write the
	// files: a nightly run's reports are tens of megabytes.
	bufs := make([]bytes.Buffer, len(formats))
	errs := make([]error, len(formats))
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i, f := range formats {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			errs[i] = render(&bufs[i], p, f, newConsoleSettings(nil, &ConsoleOptions{Color: ColorNever}))
		})
	}
	wg.Wait()
	for i, f := range formats {
		if errs[i] == nil {
			errs[i] = writeFileAtomic(filepath.Join(dir, f.FileName()), bufs[i].Bytes())
		}
		if errs[i] != nil {
			errs[i] = fmt.Errorf("write %s: %w", f.FileName(), errs[i])
		}
	}
	return errors.Join(errs...)
}

// render writes the prepared run p in format f.
func render(w io.Writer, p *Run, f Format, cs consoleSettings) error {
	switch f {
	case FormatJSON:
		return encodeRun(w, p)
	case FormatJUnit:
		return writeJUnit(w, p)
	case FormatMarkdown:
		return writeMarkdown(w, p)
	case FormatHTML:
		return writeHTML(w, p)
	case FormatUpstream:
		return writeUpstream(w, p)
	case FormatConsole:
		return writeConsole(w, p, cs)
	}
	_, err := ParseFormat(string(f))
	return err
}

func writeFileAtomic(name string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, name)
	}
	if err != nil {
		os.Remove(tmp)
	}
	return err
}

// prepare returns a copy of r in the canonical order every writer uses —
// scenarios by name, devices by serial, timelines by start — with the
// summary recomputed and the schema version set to the one this package
// writes (a run loaded from a newer minor loses the fields it does not know,
// so it must not keep claiming that minor). r is not modified.
func prepare(r *Run) *Run {
	p := *r
	p.SchemaVersion = SchemaVersion
	p.Scenarios = slices.Clone(r.Scenarios)
	slices.SortStableFunc(p.Scenarios, func(a, b Scenario) int { return strings.Compare(a.Name, b.Name) })
	p.Devices = slices.Clone(r.Devices)
	slices.SortStableFunc(p.Devices, func(a, b Device) int { return strings.Compare(a.Serial, b.Serial) })
	for i := range p.Devices {
		d := &p.Devices[i]
		if !slices.IsSortedFunc(d.Timeline, compareEvents) {
			d.Timeline = slices.Clone(d.Timeline)
			slices.SortStableFunc(d.Timeline, compareEvents)
		}
	}
	p.Selection.Tags = orEmpty(p.Selection.Tags)
	p.Devices = orEmpty(p.Devices)
	p.Scenarios = orEmpty(p.Scenarios)
	for i := range p.Devices {
		d := &p.Devices[i]
		d.Health = orEmpty(d.Health)
		d.Timeline = orEmpty(d.Timeline)
	}
	for i := range p.Scenarios {
		s := &p.Scenarios[i]
		s.Tags = orEmpty(s.Tags)
		s.Devices = orEmpty(s.Devices)
		s.Checks = orEmpty(s.Checks)
		s.Artifacts = orEmpty(s.Artifacts)
		if s.Attempts == nil {
			s.Attempts = []Attempt{}
		}
		for j := range s.Attempts {
			if s.Attempts[j].Checks == nil || s.Attempts[j].Artifacts == nil {
				s.Attempts = slices.Clone(s.Attempts)
				break
			}
		}
		for j := range s.Attempts {
			a := &s.Attempts[j]
			a.Checks = orEmpty(a.Checks)
			a.Artifacts = orEmpty(a.Artifacts)
		}
	}
	p.Summary = Summarize(&p)
	return &p
}

// orEmpty turns a nil slice into an empty one, so that JSON lists are
// always arrays, never null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func compareEvents(a, b Event) int { return a.Start.Compare(b.Start) }

// bySeverity returns r's scenarios ordered most severe verdict first, then by
// name (prepare already sorted them by name).
func bySeverity(r *Run) []*Scenario {
	out := make([]*Scenario, len(r.Scenarios))
	for i := range r.Scenarios {
		out[i] = &r.Scenarios[i]
	}
	slices.SortStableFunc(out, func(a, b *Scenario) int { return a.Verdict.rank() - b.Verdict.rank() })
	return out
}
