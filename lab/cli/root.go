// Package cli is the agentlab command line: the root command with its
// global flags, and one file per subcommand.
//
// # Adding a command
//
// A subcommand lives in its own file of this package as a constructor,
// and newRoot lists it (nothing registers itself from init):
//
//	func newRunCmd(a *app) *cobra.Command {
//		return &cobra.Command{
//			Use:     "run",
//			Short:   "…",
//			Long:    "…",    // required: a test checks every command has one
//			Example: "  agentlab run --tags smoke",
//			Args:    noArgs, // or exactArgs(n), rangeArgs(lo, hi): usage errors exit 2
//			RunE: func(cmd *cobra.Command, args []string) error {
//				cfg, err := a.config() // lab.yaml (--config), with --out applied
//				…
//				run, err := lab.Run(cmd.Context(), cfg, sel, a.labOptions())
//				return exitWith(lab.ExitCode(run, err), err) // a specific exit code
//			},
//		}
//	}
//
// The app value carries the global flags (--config, --out, -v/--log-level,
// --json), the loaded configuration, the logger and the standard streams
// (a.stdout, a.stderr, a.stdin: use them, never os.Stdout, so tests can
// capture output). Commands that print data honour --json (a.asJSON)
// and print tables with printTable, so every table looks alike. A command
// returns an error: a *usageError (from usagef or the Args helpers) or a
// lab.Error of kind lab.ErrConfig exits 2 with a hint naming the help to
// read, an exitWith error exits with its code, anything else prints
// "agentlab <command>: <error>" and exits 1. The work itself is the lab
// package's (lab.Run, lab.OpenInventory, lab.Build, lab.Provision): a
// command parses flags, calls it and prints. The root help is a golden
// file (testdata/help.golden): after changing a command's Short, run
// go test ./lab/cli -run TestRootHelp -update.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"

	"github.com/agentoslab/agentlab/lab"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/spf13/cobra"
)

// IO is where a run of the command line reads and writes.
type IO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Exit codes of every command but run (whose codes are reports.Exit…).
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
)

// app is the state shared by the commands of one invocation.
type app struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	// Global flags.
	configPath string
	outDir     string
	verbose    int
	logLevel   string
	asJSON     bool

	lookupEnv func(string) (string, bool)
	// doctor replaces the host's environment in doctor's tests.
	doctor *doctorEnv

	once   sync.Once
	cfg    *config.Config
	cfgErr error
	log    *slog.Logger
}

// config loads the configuration once: --config, else ./lab.yaml, else the
// embedded default; --out overrides its output directory. Every failure
// is a configuration error (exit 2): a --config that does not exist as
// much as one that does not validate.
func (a *app) config() (*config.Config, error) {
	a.once.Do(func() {
		a.cfg, a.cfgErr = config.Load(a.configPath, &config.Options{LookupEnv: a.lookupEnv})
		if a.cfgErr == nil && a.outDir != "" {
			a.cfg.Output = a.outDir
		}
		switch {
		case a.cfgErr == nil:
		case errors.Is(a.cfgErr, config.ErrInvalid):
			a.cfgErr = &usageError{msg: "invalid configuration:\n" + a.cfgErr.Error(), hint: "agentlab --help"}
		default:
			a.cfgErr = &usageError{msg: "configuration: " + a.cfgErr.Error(), hint: "agentlab --help"}
		}
	})
	return a.cfg, a.cfgErr
}

// labOptions are the lab's options for this invocation: version, the
// environment, progress on stderr, the logger.
func (a *app) labOptions() *lab.Options {
	return &lab.Options{Version: Version(), LookupEnv: a.lookupEnv, Progress: a.stderr, Logger: a.logger()}
}

// logger is the logger the global flags ask for, writing to stderr.
func (a *app) logger() *slog.Logger {
	if a.log == nil {
		level := slog.LevelWarn
		switch {
		case a.logLevel != "":
			_ = level.UnmarshalText([]byte(a.logLevel)) // validated in PersistentPreRunE
		case a.verbose == 1:
			level = slog.LevelInfo
		case a.verbose > 1:
			level = slog.LevelDebug
		}
		a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
	}
	return a.log
}

// usageError is a command line that cannot run: exit 2, with a hint.
type usageError struct {
	msg  string
	hint string // the command whose help to read ("agentlab build --help")
}

func (e *usageError) Error() string { return e.msg }

// usagef returns a usage error for cmd.
func usagef(cmd *cobra.Command, format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...), hint: cmd.CommandPath() + " --help"}
}

// exitError carries a specific exit code (and an optional error to print).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitWith makes a command exit with code, printing err if it is not nil.
func exitWith(code int, err error) error { return &exitError{code: code, err: err} }

// plural renders "1 argument", "2 arguments".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// Argument checks that report usage errors.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if cmd.HasSubCommands() {
			return unknownCommand(cmd, args[0])
		}
		return usagef(cmd, "%s takes no arguments, got %q", cmd.CommandPath(), args[0])
	}
	return nil
}

func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef(cmd, "%s takes %s, got %d (usage: %s)", cmd.CommandPath(), plural(n, "argument"), len(args), cmd.UseLine())
		}
		return nil
	}
}

func rangeArgs(lo, hi int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < lo || len(args) > hi {
			return usagef(cmd, "%s takes %d to %d arguments, got %d (usage: %s)", cmd.CommandPath(), lo, hi, len(args), cmd.UseLine())
		}
		return nil
	}
}

func unknownCommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %s", name, cmd.CommandPath())
	hint := cmd.CommandPath() + " --help"
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += fmt.Sprintf(" (did you mean %q?)", s[0])
		hint = cmd.CommandPath() + " " + s[0] + " --help"
	}
	return &usageError{msg: msg, hint: hint}
}

const rootLong = `agentlab provisions Android devices (phones, emulators, virtual devices) with the
AgentOS runtime and the sample apps, runs YAML scenarios against them and writes
verdicts into reports.

The configuration is lab.yaml: --config FILE, else ./lab.yaml, else the built-in
default (two virtual devices, the model stub, the whole suite). Virtual devices
need Linux and root. Start with:

  agentlab doctor        check this machine and print the fix for anything missing
  agentlab run           build, provision and run the suite (exit codes: see run --help)

Commands that print data print JSON with --json; "agentlab completion bash|zsh|fish"
prints a shell completion script.

Exit codes of every command but run and report merge (which exit as a run does,
see run --help): 0 ok, 1 failed, 2 usage or configuration error (a --config that
does not exist included).`

// newRoot builds the command tree for one invocation.
func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "agentlab",
		Short: "Device lab for the AgentOS runtime: provision, run scenarios, report",
		Long:  rootLong,
		Example: `  agentlab doctor
  agentlab run --config lab.yaml
  agentlab devices --json
  agentlab report --from out/results.json --format html,junit`,
		Args:              noArgs,
		SilenceErrors:     true,
		SilenceUsage:      true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if a.logLevel != "" {
				var l slog.Level
				if err := l.UnmarshalText([]byte(a.logLevel)); err != nil {
					return usagef(cmd, "--log-level %q: want debug, info, warn or error", a.logLevel)
				}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	pf := root.PersistentFlags()
	pf.StringVar(&a.configPath, "config", "", "lab configuration file (default ./lab.yaml, else the built-in default)")
	pf.StringVar(&a.outDir, "out", "", "output directory (overrides lab.yaml output)")
	pf.CountVarP(&a.verbose, "verbose", "v", "log more (-v info, -vv debug)")
	pf.StringVar(&a.logLevel, "log-level", "", "log level: debug, info, warn (default) or error")
	pf.BoolVar(&a.asJSON, "json", false, "print data as JSON where a command prints data")

	root.AddCommand(
		newBridgeCmd(a),
		newBuildCmd(a),
		newChaosCmd(a),
		newCompletionCmd(a),
		newConsoleCmd(a),
		newDevicesCmd(a),
		newDoctorCmd(a),
		newMutateCmd(a),
		newProvisionCmd(a),
		newReplayCmd(a),
		newReportCmd(a),
		newRunCmd(a),
		newScenariosCmd(a),
		newVdeviceCmd(a),
		newVersionCmd(a),
	)
	guard(root)
	return root
}

// guard makes every usage mistake in the tree a *usageError: flag errors,
// and stray arguments to commands that declare no Args.
func guard(c *cobra.Command) {
	c.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		return &usageError{msg: err.Error(), hint: cmd.CommandPath() + " --help"}
	})
	if c.Args == nil {
		c.Args = noArgs
	}
	if !c.Runnable() && c.HasSubCommands() {
		// A group run alone shows its help; with a stray word it is a
		// usage error naming the closest subcommand.
		c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	}
	c.SilenceErrors, c.SilenceUsage = true, true
	c.SuggestionsMinimumDistance = 2
	for _, sub := range c.Commands() {
		guard(sub)
	}
}

// Run runs the agentlab command line with args (without the program
// name) and returns the exit code.
func Run(ctx context.Context, args []string, stdio IO) int {
	if stdio.Stdin == nil {
		stdio.Stdin = strings.NewReader("")
	}
	if stdio.Stdout == nil {
		stdio.Stdout = io.Discard
	}
	if stdio.Stderr == nil {
		stdio.Stderr = io.Discard
	}
	a := &app{ctx: ctx, stdin: stdio.Stdin, stdout: stdio.Stdout, stderr: stdio.Stderr, lookupEnv: os.LookupEnv}
	root := newRoot(a)
	root.SetArgs(args)
	root.SetIn(stdio.Stdin)
	root.SetOut(stdio.Stdout)
	root.SetErr(stdio.Stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return ExitOK
	}
	return report(stdio.Stderr, cmd, err)
}

// report prints err for cmd and returns the exit code it means: a usage
// or configuration error 2, an exitWith error its code, anything else 1.
func report(w io.Writer, cmd *cobra.Command, err error) int {
	name := "agentlab"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(w, "%s: %s\n", name, ue.msg)
		if ue.hint != "" {
			fmt.Fprintf(w, "Run '%s' for usage.\n", ue.hint)
		}
		return ExitUsage
	}
	code := ExitFailed
	var le *lab.Error
	if errors.As(err, &le) && errors.Is(le.Kind, lab.ErrConfig) {
		code = ExitUsage
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err == nil {
			return ee.code
		}
		code, err = ee.code, ee.err
	}
	switch {
	case errors.Is(err, context.Canceled):
		fmt.Fprintf(w, "%s: interrupted\n", name)
	case errors.As(err, &le):
		fmt.Fprintf(w, "%s: %v\n", name, le.Err)
		if le.Hint != "" && errors.Is(le.Kind, lab.ErrConfig) {
			fmt.Fprintf(w, "Run '%s' for usage.\n", le.Hint)
		} else if le.Hint != "" {
			fmt.Fprintf(w, "Try: %s\n", le.Hint)
		}
	default:
		fmt.Fprintf(w, "%s: %v\n", name, err)
	}
	return code
}
