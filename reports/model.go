package reports

import (
	"slices"
	"time"
)

// SchemaVersion is the version of results.json this package writes:
// "major.minor". Additive changes (a new optional field, a new artifact or
// timeline kind) bump the minor; anything a reader written for an older minor
// would misread (a renamed or removed field, a changed meaning, a new
// verdict) bumps the major. Load accepts every document of the same major.
const SchemaVersion = "1.2"

// SchemaMajor is the major part of SchemaVersion.
const SchemaMajor = 1

// Run is one agentlab run: what was selected, on which devices, and what
// every scenario did. It is the document written as results.json.
type Run struct {
	SchemaVersion string    `json:"schemaVersion"`
	RunID         string    `json:"runId"`
	StartedAt     time.Time `json:"startedAt"`
	FinishedAt    time.Time `json:"finishedAt"`
	// LabVersion is the agentlab build that produced the run.
	LabVersion string `json:"labVersion"`
	// ConfigDigest identifies the lab configuration ("sha256:<hex>"), so two
	// runs can be told to have used the same configuration.
	ConfigDigest string     `json:"configDigest"`
	Host         string     `json:"host"`
	Selection    Selection  `json:"selection"`
	Model        Model      `json:"model"`
	Devices      []Device   `json:"devices"`
	Scenarios    []Scenario `json:"scenarios"`
	// Soak is what agentlab run --soak sampled; absent otherwise.
	Soak *Soak `json:"soak,omitempty"`
	// Summary is derived from Scenarios and Devices; writers recompute it
	// (Summarize), so a caller need not fill it in.
	Summary Summary `json:"summary"`
}

// Selection says which scenarios the run was asked to execute.
type Selection struct {
	// Tags are the tag filters that were in force; empty means all.
	Tags        []string `json:"tags"`
	ExcludeTags []string `json:"excludeTags,omitempty"`
	// ShardIndex is zero-based; ShardCount 0 or 1 means the run was not
	// sharded.
	ShardIndex int `json:"shardIndex"`
	ShardCount int `json:"shardCount"`
}

// ModelKind says whether the runtime talked to the lab's model stub or to a
// live provider.
type ModelKind string

const (
	ModelStub ModelKind = "stub"
	ModelLive ModelKind = "live"
)

// Model names the model the runtime used. It never holds a key.
type Model struct {
	Kind ModelKind `json:"kind"`
	// Provider is the live provider ("anthropic", "openai-compatible");
	// empty for the stub.
	Provider string `json:"provider,omitempty"`
	// Name is the model id the runtime was configured with.
	Name string `json:"name,omitempty"`
}

// DeviceKind is what sort of device ran scenarios.
type DeviceKind string

const (
	DeviceVirtual  DeviceKind = "virtual"
	DeviceEmulator DeviceKind = "emulator"
	DevicePhone    DeviceKind = "phone"
)

// Device is one device the run leased, with its health history and
// timeline.
type Device struct {
	Serial string     `json:"serial"`
	Name   string     `json:"name"`
	Kind   DeviceKind `json:"kind"`
	Model  string     `json:"model"`
	// APILevel is ro.build.version.sdk.
	APILevel int    `json:"apiLevel"`
	ABI      string `json:"abi"`
	// RootMethod is how the runtime module was installed: magisk, kernelsu,
	// adb-root, virtual or none.
	RootMethod     string `json:"rootMethod"`
	RuntimeVersion string `json:"runtimeVersion"`
	// Health is every health-gate result, oldest first.
	Health []HealthRecord `json:"health"`
	// QuarantineReason is set when the lab took the device out of the pool;
	// empty means it was never quarantined.
	QuarantineReason string `json:"quarantineReason,omitempty"`
	// Timeline is what the device did, oldest first: leases, provisioning,
	// scenario attempts and recoveries.
	Timeline []Event `json:"timeline"`
}

// Quarantined reports whether the lab took the device out of the pool.
func (d *Device) Quarantined() bool { return d.QuarantineReason != "" }

// HealthRecord is one health-gate result.
type HealthRecord struct {
	At time.Time `json:"at"`
	// State is healthy, unhealthy, offline, recovering or quarantined.
	State  string `json:"state"`
	Detail string `json:"detail,omitempty"`
}

// EventKind is what a timeline event records.
type EventKind string

const (
	EventLease      EventKind = "lease"
	EventProvision  EventKind = "provision"
	EventScenario   EventKind = "scenario"
	EventRecovery   EventKind = "recovery"
	EventQuarantine EventKind = "quarantine"
)

// Event is one span (or, with a zero End, one instant) on a device's
// timeline.
type Event struct {
	Kind  EventKind `json:"kind"`
	Label string    `json:"label"`
	Start time.Time `json:"start"`
	End   time.Time `json:"end,omitzero"`
	// Scenario and Attempt name the scenario attempt of a scenario event.
	Scenario string `json:"scenario,omitempty"`
	Attempt  int    `json:"attempt,omitempty"`
	// Verdict is the attempt's verdict for scenario events, and "error" for a
	// provisioning or recovery step that failed.
	Verdict Verdict `json:"verdict,omitempty"`
	Detail  string  `json:"detail,omitempty"`
}

