// Package appcli is the command line shared by every sample app binary:
//
//	<app> [--data DIR] <command> [args...]
//
// DIR defaults to $AGENTOS_APP_DATA (the launcher sets it). Each command
// prints exactly one JSON document on stdout and the process exits 0 (ok),
// 1 (the command failed; the document is {"error":"<sentence>"}) or 2
// (usage). The commands form a table, so the provider-SDK shell adds
// "serve" and "mcp --stdio" as two more entries.
package appcli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// DataEnv names the environment variable that gives the default data dir.
const DataEnv = "AGENTOS_APP_DATA"

// Instance is an opened app.
type Instance interface {
	Tools() []apptool.Tool
	Debug(ctx context.Context, cmd string, args []string) (any, error)
	Close() error
}

// Command is one entry of the command table.
type Command struct {
	Name  string
	Usage string // argument synopsis, e.g. "<id>"
	// Run executes the command. A non-nil document is printed as JSON; an
	// error is printed as {"error": ...}. Errors wrapping apptool.ErrUsage
	// exit 2, others exit 1.
	Run func(ctx context.Context, app Instance, args []string) (any, error)
}

// Debug returns a command that runs app.Debug(ctx, name, args).
func Debug(name, usage string) Command {
	return Command{Name: name, Usage: usage, Run: func(ctx context.Context, app Instance, args []string) (any, error) {
		return app.Debug(ctx, name, args)
	}}
}

// Tool is the "tool <name> ['<json args>']" command. A tool answering an
// error sentence makes the command fail (exit 1) with
// {"error": "<sentence>", "isError": true}.
var Tool = Command{Name: "tool", Usage: "<name> ['<json args>']", Run: func(ctx context.Context, app Instance, args []string) (any, error) {
	return apptool.CallTool(ctx, app.Tools(), args)
}}

// Program describes one app binary.
type Program struct {
	Name string
	// Open opens the app on its data dir.
	Open func(ctx context.Context, dataDir string) (Instance, error)
	// Commands is the command table (dump, reset, seed, tool and the
	// app's own).
	Commands []Command
	// Getenv reads the environment; nil means os.Getenv.
	Getenv func(string) string
}

// Main runs one command line and returns the process exit code.
func (p Program) Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	getenv := p.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	fs := flag.NewFlagSet(p.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	data := fs.String("data", getenv(DataEnv), "app data directory")
	usage := func(msg string) int {
		fmt.Fprintf(stderr, "%s\n%s", msg, p.usage())
		printJSON(stdout, map[string]string{"error": msg})
		return 2
	}
	if err := fs.Parse(args); err != nil {
		return usage(err.Error())
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usage("missing command")
	}
	cmd, ok := p.find(rest[0])
	if !ok {
		return usage(fmt.Sprintf("unknown command %q", rest[0]))
	}
	if *data == "" {
		return usage("no data directory: pass --data DIR or set " + DataEnv)
	}
	app, err := p.Open(ctx, *data)
	if err != nil {
		printJSON(stdout, map[string]string{"error": err.Error()})
		return 1
	}
	doc, err := cmd.Run(ctx, app, rest[1:])
	if cerr := app.Close(); err == nil && cerr != nil {
		err = cerr
	}
	switch {
	case errors.Is(err, apptool.ErrUsage):
		return usage(err.Error())
	case err != nil:
		msg, ok := apptool.IsUserError(err)
		if !ok {
			msg = fmt.Sprintf("%s failed: %v", cmd.Name, err)
		}
		printJSON(stdout, map[string]string{"error": msg})
		return 1
	}
	if doc != nil {
		printJSON(stdout, doc)
	}
	if o, ok := doc.(apptool.Outcome); ok && o.IsError {
		return 1
	}
	return 0
}

func (p Program) find(name string) (Command, bool) {
	for _, c := range p.Commands {
		if c.Name == name {
			return c, true
		}
	}
	return Command{}, false
}

func (p Program) usage() string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s [--data DIR] <command> [args...]\ncommands:\n", p.Name)
	for _, c := range p.Commands {
		fmt.Fprintf(&b, "  %s %s\n", c.Name, c.Usage)
	}
	return b.String()
}

func printJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		fmt.Fprintf(w, "{\"error\":%q}\n", err.Error())
	}
}
