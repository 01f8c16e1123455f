package runner

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/agentoslab/agentlab/lab/steps"
	"github.com/agentoslab/agentlab/reports"
)

// DeviceExecutor runs attempts with lab/steps on real (or virtual)
// devices.
type DeviceExecutor struct {
	// Stub is the model stub; nil for a live model.
	Stub steps.Stub
	// Tokens are the stub tokens the devices' runtimes were provisioned
	// with, by serial.
	Tokens map[string]string
	// Kinds are the device kinds by serial (virtual, emulator, phone).
	Kinds map[string]reports.DeviceKind
	// Ctl makes the runtime client of a device; nil uses runtimectl.New.
	Ctl func(devices.Device) steps.Ctl
	// AfterReboot puts back what a reboot loses (the stub's reverse).
	AfterReboot func(ctx context.Context, dev devices.Device) error
	// Secret is told about the secrets attempts handle, for the leak scan.
	Secret func(reports.Secret)
	// ConsentDriver, when set, answers every scenario's cards with this
	// driver (admin or ui) whatever it says; Chromium is the ui driver's
	// browser ("" finds one).
	ConsentDriver string
	Chromium      string
	// NoLogcat and NoScreenshots leave those out of the kept artifacts
	// (lab.yaml artifacts.logcat and .screenshot false).
	NoLogcat, NoScreenshots bool
	// CollectTimeout bounds artifact collection; default 2 min.
	CollectTimeout time.Duration
	Logger         *slog.Logger
}

var _ Executor = (*DeviceExecutor)(nil)

// Run runs the attempt and collects its artifacts when they are kept.
func (e *DeviceExecutor) Run(ctx context.Context, at *Attempt) *Outcome {
	roles := at.Scenario.Roles()
	env := &steps.Env{RunDir: at.RunDir, RelDir: at.RelDir, Attempt: at.Number, Secret: e.Secret, Logger: e.Logger,
		ConsentDriver: e.ConsentDriver, Chromium: e.Chromium, NoLogcat: e.NoLogcat, NoScreenshots: e.NoScreenshots}
	if e.Stub != nil {
		env.Stub = e.Stub
	}
	for i, l := range at.Leases {
		dev := l.Device()
		var ctl steps.Ctl
		if e.Ctl != nil {
			ctl = e.Ctl(dev)
		} else {
			rc := runtimectl.New(dev, &runtimectl.Options{Logger: e.Logger})
			defer rc.Close() // after the artifacts, which ask the runtime too
			ctl = rc
		}
		role := ""
		if i < len(roles) {
			role = roles[i]
		}
		env.Targets = append(env.Targets, &steps.Target{Role: role, Device: dev, Ctl: ctl, Kind: string(e.Kinds[l.Serial()]),
			StubToken: e.Tokens[l.Serial()], AfterReboot: e.AfterReboot})
	}
	res := steps.Run(ctx, at.Scenario, env)
	out := &Outcome{Checks: res.Checks, Err: res.Err, LabFault: res.LabFault, Touches: res.Touches, StepTime: res.StepTime}
	// A lost device or an aborted run leaves nothing to collect from;
	// a timed-out attempt is worth the evidence.
	gone := ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded)
	if at.Keep(res.Failed() || res.LabFault != nil) && !gone {
		timeout := e.CollectTimeout
		if timeout <= 0 {
			timeout = 2 * time.Minute
		}
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
		arts, err := res.Collect(cctx)
		cancel()
		out.Artifacts = arts
		if err != nil && e.Logger != nil {
			e.Logger.Debug("artifacts", "scenario", at.Scenario.Name, "attempt", at.Number, "err", err)
		}
	}
	return out
}
