package scenarios

import (
	"github.com/agentoslab/agentlab/reports"
)

// scenarioResult is a scenario's verdict in results.json and the names
// of the checks its last attempt failed.
type scenarioResult struct {
	Verdict string
	Failed  []string
}

// readResults reads a run's results.json, by scenario name.
func readResults(path string) (map[string]scenarioResult, error) {
	run, err := reports.Load(path)
	if err != nil {
		return nil, err
	}
	out := map[string]scenarioResult{}
	for _, s := range run.Scenarios {
		r := scenarioResult{Verdict: string(s.Verdict)}
		if n := len(s.Attempts); n > 0 {
			for _, c := range s.Attempts[n-1].Checks {
				if !c.OK {
					r.Failed = append(r.Failed, c.Name)
				}
			}
		}
		out[s.Name] = r
	}
	return out, nil
}
