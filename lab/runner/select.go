package runner

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/scenario"
)

// Selection says which scenarios of the suite a run executes.
type Selection struct {
	// Tags are lab.yaml's tag filters merged with --tags/--exclude-tags.
	Tags config.Tags
	// Names, when set, are the only scenarios run (--scenario).
	Names []string
	// ShardIndex and ShardCount pick this machine's share: a scenario
	// belongs to shard hash(name) mod ShardCount, so the assignment does
	// not move when scenarios are added or removed elsewhere in the suite.
	ShardIndex, ShardCount int
}

// Shard returns the shard a scenario name belongs to out of count.
func Shard(name string, count int) int {
	if count <= 1 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(name))
	return int(h.Sum64() % uint64(count))
}

// Select splits the suite: run are the scenarios to run, in suite order;
// filtered are those the tag filters leave out (reported as skipped).
// Scenarios of other shards and those not named are in neither. An
// unknown name is an error.
func Select(suite []*scenario.Scenario, sel Selection) (run, filtered []*scenario.Scenario, err error) {
	if len(sel.Names) > 0 {
		var unknown []string
		for _, n := range sel.Names {
			if !slices.ContainsFunc(suite, func(s *scenario.Scenario) bool { return s.Name == n }) {
				unknown = append(unknown, n)
			}
		}
		if len(unknown) > 0 {
			return nil, nil, fmt.Errorf("no scenario named %s", strings.Join(unknown, ", "))
		}
	}
	if sel.ShardCount > 1 && (sel.ShardIndex < 0 || sel.ShardIndex >= sel.ShardCount) {
		return nil, nil, fmt.Errorf("shard %d/%d: the index must be below the count", sel.ShardIndex, sel.ShardCount)
	}
	for _, s := range suite {
		if len(sel.Names) > 0 && !slices.Contains(sel.Names, s.Name) {
			continue
		}
		if Shard(s.Name, sel.ShardCount) != sel.ShardIndex && sel.ShardCount > 1 {
			continue
		}
		if len(sel.Names) == 0 && !sel.Tags.Match(s.Tags) {
			filtered = append(filtered, s)
			continue
		}
		run = append(run, s)
	}
	return run, filtered, nil
}
