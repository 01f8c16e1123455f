package reports

import (
	"errors"
	"strings"
	"testing"
)

func runWith(verdicts ...Verdict) *Run {
	r := &Run{SchemaVersion: SchemaVersion, RunID: "r", Model: Model{Kind: ModelStub}}
	for i, v := range verdicts {
		r.Scenarios = append(r.Scenarios, Scenario{Name: string(rune('a' + i)), Verdict: v})
	}
	return r
}

// TestExitCode pins the exit-code table and its precedence: failures over
// lab faults over inconclusive; flaky and skipped never fail a run.
func TestExitCode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		verdicts []Verdict
		want     int
	}{
		{"empty shard", nil, ExitOK},
		{"all pass", []Verdict{VerdictPass, VerdictPass}, ExitOK},
		{"flaky is reported, not failed", []Verdict{VerdictPass, VerdictFlaky}, ExitOK},
		{"skipped", []Verdict{VerdictSkipped, VerdictPass}, ExitOK},
		{"failure", []Verdict{VerdictPass, VerdictFail}, ExitFailures},
		{"lab fault only", []Verdict{VerdictPass, VerdictError}, ExitLabFaults},
		{"inconclusive only", []Verdict{VerdictPass, VerdictInconclusive, VerdictFlaky}, ExitInconclusive},
		{"failure beats lab fault", []Verdict{VerdictError, VerdictFail}, ExitFailures},
		{"failure beats inconclusive", []Verdict{VerdictInconclusive, VerdictFail}, ExitFailures},
		{"lab fault beats inconclusive", []Verdict{VerdictInconclusive, VerdictError}, ExitLabFaults},
		{"all three", []Verdict{VerdictInconclusive, VerdictError, VerdictFail, VerdictFlaky}, ExitFailures},
		{"unclassified verdict is a lab fault", []Verdict{VerdictPass, "weird"}, ExitLabFaults},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := runWith(tc.verdicts...)
			if got := ExitCode(r); got != tc.want {
				t.Errorf("ExitCode = %d, want %d", got, tc.want)
			}
			if got := Summarize(r).ExitCode; got != tc.want {
				t.Errorf("Summary.ExitCode = %d, want %d", got, tc.want)
			}
		})
	}
	if got := ExitCode(nil); got != ExitUsage {
		t.Errorf("ExitCode(nil) = %d, want %d", got, ExitUsage)
	}
	if got := ExitCode(sampleRun()); got != ExitFailures {
		t.Errorf("ExitCode(sample) = %d, want %d", got, ExitFailures)
	}
}

