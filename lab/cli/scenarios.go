package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/agentoslab/agentlab/lab"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/runner"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/spf13/cobra"
)

func newScenariosCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenarios",
		Short: "List and validate the scenario suite",
		Long: `Work with the scenario suite lab.yaml names (default ./scenarios): list the
scenarios with their tags, devices and upstream case, or validate files against the
scenario language (lab/scenario/DSL.md), reporting every problem as file:line:column.`,
		Example: `  agentlab scenarios list --tags nightly
  agentlab scenarios validate scenarios/notes/revoke.yaml
  agentlab scenarios new notes/create-then-get`,
	}
	cmd.AddCommand(newScenariosListCmd(a), newScenariosValidateCmd(a), newScenariosNewCmd(a))
	return cmd
}

// scenarioRow is one line of scenarios list --json.
type scenarioRow struct {
	Name        string   `json:"name"`
	File        string   `json:"file"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags"`
	Upstream    string   `json:"upstream,omitempty"`
	Devices     []string `json:"devices"`
	Model       string   `json:"model"`
	Apps        []string `json:"apps"`
	Checks      int      `json:"checks"`
}

func newScenariosListCmd(a *app) *cobra.Command {
	var tags, exclude []string
	var expr string
	cmd := &cobra.Command{
		Use:   "list [PATHS]",
		Args:  cobra.ArbitraryArgs,
		Short: "List the scenarios (table, or --json)",
		Long: `List the scenarios under PATHS (files or directories; default lab.yaml's
scenarios) that the tag filters select: name, tags, device roles, the model they
need (stub, live or any), the upstream case they port and how many named checks they
report. An invalid suite is reported as by "scenarios validate" (exit 2).`,
		Example: `  agentlab scenarios list
  agentlab scenarios list --tags nightly --exclude-tags fault
  agentlab scenarios list --expr 'notes && !nightly' --json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths := args
			if len(paths) == 0 {
				cfg, err := a.config()
				if err != nil {
					return err
				}
				paths = cfg.Scenarios
			}
			suite, err := lab.LoadSuite(paths)
			if err != nil {
				return err
			}
			sel := runner.Selection{Tags: config.Tags{Include: tags, Exclude: exclude, Expr: expr}}
			if expr != "" {
				if _, err := config.ParseTagExpr(expr); err != nil {
					return usagef(cmd, "--expr: %v", err)
				}
			}
			run, _, err := runner.Select(suite, sel)
			if err != nil {
				return usagef(cmd, "%v", err)
			}
			rows := make([]scenarioRow, 0, len(run))
			for _, s := range run {
				rows = append(rows, rowOf(s))
			}
			if a.asJSON {
				return writeJSON(a, rows)
			}
			if err := printScenarios(a, rows); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "%d of %s\n", len(rows), plural(len(suite), "scenario"))
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&tags, "tags", nil, "only scenarios with one of these tags")
	cmd.Flags().StringSliceVar(&exclude, "exclude-tags", nil, "leave out scenarios with any of these tags")
	cmd.Flags().StringVar(&expr, "expr", "", "a tag expression (nightly && !fault)")
	completeTags(cmd, a, "tags", "exclude-tags")
	return cmd
}

func rowOf(s *scenario.Scenario) scenarioRow {
	return scenarioRow{Name: s.Name, File: s.File, Description: strings.TrimSpace(s.Description), Tags: nonEmpty(s.Tags),
		Upstream: s.Upstream, Devices: s.Roles(), Model: s.NeedsModel(), Apps: nonEmpty(s.Needs.Apps), Checks: countChecks(s)}
}

// printScenarios prints rows as the scenarios table.
func printScenarios(a *app, rows []scenarioRow) error {
	body := make([][]string, len(rows))
	for i, r := range rows {
		body[i] = []string{r.Name, dash(strings.Join(r.Tags, ",")), strings.Join(r.Devices, ","), r.Model, strconv.Itoa(r.Checks), dash(r.Upstream)}
	}
	return printTable(a, []string{"name", "tags", "devices", "model", "checks", "upstream"}, body)
}

func nonEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func countChecks(s *scenario.Scenario) int {
	n := len(s.Checks) + len(s.Invariants)
	for _, st := range s.AllSteps() {
		if st.Check != nil || (st.Wait != nil && st.Wait.Check != nil) {
			n++
		}
	}
	return n
}

// validation is what scenarios validate --json prints: how many
// scenarios are valid and every problem as file:line:column: field: message.
type validation struct {
	Valid    int      `json:"valid"`
	Problems []string `json:"problems"`
}

func newScenariosValidateCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "validate [FILES|DIRS]",
		Args:  cobra.ArbitraryArgs,
		Short: "Validate scenario files; every problem as file:line:column (exit 2 when invalid)",
		Long: `Validate scenario files (default: lab.yaml's scenarios) with the lab's own
validator: unknown or repeated keys, wrong types, steps with no or two kinds,
references to steps that do not exist, bad JSON paths and regular expressions, model
scripts that do not parse, scenario names used twice. Every problem is printed as
file:line:column: field: message (with --json: {valid, problems}). Exit 0 when
everything is valid, 2 otherwise.`,
		Example: `  agentlab scenarios validate
  agentlab scenarios validate scenarios/notes scenarios/sms/create.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			paths := args
			if len(paths) == 0 {
				cfg, err := a.config()
				if err != nil {
					return err
				}
				paths = cfg.Scenarios
			}
			suite, err := scenario.LoadAll(paths)
			var se *scenario.Error
			var problems []string
			switch {
			case errors.As(err, &se):
				for _, p := range se.Problems {
					problems = append(problems, p.String())
				}
			case err != nil:
				return usagef(cmd, "%v", err)
			}
			if a.asJSON {
				if err := writeJSON(a, validation{Valid: len(suite), Problems: nonEmpty(problems)}); err != nil {
					return err
				}
			} else {
				for _, p := range problems {
					fmt.Fprintln(a.stdout, p)
				}
			}
			if len(problems) > 0 {
				return exitWith(ExitUsage, fmt.Errorf("%s; %s valid", plural(len(problems), "problem"), plural(len(suite), "scenario")))
			}
			if !a.asJSON {
				fmt.Fprintf(a.stdout, "%s valid\n", plural(len(suite), "scenario"))
			}
			return nil
		},
	}
}

