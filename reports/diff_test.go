package reports

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"
)

// diffRuns returns an older run and the sample run as the newer one, with
// one scenario for every kind of change.
func diffRuns() (before, after *Run) {
	after = sampleRun()
	after.Scenarios = append(after.Scenarios, Scenario{Name: "sms/dedup", File: "sms/dedup.yaml", Verdict: VerdictSkipped, Reason: "no peer"},
		// Added with the change that breaks it: a new failure.
		Scenario{Name: "notes/added-broken", File: "notes/added-broken.yaml", Verdict: VerdictFail, Reason: "created twice"})

	before = sampleRun()
	before.RunID = "run_01JNPREVIOUS000000000000000"
	before.ConfigDigest = "sha256:0000"
	byName := func(name string) *Scenario {
		for i := range before.Scenarios {
			if before.Scenarios[i].Name == name {
				return &before.Scenarios[i]
			}
		}
		panic(name)
	}
	// revoke-closes passed before; one check has since been renamed.
	s := byName("third-party/revoke-closes")
	s.Verdict, s.Reason = VerdictPass, ""
	s.Checks = slices.Clone(s.Checks)
	for i := range s.Checks {
		s.Checks[i].OK = true
	}
	s.Checks[len(s.Checks)-1].Name = "slotReleased"
	// plugin-death passed at once before.
	s = byName("ext/plugin-death")
	s.Verdict, s.Attempts = VerdictPass, s.Attempts[1:]
	// always-allow failed before, for the product.
	s = byName("notes/always-allow")
	s.Verdict = VerdictFail
	// injection failed before and is fixed now.
	s = byName("sms/injection")
	s.Verdict = VerdictFail
	s.Checks = slices.Clone(s.Checks)
	s.Checks[6].OK, s.Checks[6].Detail = false, "2 new events"
	// unauthorized-pending is new; a removed scenario existed before.
	before.Scenarios = slices.DeleteFunc(before.Scenarios, func(s Scenario) bool { return s.Name == "third-party/unauthorized-pending" })
	before.Scenarios = append(before.Scenarios,
		Scenario{Name: "legacy/removed-case", Verdict: VerdictPass},
		Scenario{Name: "sms/dedup", Verdict: VerdictPass})
	return before, after
}

func names(cs []VerdictChange) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Scenario+":"+string(c.Old)+">"+string(c.New))
	}
	return out
}

func TestDiff(t *testing.T) {
	t.Parallel()
	before, after := diffRuns()
	d := Diff(before, after)
	check := func(what string, got, want []string) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %q, want %q", what, got, want)
		}
	}
	check("new failures", names(d.NewFailures), []string{"notes/added-broken:>fail", "third-party/revoke-closes:pass>fail"})
	check("fixed", names(d.Fixed), []string{"sms/injection:fail>pass"})
	check("still failing", names(d.StillFailing), []string{"notes/always-allow:fail>error"})
	check("newly flaky", names(d.NewlyFlaky), []string{"ext/plugin-death:pass>flaky"})
	check("other", names(d.OtherChanges), []string{"sms/dedup:pass>skipped"})
	if !reflect.DeepEqual(d.Added, []ScenarioRef{{"notes/added-broken", VerdictFail}, {"third-party/unauthorized-pending", VerdictPass}}) {
		t.Errorf("added = %v", d.Added)
	}
	if !reflect.DeepEqual(d.Removed, []ScenarioRef{{"legacy/removed-case", VerdictPass}}) {
		t.Errorf("removed = %v", d.Removed)
	}
	var checkChanges []string
	for _, sc := range d.Checks {
		for _, c := range sc.Changes {
			checkChanges = append(checkChanges, sc.Scenario+"/"+c.Check+":"+string(c.Change))
		}
	}
	check("check changes", checkChanges, []string{
		"sms/injection/atMostOneNewEvent:fixed",
		"third-party/revoke-closes/tasksCancelled:regressed",
		"third-party/revoke-closes/cancelRecorded:regressed",
		"third-party/revoke-closes/slotFreed:added",
		"third-party/revoke-closes/slotReleased:removed",
	})
	if !d.Regressed() {
		t.Error("Regressed() = false with a new failure")
	}

	same := Diff(after, after)
	if same.Regressed() || len(same.NewFailures)+len(same.Fixed)+len(same.NewlyFlaky)+len(same.Checks) > 0 {
		t.Errorf("a run compared with itself shows changes: %+v", same)
	}
	check("still failing, same run", names(same.StillFailing), []string{"notes/added-broken:fail>fail", "notes/always-allow:error>error", "third-party/revoke-closes:fail>fail"})
	same = Diff(runWith(VerdictPass, VerdictFlaky), runWith(VerdictPass, VerdictFlaky))
	var buf bytes.Buffer
	if err := same.WriteMarkdown(&buf); err != nil || !bytes.Contains(buf.Bytes(), []byte("No changes.")) {
		t.Errorf("empty diff renders %q, %v", buf.String(), err)
	}

	// Everything added, nothing to compare with: what fails is new.
	fresh := Diff(nil, after)
	if len(fresh.Added) != len(after.Scenarios) || !fresh.HasNewFailures() {
		t.Errorf("Diff(nil, run): %d added, new failures %v", len(fresh.Added), fresh.NewFailures)
	}
	check("new failures against nothing", names(fresh.NewFailures),
		[]string{"notes/added-broken:>fail", "notes/always-allow:>error", "third-party/revoke-closes:>fail"})
	// Only added scenarios that pass: nothing new fails.
	passing := Diff(nil, runWith(VerdictPass, VerdictFlaky, VerdictSkipped))
	if passing.HasNewFailures() || passing.Regressed() {
		t.Errorf("added passing scenarios count as new failures: %v", passing.NewFailures)
	}
}

// TestDiffGolden pins the Markdown and JSON renderings of a diff.
func TestDiffGolden(t *testing.T) {
	t.Parallel()
	d := Diff(diffRuns())
	var md, js bytes.Buffer
	if err := d.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if err := d.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	golden(t, "diff.md", md.Bytes())
	golden(t, "diff.json", js.Bytes())
	var back RunDiff
	if err := json.Unmarshal(js.Bytes(), &back); err != nil || !reflect.DeepEqual(&back, d) {
		t.Errorf("diff JSON does not read back into the same diff (%v)", err)
	}
}
