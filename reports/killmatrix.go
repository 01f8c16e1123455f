package reports

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// KillMatrixFile is the kill matrix's file name in a mutate run's output.
const KillMatrixFile = "kill-matrix.json"

// KillMatrixSchema is kill-matrix.json's schemaVersion.
const KillMatrixSchema = 1

// KillMatrix is agentlab mutate's result: the suite run once on the
// fault-injection runtime with no fault (the baseline) and once per fault.
// A check catches a fault when it passed in the baseline and failed with
// the fault. A fault no check catches survives; a baseline check that
// catches no fault is unproven (it would pass whatever those rules do).
type KillMatrix struct {
	SchemaVersion int `json:"schemaVersion"`
	// Baseline is the run with no fault; its reports are the output's own.
	Baseline KillBaseline `json:"baseline"`
	// Faults are the faults in the order they ran.
	Faults []KillFault `json:"faults"`
	// Checks are the baseline's passing checks, each with the faults it
	// catches, in suite order.
	Checks []KillCheck `json:"checks"`
	// Unproven names the checks that catch no fault; UnprovenCount is
	// their number.
	Unproven      []string `json:"unproven"`
	UnprovenCount int      `json:"unprovenCount"`
	// Caught and Survived count the faults; CaughtPercent is 100·Caught/len(Faults).
	Caught        int     `json:"caught"`
	Survived      int     `json:"survived"`
	CaughtPercent float64 `json:"caughtPercent"`
}

// KillBaseline is the no-fault run.
type KillBaseline struct {
	RunID     string `json:"runId"`
	Scenarios int    `json:"scenarios"`
	Checks    int    `json:"checks"`
	// Red are the checks that did not pass without a fault: they prove
	// nothing here and are left out of the matrix.
	Red []string `json:"red"`
}

// KillFault is one fault's round.
type KillFault struct {
	Name string `json:"name"`
	// Caught: at least one baseline check went red.
	Caught bool `json:"caught"`
	// Checks are the baseline checks that went red ("scenario: check").
	Checks []string `json:"checks"`
	// Scenarios are the scenarios that failed with it, with a reason for
	// those that failed without a failed named check (a step error).
	Scenarios []KillScenario `json:"scenarios"`
	// Output is the round's report folder, relative to the matrix.
	Output string `json:"output"`
	RunID  string `json:"runId"`
}

// KillScenario is a scenario that failed under a fault.
type KillScenario struct {
	Name    string  `json:"name"`
	Verdict Verdict `json:"verdict"`
	Reason  string  `json:"reason,omitempty"`
}

// KillCheck is one baseline check and the faults it catches.
type KillCheck struct {
	Name     string   `json:"name"`
	Scenario string   `json:"scenario"`
	Check    string   `json:"check"`
	Faults   []string `json:"faults"`
}

// FaultRound is one fault's run, where its reports were written.
type FaultRound struct {
	Fault  string
	Run    *Run
	Output string
}

// CheckID names a check in the matrix: "scenario: check".
func CheckID(scenario, check string) string { return scenario + ": " + check }

// steps stands for a scenario's steps in the matrix when it failed
// without a failed named check: a step that errored proves the fault too.
const steps = "(steps)"

