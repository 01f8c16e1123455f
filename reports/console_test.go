package reports

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter/pkg/twwidth"
)

func consoleOut(t *testing.T, r *Run, o *ConsoleOptions) string {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteConsole(&buf, r, o); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

func widest(s string) int {
	w := 0
	for _, l := range strings.Split(s, "\n") {
		w = max(w, twwidth.Width(l))
	}
	return w
}

// TestConsoleWidth: tables fit the width they are given, by wrapping long
// columns at word boundaries and then dropping minor columns, and no word
// of a name or reason is ever cut.
func TestConsoleWidth(t *testing.T) {
	t.Parallel()
	r := sampleRun()
	for _, width := range []int{60, 72, 80, 100, 160} {
		out := consoleOut(t, r, &ConsoleOptions{Width: width, Color: ColorNever})
		// The first lines are prose, not table; a terminal wraps them.
		table := strings.SplitN(out, "\n", 4)[3]
		if w := widest(table); w > width {
			t.Errorf("width %d: a table line is %d cells wide:\n%s", width, w, out)
		}
		tokens := map[string]bool{}
		for _, tok := range strings.Fields(strings.ReplaceAll(out, "│", " ")) {
			tokens[tok] = true
		}
		for _, s := range r.Scenarios {
			if s.Verdict == VerdictPass {
				continue // not listed
			}
			for _, w := range append(strings.Fields(reasonOf(&s)), s.Name) {
				if !tokens[w] {
					t.Errorf("width %d: %q of %s was cut:\n%s", width, w, s.Name, out)
				}
			}
		}
	}
}

func TestConsoleListing(t *testing.T) {
	t.Parallel()
	out := consoleOut(t, sampleRun(), &ConsoleOptions{Color: ColorNever})
	if strings.Contains(out, "unauthorized-pending") || !strings.Contains(out, "2 passing scenarios not listed") {
		t.Errorf("default listing should hide passes:\n%s", out)
	}
	all := consoleOut(t, sampleRun(), &ConsoleOptions{Color: ColorNever, All: true})
	if !strings.Contains(all, "unauthorized-pending") || strings.Contains(all, "not listed") {
		t.Errorf("All should list passes:\n%s", all)
	}
	if i, j := strings.Index(out, "│ fail"), strings.Index(out, "│ skipped"); i < 0 || j < 0 || i > j {
		t.Errorf("failures should come first:\n%s", out)
	}
}

func TestConsoleColorOptions(t *testing.T) {
	t.Parallel()
	if out := consoleOut(t, sampleRun(), &ConsoleOptions{Color: ColorAlways}); !strings.Contains(out, "\x1b[1;31mfail\x1b[0m") {
		t.Errorf("ColorAlways did not colour the failure:\n%s", out)
	}
	// A buffer is not a terminal: auto means no colour.
	if out := consoleOut(t, sampleRun(), nil); strings.Contains(out, "\x1b[") {
		t.Errorf("colour written to a non-terminal:\n%q", out)
	}
	// Nor is a file.
	f, err := os.Create(t.TempDir() + "/console.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := Render(f, sampleRun(), FormatConsole); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(f.Name())
	if bytes.Contains(data, []byte("\x1b[")) {
		t.Error("colour written to a file")
	}
}

// TestConsoleTerminalSafe: text from a run cannot drive the terminal.
func TestConsoleTerminalSafe(t *testing.T) {
	t.Parallel()
	r := sampleRun()
	r.RunID = "id\x1b]0;owned\x07"
	r.Scenarios[0].Name = "name\x1b[2J\u009b31m"
	r.Scenarios[0].Reason = "line\nbreak\rreturn"
	out := consoleOut(t, r, &ConsoleOptions{Color: ColorNever, All: true})
	if strings.ContainsAny(out, "\x1b\x07\u009b\r") {
		t.Errorf("control characters reached the terminal: %q", out)
	}
}

// TestPlurals: counts read as English ("1 passing scenario not listed",
// not "1 passing scenarios not listed").
func TestPlurals(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		n    int
		noun string
		want string
	}{
		{0, "scenario", "0 scenarios"},
		{1, "scenario", "1 scenario"},
		{2, "check", "2 checks"},
		{1, "touch", "1 touch"},
		{3, "touch", "3 touches"},
		{1, "passing scenario", "1 passing scenario"},
	} {
		if got := plural(tc.n, tc.noun); got != tc.want {
			t.Errorf("plural(%d, %q) = %q, want %q", tc.n, tc.noun, got, tc.want)
		}
	}
	r := sampleRun()
	r.Scenarios = r.Scenarios[:2] // one fail, one pass
	r.Scenarios[0].Checks = r.Scenarios[0].Checks[:1]
	r.Scenarios[1].Checks = nil
	r.Scenarios[1].Attempts = r.Scenarios[1].Attempts[:1]
	out := consoleOut(t, r, &ConsoleOptions{Color: ColorNever})
	for _, want := range []string{"2 scenarios: 1 pass, 1 fail", "1 passing scenario not listed.", "1/1 check passed"} {
		if !strings.Contains(out, want) {
			t.Errorf("console lacks %q:\n%s", want, out)
		}
	}
}
