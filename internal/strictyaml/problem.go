package strictyaml

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Pos is a position in a file, 1-based; the zero Pos is "not in the
// file". File is empty for the document being decoded, else the file an
// included part came from.
type Pos struct {
	File      string
	Line, Col int
}

// String is "file:line:col", file being the Pos's own when it has one.
func (p Pos) String(file string) string {
	if p.File != "" {
		file = p.File
	}
	if p.Line == 0 {
		return file
	}
	return fmt.Sprintf("%s:%d:%d", file, p.Line, p.Col)
}

// Problem is one thing wrong with a document, at a position in its file.
type Problem struct {
	File string
	// Line and Col are 1-based; 0 when the problem concerns the whole
	// document or a field that was not written (a default broke a rule
	// together with one that was). Col is 0 when only the line is known.
	Line, Col int
	// Path is the field ("steps[2].wait.timeout"); empty for the document.
	Path string
	Msg  string
}

// String is "file:line:col: path: message", leaving out what is unknown.
func (p Problem) String() string {
	var b strings.Builder
	file := p.File
	if file == "" {
		file = "<document>"
	}
	b.WriteString(file)
	if p.Line > 0 {
		b.WriteString(":" + strconv.Itoa(p.Line))
		if p.Col > 0 {
			b.WriteString(":" + strconv.Itoa(p.Col))
		}
	}
	b.WriteString(": ")
	if p.Path != "" {
		b.WriteString(p.Path + ": ")
	}
	b.WriteString(p.Msg)
	return b.String()
}

// Error lists every problem of a document (or a suite of them). It wraps
// Kind, the sentinel of the language it belongs to (scenario.ErrInvalid,
// config.ErrInvalid), so errors.Is(err, Kind) holds.
type Error struct {
	Problems []Problem
	Kind     error
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns Kind.
func (e *Error) Unwrap() error { return e.Kind }

// SortProblems orders problems by file, line and column, keeping the
// order of those at one position.
func SortProblems(ps []Problem) {
	slices.SortStableFunc(ps, func(a, b Problem) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return a.Col - b.Col
	})
}

// Join is the path of key under path ("steps[0]" + "wait").
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// Index is the path of element i under path ("steps" → "steps[3]").
func Index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// Parent is the path path is written under ("steps[2].wait" → "steps[2]"
// → "steps" → ""), for positions of fields that were not written.
func Parent(path string) string {
	i := strings.LastIndexAny(path, ".[")
	if i < 0 {
		return ""
	}
	return path[:i]
}

// Clip shortens s to n runes, marking the cut with "…".
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// Suggest returns the key of known closest to key when it is close
// enough to be a typo (edit distance below 3, case ignored), else "".
func Suggest(key string, known []string) string {
	best, bestD := "", 3
	for _, c := range known {
		if d := EditDistance(strings.ToLower(key), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance of a and b in runes; long
// strings (over 64 runes) are never close.
func EditDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	if len(ra) > 64 || len(rb) > 64 {
		return 99
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			c := 1
			if ra[i-1] == rb[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}

func sprintf(format string, args ...any) string {
	if len(args) == 0 {
		return format
	}
	return fmt.Sprintf(format, args...)
}
