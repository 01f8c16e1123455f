package runner

import (
	"errors"
	"fmt"
	"hash/fnv"
	"path"
	"slices"
	"strings"

	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/scenario"
)

// Selection says which scenarios of the suite a run executes.
type Selection struct {
	// Tags are lab.yaml's tag filters merged with --tags/--exclude-tags.
	Tags config.Tags
	// Names, when set, are the only scenarios run (--scenario): exact
	// names or path.Match globs ("desktop/*").
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
// Scenarios of other shards and those not named are in neither. A name
// or glob that matches no scenario is an error naming the closest ones.
func Select(suite []*scenario.Scenario, sel Selection) (run, filtered []*scenario.Scenario, err error) {
	if len(sel.Names) > 0 {
		var unknown []string
		for _, n := range sel.Names {
			if _, err := path.Match(n, ""); err != nil {
				return nil, nil, fmt.Errorf("--scenario %q: %w", n, err)
			}
			if !slices.ContainsFunc(suite, func(s *scenario.Scenario) bool { return nameMatches(n, s.Name) }) {
				unknown = append(unknown, n)
			}
		}
		if len(unknown) > 0 {
			msg := fmt.Sprintf("no scenario named %s", strings.Join(unknown, ", "))
			if near := nearNames(suite, unknown[0]); len(near) > 0 {
				msg += " (did you mean " + strings.Join(near, ", ") + "?)"
			}
			return nil, nil, errors.New(msg)
		}
	}
	if sel.ShardCount > 1 && (sel.ShardIndex < 0 || sel.ShardIndex >= sel.ShardCount) {
		return nil, nil, fmt.Errorf("shard %d/%d: the index must be below the count", sel.ShardIndex, sel.ShardCount)
	}
	for _, s := range suite {
		if len(sel.Names) > 0 && !slices.ContainsFunc(sel.Names, func(n string) bool { return nameMatches(n, s.Name) }) {
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

// nameMatches reports whether the --scenario value n (a name or a glob)
// selects the scenario called name.
func nameMatches(n, name string) bool {
	if n == name {
		return true
	}
	ok, _ := path.Match(n, name)
	return ok
}

// nearNames are the suite's scenarios in the same area as n, or whose name
// contains n's last part: what a mistyped --scenario probably meant.
func nearNames(suite []*scenario.Scenario, n string) []string {
	area, leaf, _ := strings.Cut(n, "/")
	var out []string
	for _, s := range suite {
		_, l, _ := strings.Cut(s.Name, "/")
		if leaf != "" && strings.Contains(l, leaf) || leaf == "" && strings.Contains(s.Name, area) {
			out = append(out, s.Name)
		}
	}
	if len(out) == 0 {
		for _, s := range suite {
			if a, _, _ := strings.Cut(s.Name, "/"); a == area {
				out = append(out, s.Name)
			}
		}
	}
	if len(out) > 5 {
		out = append(out[:5], "…")
	}
	return out
}
