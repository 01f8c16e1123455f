package reports

// The lab's exit codes. When several apply, the most important wins:
// product failures over lab faults over inconclusive. Flaky scenarios do not
// fail a run (they are reported), nor do skipped ones.
//
//	code  meaning
//	0     every scenario passed (flaky and skipped allowed)
//	1     at least one product failure (verdict fail)
//	2     usage or configuration error: the run did not happen
//	3     no failures and no lab faults, but a person touched a device
//	      (at least one verdict inconclusive)
//	4     lab faults only: no product failure, at least one verdict error
//
// A run with no scenarios (an empty shard) exits 0; rejecting a selection
// that matches nothing is the lab's job, before a run starts, with code 2.
const (
	ExitOK           = 0
	ExitFailures     = 1
	ExitUsage        = 2
	ExitInconclusive = 3
	ExitLabFaults    = 4
)

// ExitCode returns the exit code for r (see ExitOK and the table above it).
// A nil run is a usage error: there is nothing to judge.
func ExitCode(r *Run) int {
	if r == nil {
		return ExitUsage
	}
	return Summarize(r).ExitCode
}

func exitCode(s Summary) int {
	switch {
	case s.Fail > 0:
		return ExitFailures
	case s.Error > 0:
		return ExitLabFaults
	case s.Inconclusive > 0:
		return ExitInconclusive
	}
	return ExitOK
}
