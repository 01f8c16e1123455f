package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agentoslab/agentlab/reports"
	"github.com/spf13/cobra"
)

func init() { register(newReportCmd) }

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
markdown (md), html, upstream, console, or all.

Compare two runs with "agentlab report diff".`,
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
			for _, f := range fs {
				if f == reports.FormatConsole {
					if err := reports.WriteConsole(a.stdout, run, nil); err != nil {
						return err
					}
					continue
				}
				files = append(files, f)
			}
			if len(files) == 0 {
				return nil
			}
			if err := reports.Write(dir, run, files...); err != nil {
				return err
			}
			for _, f := range files {
				fmt.Fprintf(a.stderr, "wrote %s\n", filepath.Join(dir, f.FileName()))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&from, "from", "", "the run's results.json")
	cmd.Flags().StringVar(&formats, "format", "html,junit,markdown,console", "comma-separated formats")
	cmd.AddCommand(newReportDiffCmd(a))
	return cmd
}

func newReportDiffCmd(a *app) *cobra.Command {
	var format string
	var failOnRegression bool
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Compare two runs: new failures, fixed, still failing, flaky",
		Long: `Compare two runs' results.json: scenarios that newly fail, that were fixed, that
still fail, that became flaky, other verdict changes, scenarios added or removed, and
the named checks that changed inside each scenario.

Formats: text (default; Markdown that reads well in a terminal), markdown, json.
With --fail-on-regression the command exits 1 when NEW failed where OLD did not.`,
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
			if failOnRegression && d.Regressed() {
				return exitWith(ExitFailed, errors.New("the new run regressed"))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "text, markdown or json")
	cmd.Flags().BoolVar(&failOnRegression, "fail-on-regression", false, "exit 1 when the new run has new failures or regressed checks")
	return cmd
}
