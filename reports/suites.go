package reports

import (
	"sort"
	"strings"
)

// SuiteCount is one upstream suite's checks in a run: how many of its
// upstream checks the run's scenarios mapped, and how they came out.
type SuiteCount struct {
	// Suite is the upstream suite file ("real_supervisor.py").
	Suite string `json:"suite"`
	// Checks counts its distinct upstream checks; with the whole suite
	// selected it is the contract's count for the suite.
	Checks  int `json:"checks"`
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Skipped int `json:"skipped"`
}

// SuiteCounts groups the run's mapped checks by upstream suite, each
// upstream check counted once: failed when any check mapped to it
// failed (or was not reached), else passed when one held, else skipped.
// Suites are sorted by name.
func SuiteCounts(r *Run) []SuiteCount {
	const (
		skipped = iota
		passed
		failed
	)
	state := map[string]int{}
	for i := range r.Scenarios {
		for _, c := range r.Scenarios[i].Checks {
			if c.Upstream == "" {
				continue
			}
			st := skipped
			switch {
			case c.OK:
				st = passed
			case !c.Skipped:
				st = failed
			}
			if prev, ok := state[c.Upstream]; !ok || st > prev {
				state[c.Upstream] = st
			}
		}
	}
	bySuite := map[string]*SuiteCount{}
	for name, st := range state {
		suite, _, _ := strings.Cut(name, "/")
		sc := bySuite[suite]
		if sc == nil {
			sc = &SuiteCount{Suite: suite}
			bySuite[suite] = sc
		}
		sc.Checks++
		switch st {
		case passed:
			sc.Passed++
		case failed:
			sc.Failed++
		default:
			sc.Skipped++
		}
	}
	out := make([]SuiteCount, 0, len(bySuite))
	for _, sc := range bySuite {
		out = append(out, *sc)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Suite < out[j].Suite })
	return out
}
