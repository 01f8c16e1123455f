package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/lab"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
	"github.com/spf13/cobra"
)

// runFlags are agentlab run's flags.
type runFlags struct {
	tags, excludeTags []string
	shard             string
	scenarios         []string
	repeat            int
	untilFail         bool
	soak              time.Duration
	parallel          int
	keepDevices       bool
	dryRun            bool
	prebuilt          string
	cacheDir          string
	consentDriver     string
	chromium          string
}

const runLong = `Run the scenario suite: start the devices lab.yaml names (virtual devices,
adb servers' devices), gate each on its health, build the runtime and the apps for
their ABIs (cached), provision every device (module, runtime, apps, model, plugins),
then run the selected scenarios on a dynamic queue over the leased devices, retrying
failures within their budgets and re-queueing attempts lost to the lab on another
device. Every report format is written into --out (results.json, junit.xml,
summary.md, report.html, upstream-checks.json, console.txt) with each attempt's
artifacts under artifacts/ and the build under build/, and the console table is
printed (with --json: the run's summary as JSON instead).

Before the run is declared done, every artifact and report is scanned for the model
key, pairing codes and tokens and the bundle-signing key; a leak fails the run.

Without lab.yaml the built-in default runs the whole suite (./scenarios) on two
virtual devices with the lab's model stub.

--scenario takes names or globs ('desktop/*'). --dry-run prints what the selection
runs (with --json as a list) and exits without touching a device.

The runtime and the apps are built from the source tree the command runs in;
outside one, agentlab uses prebuilt artifacts: --prebuilt DIR (what
"agentlab build --out DIR" wrote), else an artifacts.json next to the agentlab
executable, as a release ships them.

Shard the suite over CI machines with --shard i/n on each (0-based; a scenario's
shard is a hash of its name) and join their results with "agentlab report merge".

Reproduce a case with --scenario NAME --repeat N (or --until-fail): one device,
every attempt kept with its artifacts, a pass/fail count at the end.

Soak with --soak 30m: the selection runs again and again until the time is spent
(iteration N's scenarios are named soakN/NAME); after every iteration the lab samples
each device's runtime (RSS, descriptors, goroutines, store size, from ctl status) and
the lab's adb server (RSS, descriptors). A figure that keeps growing past its bound
fails the run as the lab/soak scenario; report.html charts every series and
results.json carries the samples.

The first Ctrl-C stops queueing and lets running scenarios finish (devices released,
reports written); a second one aborts them.

Exit codes:
  0  every scenario passed (flaky and skipped allowed)
  1  at least one product failure, or a leaked secret
  2  usage or configuration error (nothing ran)
  3  no failures and no lab faults, but a person touched a device
  4  lab faults only (devices lost, provisioning failed)`

