package reports

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Plain-text pieces shared by the JUnit, Markdown and console writers.

// seconds formats milliseconds as seconds with three decimals.
func seconds(ms int64) string {
	return strconv.FormatFloat(float64(ms)/1000, 'f', 3, 64)
}

// humanDuration renders d for people: "850ms", "12.4s", "3m05s", "1h02m".
func humanDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "-" + humanDuration(-d)
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}

// stamp renders a time for reports: UTC, to the second.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format("2006-01-02 15:04:05Z")
}

// oneLine folds whitespace runs (newlines included) into single spaces.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n\t") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// checkLine renders one named check: "[PASS] name: detail (evidence: …)
// [upstream: …]".
func checkLine(c Check) string {
	var b strings.Builder
	b.Grow(24 + len(c.Name) + len(c.Detail) + len(c.Evidence) + len(c.Upstream))
	writeCheckLine(&b, c)
	return b.String()
}

func writeCheckLine(b *strings.Builder, c Check) {
	switch {
	case c.OK:
		b.WriteString("[PASS] ")
	case c.Skipped:
		b.WriteString("[SKIP] ")
	default:
		b.WriteString("[FAIL] ")
	}
	b.WriteString(c.Name)
	if c.Detail != "" {
		b.WriteString(": ")
		b.WriteString(oneLine(c.Detail))
	}
	if c.Evidence != "" {
		b.WriteString(" (evidence: ")
		b.WriteString(oneLine(c.Evidence))
		b.WriteString(")")
	}
	if c.Upstream != "" {
		b.WriteString(" [upstream: ")
		b.WriteString(c.Upstream)
		b.WriteString("]")
	}
}

// attemptLine summarises one attempt: "attempt 1 on vd-1: fail — error;
// failed: a, b".
func attemptLine(a Attempt) string {
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %d", a.Number)
	if a.Device != "" {
		b.WriteString(" on ")
		b.WriteString(a.Device)
	}
	b.WriteString(": ")
	b.WriteString(string(a.Verdict))
	if a.LabFault {
		b.WriteString(" (lab fault)")
	}
	if a.Error != "" {
		b.WriteString(" - ")
		b.WriteString(oneLine(a.Error))
	}
	var failed []string
	for _, c := range a.Checks {
		if c.Failed() {
			failed = append(failed, c.Name)
		}
	}
	if len(failed) > 0 {
		b.WriteString("; failed checks: ")
		b.WriteString(strings.Join(failed, ", "))
	}
	return b.String()
}

