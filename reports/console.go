package reports

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/agentoslab/agentlab/internal/table"

	"github.com/mattn/go-isatty"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/tw"
)

// ColorMode says when the console table uses colour.
type ColorMode int

const (
	// ColorAuto colours only when the writer is a terminal and the NO_COLOR
	// environment variable is unset or empty.
	ColorAuto ColorMode = iota
	ColorAlways
	ColorNever
)

// ConsoleOptions tunes WriteConsole. The zero value (or nil) adapts to the
// writer.
type ConsoleOptions struct {
	// Width is the widest line, in terminal cells. 0 means the terminal's
	// width when the writer is a terminal, else DefaultConsoleWidth.
	Width int
	Color ColorMode
	// All lists passing scenarios too; by default only the others are
	// listed, with a count of the passes.
	All bool
}

// DefaultConsoleWidth is the width used when the writer is not a terminal.
const DefaultConsoleWidth = 100

// minConsoleWidth is the narrowest table WriteConsole lays out; narrower
// terminals get lines that wrap.
const minConsoleWidth = 60

type consoleSettings struct {
	width int
	color bool
	all   bool
}

// checksLine is "26/31 checks passed", with ", 1 skipped" when some were.
func checksLine(s Summary) string {
	line := fmt.Sprintf("%d/%s passed", s.ChecksPassed, plural(s.Checks, "check"))
	if s.ChecksSkipped > 0 {
		line += fmt.Sprintf(", %d skipped", s.ChecksSkipped)
	}
	return line
}

func newConsoleSettings(w io.Writer, o *ConsoleOptions) consoleSettings {
	var opts ConsoleOptions
	if o != nil {
		opts = *o
	}
	f, _ := w.(*os.File)
	tty := f != nil && isatty.IsTerminal(f.Fd())
	cs := consoleSettings{width: opts.Width, all: opts.All}
	if cs.width <= 0 && tty {
		cs.width = terminalWidth(f)
	}
	if cs.width <= 0 {
		cs.width = DefaultConsoleWidth
	}
	cs.width = max(cs.width, minConsoleWidth)
	switch opts.Color {
	case ColorAlways:
		cs.color = true
	case ColorAuto:
		cs.color = tty && os.Getenv("NO_COLOR") == ""
	}
	return cs
}

// WriteConsole writes the console view of r: the headline and counts, a
// table of devices and a table of the scenarios that did not pass (all of
// them with opts.All), laid out to the width of the terminal.
func WriteConsole(w io.Writer, r *Run, opts *ConsoleOptions) error {
	if r == nil {
		return fmt.Errorf("render %s: nil run", FormatConsole)
	}
	bw := bufio.NewWriter(w)
	if err := writeConsole(bw, prepare(r), newConsoleSettings(w, opts)); err != nil {
		return fmt.Errorf("render %s: %w", FormatConsole, err)
	}
	return bw.Flush()
}

// ANSI SGR colours per verdict.
var verdictColor = map[Verdict]string{
	VerdictPass:         "32",   // green
	VerdictFail:         "1;31", // bold red
	VerdictError:        "35",   // magenta
	VerdictInconclusive: "33",   // yellow
	VerdictFlaky:        "33",   // yellow
	VerdictSkipped:      "2",    // dim
}

