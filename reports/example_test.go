package reports_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentoslab/agentlab/reports"
)

// The lab decides each scenario's verdict from its attempts, writes every
// report and exits with the run's code.
func Example() {
	attempts := []reports.Attempt{
		{Number: 1, Device: "vd-1", Verdict: reports.VerdictFail, Checks: []reports.Check{{Name: "reconnected", OK: false}}},
		{Number: 2, Device: "vd-1", Verdict: reports.VerdictPass, Checks: []reports.Check{{Name: "reconnected", OK: true}}},
	}
	run := &reports.Run{
		SchemaVersion: reports.SchemaVersion,
		RunID:         "run-1",
		Model:         reports.Model{Kind: reports.ModelStub},
		Devices:       []reports.Device{{Serial: "vd-1", Kind: reports.DeviceVirtual}},
		Scenarios: []reports.Scenario{{
			Name:     "ext/plugin-death",
			Devices:  []string{"vd-1"},
			Verdict:  reports.VerdictOf(attempts),
			Attempts: attempts,
			Checks:   attempts[len(attempts)-1].Checks,
		}},
	}
	if err := run.Validate(); err != nil {
		fmt.Println(err)
		return
	}
	dir, _ := os.MkdirTemp("", "reports-example")
	defer os.RemoveAll(dir)
	if err := reports.Write(dir, run); err != nil {
		fmt.Println(err)
		return
	}
	again, _ := reports.Load(filepath.Join(dir, "results.json"))
	fmt.Println(again.Scenarios[0].Verdict, reports.ExitCode(again))
	// Output: flaky 0
}

func ExampleExitCode() {
	run := &reports.Run{Scenarios: []reports.Scenario{
		{Name: "a", Verdict: reports.VerdictInconclusive},
		{Name: "b", Verdict: reports.VerdictError},
	}}
	fmt.Println(reports.ExitCode(run) == reports.ExitLabFaults)
	run.Scenarios = append(run.Scenarios, reports.Scenario{Name: "c", Verdict: reports.VerdictFail})
	fmt.Println(reports.ExitCode(run) == reports.ExitFailures)
	// Output:
	// true
	// true
}