// reasonOf is a scenario's reason, or one derived from its checks and
// attempts.
func reasonOf(s *Scenario) string {
	if s.Reason != "" {
		return oneLine(s.Reason)
	}
	if failed := s.FailedChecks(); len(failed) > 0 {
		names := make([]string, len(failed))
		for i, c := range failed {
			names[i] = c.Name
		}
		return fmt.Sprintf("%d of %s failed: %s", len(failed), plural(len(s.Checks), "check"), strings.Join(names, ", "))
	}
	n := len(s.Attempts)
	if n < 2 || (s.Verdict != VerdictPass && s.Verdict != VerdictFlaky) {
		return ""
	}
	var failedOn, faultOn []string
	for _, a := range s.Attempts[:n-1] {
		switch {
		case a.LabFault:
			faultOn = append(faultOn, a.Device)
		case a.Verdict == VerdictFail:
			failedOn = append(failedOn, fmt.Sprintf("attempt %d", a.Number))
		}
	}
	var parts []string
	if len(failedOn) > 0 {
		parts = append(parts, "failed "+strings.Join(failedOn, ", "))
	}
	if len(faultOn) > 0 {
		parts = append(parts, "lab fault on "+strings.Join(slices.Compact(faultOn), ", "))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("passed on attempt %d after: %s", n, strings.Join(parts, "; "))
}

// plural renders a count with its noun: "1 scenario", "2 scenarios",
// "3 touches".
func plural(n int, one string) string { return plural64(int64(n), one) }

// plural64 is plural for int64 counts (sizes in bytes).
func plural64(n int64, one string) string {
	if n == 1 {
		return "1 " + one
	}
	many := one + "s"
	for _, end := range []string{"s", "x", "ch", "sh"} {
		if strings.HasSuffix(one, end) {
			many = one + "es"
		}
	}
	return strconv.FormatInt(n, 10) + " " + many
}

// passedChecks counts the checks that held.
func passedChecks(cs []Check) int {
	n := 0
	for _, c := range cs {
		if c.OK {
			n++
		}
	}
	return n
}

// headline is the one-line verdict of a run: "FAIL: 1 failure" etc.
func headline(s Summary) string {
	switch s.ExitCode {
	case ExitFailures:
		return "FAILED: product failures"
	case ExitLabFaults:
		return "LAB FAULTS: no product failure, but the lab lost scenarios"
	case ExitInconclusive:
		return "INCONCLUSIVE: a person touched a device"
	}
	return "PASSED"
}

// countsLine lists the verdict counts: "6 scenarios: 2 pass, 1 fail, …".
func countsLine(s Summary) string {
	var b strings.Builder
	b.WriteString(plural(s.Total, "scenario"))
	sep := ": "
	for _, v := range []Verdict{VerdictPass, VerdictFail, VerdictFlaky, VerdictError, VerdictSkipped, VerdictInconclusive} {
		fmt.Fprintf(&b, "%s%d %s", sep, s.Count(v), v)
		sep = ", "
	}
	return b.String()
}

// modelLine describes the model without ever naming a key.
func modelLine(m Model) string {
	switch {
	case m.Kind == ModelStub:
		return "stub"
	case m.Name != "":
		return fmt.Sprintf("%s %s/%s", m.Kind, m.Provider, m.Name)
	}
	return fmt.Sprintf("%s %s", m.Kind, m.Provider)
}

// selectionLine describes the selection: "tags a, b; not c; shard 2/4".
func selectionLine(sel Selection) string {
	var parts []string
	if len(sel.Tags) > 0 {
		parts = append(parts, "tags "+strings.Join(sel.Tags, ", "))
	} else {
		parts = append(parts, "all tags")
	}
	if len(sel.ExcludeTags) > 0 {
		parts = append(parts, "not "+strings.Join(sel.ExcludeTags, ", "))
	}
	if sel.ShardCount > 1 {
		parts = append(parts, fmt.Sprintf("shard %d/%d", sel.ShardIndex+1, sel.ShardCount))
	}
	return strings.Join(parts, "; ")
}

// deviceGroup is the scenarios filed under one device (see
// Scenario.PrimaryDevice), in severity order.
type deviceGroup struct {
	Serial    string
	Device    *Device // nil for scenarios that ran on no known device
	Scenarios []*Scenario
	Counts    map[Verdict]int
}

// unassigned names the group of scenarios that ran on no device.
const unassigned = "unassigned"

// groupByDevice files r's scenarios under their primary device: one group
// per device of the run in serial order (even when empty), then groups for
// serials the run does not list, then one for scenarios that ran nowhere.
func groupByDevice(r *Run) []*deviceGroup {
	groups := make([]*deviceGroup, 0, len(r.Devices)+1)
	index := make(map[string]*deviceGroup, len(r.Devices))
	for i := range r.Devices {
		g := &deviceGroup{Serial: r.Devices[i].Serial, Device: &r.Devices[i], Counts: map[Verdict]int{}}
		groups = append(groups, g)
		index[g.Serial] = g
	}
	var extra []*deviceGroup
	for _, s := range bySeverity(r) {
		serial := s.PrimaryDevice()
		if serial == "" {
			serial = unassigned
		}
		g := index[serial]
		if g == nil {
			g = &deviceGroup{Serial: serial, Counts: map[Verdict]int{}}
			index[serial] = g
			extra = append(extra, g)
		}
		g.Scenarios = append(g.Scenarios, s)
		g.Counts[s.Verdict]++
	}
	slices.SortFunc(extra, func(a, b *deviceGroup) int {
		// The group of scenarios that ran nowhere comes last.
		switch {
		case a.Serial == b.Serial:
			return 0
		case a.Serial == unassigned:
			return 1
		case b.Serial == unassigned:
			return -1
		}
		return strings.Compare(a.Serial, b.Serial)
	})
	return append(groups, extra...)
}
