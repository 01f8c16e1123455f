// Package steps runs one attempt of a scenario (lab/scenario) on leased
// devices: it executes the setup and the steps, drives consent cards,
// speaks desktop ACP, evaluates the named checks and the invariants, tells
// lab faults from product failures, detects a person's touches on real
// devices and collects the attempt's artifacts.
//
// It talks to each device through devices.Device and to the runtime on it
// through the Ctl seam (`agentosd ctl --json …`, satisfied by
// *runtimectl.Client), and to the lab's model stub through Stub. Scheduling,
// leases, retries and verdicts are lab/runner's job.
package steps

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/model/script"
)

// Ctl is the runtime's control API on one device: `agentosd ctl --json
// ARGS` run as root, its result decoded into out. *runtimectl.Client
// satisfies it. A runtime refusal is an *errcode.Error.
type Ctl interface {
	Call(ctx context.Context, out any, args ...string) error
}

var _ Ctl = (*runtimectl.Client)(nil)

// Stub is the lab's model stub as an attempt uses it. *modelstub.Stub
// satisfies it.
type Stub interface {
	// Bind makes sc answer the token's requests and forgets its recorded
	// requests; nil echoes.
	Bind(token string, sc *script.Script) error
	// BindChaos makes the chaos model answer the token's requests.
	BindChaos(token string, c *modelstub.Chaos) error
	Requests(token string) ([]modelstub.Recorded, int)
}

var _ Stub = (*modelstub.Stub)(nil)

// Target is one device of an attempt, in one role.
type Target struct {
	Role   string
	Device devices.Device
	Ctl    Ctl
	// Kind is virtual, emulator or phone; touch detection runs on the
	// others than virtual.
	Kind string
	// StubToken is the token the device's runtime uses with the stub; ""
	// when the runtime talks to a live model.
	StubToken string
	// AfterReboot puts back what a reboot loses (the stub's reverse
	// forward); nil does nothing.
	AfterReboot func(ctx context.Context, dev devices.Device) error
}

// Env is everything an attempt runs with.
type Env struct {
	// Targets are the devices by role, in the scenario's role order.
	Targets []*Target
	// Stub is the model stub; nil when the run uses a live model.
	Stub Stub
	// RunDir is the run's output directory; RelDir the attempt's artifact
	// folder relative to it (slash-separated).
	RunDir, RelDir string
	Attempt        int
	// Secret is told about every secret the attempt handles (pairing
	// codes and tokens), for the leak scan; nil forgets them.
	Secret func(reports.Secret)
	// StepTimeout replaces DefaultStepTimeout for steps without their own
	// timeout; zero keeps it.
	StepTimeout time.Duration
	// Logger gets step progress (kinds, durations, outcomes; never
	// prompts, arguments or results). Nil discards.
	Logger *slog.Logger
	// ConsentDriver, when set, replaces every scenario's consent_driver
	// (admin or ui); Chromium is the browser of the ui driver ("" finds
	// one).
	ConsentDriver string
	Chromium      string
	// NoLogcat and NoScreenshots leave the device log slice and every
	// screenshot (the device's and the ui driver's card shots) out of the
	// artifacts (lab.yaml artifacts.logcat and .screenshot false).
	NoLogcat, NoScreenshots bool
	// Timer lets the time of timed waits (wait: {for: D}) pass; nil
	// advances the runtime's virtual clock when it has one and really
	// waits when it has not.
	Timer Timer
}

// Default timeouts of steps without their own.
const (
	DefaultStepTimeout   = 60 * time.Second
	DefaultModelTimeout  = 5 * time.Minute
	DefaultRebootTimeout = 3 * time.Minute
	DefaultWaitTimeout   = 30 * time.Second
	DefaultPollInterval  = 500 * time.Millisecond
	// readyTimeout bounds the wait for the runtime after a reboot or a
	// restart.
	readyTimeout = 90 * time.Second
)

// ErrLabFault marks errors that are the lab's or the device's fault, not
// the product's: wrap it (or one of the sentinels IsLabFault knows).
var ErrLabFault = errors.New("lab fault")

// IsLabFault reports whether err means the lab lost the attempt: the
// device went away, the lease was lost, the runtime's binary vanished
// from the device, or the lab's own plumbing failed.
func IsLabFault(err error) bool {
	return err != nil && (errors.Is(err, devices.ErrDeviceGone) || errors.Is(err, pool.ErrLeaseLost) ||
		errors.Is(err, runtimectl.ErrNotInstalled) || errors.Is(err, ErrLabFault))
}

// labFault wraps err as a lab fault.
func labFault(op string, err error) error { return fmt.Errorf("%s: %w: %w", op, ErrLabFault, err) }

// StepRecord is what one step did, for timings and results.
type StepRecord struct {
	Index  int       `json:"index"`
	Name   string    `json:"name,omitempty"`
	Kind   string    `json:"kind"`
	Role   string    `json:"device"`
	Start  time.Time `json:"start"`
	End    time.Time `json:"end"`
	Error  string    `json:"error,omitempty"`
	Output string    `json:"save,omitempty"`
	// Detail is the step's own evidence ("advanced virtual time 5m0s").
	Detail string `json:"detail,omitempty"`
}

// Result is the outcome of one attempt.
type Result struct {
	// Checks are every named check of the scenario, in the order they are
	// declared (step checks, checks, invariants), plus one failed check
	// per failed step.
	Checks []reports.Check
	// Err is the product failure that ended the steps early (a failed
	// step, the scenario's timeout); nil when every step ran.
	Err error
	// LabFault is set when the lab lost the attempt: the verdict is error,
	// whatever the checks say.
	LabFault error
	// Touches counts a person's touches seen on real devices during the
	// attempt.
	Touches int
	Start   time.Time
	End     time.Time
	// Steps are the steps that ran.
	Steps []StepRecord
	// StepTime is the time spent inside foreground steps (device, runtime
	// and model time); the attempt's wall time minus StepTime is the
	// lab's own overhead.
	StepTime time.Duration

	run *attempt
}

// Failed reports whether a check failed or a step failed.
func (r *Result) Failed() bool {
	if r.Err != nil {
		return true
	}
	for _, c := range r.Checks {
		if c.Failed() {
			return true
		}
	}
	return false
}
