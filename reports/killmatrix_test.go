package reports

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func killScenario(name string, v Verdict, checks map[string]bool, order ...string) Scenario {
	s := Scenario{Name: name, Verdict: v, Reason: "step 2 failed"}
	for _, c := range order {
		s.Checks = append(s.Checks, Check{Name: c, OK: checks[c]})
	}
	return s
}

func TestNewKillMatrix(t *testing.T) {
	baseline := &Run{RunID: "run-base", Scenarios: []Scenario{
		killScenario("a/pair", VerdictPass, map[string]bool{"tooMany": true, "oneTime": true}, "tooMany", "oneTime"),
		killScenario("b/uid", VerdictFlaky, map[string]bool{"closed": true}, "closed"),
		killScenario("c/broken", VerdictFail, map[string]bool{"x": false, "y": true}, "x", "y"),
	}}
	rounds := []FaultRound{
		{Fault: "attempts", Output: "faults/attempts", Run: &Run{RunID: "r1", Scenarios: []Scenario{
			killScenario("a/pair", VerdictFail, map[string]bool{"oneTime": true}, "tooMany", "oneTime"),
			killScenario("b/uid", VerdictPass, map[string]bool{"closed": true}, "closed"),
			// Red already without a fault: proves nothing.
			killScenario("c/broken", VerdictFail, map[string]bool{}, "x", "y"),
		}}},
		{Fault: "uid", Output: "faults/uid", Run: &Run{RunID: "r2", Scenarios: []Scenario{
			// Failed with no failed named check: its steps caught it.
			killScenario("b/uid", VerdictFail, map[string]bool{"closed": true}, "closed"),
		}}},
		{Fault: "survivor", Output: "faults/survivor", Run: &Run{RunID: "r3", Scenarios: []Scenario{
			killScenario("a/pair", VerdictPass, map[string]bool{"tooMany": true, "oneTime": true}, "tooMany", "oneTime"),
			// A lab fault is no catch.
			killScenario("b/uid", VerdictError, map[string]bool{}, "closed"),
		}}},
	}
	m := NewKillMatrix(baseline, rounds)

	assert.Equal(t, []string{"c/broken: x", "c/broken: y"}, m.Baseline.Red)
	require.Len(t, m.Faults, 3)
	assert.Equal(t, []string{"a/pair: tooMany"}, m.Faults[0].Checks)
	assert.True(t, m.Faults[0].Caught)
	assert.Equal(t, []string{"b/uid: (steps)"}, m.Faults[1].Checks)
	assert.Equal(t, "step 2 failed", m.Faults[1].Scenarios[0].Reason)
	assert.False(t, m.Faults[2].Caught)
	assert.Equal(t, 2, m.Caught)
	assert.Equal(t, 1, m.Survived)
	assert.InDelta(t, 66.67, m.CaughtPercent, 0.01)
	assert.Equal(t, []string{"a/pair: oneTime", "b/uid: closed"}, m.Unproven)
	assert.Equal(t, 2, m.UnprovenCount)
	var names []string
	for _, c := range m.Checks {
		names = append(names, c.Name+"="+strings.Join(c.Faults, ","))
	}
	assert.Equal(t, []string{"a/pair: tooMany=attempts", "a/pair: oneTime=", "b/uid: closed=", "b/uid: (steps)=uid"}, names)
}

func TestWriteKillMatrix(t *testing.T) {
	dir := t.TempDir()
	base := &Run{RunID: "run-base", Scenarios: []Scenario{
		killScenario("a/pair", VerdictPass, map[string]bool{"tooMany": true}, "tooMany")}}
	m := NewKillMatrix(base, []FaultRound{{Fault: "x<y", Output: "faults/x", Run: &Run{}}})
	require.NoError(t, WriteKillMatrix(dir, base, m))

	b, err := os.ReadFile(filepath.Join(dir, KillMatrixFile))
	require.NoError(t, err)
	var back KillMatrix
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, 1, back.Survived)
	assert.Equal(t, []string{"a/pair: tooMany"}, back.Unproven)

	html, err := os.ReadFile(filepath.Join(dir, "report.html"))
	require.NoError(t, err)
	assert.Contains(t, string(html), `<section id="kill-matrix">`)
	assert.Contains(t, string(html), "survived: no check went red")
	assert.Contains(t, string(html), "x&lt;y", "fault names are escaped")
	assert.Contains(t, string(html), "Unproven checks (1)")
	assert.Contains(t, string(html), `id="scenarios"`, "the baseline's report stays whole")
}