// NewKillMatrix compares each fault's run with the baseline.
func NewKillMatrix(baseline *Run, rounds []FaultRound) *KillMatrix {
	m := &KillMatrix{SchemaVersion: KillMatrixSchema, Faults: []KillFault{}, Checks: []KillCheck{}, Unproven: []string{},
		Baseline: KillBaseline{RunID: baseline.RunID, Scenarios: len(baseline.Scenarios), Red: []string{}}}
	index := map[string]int{}
	passed := map[string]bool{} // scenarios that passed without a fault
	for _, s := range baseline.Scenarios {
		ok := s.Verdict == VerdictPass || s.Verdict == VerdictFlaky
		passed[s.Name] = ok
		for _, c := range s.Checks {
			if c.Skipped {
				// Not evaluated on these devices: it can catch nothing.
				continue
			}
			id := CheckID(s.Name, c.Name)
			m.Baseline.Checks++
			if !c.OK || !ok {
				m.Baseline.Red = append(m.Baseline.Red, id)
				continue
			}
			index[id] = len(m.Checks)
			m.Checks = append(m.Checks, KillCheck{Name: id, Scenario: s.Name, Check: c.Name, Faults: []string{}})
		}
		if ok {
			// A scenario's steps are a check of their own: one that
			// errors under a fault catches it.
			id := CheckID(s.Name, steps)
			index[id] = len(m.Checks)
			m.Checks = append(m.Checks, KillCheck{Name: id, Scenario: s.Name, Check: steps, Faults: []string{}})
		}
	}
	for _, r := range rounds {
		kf := KillFault{Name: r.Fault, Checks: []string{}, Scenarios: []KillScenario{}, Output: filepath.ToSlash(r.Output)}
		if r.Run != nil {
			kf.RunID = r.Run.RunID
			for _, s := range r.Run.Scenarios {
				if s.Verdict != VerdictFail || !passed[s.Name] {
					continue
				}
				ks := KillScenario{Name: s.Name, Verdict: s.Verdict}
				red := 0
				for _, c := range s.Checks {
					if i, ok := index[CheckID(s.Name, c.Name)]; ok && c.Failed() {
						kf.Checks = append(kf.Checks, m.Checks[i].Name)
						m.Checks[i].Faults = append(m.Checks[i].Faults, r.Fault)
						red++
					}
				}
				if red == 0 {
					ks.Reason = s.Reason
					i := index[CheckID(s.Name, steps)]
					kf.Checks = append(kf.Checks, m.Checks[i].Name)
					m.Checks[i].Faults = append(m.Checks[i].Faults, r.Fault)
				}
				kf.Scenarios = append(kf.Scenarios, ks)
			}
		}
		kf.Caught = len(kf.Checks) > 0
		if kf.Caught {
			m.Caught++
		} else {
			m.Survived++
		}
		m.Faults = append(m.Faults, kf)
	}
	for _, c := range m.Checks {
		if len(c.Faults) == 0 && c.Check != steps {
			m.Unproven = append(m.Unproven, c.Name)
		}
	}
	// Steps that never errored are no check a reader counts on: keep
	// only those that caught something.
	m.Checks = slices.DeleteFunc(m.Checks, func(c KillCheck) bool { return c.Check == steps && len(c.Faults) == 0 })
	m.UnprovenCount = len(m.Unproven)
	if n := len(m.Faults); n > 0 {
		m.CaughtPercent = float64(m.Caught) * 100 / float64(n)
	}
	return m
}

// WriteKillMatrix writes kill-matrix.json into dir and adds the "Kill
// matrix" section to the baseline's report.html there.
func WriteKillMatrix(dir string, baseline *Run, m *KillMatrix) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("kill matrix: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, KillMatrixFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("kill matrix: %w", err)
	}
	var buf bytes.Buffer
	if err := writeHTMLWith(&buf, prepare(baseline), func(w htmlWriter) { writeHTMLKillMatrix(w, m) }); err != nil {
		return fmt.Errorf("kill matrix: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, FormatHTML.FileName()), buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("kill matrix: %w", err)
	}
	return nil
}

// writeHTMLKillMatrix is report.html's "Kill matrix" section: the faults
// with the checks that caught them, the checks with the faults they
// catch, and the unproven checks.
func writeHTMLKillMatrix(w htmlWriter, m *KillMatrix) {
	w.raw("<section id=\"kill-matrix\">\n<h2>Kill matrix</h2>\n<p>")
	w.text(fmt.Sprintf("%d of %s caught (%.0f %%), %s unproven; %d baseline checks red without a fault.",
		m.Caught, plural(len(m.Faults), "fault"), m.CaughtPercent, plural(m.UnprovenCount, "check"), len(m.Baseline.Red)))
	w.raw("</p>\n<table>\n<thead><tr><th>fault</th><th>caught by</th><th>report</th></tr></thead>\n<tbody>\n")
	for _, f := range m.Faults {
		v := VerdictPass
		if !f.Caught {
			v = VerdictFail
		}
		w.raw("<tr><td>")
		w.badge(v)
		w.raw(" <code>")
		w.text(f.Name)
		w.raw("</code></td><td>")
		if !f.Caught {
			w.raw("<strong>survived: no check went red</strong>")
		}
		for i, c := range f.Checks {
			if i > 0 {
				w.raw("<br>")
			}
			w.text(c)
		}
		w.raw("</td><td><a href=\"")
		w.href(f.Output + "/report.html")
		w.raw("\">")
		w.text(f.Output)
		w.raw("</a></td></tr>\n")
	}
	w.raw("</tbody>\n</table>\n<h3>Checks</h3>\n<table>\n<thead><tr><th>check</th><th>catches</th></tr></thead>\n<tbody>\n")
	for _, c := range m.Checks {
		w.raw("<tr><td>")
		w.text(c.Name)
		w.raw("</td><td>")
		if len(c.Faults) == 0 {
			w.raw("<em>unproven</em>")
		}
		for i, f := range c.Faults {
			if i > 0 {
				w.raw(", ")
			}
			w.raw("<code>")
			w.text(f)
			w.raw("</code>")
		}
		w.raw("</td></tr>\n")
	}
	w.raw("</tbody>\n</table>\n<h3>Unproven checks (" + strconv.Itoa(m.UnprovenCount) + ")</h3>\n<ul>\n")
	for _, c := range m.Unproven {
		w.raw("<li>")
		w.text(c)
		w.raw("</li>\n")
	}
	w.raw("</ul>\n</section>\n\n")
}