// Verdict is the outcome of a scenario or of one attempt.
type Verdict string

const (
	// VerdictPass: every check held.
	VerdictPass Verdict = "pass"
	// VerdictFail: a product failure — a check did not hold.
	VerdictFail Verdict = "fail"
	// VerdictFlaky: passed after at least one failed attempt.
	VerdictFlaky Verdict = "flaky"
	// VerdictError: a lab or infrastructure fault; never a product failure.
	VerdictError Verdict = "error"
	// VerdictSkipped: not run (filtered, unmet requirement, budget exhausted).
	VerdictSkipped Verdict = "skipped"
	// VerdictInconclusive: a person touched the device, so a failure proves
	// nothing.
	VerdictInconclusive Verdict = "inconclusive"
)

// verdictOrder lists every verdict, most severe first: the order reports list
// scenarios in.
var verdictOrder = []Verdict{VerdictFail, VerdictError, VerdictInconclusive, VerdictFlaky, VerdictSkipped, VerdictPass}

// Verdicts returns every verdict, most severe first: the order reports list
// scenarios in.
func Verdicts() []Verdict { return slices.Clone(verdictOrder) }

// Valid reports whether v is one of the six verdicts.
func (v Verdict) Valid() bool {
	return slices.Contains(verdictOrder, v)
}

// rank orders verdicts by severity (0 = most severe). A verdict the lab did
// not classify ranks with errors, as Summarize counts it.
func (v Verdict) rank() int {
	if i := slices.Index(verdictOrder, v); i >= 0 {
		return i
	}
	return slices.Index(verdictOrder, VerdictError)
}

// Scenario is the result of one scenario.
type Scenario struct {
	Name string `json:"name"`
	// File is the scenario's YAML file, relative to the scenario root.
	File string   `json:"file"`
	Tags []string `json:"tags"`
	// Devices are the serials of the devices the deciding attempt ran on
	// (several for a multi-device scenario).
	Devices []string `json:"devices"`
	Verdict Verdict  `json:"verdict"`
	// Reason says in one line why the verdict is not pass.
	Reason     string `json:"reason,omitempty"`
	DurationMs int64  `json:"durationMs"`
	// PersonTouches counts the touches on the device's screen that the lab
	// saw during the scenario; any makes a failure inconclusive.
	PersonTouches int       `json:"personTouches,omitempty"`
	Attempts      []Attempt `json:"attempts"`
	// Checks are the named checks of the deciding (last) attempt, repeated
	// here so readers that ignore attempts have them.
	Checks []Check `json:"checks"`
	// Artifacts are every artifact of the scenario, of all attempts.
	Artifacts []Artifact `json:"artifacts"`
}

// Duration is DurationMs as a time.Duration.
func (s *Scenario) Duration() time.Duration {
	return time.Duration(s.DurationMs) * time.Millisecond
}

// PrimaryDevice is the serial a scenario is filed under in per-device
// reports: its first device, else the device of its last attempt, else "".
func (s *Scenario) PrimaryDevice() string {
	if len(s.Devices) > 0 {
		return s.Devices[0]
	}
	if n := len(s.Attempts); n > 0 {
		return s.Attempts[n-1].Device
	}
	return ""
}

// FailedChecks returns the checks of the deciding attempt that did not hold.
func (s *Scenario) FailedChecks() []Check {
	var out []Check
	for _, c := range s.Checks {
		if c.Failed() {
			out = append(out, c)
		}
	}
	return out
}

// Attempt is one execution of a scenario.
type Attempt struct {
	// Number counts from 1.
	Number  int     `json:"attempt"`
	Device  string  `json:"device"`
	Verdict Verdict `json:"verdict"`
	// LabFault is true when the attempt was lost to the lab (device went
	// offline, provisioning failed, adb died), not to the product.
	LabFault bool `json:"labFault"`
	// Error says what went wrong outside the named checks: a step error, a
	// timeout or the lab fault; empty when the checks say it all.
	Error      string     `json:"error,omitempty"`
	StartedAt  time.Time  `json:"startedAt"`
	FinishedAt time.Time  `json:"finishedAt"`
	Checks     []Check    `json:"checks"`
	Artifacts  []Artifact `json:"artifacts"`
}

// Check is one named check of a scenario, comparable line by line with the
// upstream device suites' {name, ok, detail}.
type Check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
	// Evidence is short text, or "artifact:<path>" pointing at one of the
	// scenario's artifacts.
	Evidence string `json:"evidence,omitempty"`
	// Upstream is the upstream check this one maps to, as
	// "<script>/<case>/<check>", e.g. "third_party.py/revoke-closes/tasksCancelled".
	Upstream string `json:"upstream,omitempty"`
	// Skipped says the check was not evaluated: it does not apply to the
	// device's kind (Detail says why). A skipped check has OK false and
	// is neither a pass nor a failure.
	Skipped bool `json:"skipped,omitempty"`
}

