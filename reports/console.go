package reports

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/mattn/go-isatty"
	"github.com/olekukonko/tablewriter"
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
	fmt.Fprintf(w, "agentlab run %s: %s (exit %d)\n", r.RunID, cs.paint(headColor, headline(s)), s.ExitCode)
	fmt.Fprintf(w, "%s; %d attempts, %d lost to lab faults; %d/%d checks passed\n\n",
		countsLine(s), s.Attempts, s.LabFaultAttempts, s.ChecksPassed, s.Checks)

	groups := groupByDevice(r)
	devRows := make([][]string, 0, len(groups))
	for _, g := range groups {
		kind, api := "", ""
		if g.Device != nil {
			kind, api = string(g.Device.Kind), apiLevel(g.Device.APILevel)
		}
		devRows = append(devRows, []string{
			g.Serial, kind, api,
			strconv.Itoa(g.Counts[VerdictPass]), strconv.Itoa(g.Counts[VerdictFail]), strconv.Itoa(g.Counts[VerdictFlaky]),
			strconv.Itoa(g.Counts[VerdictError]), strconv.Itoa(g.Counts[VerdictSkipped]), strconv.Itoa(g.Counts[VerdictInconclusive]),
			healthWord(g.Device),
		})
	}
	if err := consoleTable(w, cs.width,
		[]string{"device", "kind", "api", "pass", "fail", "flaky", "error", "skip", "inconc", "state"},
		devRows, []int{9, 0}); err != nil {
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
			sc.Name, sc.PrimaryDevice(), strconv.Itoa(len(sc.Attempts)), humanDuration(sc.Duration()), reasonOf(sc),
		})
	}
	if len(rows) > 0 {
		io.WriteString(w, "\n")
		if err := consoleTable(w, cs.width,
			[]string{"verdict", "scenario", "device", "att", "duration", "reason"},
			rows, []int{5, 1}); err != nil {
			return err
		}
	}
	if passes > 0 {
		fmt.Fprintf(w, "\n%d passing scenarios not listed.\n", passes)
	}
	return nil
}

// consoleTable renders one table no wider than width. When the natural
// layout is too wide, the columns listed in flex (in order) give up width,
// down to a floor, and their text wraps.
func consoleTable(w io.Writer, width int, header []string, rows [][]string, flex []int) error {
	const pad = 2    // one space either side of a cell
	const floor = 12 // narrowest a flexible column gets
	natural := make([]int, len(header))
	for i, h := range header {
		natural[i] = twwidth.Width(h) + pad
	}
	for _, row := range rows {
		for i, c := range row {
			natural[i] = max(natural[i], twwidth.Width(c)+pad)
		}
	}
	total := len(header) + 1 // borders
	for _, n := range natural {
		total += n
	}
	widths := tw.NewMapper[int, int]()
	for _, i := range flex {
		if total <= width {
			break
		}
		give := min(total-width, natural[i]-floor)
		if give <= 0 {
			continue
		}
		widths.Set(i, natural[i]-give)
		total -= give
	}
	opts := []tablewriter.Option{
		tablewriter.WithRowAutoWrap(tw.WrapNormal),
		tablewriter.WithTrimSpace(tw.Off),
	}
	if widths.Len() > 0 {
		opts = append(opts, tablewriter.WithColumnWidths(widths))
	}
	t := tablewriter.NewTable(w, opts...)
	t.Header(header)
	if err := t.Bulk(rows); err != nil {
		return err
	}
	return t.Render()
}
