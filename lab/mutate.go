package lab

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/faults"
	"github.com/agentoslab/agentlab/runtime/module"
)

// FaultTag is the build tag of the runtime that can break its rules on
// purpose (runtime/internal/faultinject).
const FaultTag = "agentos_faultinject"

// FaultFile is where the fault-injection runtime reads the active faults:
// the file faultinject under the supervisor's root.
const FaultFile = module.DefaultRoot + "/faultinject"

// faultReread is how long the runtime may take to see a new fault file
// (it re-reads it at most twice a second), with a margin.
const faultReread = 700 * time.Millisecond

// MutateOptions configure Mutate.
type MutateOptions struct {
	// Faults are the faults to inject, one round each; empty means every
	// fault of runtime/faults.
	Faults []string
	// Guards runs each fault only against the scenarios runtime/faults
	// names as its guards (the baseline runs them all): a targeted matrix
	// that proves every fault caught in a fraction of the suite's time.
	// The selection's names are then ignored.
	Guards bool
}

// Mutation is what Mutate ran: the baseline run (its reports are the
// output's own), each fault's run and the matrix.
type Mutation struct {
	Baseline *reports.Run
	Rounds   []reports.FaultRound
	Matrix   *reports.KillMatrix
}

// Mutate is agentlab mutate: it builds the runtime with the fault tag,
// provisions the devices cfg names once (virtual devices only: a faulted
// runtime never reaches a phone), runs the selection with no fault — the
// baseline, written into cfg.Output — and then once per fault, with the
// fault written into every device's fault file, each round's reports in
// faults/<fault>/. It writes kill-matrix.json and the "Kill matrix"
// section of the baseline's report.html.
//
// A fault round makes one attempt per scenario (a retry would only hide
// the fault); the baseline keeps lab.yaml's retries.
func Mutate(ctx context.Context, cfg *config.Config, sel Selection, opts *Options, mo MutateOptions) (*Mutation, error) {
	o := opts.orDefault()
	o.who = "agentlab mutate"
	names := mo.Faults
	if len(names) == 0 {
		names = faults.Names()
	}
	for _, n := range names {
		if _, ok := faults.Lookup(n); !ok {
			return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("--fault %q is no fault (known: %s)", n, strings.Join(faults.Names(), ", ")),
				Hint: "agentlab mutate --help"}
		}
	}
	if o.Repeat > 0 || o.UntilFail {
		return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("mutate runs each scenario once per fault; --repeat does not apply")}
	}
	var guards map[string][]string // fault → its guards, with Guards
	if mo.Guards {
		guards = map[string][]string{}
		sel.Names = nil
		for _, n := range names {
			f, _ := faults.Lookup(n)
			guards[n] = f.Guards
			sel.Names = append(sel.Names, f.Guards...)
		}
		slices.Sort(sel.Names)
		sel.Names = slices.Compact(sel.Names)
	}
	base := *cfg
	if !slices.Contains(base.Build.Tags, FaultTag) {
		base.Build.Tags = append(slices.Clone(base.Build.Tags), FaultTag)
	}
	plan, err := NewPlan(&base, sel)
	if err != nil {
		return nil, err
	}
	if err := plan.Check(o); err != nil {
		return nil, err
	}
	if _, _, err := artifactSource(o.Build.Prebuilt); err != nil {
		return nil, err
	}
	if o.Build.Prebuilt != "" {
		// Prebuilt artifacts are a release's: they have no fault code.
		return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("mutate builds the runtime with the %s tag; --prebuilt cannot be used", FaultTag)}
	}
	r := &run{cfg: &base, o: o, plan: plan, started: time.Now(), id: newRunID(), out: base.Output}
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	defer r.close()
	if base.Model.Mode == config.ModelLive {
		return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("mutate runs on the model stub; lab.yaml asks for a live model")}
	}
	r.signingKeySecrets()
	if err := r.setUp(ctx); err != nil {
		return nil, err
	}
	for _, d := range r.devs {
		if d.ready && d.record.Kind != reports.DeviceVirtual {
			return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("%s is not a virtual device: mutate installs a faulted runtime only on virtual devices", d.Serial),
				Hint: "name only devices.virtual (or adb servers of virtual devices) in lab.yaml"}
		}
	}

	all := plan.Run
	round := func(fault, out string, cfg *config.Config) (*reports.Run, error) {
		r.plan.Run = all
		if g, ok := guards[fault]; ok {
			r.plan.Run = slices.DeleteFunc(slices.Clone(all), func(s *scenario.Scenario) bool { return !slices.Contains(g, s.Name) })
		}
		if err := r.setFault(ctx, fault); err != nil {
			return nil, labFault("fault %s: %w", fault, err)
		}
		r.cfg, r.out, r.id, r.started = cfg, out, newRunID(), time.Now()
		label := fault
		if label == "" {
			label = "baseline (no fault)"
		}
		progressf(o, "round %s: %d scenarios", label, len(r.plan.Run))
		res, err := r.queue(ctx, "")
		if err != nil {
			return nil, err
		}
		return r.report(res)
	}
	m := &Mutation{}
	if m.Baseline, err = round("", base.Output, &base); err != nil && m.Baseline == nil {
		return nil, err
	}
	once := base
	once.Retries.Attempts = 1
	for _, f := range names {
		if r.isStopped() {
			break
		}
		rel := filepath.Join("faults", f)
		fc := once
		fc.Output = filepath.Join(base.Output, rel)
		run, err := round(f, fc.Output, &fc)
		if run == nil && err != nil {
			return m, err
		}
		m.Rounds = append(m.Rounds, reports.FaultRound{Fault: f, Run: run, Output: rel})
	}
	if err := r.setFault(context.WithoutCancel(ctx), ""); err != nil {
		progressf(o, "clearing the fault file: %v", err)
	}
	m.Matrix = reports.NewKillMatrix(m.Baseline, m.Rounds)
	if err := reports.WriteKillMatrix(base.Output, m.Baseline, m.Matrix); err != nil {
		return m, err
	}
	progressf(o, "kill matrix: %d of %d faults caught, %d unproven checks; %s", m.Matrix.Caught, len(m.Matrix.Faults),
		m.Matrix.UnprovenCount, filepath.Join(base.Output, reports.KillMatrixFile))
	return m, nil
}

// isStopped reports whether Options.Stop was closed.
func (r *run) isStopped() bool {
	if r.o.Stop == nil {
		return false
	}
	select {
	case <-r.o.Stop:
		return true
	default:
		return false
	}
}

// setFault writes fault into every provisioned device's fault file ("" removes
// it) and waits until the runtimes have re-read it.
func (r *run) setFault(ctx context.Context, fault string) error {
	cmd := "rm -f " + FaultFile
	if fault != "" {
		cmd = "echo " + fault + " > " + FaultFile + " && chmod 0644 " + FaultFile
	}
	for _, d := range r.devs {
		if !d.ready {
			continue
		}
		res, err := d.dev.Su(ctx, cmd)
		if err != nil {
			return fmt.Errorf("%s: %w", d.Serial, err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("%s: %s exited %d: %s", d.Serial, cmd, res.ExitCode, strings.TrimSpace(string(res.Stdout)+string(res.Stderr)))
		}
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(faultReread):
		return nil
	}
}

// ExitCodeMutate is agentlab mutate's exit code: ExitCode's for errors,
// 1 when a fault survived, else 0.
func ExitCodeMutate(m *Mutation, err error) int {
	if err != nil {
		return ExitCode(nil, err)
	}
	if m == nil || m.Matrix == nil || m.Matrix.Survived > 0 {
		return reports.ExitFailures
	}
	return reports.ExitOK
}