// Failed says the check was evaluated and did not hold.
func (c *Check) Failed() bool { return !c.OK && !c.Skipped }

// EvidenceArtifact returns the artifact path Evidence points at, if it does.
func (c *Check) EvidenceArtifact() (string, bool) {
	const prefix = "artifact:"
	if len(c.Evidence) > len(prefix) && c.Evidence[:len(prefix)] == prefix {
		return c.Evidence[len(prefix):], true
	}
	return "", false
}

// ArtifactKind is what an artifact holds.
type ArtifactKind string

const (
	ArtifactLog          ArtifactKind = "log"
	ArtifactDump         ArtifactKind = "dump"
	ArtifactEvents       ArtifactKind = "events"
	ArtifactConsentAudit ArtifactKind = "consent-audit"
	ArtifactProps        ArtifactKind = "props"
	ArtifactLogcat       ArtifactKind = "logcat"
	ArtifactScreenshot   ArtifactKind = "screenshot"
	ArtifactOther        ArtifactKind = "other"
)

// Artifact is one file collected for a scenario.
type Artifact struct {
	// Path is relative to the run's output directory, slash-separated.
	Path   string       `json:"path"`
	Kind   ArtifactKind `json:"kind"`
	Size   int64        `json:"size"`
	SHA256 string       `json:"sha256"`
}

// Summary counts a run's results. Verdict counts are keyed by verdict name.
type Summary struct {
	Total        int `json:"total"`
	Pass         int `json:"pass"`
	Fail         int `json:"fail"`
	Flaky        int `json:"flaky"`
	Error        int `json:"error"`
	Skipped      int `json:"skipped"`
	Inconclusive int `json:"inconclusive"`
	// Attempts counts every attempt; LabFaultAttempts those lost to the lab.
	Attempts         int `json:"attempts"`
	LabFaultAttempts int `json:"labFaultAttempts"`
	// Checks and ChecksPassed count the scenarios' (deciding attempts')
	// named checks.
	Checks       int `json:"checks"`
	ChecksPassed int `json:"checksPassed"`
	// ChecksSkipped counts the checks not evaluated on their devices'
	// kind (in Checks, never in ChecksPassed; 1.2).
	ChecksSkipped      int `json:"checksSkipped,omitempty"`
	Devices            int `json:"devices"`
	QuarantinedDevices int `json:"quarantinedDevices"`
	// ExitCode is ExitCode(run).
	ExitCode int `json:"exitCode"`
}

// Count returns the number of scenarios with verdict v.
func (s Summary) Count(v Verdict) int {
	switch v {
	case VerdictPass:
		return s.Pass
	case VerdictFail:
		return s.Fail
	case VerdictFlaky:
		return s.Flaky
	case VerdictError:
		return s.Error
	case VerdictSkipped:
		return s.Skipped
	case VerdictInconclusive:
		return s.Inconclusive
	}
	return 0
}

// Summarize counts r's scenarios, attempts, checks and devices.
func Summarize(r *Run) Summary {
	var s Summary
	s.Total = len(r.Scenarios)
	for i := range r.Scenarios {
		sc := &r.Scenarios[i]
		switch sc.Verdict {
		case VerdictPass:
			s.Pass++
		case VerdictFail:
			s.Fail++
		case VerdictFlaky:
			s.Flaky++
		case VerdictSkipped:
			s.Skipped++
		case VerdictInconclusive:
			s.Inconclusive++
		default:
			// VerdictError, and any verdict the lab failed to classify: that
			// is a lab bug, so it counts as a lab fault, never as a pass.
			s.Error++
		}
		s.Attempts += len(sc.Attempts)
		for _, a := range sc.Attempts {
			if a.LabFault {
				s.LabFaultAttempts++
			}
		}
		s.Checks += len(sc.Checks)
		for _, c := range sc.Checks {
			switch {
			case c.OK:
				s.ChecksPassed++
			case c.Skipped:
				s.ChecksSkipped++
			}
		}
	}
	s.Devices = len(r.Devices)
	for i := range r.Devices {
		if r.Devices[i].Quarantined() {
			s.QuarantinedDevices++
		}
	}
	s.ExitCode = exitCode(s)
	return s
}

// VerdictOf decides a scenario's verdict from its attempts, oldest first:
// the last attempt decides, except that a pass after a failed attempt is
// flaky, and a lab fault after a failed attempt keeps the failure (the
// product already failed; the lab merely lost the retry). Attempts lost to
// the lab before a pass do not make it flaky. No attempts means skipped.
func VerdictOf(attempts []Attempt) Verdict {
	if len(attempts) == 0 {
		return VerdictSkipped
	}
	failedBefore := false
	for _, a := range attempts[:len(attempts)-1] {
		if a.Verdict == VerdictFail && !a.LabFault {
			failedBefore = true
		}
	}
	last := attempts[len(attempts)-1]
	switch {
	case last.Verdict == VerdictPass && failedBefore:
		return VerdictFlaky
	case last.Verdict == VerdictError && failedBefore:
		return VerdictFail
	}
	return last.Verdict
}
