package cli

import (
	"fmt"
	"strings"

	"github.com/agentoslab/agentlab/lab"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/faults"
	"github.com/spf13/cobra"
)

const mutateLong = `Mutation-test the suite: prove that breaking each rule of the runtime turns
the report red. agentlab mutate builds the runtime with the agentos_faultinject
tag (a build whose named faults break one promise each; default builds hold no
fault code), provisions the virtual devices lab.yaml names once, and runs the
selected scenarios (default: the default suite)

  1. once with no fault: the baseline, whose reports are written into --out;
  2. once per fault, with the fault named in each device's fault file
     (` + lab.FaultFile + `), one attempt per scenario, the round's
     reports in --out/faults/<fault>/.

It writes --out/kill-matrix.json and a "Kill matrix" section in --out/report.html:
for every fault the checks that went red with it (a check counts when it passed in
the baseline; a scenario whose steps failed without a red check counts as
"<scenario>: (steps)"), for every check the faults it catches, and the unproven
checks — those that catch no fault, with their count. A fault no check catches
survives.

--fault limits the rounds to some faults (repeatable or comma-separated);
--list prints the faults with the promise each keeps and its guarding scenarios.
--guards runs each fault only against its guarding scenarios (the baseline runs
them all): a targeted matrix that proves every fault caught in a fraction of the
suite's time; the full suite (the default) also finds the unproven checks.

Only virtual devices are used: a faulted runtime never reaches a phone. Use a
private state directory (XDG_STATE_HOME) on a shared machine, as for agentlab run.

Exit codes:
  0  every fault was caught
  1  at least one fault survived
  2  usage or configuration error (nothing ran)
  4  lab faults (devices lost, provisioning failed)`

type mutateFlags struct {
	faults, tags, excludeTags, scenarios []string
	list, guards, keepDevices            bool
	parallel                             int
	cacheDir                             string
}

func newMutateCmd(a *app) *cobra.Command {
	var f mutateFlags
	cmd := &cobra.Command{
		Use:   "mutate",
		Short: "Run the suite once per injected runtime fault; write the kill matrix",
		Long:  mutateLong,
		Example: `  agentlab mutate --list
  agentlab mutate --guards
  agentlab mutate --fault pairing_code_reusable --scenario 'desktop/*'
  agentlab mutate --out out/mutate --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.list {
				return listFaults(a)
			}
			cfg, err := a.config()
			if err != nil {
				return err
			}
			o := a.labOptions()
			o.Parallel, o.KeepDevices = f.parallel, f.keepDevices
			o.Build = lab.BuildOptions{CacheDir: f.cacheDir}
			sel := lab.Selection{Tags: f.tags, ExcludeTags: f.excludeTags, Names: f.scenarios}
			m, err := lab.Mutate(cmd.Context(), cfg, sel, o, lab.MutateOptions{Faults: f.faults, Guards: f.guards})
			code := lab.ExitCodeMutate(m, err)
			if m != nil && m.Matrix != nil {
				if perr := printMatrix(a, m.Matrix); perr != nil && err == nil {
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
	fl.StringSliceVar(&f.faults, "fault", nil, "inject only these faults (comma-separated or repeated; default every fault, see --list)")
	fl.StringArrayVar(&f.scenarios, "scenario", nil, "run only this scenario: a name or a glob such as 'desktop/*' (repeatable)")
	fl.StringSliceVar(&f.tags, "tags", nil, "run scenarios with one of these tags (with lab.yaml's tags)")
	fl.StringSliceVar(&f.excludeTags, "exclude-tags", nil, "skip scenarios with any of these tags")
	fl.BoolVar(&f.guards, "guards", false, "run each fault only against its guarding scenarios (see --list)")
	fl.BoolVar(&f.list, "list", false, "print the faults, the promise each keeps and its guarding scenarios, and exit")
	fl.IntVar(&f.parallel, "parallel", 0, "scenarios running at once (default lab.yaml's parallelism, else one per device)")
	fl.BoolVar(&f.keepDevices, "keep-devices", false, "leave the virtual devices running afterwards")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "build cache (default $XDG_CACHE_HOME/agentlab/build)")
	_ = cmd.RegisterFlagCompletionFunc("fault", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return faults.Names(), cobra.ShellCompDirectiveNoFileComp
	})
	completeSelection(cmd, a)
	return cmd
}

// listFaults prints the fault catalog.
func listFaults(a *app) error {
	if a.asJSON {
		return writeJSON(a, faults.All)
	}
	var rows [][]string
	for _, f := range faults.All {
		rows = append(rows, []string{f.Name, f.Promise, strings.Join(f.Guards, ", ")})
	}
	return printTable(a, []string{"FAULT", "PROMISE IT KEEPS", "GUARDS"}, rows)
}

// printMatrix prints the matrix (with --json, the matrix itself).
func printMatrix(a *app, m *reports.KillMatrix) error {
	if a.asJSON {
		return writeJSON(a, m)
	}
	var rows [][]string
	for _, f := range m.Faults {
		by := strings.Join(f.Checks, "; ")
		if !f.Caught {
			by = "SURVIVED"
		}
		rows = append(rows, []string{f.Name, by})
	}
	if err := printTable(a, []string{"FAULT", "CAUGHT BY"}, rows); err != nil {
		return err
	}
	_, err := fmt.Fprintf(a.stdout, "%d of %s caught (%.0f %%); %s unproven\n", m.Caught, plural(len(m.Faults), "fault"),
		m.CaughtPercent, plural(m.UnprovenCount, "check"))
	return err
}
