package cli

import (
	"fmt"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/lab"
	"github.com/agentoslab/agentlab/lab/chaos"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/faults"
	"github.com/spf13/cobra"
)

var chaosLong = `Test the runtime against a model that improvises: agentlab chaos provisions
the devices lab.yaml names once and, until --budget is spent, runs sequences of
steps drawn from --seed, one sequence per device at a time. A sequence mixes

  - prompts of a caller app, answered by the model stub's chaos model: each turn
    it calls tools the request offers with arguments generated from each tool's
    JSON Schema (valid, at the schema's edges, and invalid), in sessions with no
    scope, echo only or no tools, under a consent that allows or denies;
  - lab actions: cancel, revoke while a prompt runs, a consent card left to time
    out, a HIGH card answered with a choice it did not offer, a second prompt
    while the first runs, plugin disable, provider kill, runtime kill -9,
    reboot, a second app loading the first app's session, the model set again.

Sequence i is drawn from seed+i, and its model answers from the same seed, so a
sequence runs the same way every time. Each is run as a scenario (the v2
scenario language, model: {chaos: {seed}}) with these invariants checked after
every step, whatever the model did:

` + invariantList() + `

A sequence that breaks one is shrunk: delta debugging over its steps, every
candidate rerun on the devices, down to the shortest sequence that still breaks
the same invariant, written as a scenario file into --out/chaos/ (run it with
agentlab run --scenario after copying it into the suite). --out/chaos.json says
how many sequences and steps ran, how often each invariant was checked, and the
violations. A sequence that fails on a step instead (a refusal, a timeout) is
reported, not shrunk.

--fault runs the runtime built with the agentos_faultinject tag (virtual devices
only, as agentlab mutate) and chaos against each named fault in turn, until its
first violation is shrunk or --budget (per fault) is spent: chaos must find it.
--action limits the actions drawn (` + actionList() + `).

Exit codes:
  0  no invariant broke (with --fault: every fault was found)
  1  an invariant broke (with --fault: a fault was not found)
  2  usage or configuration error (nothing ran)
  4  lab faults (devices lost, provisioning failed)`

func invariantList() string {
	var b strings.Builder
	for _, inv := range chaos.Invariants {
		fmt.Fprintf(&b, "  %-18s %s\n", inv.Name, inv.Promise)
	}
	return strings.TrimRight(b.String(), "\n")
}

func actionList() string {
	var s []string
	for _, k := range chaos.Kinds() {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

type chaosFlags struct {
	seed        int64
	budget      time.Duration
	steps       int
	faults      []string
	actions     []string
	keepDevices bool
	cacheDir    string
}

func newChaosCmd(a *app) *cobra.Command {
	var f chaosFlags
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Run seeded chaos sequences against the invariants; shrink a violation to a scenario",
		Long:  chaosLong,
		Example: `  agentlab chaos --seed 1 --budget 5m
  agentlab chaos --seed 7 --budget 3m --out out/chaos --json
  agentlab chaos --fault busy_quota_ignored --action busy,prompt --budget 2m`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			o := a.labOptions()
			o.KeepDevices = f.keepDevices
			o.Build = lab.BuildOptions{CacheDir: f.cacheDir}
			co := lab.ChaosOptions{Seed: f.seed, Budget: f.budget, Steps: f.steps, Faults: f.faults}
			for _, k := range f.actions {
				co.Kinds = append(co.Kinds, chaos.Kind(k))
			}
			res, err := lab.Chaos(cmd.Context(), cfg, co, o)
			code := lab.ExitCodeChaos(res, err)
			if res != nil {
				if perr := printChaos(a, res); perr != nil && err == nil {
					err = perr
				}
			}
			if err != nil || code != reports.ExitOK {
				return exitWith(code, err)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.Int64Var(&f.seed, "seed", 1, "the seed of the first sequence (sequence i uses seed+i)")
	fl.DurationVar(&f.budget, "budget", 5*time.Minute, "how long to run sequences (per fault with --fault)")
	fl.IntVar(&f.steps, "steps", lab.DefaultChaosSteps, "actions per sequence")
	fl.StringSliceVar(&f.faults, "fault", nil, "run the fault-injection runtime with these faults, one round each (see agentlab mutate --list)")
	fl.StringSliceVar(&f.actions, "action", nil, "draw only these actions (comma-separated or repeated)")
	fl.BoolVar(&f.keepDevices, "keep-devices", false, "leave the virtual devices running afterwards")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "build cache (default $XDG_CACHE_HOME/agentlab/build)")
	_ = cmd.RegisterFlagCompletionFunc("fault", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return faults.Names(), cobra.ShellCompDirectiveNoFileComp
	})
	_ = cmd.RegisterFlagCompletionFunc("action", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return strings.Split(actionList(), ", "), cobra.ShellCompDirectiveNoFileComp
	})
	return cmd
}

// printChaos prints what chaos ran (with --json, chaos.json's content).
func printChaos(a *app, res *lab.ChaosResult) error {
	if a.asJSON {
		return writeJSON(a, res)
	}
	var rows [][]string
	for _, inv := range chaos.Invariants {
		rows = append(rows, []string{inv.Name, fmt.Sprint(res.Exercised[inv.Name])})
	}
	if err := printTable(a, []string{"INVARIANT", "CHECKED"}, rows); err != nil {
		return err
	}
	for _, v := range res.Violations {
		fault := ""
		if v.Fault != "" {
			fault = " under " + v.Fault
		}
		fmt.Fprintf(a.stdout, "BROKEN %s%s (seed %d, %s): %d → %d steps, %s\n", v.Invariant, fault, v.Seed, v.Check, len(v.Found), len(v.Shrunk), v.File)
	}
	for _, f := range res.Faults {
		if !f.Found {
			fmt.Fprintf(a.stdout, "NOT FOUND %s in %d sequences\n", f.Name, f.Sequences)
		}
	}
	_, err := fmt.Fprintf(a.stdout, "%s, %s, %s, %s in %s\n", plural(res.Sequences, "sequence"), plural(res.Steps, "step"),
		plural(len(res.Violations), "violation"), plural(len(res.StepFailures), "step failure"),
		(time.Duration(res.DurationMs) * time.Millisecond).Round(time.Second))
	return err
}
