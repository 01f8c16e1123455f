package reports

import (
	"encoding/json"
	"io"
)

// writeJSON writes v as indented JSON, fields in struct order, HTML
// characters left as they are (the files are data, not markup). Run and the
// upstream document have faster hand-written encoders (jsonenc.go) that
// produce the same bytes.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

// upstreamDoc is the shape of the upstream device suites' result files
// (spec §10: {checks:[{name, ok, detail}], passed, total}), so a run can be
// compared line by line with an upstream result. Key names follow upstream.
type upstreamDoc struct {
	RunID  string          `json:"run_id"`
	Checks []upstreamCheck `json:"checks"`
	Passed int             `json:"passed"`
	Total  int             `json:"total"`
	// Skipped counts checks not evaluated on the run's devices (in
	// Total, never in Passed).
	Skipped int `json:"skipped"`
	// Suites count each upstream suite's checks (see SuiteCounts).
	Suites                   []SuiteCount   `json:"suites"`
	InconclusiveScenarios    []string       `json:"inconclusive_scenarios"`
	PersonTouchesPerScenario map[string]int `json:"person_touches_per_scenario"`
}

type upstreamCheck struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Detail  string `json:"detail"`
	Skipped bool   `json:"skipped,omitempty"`
}

// writeUpstream lists every named check of every scenario under its
// upstream name, or "<scenario>/<check>" when it maps to none.
func writeUpstream(w io.Writer, r *Run) error {
	doc := upstreamDoc{
		RunID:                    r.RunID,
		Checks:                   []upstreamCheck{},
		InconclusiveScenarios:    []string{},
		PersonTouchesPerScenario: map[string]int{},
	}
	for i := range r.Scenarios {
		s := &r.Scenarios[i]
		for _, c := range s.Checks {
			name := c.Upstream
			if name == "" {
				name = s.Name + "/" + c.Name
			}
			doc.Checks = append(doc.Checks, upstreamCheck{Name: name, OK: c.OK, Detail: c.Detail, Skipped: c.Skipped})
			doc.Total++
			switch {
			case c.OK:
				doc.Passed++
			case c.Skipped:
				doc.Skipped++
			}
		}
		if s.Verdict == VerdictInconclusive {
			doc.InconclusiveScenarios = append(doc.InconclusiveScenarios, s.Name)
		}
		if s.PersonTouches > 0 {
			doc.PersonTouchesPerScenario[s.Name] = s.PersonTouches
		}
	}
	doc.Suites = SuiteCounts(r)
	return encodeUpstream(w, &doc)
}
