package lab

import (
	"errors"
	"fmt"
	"slices"

	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/runner"
	"github.com/agentoslab/agentlab/lab/scenario"
)

// Selection says which scenarios a run executes, on top of lab.yaml's
// tags and shard.
type Selection struct {
	// Tags and ExcludeTags add to lab.yaml's tag filters (--tags,
	// --exclude-tags).
	Tags, ExcludeTags []string
	// Names, when set, are the only scenarios run: names or path.Match
	// globs ("desktop/*").
	Names []string
	// ShardIndex of ShardCount (0-based) replaces lab.yaml's shard when
	// ShardCount is above 0.
	ShardIndex, ShardCount int
}

// Plan is what a run will execute: the suite lab.yaml names, and the part
// of it the selection picks.
type Plan struct {
	// Suite is every scenario of lab.yaml's scenarios, validated.
	Suite []*scenario.Scenario
	// Run are the scenarios to run, in suite order; Filtered those the
	// tag filters leave out (reported as skipped). Scenarios of other
	// shards and those not named are in neither.
	Run, Filtered []*scenario.Scenario
	// Selection is the selection in force, lab.yaml's and sel merged.
	Selection runner.Selection
}

// NewPlan loads and validates the suite cfg names and applies sel. An
// invalid suite, a name that matches nothing or a selection that matches
// no scenario of the suite is an Error of kind ErrConfig: nothing would
// run. An empty shard is not an error (it runs nothing and reports so).
func NewPlan(cfg *config.Config, sel Selection) (*Plan, error) {
	rs := runner.Selection{Tags: cfg.Tags, Names: sel.Names, ShardIndex: cfg.Shard.Index, ShardCount: cfg.Shard.Count}
	rs.Tags.Include = append(slices.Clone(rs.Tags.Include), sel.Tags...)
	rs.Tags.Exclude = append(slices.Clone(rs.Tags.Exclude), sel.ExcludeTags...)
	if sel.ShardCount > 0 {
		rs.ShardIndex, rs.ShardCount = sel.ShardIndex, sel.ShardCount
	}
	suite, err := LoadSuite(cfg.Scenarios)
	if err != nil {
		return nil, err
	}
	run, filtered, err := runner.Select(suite, rs)
	if err != nil {
		return nil, &Error{Kind: ErrConfig, Err: err, Hint: "agentlab scenarios list"}
	}
	if len(run) == 0 {
		all, _, _ := runner.Select(suite, runner.Selection{Tags: rs.Tags, Names: rs.Names})
		if len(all) == 0 {
			return nil, &Error{Kind: ErrConfig, Hint: "agentlab scenarios list",
				Err: fmt.Errorf("the selection matches no scenario (%s in the suite)", count(len(suite), "scenario"))}
		}
	}
	return &Plan{Suite: suite, Run: run, Filtered: filtered, Selection: rs}, nil
}

// Check reports what in o the plan cannot do: reproducing (Repeat,
// UntilFail) more or fewer than one scenario, negative counts.
func (p *Plan) Check(o *Options) error {
	if o == nil {
		return nil
	}
	if o.Repeat < 0 || o.Parallel < 0 {
		return &Error{Kind: ErrConfig, Err: errors.New("--repeat and --parallel must not be negative"), Hint: "agentlab run --help"}
	}
	if (o.Repeat > 0 || o.UntilFail) && len(p.Run) != 1 {
		return &Error{Kind: ErrConfig, Hint: "agentlab run --help",
			Err: fmt.Errorf("--repeat and --until-fail reproduce one scenario; the selection has %d (use --scenario NAME)", len(p.Run))}
	}
	return nil
}

// LoadSuite loads and validates the scenarios at paths; an invalid suite
// is an Error of kind ErrConfig listing every problem.
func LoadSuite(paths []string) ([]*scenario.Scenario, error) {
	suite, err := scenario.LoadAll(paths)
	switch {
	case errors.Is(err, scenario.ErrInvalid):
		return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("invalid scenarios:\n%w", err),
			Hint: "agentlab scenarios validate --help (and lab/scenario/DSL.md)"}
	case err != nil:
		return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("scenarios: %w", err), Hint: "agentlab scenarios validate --help"}
	}
	return suite, nil
}

// count renders "1 scenario", "2 scenarios".
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
