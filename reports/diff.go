package reports

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
)

// RunDiff is what changed between two runs. Scenarios are matched by name,
// checks by name within a scenario. Every list is sorted by scenario name.
type RunDiff struct {
	Old RunRef `json:"old"`
	New RunRef `json:"new"`
	// NewFailures went from pass, flaky, skipped or inconclusive to fail or
	// error, or are new in this run and fail or error (their Old is "";
	// they are in Added too): a failing scenario added with the change
	// that breaks it is a new failure, not just an addition.
	NewFailures []VerdictChange `json:"newFailures"`
	// Fixed went from fail or error to pass.
	Fixed []VerdictChange `json:"fixed"`
	// StillFailing is fail or error in both runs.
	StillFailing []VerdictChange `json:"stillFailing"`
	// NewlyFlaky is flaky now and was not before.
	NewlyFlaky []VerdictChange `json:"newlyFlaky"`
	// OtherChanges are the remaining verdict changes (e.g. pass → skipped,
	// flaky → pass, fail → flaky).
	OtherChanges []VerdictChange `json:"otherChanges"`
	// Added and Removed are scenarios present in only one run.
	Added   []ScenarioRef `json:"added"`
	Removed []ScenarioRef `json:"removed"`
	// Checks lists, per scenario present in both runs, the checks that
	// changed.
	Checks []ScenarioCheckChanges `json:"checks"`
}

// RunRef identifies a run in a diff.
type RunRef struct {
	RunID        string `json:"runId"`
	StartedAt    string `json:"startedAt"`
	LabVersion   string `json:"labVersion"`
	ConfigDigest string `json:"configDigest"`
}

// VerdictChange is one scenario's verdict in both runs.
type VerdictChange struct {
	Scenario string  `json:"scenario"`
	Old      Verdict `json:"old"`
	New      Verdict `json:"new"`
	// Reason is the new run's reason.
	Reason string `json:"reason,omitempty"`
}

// ScenarioRef is a scenario present in one run only.
type ScenarioRef struct {
	Scenario string  `json:"scenario"`
	Verdict  Verdict `json:"verdict"`
}

// ScenarioCheckChanges are the check-level changes inside one scenario.
type ScenarioCheckChanges struct {
	Scenario string        `json:"scenario"`
	Changes  []CheckChange `json:"changes"`
}

// CheckChangeKind says how a check changed.
type CheckChangeKind string

const (
	CheckRegressed CheckChangeKind = "regressed" // ok → not ok
	CheckFixed     CheckChangeKind = "fixed"     // not ok → ok
	CheckAdded     CheckChangeKind = "added"
	CheckRemoved   CheckChangeKind = "removed"
)

// CheckChange is one check that changed between runs. Old or New is nil
// when the check exists in one run only.
type CheckChange struct {
	Check  string          `json:"check"`
	Change CheckChangeKind `json:"change"`
	Old    *bool           `json:"old,omitempty"`
	New    *bool           `json:"new,omitempty"`
	// Detail is the new run's detail, or the old one's for a removed check.
	Detail string `json:"detail,omitempty"`
}

// HasNewFailures reports whether the new run has scenarios failing (fail or
// error) that did not fail in the old one, added scenarios included: what
// agentlab report diff exits 1 for.
func (d *RunDiff) HasNewFailures() bool { return len(d.NewFailures) > 0 }

// Regressed reports whether the new run failed where the old one did not:
// new failures, or checks that regressed.
func (d *RunDiff) Regressed() bool {
	if len(d.NewFailures) > 0 {
		return true
	}
	for _, sc := range d.Checks {
		for _, c := range sc.Changes {
			if c.Change == CheckRegressed {
				return true
			}
		}
	}
	return false
}

// Diff compares the run before with the run after (either may be nil).
func Diff(before, after *Run) *RunDiff {
	d := &RunDiff{
		Old:          runRef(before),
		New:          runRef(after),
		NewFailures:  []VerdictChange{},
		Fixed:        []VerdictChange{},
		StillFailing: []VerdictChange{},
		NewlyFlaky:   []VerdictChange{},
		OtherChanges: []VerdictChange{},
		Added:        []ScenarioRef{},
		Removed:      []ScenarioRef{},
		Checks:       []ScenarioCheckChanges{},
	}
	olds := scenarioIndex(before)
	news := scenarioIndex(after)
	for _, name := range sortedKeys(news) {
		n := news[name]
		o, ok := olds[name]
		if !ok {
			d.Added = append(d.Added, ScenarioRef{name, n.Verdict})
			if failing(n.Verdict) {
				d.NewFailures = append(d.NewFailures, VerdictChange{Scenario: name, New: n.Verdict, Reason: reasonOf(n)})
			}
			continue
		}
		ch := VerdictChange{Scenario: name, Old: o.Verdict, New: n.Verdict, Reason: reasonOf(n)}
		wasBad, isBad := failing(o.Verdict), failing(n.Verdict)
		switch {
		case !wasBad && isBad:
			d.NewFailures = append(d.NewFailures, ch)
		case wasBad && isBad:
			d.StillFailing = append(d.StillFailing, ch)
		case wasBad && n.Verdict == VerdictPass:
			d.Fixed = append(d.Fixed, ch)
		case n.Verdict == VerdictFlaky && o.Verdict != VerdictFlaky:
			d.NewlyFlaky = append(d.NewlyFlaky, ch)
		case o.Verdict != n.Verdict:
			d.OtherChanges = append(d.OtherChanges, ch)
		}
		if cc := checkChanges(o.Checks, n.Checks); len(cc) > 0 {
			d.Checks = append(d.Checks, ScenarioCheckChanges{Scenario: name, Changes: cc})
		}
	}
	for _, name := range sortedKeys(olds) {
		if _, ok := news[name]; !ok {
			d.Removed = append(d.Removed, ScenarioRef{name, olds[name].Verdict})
		}
	}
	return d
}

