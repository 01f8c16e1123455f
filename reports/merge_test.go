package reports

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shardsOf splits the sample run into n shard runs, scenario i going to
// shard i mod n, each shard with its own copy of every device (as when n
// machines each have a device with the same serial).
func shardsOf(r *Run, n int) []*Run {
	shards := make([]*Run, n)
	for i := range shards {
		s := *r
		s.RunID = r.RunID + "-" + string(rune('a'+i))
		s.Selection.ShardIndex, s.Selection.ShardCount = i, n
		s.Scenarios = nil
		shards[i] = &s
	}
	for i, sc := range r.Scenarios {
		shards[i%n].Scenarios = append(shards[i%n].Scenarios, sc)
	}
	return shards
}

func verdictsOf(r *Run) map[string]Verdict {
	out := map[string]Verdict{}
	for _, s := range r.Scenarios {
		out[s.Name] = s.Verdict
	}
	return out
}

// TestMerge: the merged shards report what the whole run reported —
// every scenario with its verdict, the summary, the exit code — and
// serials two shards share are told apart.
func TestMerge(t *testing.T) {
	whole := sampleRun()
	shards := shardsOf(whole, 3)
	merged, err := Merge(shards...)
	require.NoError(t, err)
	assert.Equal(t, verdictsOf(whole), verdictsOf(merged))
	assert.Equal(t, ExitCode(whole), ExitCode(merged))
	ws, ms := Summarize(whole), Summarize(merged)
	// Each shard has its own copy of the devices.
	ms.Devices, ws.Devices, ms.QuarantinedDevices, ws.QuarantinedDevices = 0, 0, 0, 0
	assert.Equal(t, ws, ms)
	assert.Equal(t, "run_01JNQ8ZC4Y3M6S2T7W9XAB1CDE-a+run_01JNQ8ZC4Y3M6S2T7W9XAB1CDE-b+run_01JNQ8ZC4Y3M6S2T7W9XAB1CDE-c", merged.RunID)
	assert.Zero(t, merged.Selection.ShardCount, "the merge is the whole run")
	assert.Len(t, merged.Devices, 3*len(whole.Devices))
	serials := map[string]bool{}
	for _, d := range merged.Devices {
		assert.False(t, serials[d.Serial], "serial %s twice", d.Serial)
		serials[d.Serial] = true
	}
	for _, s := range merged.Scenarios {
		for _, d := range s.Devices {
			assert.True(t, serials[d], "%s names device %s, which the merged run does not have", s.Name, d)
		}
		for _, a := range s.Attempts {
			assert.True(t, serials[a.Device], "%s attempt %d names device %s", s.Name, a.Number, a.Device)
		}
	}
	// Every format renders the merged run; the document validates.
	require.NoError(t, merged.Validate())
	for _, f := range Formats() {
		renderT(t, merged, f)
	}
	// The inputs are left alone.
	assert.Equal(t, whole.Devices[0].Serial, shards[0].Devices[0].Serial)
	assert.Equal(t, whole.Scenarios[0].Attempts[0].Device, shards[0].Scenarios[0].Attempts[0].Device)
}

func TestMergeRefuses(t *testing.T) {
	whole := sampleRun()
	shards := shardsOf(whole, 3)
	unsharded := sampleRun()
	unsharded.Selection.ShardCount = 0
	otherModel := *shards[1]
	otherModel.Model = Model{Kind: ModelLive, Provider: "openai", Name: "m"}
	cases := map[string][]*Run{
		"a shard missing":             {shards[0], shards[2]},
		"a shard twice":               {shards[0], shards[1], shards[1], shards[2]},
		"shards and an unsharded run": {shards[0], shards[1], shards[2], unsharded},
		"another model":               {shards[0], &otherModel, shards[2]},
		"overlapping scenarios":       {unsharded, unsharded},
		"nothing":                     nil,
	}
	for name, runs := range cases {
		_, err := Merge(runs...)
		assert.True(t, errors.Is(err, ErrMerge), "%s: %v", name, err)
	}
	_, err := Merge(shards[0], shards[2])
	assert.ErrorContains(t, err, "shard 1/3 missing")
}

// TestMergeLeakScans: each shard's leak-scan finding survives the merge.
func TestMergeLeakScans(t *testing.T) {
	shards := shardsOf(sampleRun(), 2)
	for i, s := range shards {
		s.Scenarios = append(s.Scenarios, Scenario{Name: "lab/leak-scan", Verdict: VerdictFail, Reason: "leak " + string(rune('a'+i)),
			Checks: []Check{{Name: "no model key in artifacts/x/runtime.log"}}})
	}
	merged, err := Merge(shards...)
	require.NoError(t, err)
	var leak *Scenario
	for i := range merged.Scenarios {
		if merged.Scenarios[i].Name == "lab/leak-scan" {
			leak = &merged.Scenarios[i]
		}
	}
	require.NotNil(t, leak)
	assert.Equal(t, []string{"no model key in artifacts/x/runtime.log", "no model key in artifacts/x/runtime.log #2"},
		[]string{leak.Checks[0].Name, leak.Checks[1].Name})
}
