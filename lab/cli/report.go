package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/agentoslab/agentlab/reports"
	"github.com/spf13/cobra"
)

// formatAliases are the short names report --format accepts besides the
// reports package's own.
var formatAliases = map[string]reports.Format{"md": reports.FormatMarkdown, "xml": reports.FormatJUnit}

// parseFormats parses a comma-separated format list ("html,junit,md").
func parseFormats(s string) ([]reports.Format, error) {
	var out []reports.Format
	seen := map[reports.Format]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if name == "all" {
			return reports.Formats(), nil
		}
		f, ok := formatAliases[name]
		if !ok {
			var err error
			if f, err = reports.ParseFormat(name); err != nil {
				return nil, err
			}
		}
		if !seen[f] {
			seen[f] = true
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no format given")
	}
	return out, nil
}

func newReportCmd(a *app) *cobra.Command {
	var from, formats string
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Render reports again from a results.json",
		Long: `Render any report format again from a run's results.json: the JSON results
document, JUnit XML, Markdown summary, self-contained HTML with a device timeline,
the upstream-shaped check list, or the console table.

The console format prints to stdout; every other format is written as a file into
--out (default: the folder holding results.json). Formats: json, junit (xml),
markdown (md), html, upstream, console, or all. With --json, the files written
and the run's summary are printed as JSON instead of the console table.

Compare two runs with "agentlab report diff"; join the shards of a sharded run
with "agentlab report merge".`,
		Example: `  agentlab report --from out/results.json --format html,junit,md,console
  agentlab report --from nightly/results.json --format console
  agentlab report --from out/results.json --format all --out /srv/www/run-42`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if from == "" {
				return usagef(cmd, "--from is required (the run's results.json)")
			}
			fs, err := parseFormats(formats)
			if err != nil {
				return usagef(cmd, "--format: %v", err)
			}
			run, err := reports.Load(from)
			if err != nil {
				return err
			}
			dir := a.outDir
			if dir == "" {
				dir = filepath.Dir(from)
			}
			var files []reports.Format
			console := false
			for _, f := range fs {
				if f == reports.FormatConsole {
					console = true
					continue
				}
				files = append(files, f)
			}
			if console && !a.asJSON {
				if err := reports.WriteConsole(a.stdout, run, nil); err != nil {
					return err
				}
			}
			written := []writtenFile{}
			if len(files) > 0 {
				if err := reports.Write(dir, run, files...); err != nil {
					return err
				}
				for _, f := range files {
					written = append(written, writtenFile{f, filepath.Join(dir, f.FileName())})
					if !a.asJSON {
						fmt.Fprintf(a.stderr, "wrote %s\n", filepath.Join(dir, f.FileName()))
					}
				}
			}
			if a.asJSON {
				return writeJSON(a, rendered{RunID: run.RunID, Written: written, Summary: reports.Summarize(run)})
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the run's results.json")
	cmd.Flags().StringVar(&formats, "format", "html,junit,markdown,console", "comma-separated formats")
	cmd.AddCommand(newReportDiffCmd(a), newReportMergeCmd(a))
	return cmd
}

// writtenFile and rendered are what report --json prints.
type writtenFile struct {
	Format reports.Format `json:"format"`
	Path   string         `json:"path"`
}

type rendered struct {
	RunID   string          `json:"runId"`
	Written []writtenFile   `json:"written"`
	Summary reports.Summary `json:"summary"`
}

func newReportDiffCmd(a *app) *cobra.Command {
	var format string
	var failOnRegression bool
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Compare two runs: new failures, fixed, still failing, flaky",
		Long: `Compare two runs' results.json: scenarios that newly fail, that were fixed, that
still fail, that became flaky, other verdict changes, scenarios added or removed, and
the named checks that changed inside each scenario. A scenario that is new in NEW and
fails (or errors) is a new failure, not merely an addition.

Formats: text (default; Markdown that reads well in a terminal), markdown, json
(also --json).

Exit codes: 0 no new failures, 1 NEW has new failures (or, with
--fail-on-regression, a named check regressed in a scenario that was already
failing), 2 usage error.`,
		Example: `  agentlab report diff last-night/results.json out/results.json
  agentlab report diff old.json new.json --format json > diff.json
  agentlab report diff base/results.json out/results.json --fail-on-regression`,
		Args: exactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch format {
			case "text", "markdown", "md", "json":
			default:
				return usagef(cmd, "--format %q: want text, markdown or json", format)
			}
			if a.asJSON {
				format = "json"
			}
			before, err := reports.Load(args[0])
			if err != nil {
				return err
			}
			after, err := reports.Load(args[1])
			if err != nil {
				return err
			}
			d := reports.Diff(before, after)
			if format == "json" {
				err = d.WriteJSON(a.stdout)
			} else {
				err = d.WriteMarkdown(a.stdout)
			}
			if err != nil {
				return err
			}
			switch {
			case d.HasNewFailures():
				return exitWith(ExitFailed, fmt.Errorf("%s has %s", args[1], plural(len(d.NewFailures), "new failure")))
			case failOnRegression && d.Regressed():
				return exitWith(ExitFailed, fmt.Errorf("%s regressed: a named check newly fails", args[1]))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "text, markdown or json")
	cmd.Flags().BoolVar(&failOnRegression, "fail-on-regression", false, "also exit 1 when a named check regressed inside a scenario that was failing already")
	cmd.ValidArgsFunction = completeFiles("json")
	return cmd
}

func newReportMergeCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "merge OUT SHARD/results.json...",
		Short: "Merge the results of the shards of one run into one run with every report",
		Long: `Merge the results.json of the shards of one run (agentlab run --shard i/n on n CI
machines, each uploading its --out folder) into one run, and write every report
format of it into OUT: results.json, junit.xml, summary.md, report.html,
upstream-checks.json and console.txt, with each shard's artifacts copied under
OUT/artifacts so the reports' links work. The console table is printed (with
--json: the merged run's summary).

Give all n shards of one sharding (each index once: a missing shard is an error,
not a quietly smaller run), or runs that were not sharded and ran different
scenarios. A device serial two shards share is shown as shard<i>/<serial>.

Exit codes: the merged run's, as agentlab run's (0 passed, 1 product failures, 3
inconclusive only, 4 lab faults only), 2 when the runs cannot be merged, so the CI
job that merges is the one that passes or fails.`,
		Example: `  agentlab report merge out shard-0/results.json shard-1/results.json shard-2/results.json
  agentlab report merge merged shards/*/results.json --json`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usagef(cmd, "%s takes OUT and at least one results.json, got %s (usage: %s)", cmd.CommandPath(), plural(len(args), "argument"), cmd.UseLine())
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out, inputs := args[0], args[1:]
			var runs []*reports.Run
			for _, p := range inputs {
				r, err := reports.Load(p)
				if err != nil {
					return exitWith(ExitUsage, err)
				}
				runs = append(runs, r)
			}
			merged, err := reports.Merge(runs...)
			if err != nil {
				return exitWith(ExitUsage, err)
			}
			for i, r := range runs {
				if err := copyArtifacts(filepath.Dir(inputs[i]), out, r); err != nil {
					fmt.Fprintf(a.stderr, "agentlab report merge: %v\n", err)
				}
			}
			if err := reports.Write(out, merged); err != nil {
				return err
			}
			s := reports.Summarize(merged)
			if a.asJSON {
				written := []writtenFile{}
				for _, f := range reports.Formats() {
					written = append(written, writtenFile{f, filepath.Join(out, f.FileName())})
				}
				if err := writeJSON(a, rendered{RunID: merged.RunID, Written: written, Summary: s}); err != nil {
					return err
				}
			} else {
				if err := reports.WriteConsole(a.stdout, merged, nil); err != nil {
					return err
				}
				fmt.Fprintf(a.stderr, "merged %s into %s\n", plural(len(runs), "run"), out)
			}
			if s.ExitCode != reports.ExitOK {
				return exitWith(s.ExitCode, nil)
			}
			return nil
		},
	}
	cmd.ValidArgsFunction = func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 0 {
			return nil, cobra.ShellCompDirectiveFilterDirs
		}
		return []string{"json"}, cobra.ShellCompDirectiveFilterFileExt
	}
	return cmd
}

// copyArtifacts copies the artifact files r names from the shard's folder
// into out, keeping their relative paths (the reports link to them). A
// shard whose artifacts were not uploaded is reported, not fatal: the
// verdicts are in results.json.
func copyArtifacts(from, out string, r *reports.Run) error {
	var missing int
	for _, s := range r.Scenarios {
		for _, art := range s.Artifacts {
			src := filepath.Join(from, filepath.FromSlash(art.Path))
			dst := filepath.Join(out, filepath.FromSlash(art.Path))
			if same(src, dst) {
				continue
			}
			if err := copyFile(src, dst); err != nil {
				if errors.Is(err, os.ErrNotExist) {
					missing++
					continue
				}
				return err
			}
		}
	}
	if missing > 0 {
		return fmt.Errorf("%s: %s of %s not found (were they uploaded with results.json?)", from, plural(missing, "artifact"), r.RunID)
	}
	return nil
}

func same(a, b string) bool {
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