func failing(v Verdict) bool { return v == VerdictFail || v == VerdictError }

func runRef(r *Run) RunRef {
	if r == nil {
		return RunRef{}
	}
	ref := RunRef{RunID: r.RunID, LabVersion: r.LabVersion, ConfigDigest: r.ConfigDigest}
	if !r.StartedAt.IsZero() {
		ref.StartedAt = stamp(r.StartedAt)
	}
	return ref
}

func scenarioIndex(r *Run) map[string]*Scenario {
	if r == nil {
		return nil
	}
	m := make(map[string]*Scenario, len(r.Scenarios))
	for i := range r.Scenarios {
		m[r.Scenarios[i].Name] = &r.Scenarios[i]
	}
	return m
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// checkChanges compares two check lists by name, in the new list's order,
// removed checks last.
func checkChanges(old, cur []Check) []CheckChange {
	olds := make(map[string]Check, len(old))
	for _, c := range old {
		olds[c.Name] = c
	}
	var out []CheckChange
	seen := make(map[string]bool, len(cur))
	for _, c := range cur {
		seen[c.Name] = true
		newOK := c.OK
		o, ok := olds[c.Name]
		switch {
		case !ok:
			out = append(out, CheckChange{Check: c.Name, Change: CheckAdded, New: &newOK, Detail: c.Detail})
		case o.OK && c.Failed():
			oldOK := o.OK
			out = append(out, CheckChange{Check: c.Name, Change: CheckRegressed, Old: &oldOK, New: &newOK, Detail: c.Detail})
		case o.Failed() && c.OK:
			oldOK := o.OK
			out = append(out, CheckChange{Check: c.Name, Change: CheckFixed, Old: &oldOK, New: &newOK, Detail: c.Detail})
		}
	}
	for _, c := range old {
		if !seen[c.Name] {
			oldOK := c.OK
			out = append(out, CheckChange{Check: c.Name, Change: CheckRemoved, Old: &oldOK, Detail: c.Detail})
		}
	}
	return out
}

// WriteJSON writes the diff as indented JSON.
func (d *RunDiff) WriteJSON(w io.Writer) error {
	return writeJSON(w, d)
}

// WriteMarkdown writes the diff as Markdown, which also reads well as plain
// text in a terminal.
func (d *RunDiff) WriteMarkdown(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "# agentlab diff %s → %s\n\n", mdText(orDash(d.Old.RunID)), mdText(orDash(d.New.RunID)))
	if d.Old.ConfigDigest != d.New.ConfigDigest {
		fmt.Fprintf(bw, "Configuration changed: %s → %s.\n\n", mdCode(orDash(d.Old.ConfigDigest)), mdCode(orDash(d.New.ConfigDigest)))
	}
	if d.Old.LabVersion != d.New.LabVersion {
		fmt.Fprintf(bw, "Lab version changed: %s → %s.\n\n", mdText(orDash(d.Old.LabVersion)), mdText(orDash(d.New.LabVersion)))
	}
	changes := func(title string, list []VerdictChange) {
		if len(list) == 0 {
			return
		}
		fmt.Fprintf(bw, "## %s (%d)\n\n", title, len(list))
		for _, c := range list {
			old := string(c.Old)
			if old == "" {
				old = "(new scenario)"
			}
			fmt.Fprintf(bw, "- %s: %s → %s", mdText(c.Scenario), old, c.New)
			if c.Reason != "" && failing(c.New) {
				fmt.Fprintf(bw, " (%s)", mdText(c.Reason))
			}
			bw.WriteString("\n")
		}
		bw.WriteString("\n")
	}
	refs := func(title string, list []ScenarioRef) {
		if len(list) == 0 {
			return
		}
		fmt.Fprintf(bw, "## %s (%d)\n\n", title, len(list))
		for _, c := range list {
			fmt.Fprintf(bw, "- %s (%s)\n", mdText(c.Scenario), c.Verdict)
		}
		bw.WriteString("\n")
	}
	changes("New failures", d.NewFailures)
	changes("Fixed", d.Fixed)
	changes("Still failing", d.StillFailing)
	changes("Newly flaky", d.NewlyFlaky)
	changes("Other verdict changes", d.OtherChanges)
	refs("Added scenarios", d.Added)
	refs("Removed scenarios", d.Removed)
	if len(d.Checks) > 0 {
		fmt.Fprintf(bw, "## Check changes (%s)\n\n", plural(len(d.Checks), "scenario"))
		for _, sc := range d.Checks {
			fmt.Fprintf(bw, "- %s\n", mdText(sc.Scenario))
			for _, c := range sc.Changes {
				fmt.Fprintf(bw, "  - %s %s", c.Change, mdText(c.Check))
				if c.Detail != "" {
					fmt.Fprintf(bw, ": %s", mdText(oneLine(c.Detail)))
				}
				bw.WriteString("\n")
			}
		}
		bw.WriteString("\n")
	}
	if d.empty() {
		bw.WriteString("No changes.\n")
	}
	return bw.Flush()
}

func (d *RunDiff) empty() bool {
	return len(d.NewFailures)+len(d.Fixed)+len(d.StillFailing)+len(d.NewlyFlaky)+
		len(d.OtherChanges)+len(d.Added)+len(d.Removed)+len(d.Checks) == 0
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