func (cs consoleSettings) paint(code, s string) string {
	if !cs.color || code == "" {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func writeConsole(w io.Writer, r *Run, cs consoleSettings) error {
	s := r.Summary
	headColor := verdictColor[VerdictPass]
	switch s.ExitCode {
	case ExitFailures:
		headColor = verdictColor[VerdictFail]
	case ExitLabFaults:
		headColor = verdictColor[VerdictError]
	case ExitInconclusive:
		headColor = verdictColor[VerdictInconclusive]
	}
	fmt.Fprintf(w, "agentlab run %s: %s (exit %d)\n", termSafe(r.RunID), cs.paint(headColor, headline(s)), s.ExitCode)
	fmt.Fprintf(w, "%s\n%s, %d lost to lab faults; %s\n\n",
		countsLine(s), plural(s.Attempts, "attempt"), s.LabFaultAttempts, checksLine(s))

	groups := groupByDevice(r)
	devRows := make([][]string, 0, len(groups))
	for _, g := range groups {
		kind, api := "", ""
		if g.Device != nil {
			kind, api = string(g.Device.Kind), apiLevel(g.Device.APILevel)
		}
		var results []string
		for _, v := range verdictOrder {
			if n := g.Counts[v]; n > 0 {
				results = append(results, cs.paint(verdictColor[v], strconv.Itoa(n)+" "+string(v)))
			}
		}
		devRows = append(devRows, []string{termSafe(g.Serial), termSafe(kind), api, strings.Join(results, ", "), termSafe(healthWord(g.Device))})
	}
	devCols := []column{{header: "device", shrink: 3}, {header: "kind", drop: 1}, {header: "api", drop: 2}, {header: "results", shrink: 2}, {header: "state", shrink: 1}}
	if err := consoleTable(w, cs.width, devCols, devRows); err != nil {
		return err
	}

	var rows [][]string
	passes := 0
	for _, sc := range bySeverity(r) {
		if sc.Verdict == VerdictPass && !cs.all {
			passes++
			continue
		}
		rows = append(rows, []string{
			cs.paint(verdictColor[sc.Verdict], string(sc.Verdict)),
			termSafe(sc.Name), termSafe(sc.PrimaryDevice()), strconv.Itoa(len(sc.Attempts)), humanDuration(sc.Duration()), termSafe(reasonOf(sc)),
		})
	}
	if len(rows) > 0 {
		io.WriteString(w, "\n")
		cols := []column{{header: "verdict"}, {header: "scenario", shrink: 3}, {header: "device", shrink: 2, drop: 3},
			{header: "att", drop: 2}, {header: "duration", drop: 1}, {header: "reason", shrink: 1}}
		if err := consoleTable(w, cs.width, cols, rows); err != nil {
			return err
		}
	}
	if passes > 0 {
		fmt.Fprintf(w, "\n%s not listed.\n", plural(passes, "passing scenario"))
	}
	return nil
}

// termSafe replaces control characters (C0, DEL, C1) with U+FFFD, so text
// from a run cannot move the cursor or rewrite the terminal; line breaks
// become spaces.
func termSafe(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == 0xc2 {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case r < 0x20, r >= 0x7f && r < 0xa0:
			return '\uFFFD'
		}
		return r
	}, s)
}

// column describes one console table column.
type column struct {
	header string
	// shrink > 0 lets the column wrap at word boundaries when the table is
	// too wide; columns shrink in ascending order.
	shrink int
	// drop > 0 lets the column go when wrapping is not enough; columns go
	// in ascending order.
	drop int
}

// consoleTable renders one table no wider than width if it can: first the
// shrinkable columns wrap, never narrower than their longest word (so no
// text is cut), then droppable columns go. A table that still does not fit
// is rendered anyway and the terminal wraps it.
func consoleTable(w io.Writer, width int, cols []column, rows [][]string) error {
	const pad = 2 // one space either side of a cell
	n := len(cols)
	natural := make([]int, n)
	floor := make([]int, n)
	for i, c := range cols {
		natural[i] = twwidth.Width(c.header) + pad
		floor[i] = max(natural[i], tw.MinimumColumnWidth+pad)
	}
	for _, row := range rows {
		for i, cell := range row {
			natural[i] = max(natural[i], twwidth.Width(cell)+pad)
			for _, word := range strings.Fields(cell) {
				floor[i] = max(floor[i], twwidth.Width(word)+pad)
			}
		}
	}
	for i := range floor {
		floor[i] = min(floor[i], natural[i])
	}
	active := make([]bool, n)
	for i := range active {
		active[i] = true
	}
	// fit returns the widths of the active columns after shrinking, and
	// whether they fit.
	fit := func() ([]int, bool) {
		widths := make([]int, n)
		total := 1 // left border
		for i := range cols {
			if active[i] {
				widths[i] = natural[i]
				total += natural[i] + 1
			}
		}
		for _, i := range byKey(cols, func(c column) int { return c.shrink }) {
			if total <= width || !active[i] {
				continue
			}
			give := min(total-width, widths[i]-floor[i])
			widths[i] -= give
			total -= give
		}
		return widths, total <= width
	}
	widths, ok := fit()
	for _, i := range byKey(cols, func(c column) int { return c.drop }) {
		if ok {
			break
		}
		active[i] = false
		widths, ok = fit()
	}

	var header []string
	perColumn := map[int]int{}
	for i, c := range cols {
		if !active[i] {
			continue
		}
		if widths[i] < natural[i] {
			perColumn[len(header)] = widths[i]
		}
		header = append(header, c.header)
	}
	body := make([][]string, len(rows))
	for r, row := range rows {
		for i, cell := range row {
			if active[i] {
				body[r] = append(body[r], cell)
			}
		}
	}
	return table.Write(w, header, body, perColumn)
}

// WriteTable writes a table the way the console report draws its own:
// every table agentlab prints goes through here, so they all look alike.
// Cells are printed as given (callers strip control characters).
func WriteTable(w io.Writer, header []string, rows [][]string) error {
	return table.Write(w, header, rows)
}

// byKey returns the indexes of the columns whose key is positive, in
// ascending key order.
func byKey(cols []column, key func(column) int) []int {
	var idx []int
	for i, c := range cols {
		if key(c) > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int { return key(cols[a]) - key(cols[b]) })
	return idx
}
