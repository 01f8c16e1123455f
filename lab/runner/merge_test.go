package runner

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"

	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShardsMergeToTheWholeRun: a suite run in two shards on two
// machines (each with its own devices, the same serials) and merged with
// reports.Merge reports the verdicts, attempts and exit code the unsharded
// run reports — passes, failures, flaky retries, lab faults re-queued and
// filtered scenarios alike.
func TestShardsMergeToTheWholeRun(t *testing.T) {
	scripts := map[string][]string{}
	var suite []*scenario.Scenario
	words := [][]string{{"pass"}, {"fail"}, {"fail", "pass"}, {"lab", "pass"}, {"pass"}, {"touchpass"}}
	for i := range 24 {
		name := fmt.Sprintf("area%d/s%02d", i%3, i)
		tags := "[nightly]"
		if i%7 == 0 {
			tags = "[slow]" // filtered by the tag selection: reported skipped
		}
		suite = append(suite, mustScenario(t, fmt.Sprintf("name: %s\ntags: %s\nsteps: [{sleep: 1s}]\n", name, tags)))
		scripts[name] = words[i%len(words)]
	}
	tags := tagsOf("nightly", "")
	// run is one machine's agentlab run of shard index of count (count 0:
	// not sharded), as results.json.
	run := func(t *testing.T, index, count int) *reports.Run {
		var res *Result
		synctest.Test(t, func(t *testing.T) {
			sel := Selection{Tags: tags, ShardIndex: index, ShardCount: count}
			scs, filtered, err := Select(suite, sel)
			require.NoError(t, err)
			res, err = Run(context.Background(), Options{Scenarios: scs, Filtered: filtered, Leaser: newLeaser("d1", "d2"),
				Executor: &fakeExecutor{scripts: scripts}, RunDir: t.TempDir()})
			require.NoError(t, err)
		})
		r := &reports.Run{SchemaVersion: reports.SchemaVersion, RunID: fmt.Sprintf("shard-%d-of-%d", index, count), Host: fmt.Sprintf("ci-%d", index),
			Model: reports.Model{Kind: reports.ModelStub}, Selection: reports.Selection{Tags: []string{"nightly"}, ShardIndex: index, ShardCount: count},
			Devices: res.Devices, Scenarios: res.Scenarios}
		require.NoError(t, r.Validate())
		return r
	}
	whole := run(t, 0, 0)
	merged, err := reports.Merge(run(t, 0, 2), run(t, 1, 2))
	require.NoError(t, err)

	verdicts := func(r *reports.Run) map[string]string {
		out := map[string]string{}
		for _, s := range r.Scenarios {
			out[s.Name] = string(s.Verdict) + " [" + attemptsOf(s) + "]"
		}
		return out
	}
	assert.Equal(t, verdicts(whole), verdicts(merged))
	assert.Len(t, merged.Scenarios, len(suite))
	assert.Equal(t, reports.ExitCode(whole), reports.ExitCode(merged))
	ws, ms := reports.Summarize(whole), reports.Summarize(merged)
	assert.Equal(t, ws.Fail, ms.Fail)
	assert.Equal(t, ws.Flaky, ms.Flaky)
	assert.Equal(t, ws.Skipped, ms.Skipped)
	assert.Equal(t, ws.LabFaultAttempts, ms.LabFaultAttempts)
	assert.Len(t, merged.Devices, 4, "both machines' d1 and d2, told apart")
	require.NoError(t, merged.Validate())
}
