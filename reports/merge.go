package reports

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ErrMerge reports shard runs that do not make one run.
var ErrMerge = errors.New("cannot merge")

// Merge combines the runs of one sharded run — agentlab run --shard i/n on
// n CI machines — into the run a single machine would have reported: every
// scenario of every shard, every device, the summary of the whole.
//
// The inputs are either all the shards of one sharding (the same count n,
// each index exactly once) or runs that were not sharded at all (say, two
// pools on two hosts); scenarios must be disjoint, and the model and the
// tag selection the same. Anything else is an error wrapping ErrMerge,
// because a merge that silently lacks a shard would report its scenarios as
// never having existed.
//
// Device serials are per host: two CI machines may both have
// "emulator-5554". A serial found in more than one input is renamed
// "shard<i>/<serial>" (i the shard index, or the input's position when
// not sharded) in that input's devices, scenarios and attempts.
//
// The merged run's id joins the inputs' ids with "+"; start and end are
// the earliest start and the latest end; host, lab version and config
// digest are the inputs' distinct values joined with ",". The inputs are
// not modified.
func Merge(runs ...*Run) (*Run, error) {
	if len(runs) == 0 {
		return nil, fmt.Errorf("%w: no runs", ErrMerge)
	}
	for i, r := range runs {
		if r == nil {
			return nil, fmt.Errorf("%w: run %d is nil", ErrMerge, i+1)
		}
	}
	if err := checkShards(runs); err != nil {
		return nil, err
	}
	first := runs[0]
	for _, r := range runs[1:] {
		if r.Model != first.Model {
			return nil, fmt.Errorf("%w: %s used model %s, %s used %s", ErrMerge, first.RunID, modelLine(first.Model), r.RunID, modelLine(r.Model))
		}
		if !slices.Equal(r.Selection.Tags, first.Selection.Tags) || !slices.Equal(r.Selection.ExcludeTags, first.Selection.ExcludeTags) {
			return nil, fmt.Errorf("%w: %s selected %s, %s selected %s", ErrMerge, first.RunID, selectionLine(first.Selection), r.RunID, selectionLine(r.Selection))
		}
	}

	// Serials seen in more than one input are qualified by their shard.
	owners := map[string]int{}
	for _, r := range runs {
		seen := map[string]bool{}
		for _, d := range r.Devices {
			if !seen[d.Serial] {
				seen[d.Serial] = true
				owners[d.Serial]++
			}
		}
	}

	out := &Run{
		SchemaVersion: SchemaVersion,
		Selection:     Selection{Tags: slices.Clone(first.Selection.Tags), ExcludeTags: slices.Clone(first.Selection.ExcludeTags)},
		Model:         first.Model,
		Devices:       []Device{},
		Scenarios:     []Scenario{},
	}
	var ids, hosts, versions, digests []string
	where := map[string]string{} // scenario → the run that has it
	for i, r := range runs {
		ids = append(ids, r.RunID)
		hosts = appendNew(hosts, r.Host)
		versions = appendNew(versions, r.LabVersion)
		digests = appendNew(digests, r.ConfigDigest)
		if !r.StartedAt.IsZero() && (out.StartedAt.IsZero() || r.StartedAt.Before(out.StartedAt)) {
			out.StartedAt = r.StartedAt
		}
		if r.FinishedAt.After(out.FinishedAt) {
			out.FinishedAt = r.FinishedAt
		}
		shard := i
		if r.Selection.ShardCount > 1 {
			shard = r.Selection.ShardIndex
		}
		rename := func(serial string) string {
			if owners[serial] > 1 {
				return "shard" + strconv.Itoa(shard) + "/" + serial
			}
			return serial
		}
		for _, d := range r.Devices {
			d.Serial = rename(d.Serial)
			out.Devices = append(out.Devices, d)
		}
		for _, s := range r.Scenarios {
			if other, dup := where[s.Name]; dup {
				if i := slices.IndexFunc(out.Scenarios, func(x Scenario) bool { return x.Name == s.Name }); i >= 0 && labLevel(&out.Scenarios[i]) && labLevel(&s) {
					mergeLabLevel(&out.Scenarios[i], &s)
					continue
				}
				return nil, fmt.Errorf("%w: scenario %s is in both %s and %s (overlapping shards?)", ErrMerge, s.Name, other, r.RunID)
			}
			where[s.Name] = r.RunID
			s.Devices = mapSerials(s.Devices, rename)
			s.Attempts = slices.Clone(s.Attempts)
			for j := range s.Attempts {
				s.Attempts[j].Device = rename(s.Attempts[j].Device)
			}
			out.Scenarios = append(out.Scenarios, s)
		}
	}
	out.RunID = strings.Join(ids, "+")
	out.Host = strings.Join(hosts, ",")
	out.LabVersion = strings.Join(versions, ",")
	out.ConfigDigest = strings.Join(digests, ",")
	out.Summary = Summarize(out)
	return out, nil
}

// checkShards accepts all the shards of one sharding, or no sharded run.
func checkShards(runs []*Run) error {
	count := 0
	sharded := 0
	for _, r := range runs {
		if r.Selection.ShardCount > 1 {
			sharded++
			count = r.Selection.ShardCount
		}
	}
	if sharded == 0 {
		return nil
	}
	if sharded != len(runs) {
		return fmt.Errorf("%w: %d of the %s are shards and the others are not", ErrMerge, sharded, plural(len(runs), "run"))
	}
	have := make([]string, count)
	for _, r := range runs {
		sel := r.Selection
		if sel.ShardCount != count {
			return fmt.Errorf("%w: %s is shard %d/%d but another run has %d shards", ErrMerge, r.RunID, sel.ShardIndex, sel.ShardCount, count)
		}
		if sel.ShardIndex < 0 || sel.ShardIndex >= count {
			return fmt.Errorf("%w: %s: shard index %d out of 0..%d", ErrMerge, r.RunID, sel.ShardIndex, count-1)
		}
		if have[sel.ShardIndex] != "" {
			return fmt.Errorf("%w: shard %d/%d is both %s and %s", ErrMerge, sel.ShardIndex, count, have[sel.ShardIndex], r.RunID)
		}
		have[sel.ShardIndex] = r.RunID
	}
	var missing []string
	for i, id := range have {
		if id == "" {
			missing = append(missing, fmt.Sprintf("%d/%d", i, count))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: shard %s missing (its results.json was not given)", ErrMerge, strings.Join(missing, ", "))
	}
	return nil
}

// labLevel reports whether s is a finding of the lab itself (the leak scan)
// rather than a scenario that ran: it has no attempts. Every shard may
// report one; the merge joins them.
func labLevel(s *Scenario) bool { return len(s.Attempts) == 0 && s.Verdict == VerdictFail }

// mergeLabLevel adds the checks of b to a, keeping check names unique.
func mergeLabLevel(a, b *Scenario) {
	names := map[string]bool{}
	for _, c := range a.Checks {
		names[c.Name] = true
	}
	a.Checks = slices.Clone(a.Checks)
	for _, c := range b.Checks {
		name := c.Name
		for n := 2; names[name]; n++ {
			name = c.Name + " #" + strconv.Itoa(n)
		}
		names[name] = true
		c.Name = name
		a.Checks = append(a.Checks, c)
	}
	a.Reason = oneLine(a.Reason + "; " + b.Reason)
}

func appendNew(list []string, s string) []string {
	if s == "" || slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

func mapSerials(serials []string, f func(string) string) []string {
	if serials == nil {
		return nil
	}
	out := make([]string, len(serials))
	for i, s := range serials {
		out[i] = f(s)
	}
	return out
}