func TestVerdictOf(t *testing.T) {
	t.Parallel()
	a := func(v Verdict, labFault bool) Attempt { return Attempt{Verdict: v, LabFault: labFault} }
	tests := []struct {
		name     string
		attempts []Attempt
		want     Verdict
	}{
		{"none", nil, VerdictSkipped},
		{"pass", []Attempt{a(VerdictPass, false)}, VerdictPass},
		{"fail", []Attempt{a(VerdictFail, false)}, VerdictFail},
		{"pass after fail is flaky", []Attempt{a(VerdictFail, false), a(VerdictPass, false)}, VerdictFlaky},
		{"pass after two fails is flaky", []Attempt{a(VerdictFail, false), a(VerdictFail, false), a(VerdictPass, false)}, VerdictFlaky},
		{"pass after lab fault is pass", []Attempt{a(VerdictError, true), a(VerdictPass, false)}, VerdictPass},
		{"fail after lab fault is fail", []Attempt{a(VerdictError, true), a(VerdictFail, false)}, VerdictFail},
		{"lab faults only", []Attempt{a(VerdictError, true), a(VerdictError, true)}, VerdictError},
		{"lab fault after fail keeps the failure", []Attempt{a(VerdictFail, false), a(VerdictError, true)}, VerdictFail},
		{"fail twice", []Attempt{a(VerdictFail, false), a(VerdictFail, false)}, VerdictFail},
		{"touched", []Attempt{a(VerdictFail, false), a(VerdictInconclusive, false)}, VerdictInconclusive},
	}
	for _, tc := range tests {
		if got := VerdictOf(tc.attempts); got != tc.want {
			t.Errorf("%s: VerdictOf = %s, want %s", tc.name, got, tc.want)
		}
	}
	// The sample run's verdicts follow the rule.
	for _, s := range sampleRun().Scenarios {
		if got := VerdictOf(s.Attempts); got != s.Verdict {
			t.Errorf("sample %s: VerdictOf = %s, recorded %s", s.Name, got, s.Verdict)
		}
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	got := Summarize(sampleRun())
	want := Summary{
		Total: 7, Pass: 2, Fail: 1, Flaky: 1, Error: 1, Skipped: 1, Inconclusive: 1,
		Attempts: 9, LabFaultAttempts: 3, Checks: 31, ChecksPassed: 26, ChecksSkipped: 1,
		Devices: 3, QuarantinedDevices: 1, ExitCode: ExitFailures,
	}
	if got != want {
		t.Errorf("Summarize =\n%+v, want\n%+v", got, want)
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	if err := sampleRun().Validate(); err != nil {
		t.Fatalf("sample run: %v", err)
	}
	tests := []struct {
		name   string
		mutate func(r *Run)
		want   string
	}{
		{"no run id", func(r *Run) { r.RunID = "" }, "runId is empty"},
		{"times reversed", func(r *Run) { r.FinishedAt = r.StartedAt.Add(-1) }, "finishedAt"},
		{"model kind", func(r *Run) { r.Model.Kind = "gpt" }, `model.kind "gpt"`},
		{"live without provider", func(r *Run) { r.Model = Model{Kind: ModelLive} }, "model.provider is empty"},
		{"shard index", func(r *Run) { r.Selection.ShardIndex, r.Selection.ShardCount = 4, 4 }, "selection.shardIndex"},
		{"duplicate device", func(r *Run) { r.Devices[1].Serial = r.Devices[0].Serial }, "is listed twice"},
		{"device kind", func(r *Run) { r.Devices[0].Kind = "tablet" }, `devices[0].kind "tablet"`},
		{"duplicate scenario", func(r *Run) { r.Scenarios[1].Name = r.Scenarios[0].Name }, "is used by another scenario"},
		{"verdict", func(r *Run) { r.Scenarios[0].Verdict = "blocked" }, `scenarios[0].verdict "blocked"`},
		{"attempt numbering", func(r *Run) { r.Scenarios[2].Attempts[1].Number = 3 }, `scenarios[2].attempts[1].attempt "3" should be 2`},
		{"unknown device", func(r *Run) { r.Scenarios[0].Attempts[0].Device = "ghost" }, `"ghost" is not a device`},
		{"absolute artifact", func(r *Run) { r.Scenarios[0].Artifacts[0].Path = "/var/log/x" }, "is not a clean relative"},
		{"escaping artifact", func(r *Run) { r.Scenarios[0].Artifacts[0].Path = "../x" }, "is not a clean relative"},
		{"backslash artifact", func(r *Run) { r.Scenarios[0].Artifacts[0].Path = `a\b` }, "is not a clean relative"},
		{"sha256", func(r *Run) { r.Scenarios[0].Artifacts[0].SHA256 = "ABC" }, "sha256"},
		{"duplicate check", func(r *Run) { r.Scenarios[0].Checks[1].Name = r.Scenarios[0].Checks[0].Name }, "another check"},
		{"dangling evidence", func(r *Run) { r.Scenarios[0].Checks[4].Evidence = "artifact:nowhere.txt" }, "points at an artifact"},
		{"schema major", func(r *Run) { r.SchemaVersion = "3.1" }, `"3.1"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleRun()
			tc.mutate(r)
			err := r.Validate()
			if err == nil {
				t.Fatal("Validate accepted it")
			}
			if !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrSchemaVersion) {
				t.Errorf("error %v wraps neither ErrInvalid nor ErrSchemaVersion", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not contain %q", err, tc.want)
			}
		})
	}
	// Many problems: the error stays bounded.
	r := sampleRun()
	for i := 0; i < 100; i++ {
		r.Scenarios = append(r.Scenarios, Scenario{Verdict: "?"})
	}
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "more") || len(err.Error()) > 4000 {
		t.Errorf("Validate with 200 problems: %v", err)
	}
}

func TestParseFormat(t *testing.T) {
	t.Parallel()
	for _, f := range allFormats {
		for _, s := range []string{string(f), f.FileName()} {
			if got, err := ParseFormat(s); err != nil || got != f {
				t.Errorf("ParseFormat(%q) = %q, %v", s, got, err)
			}
		}
	}
	if _, err := ParseFormat("pdf"); !errors.Is(err, ErrUnknownFormat) || !strings.Contains(err.Error(), "junit") {
		t.Errorf("ParseFormat(pdf) = %v", err)
	}
}
