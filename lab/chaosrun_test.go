package lab

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/agentoslab/agentlab/reports"
)

// TestChaosJudge: a sequence's result is read as a broken invariant (the
// first failed invariant check), a failed step, a lab fault or a pass;
// every evaluated invariant check is counted, the ones not reached are
// not.
func TestChaosJudge(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sc        reports.Scenario
		want      outcome
		exercised map[string]int
	}{
		{"pass", reports.Scenario{Verdict: reports.VerdictPass, Checks: []reports.Check{
			{Name: "oneTerminalState@1", OK: true}, {Name: "revokedHasNoTask@1", OK: true}}},
			outcome{}, map[string]int{"oneTerminalState": 1, "revokedHasNoTask": 1}},
		{"broken", reports.Scenario{Verdict: reports.VerdictFail, Checks: []reports.Check{
			{Name: "consentAnswered@2", OK: true}, {Name: "scopeNeverWidens@3", OK: false, Detail: "got x"},
			{Name: "onePromptAtATime@4", OK: false, Detail: "got FAILED"}}},
			outcome{invariant: "scopeNeverWidens", check: "scopeNeverWidens@3", detail: "got x", step: 3},
			map[string]int{"consentAnswered": 1, "scopeNeverWidens": 1, "onePromptAtATime": 1}},
		{"a step failed", reports.Scenario{Verdict: reports.VerdictFail, Checks: []reports.Check{
			{Name: "step 9 callers", OK: false, Detail: "no caller app"},
			{Name: "oneTerminalState@1", OK: false, Detail: "not reached: step 9 callers failed"}}},
			outcome{failed: true, check: "step 9 callers", detail: "no caller app"}, map[string]int{}},
		{"lab fault", reports.Scenario{Verdict: reports.VerdictError, Reason: "device gone"},
			outcome{labFault: true, detail: "device gone"}, map[string]int{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &chaosRun{res: &ChaosResult{Exercised: map[string]int{}}}
			assert.Equal(t, tc.want, c.judge(tc.sc))
			assert.Equal(t, tc.exercised, c.res.Exercised)
		})
	}
}

func TestKebab(t *testing.T) {
	assert.Equal(t, "consent-answered", kebab("consentAnswered"))
	assert.Equal(t, "one-prompt-at-a-time", kebab("onePromptAtATime"))
}