func newScenariosNewCmd(a *app) *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "new AREA/NAME",
		Args:  cobra.ExactArgs(1),
		Short: "Write a commented skeleton of a new scenario that validates",
		Long: `Write AREA/NAME.yaml in the suite (default lab.yaml's first scenarios folder): a
commented skeleton of the scenario language — a copy of the test caller, a plan that
prompts once with a named model script, two named checks — that validates as written.
Edit it, then validate and run it on a virtual device.`,
		Example: `  agentlab scenarios new notes/create-then-get
  agentlab run --scenario notes/create-then-get`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dir == "" {
				cfg, err := a.config()
				if err != nil {
					return err
				}
				dir = cfg.Scenarios[0]
			}
			name := args[0]
			file := filepath.Join(dir, filepath.FromSlash(name)+".yaml")
			if _, err := os.Stat(file); err == nil {
				return usagef(cmd, "%s already exists", file)
			}
			_, ferr := os.Stat(filepath.Join(dir, "test-caller"+scenario.FragmentSuffix))
			b, err := scenario.Skeleton(name, file, ferr == nil)
			if err != nil {
				return usagef(cmd, "%v", err)
			}
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				return err
			}
			if err := os.WriteFile(file, b, 0o644); err != nil {
				return err
			}
			if _, err := scenario.Load(file); err != nil {
				return fmt.Errorf("the skeleton does not validate (a bug): %w", err)
			}
			fmt.Fprintf(a.stdout, "wrote %s\nnext: edit it, then agentlab scenarios validate %s and agentlab run --scenario %s\n", file, file, name)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "", "the suite's folder (default lab.yaml's first scenarios entry)")
	return cmd
}