func newRunCmd(a *app) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Provision devices and run the scenario suite; write every report",
		Long:  runLong,
		Example: `  agentlab run
  agentlab run --tags nightly --exclude-tags slow --out out/nightly
  agentlab run --scenario 'desktop/*' --json
  agentlab run --shard 1/4 --parallel 2
  agentlab run --scenario notes/revoke --repeat 20 --until-fail --keep-devices
  agentlab run --tags smoke --dry-run
  agentlab run --tags nightly --soak 30m`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSuite(cmd, a, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.tags, "tags", nil, "run scenarios with one of these tags (comma-separated or repeated; with lab.yaml's tags)")
	fl.StringSliceVar(&f.excludeTags, "exclude-tags", nil, "skip scenarios with any of these tags")
	fl.StringVar(&f.shard, "shard", "", "run shard i of n (0-based, \"i/n\"); scenarios are assigned by a hash of their name")
	fl.StringArrayVar(&f.scenarios, "scenario", nil, "run only this scenario: a name or a glob such as 'desktop/*' (repeatable)")
	fl.IntVar(&f.repeat, "repeat", 0, "run the one selected scenario N times on one device, keeping every attempt")
	fl.BoolVar(&f.untilFail, "until-fail", false, "with one scenario: repeat until it fails (at most --repeat, default 100)")
	fl.DurationVar(&f.soak, "soak", 0, "repeat the selection until this much time is spent, failing when the runtime's or adb's figures grow")
	fl.IntVar(&f.parallel, "parallel", 0, "scenarios running at once (default lab.yaml's parallelism, else one per device)")
	fl.BoolVar(&f.keepDevices, "keep-devices", false, "leave the virtual devices running afterwards (agentlab vdevice stop ends them)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the scenarios the selection runs and exit; touches no device")
	fl.StringVar(&f.prebuilt, "prebuilt", "", "use the prebuilt artifacts in this folder (agentlab build --out DIR) instead of building")
	fl.StringVar(&f.cacheDir, "cache-dir", "", "build cache (default $XDG_CACHE_HOME/agentlab/build)")
	fl.StringVar(&f.consentDriver, "consent-driver", "", "answer every scenario's cards with this driver: admin (ctl) or ui (the owner console in headless Chromium)")
	fl.StringVar(&f.chromium, "chromium", "", "the ui consent driver's browser (default /usr/bin/chromium, else chromium on PATH)")
	completeSelection(cmd, a)
	return cmd
}

// parseShard reads "i/n".
func parseShard(s string) (int, int, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, fmt.Errorf("want i/n, got %q", s)
	}
	idx, err1 := strconv.Atoi(i)
	cnt, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil || cnt < 1 || idx < 0 || idx >= cnt {
		return 0, 0, fmt.Errorf("want i/n with 0 <= i < n, got %q", s)
	}
	return idx, cnt, nil
}

// selection is the lab selection the flags ask for.
func (f *runFlags) selection(cmd *cobra.Command) (lab.Selection, error) {
	sel := lab.Selection{Tags: f.tags, ExcludeTags: f.excludeTags, Names: f.scenarios}
	if f.shard != "" {
		var err error
		if sel.ShardIndex, sel.ShardCount, err = parseShard(f.shard); err != nil {
			return sel, usagef(cmd, "--shard: %v", err)
		}
	}
	if f.consentDriver != "" && !slices.Contains(scenario.ConsentDrivers, f.consentDriver) {
		return sel, usagef(cmd, "--consent-driver: want admin or ui, got %q", f.consentDriver)
	}
	if f.repeat < 0 || f.parallel < 0 || f.soak < 0 {
		return sel, usagef(cmd, "--repeat, --parallel and --soak must not be negative")
	}
	if f.soak > 0 && (f.repeat > 0 || f.untilFail) {
		return sel, usagef(cmd, "--soak repeats the whole selection: not with --repeat or --until-fail")
	}
	return sel, nil
}

func runSuite(cmd *cobra.Command, a *app, f *runFlags) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	sel, err := f.selection(cmd)
	if err != nil {
		return err
	}
	if f.dryRun {
		return dryRun(a, cfg, sel, &lab.Options{Repeat: f.repeat, UntilFail: f.untilFail, Parallel: f.parallel})
	}
	o := a.labOptions()
	o.Parallel, o.Repeat, o.UntilFail, o.KeepDevices = f.parallel, f.repeat, f.untilFail, f.keepDevices
	o.Soak = f.soak
	o.Build = lab.BuildOptions{Prebuilt: f.prebuilt, CacheDir: f.cacheDir}
	o.ConsentDriver, o.Chromium = f.consentDriver, f.chromium

	// The first Ctrl-C (main's context, or our own signal) stops queueing;
	// a second aborts the running scenarios.
	ctx, abort := context.WithCancel(context.WithoutCancel(cmd.Context()))
	defer abort()
	stop := make(chan struct{})
	o.Stop = stop
	quit := make(chan struct{})
	var bg sync.WaitGroup
	defer func() {
		close(quit)
		bg.Wait()
	}()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	bg.Go(func() {
		var once sync.Once
		first := func() {
			once.Do(func() {
				close(stop)
				fmt.Fprintln(a.stderr, "agentlab run: interrupted: finishing the running scenarios (Ctrl-C again to abort them)")
			})
		}
		done, n := cmd.Context().Done(), 0
		for {
			select {
			case <-done:
				done = nil
				first()
			case <-sigs:
				if n++; n == 1 {
					first()
					continue
				}
				fmt.Fprintln(a.stderr, "agentlab run: aborting the running scenarios")
				abort()
				return
			case <-quit:
				return
			}
		}
	})

	run, err := lab.Run(ctx, cfg, sel, o)
	code := lab.ExitCode(run, err)
	if run != nil {
		if perr := printRun(a, run, f); perr != nil && err == nil {
			err = perr
		}
	}
	if err != nil || code != reports.ExitOK {
		return exitWith(code, err)
	}
	return nil
}

