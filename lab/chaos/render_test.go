package chaos

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/lab/scenario"
)

// everyKind is a sequence with each kind once, prompts in every scope
// and consent.
func everyKind() []Action {
	var seq []Action
	for _, k := range Kinds() {
		seq = append(seq, Action{Kind: k})
	}
	seq = append(seq, Action{Kind: Prompt, Scope: ScopeEcho, Allow: true}, Action{Kind: Prompt, Scope: ScopeNo})
	for i := range seq {
		seq[i].ID = i + 1
	}
	return seq
}

func TestScenarioIsValid(t *testing.T) {
	seq := everyKind()
	doc := Scenario(Spec{Name: "chaos/every-kind", Seed: 42, Description: "Every action once."}, seq)
	s, err := scenario.Parse(doc, "every-kind.yaml", nil)
	require.NoError(t, err, "%s", doc)
	assert.Equal(t, int64(42), s.Model.Chaos.Seed)
	exercised := map[string]int{}
	for _, st := range s.Steps {
		var name string
		switch {
		case st.Check != nil:
			name = st.Check.Name
		case st.Wait != nil && st.Wait.Check != nil:
			name = st.Wait.Check.Name
		default:
			continue
		}
		inv, step := InvariantOf(name)
		require.NotEmpty(t, inv, "check %s is an invariant's", name)
		assert.Positive(t, step)
		exercised[inv]++
	}
	for _, inv := range Invariants {
		assert.Positive(t, exercised[inv.Name], "%s is checked by some action", inv.Name)
	}
}

func TestCallersPerRun(t *testing.T) {
	a := string(Scenario(Spec{Name: "a/b", Seed: 1, Description: "d", Callers: "b1n0"}, everyKind()))
	b := string(Scenario(Spec{Name: "a/b", Seed: 1, Description: "d", Callers: "b2n1"}, everyKind()))
	assert.Contains(t, a, CallerPrefix+"b1n0.a")
	assert.Contains(t, a, CallerPrefix+"b1n0.b")
	assert.NotContains(t, b, CallerPrefix+"b1n0.", "another run, other apps: no quota carries over")
}

func TestSubsequencesAreValid(t *testing.T) {
	seq := everyKind()
	for i := range seq {
		sub := append(append([]Action{}, seq[:i]...), seq[i+1:]...)
		_, err := scenario.Parse(Scenario(Spec{Name: "chaos/sub", Seed: 1, Description: "A subsequence."}, sub), "sub.yaml", nil)
		require.NoError(t, err, "without %s", seq[i])
		_, err = scenario.Parse(Scenario(Spec{Name: "chaos/one", Seed: 1, Description: "One action."}, seq[i:i+1]), "one.yaml", nil)
		require.NoError(t, err, "%s alone", seq[i])
	}
	_, err := scenario.Parse(Scenario(Spec{Name: "chaos/empty", Seed: 1, Description: "Nothing.", Fault: "scope_widen", FaultFile: "/data/f"}, nil), "empty.yaml", nil)
	require.NoError(t, err)
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, b := Generate(7, 30, nil), Generate(7, 30, nil)
	assert.Equal(t, a, b)
	assert.NotEqual(t, a, Generate(8, 30, nil))
	kinds := map[Kind]bool{}
	for seed := range int64(20) {
		for _, x := range Generate(seed, 20, nil) {
			kinds[x.Kind] = true
		}
	}
	assert.Len(t, kinds, len(Kinds())-1, "the seeds draw every kind but reboot")
	assert.NotContains(t, kinds, Reboot, "reboot only when asked for")
	assert.True(t, slices.ContainsFunc(Generate(1, 20, []Kind{Reboot, Prompt}), func(a Action) bool { return a.Kind == Reboot }), "asked for")
	for _, x := range Generate(3, 20, []Kind{Busy, Revoke}) {
		assert.Contains(t, []Kind{Busy, Revoke}, x.Kind)
	}
}

func TestInvariantOf(t *testing.T) {
	for check, want := range map[string]string{"scopeNeverWidens@3": "scopeNeverWidens", "revokedHasNoTask@12.result": "revokedHasNoTask",
		"step 3 caller": "", "madeUp@1": "", "consentAnswered@x": ""} {
		got, _ := InvariantOf(check)
		assert.Equal(t, want, got, check)
	}
	assert.True(t, strings.HasPrefix(string(Scenario(Spec{Name: "a/b", Seed: 1, Description: "d"}, nil)), "# yaml-language-server"))
}