// runSummary is what run --json prints: the run's id, where its reports
// are, its summary and the scenarios that did not pass.
type runSummary struct {
	RunID    string          `json:"runId"`
	Output   string          `json:"output"`
	ExitCode int             `json:"exitCode"`
	Summary  reports.Summary `json:"summary"`
	NotPass  []verdictLine   `json:"notPassed"`
}

type verdictLine struct {
	Scenario string          `json:"scenario"`
	Verdict  reports.Verdict `json:"verdict"`
	Reason   string          `json:"reason,omitempty"`
}

// printRun prints the console table, or the summary as JSON; with
// --repeat, each scenario's attempt counts.
func printRun(a *app, run *reports.Run, f *runFlags) error {
	cfg, _ := a.config()
	if a.asJSON {
		s := reports.Summarize(run)
		out := runSummary{RunID: run.RunID, Output: cfg.Output, ExitCode: s.ExitCode, Summary: s, NotPass: []verdictLine{}}
		for _, sc := range run.Scenarios {
			if sc.Verdict != reports.VerdictPass {
				out.NotPass = append(out.NotPass, verdictLine{sc.Name, sc.Verdict, sc.Reason})
			}
		}
		return writeJSON(a, out)
	}
	if err := reports.WriteConsole(a.stdout, run, nil); err != nil {
		return err
	}
	if f.repeat > 0 || f.untilFail {
		for _, s := range run.Scenarios {
			counts := map[reports.Verdict]int{}
			for _, at := range s.Attempts {
				counts[at.Verdict]++
			}
			fmt.Fprintf(a.stdout, "%s: %s: %d passed, %d failed, %d lost to the lab, %d inconclusive\n", s.Name, plural(len(s.Attempts), "attempt"),
				counts[reports.VerdictPass], counts[reports.VerdictFail], counts[reports.VerdictError], counts[reports.VerdictInconclusive])
		}
	}
	return nil
}

// dryRun prints what the selection runs.
func dryRun(a *app, cfg *config.Config, sel lab.Selection, o *lab.Options) error {
	plan, err := lab.NewPlan(cfg, sel)
	if err != nil {
		return err
	}
	if err := plan.Check(o); err != nil {
		return err
	}
	rows := make([]scenarioRow, 0, len(plan.Run))
	for _, s := range plan.Run {
		rows = append(rows, rowOf(s))
	}
	if a.asJSON {
		return writeJSON(a, rows)
	}
	if err := printScenarios(a, rows); err != nil {
		return err
	}
	line := fmt.Sprintf("%s of %d would run", plural(len(rows), "scenario"), len(plan.Suite))
	if n := len(plan.Filtered); n > 0 {
		line += fmt.Sprintf(", %s left out by tags", plural(n, "scenario"))
	}
	if sc := plan.Selection.ShardCount; sc > 1 {
		line += fmt.Sprintf(" (shard %d/%d)", plan.Selection.ShardIndex, sc)
	}
	_, err = fmt.Fprintln(a.stdout, line)
	return err
}

// writeJSON prints v as indented JSON: what --json prints.
func writeJSON(a *app, v any) error {
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
