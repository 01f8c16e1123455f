package apptool

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// App is what a sample app's command line needs from the app package.
type App interface {
	Tools() []Tool
	// Debug runs one debug command and returns the JSON document it
	// prints. A *UserError is the command's failure sentence.
	Debug(ctx context.Context, cmd string, args []string) (any, error)
	Close() error
}

// Command is an extra command of an app's binary (for example "serve",
// added with the provider SDK). It runs with the opened app.
type Command func(ctx context.Context, app App, args []string) (any, error)

// CLI describes one sample app's binary: `<name> [--data DIR] <command> …`.
type CLI struct {
	// Name is the binary and app short name ("notes").
	Name string
	// Open opens the app's store under dataDir.
	Open func(ctx context.Context, dataDir string) (App, error)
	// DebugCommands are the command names passed to App.Debug, shown in
	// the usage text. "tool" is always among them.
	DebugCommands []string
	// Commands are extra commands handled outside Debug; they win over
	// DebugCommands of the same name.
	Commands map[string]Command
	// Streams are commands that own stdin and stdout: the MCP service
	// (serve) and an MCP session on stdio (mcp --stdio). Main prints no
	// JSON document for them, since stdout may be a protocol stream:
	// failures go to stderr only, with the same exit codes. They win over
	// Commands of the same name.
	Streams map[string]Command
}

// UsageError is a command line the binary cannot run (exit code 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// ToolCallError is a tool handler's isError result, printed as
// {"error": sentence, "isError": true}.
type ToolCallError struct{ Sentence string }

func (e *ToolCallError) Error() string { return e.Sentence }

// Exit codes of a sample app binary.
const (
	ExitOK     = 0
	ExitFailed = 1
	ExitUsage  = 2
)

// Main runs the command line args (without the program name), printing
// exactly one JSON document on stdout (none for Streams), and returns the
// exit code. The data directory is --data, else getenv("AGENTOS_APP_DATA").
func (c CLI) Main(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(c.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	dataDir := fs.String("data", "", "data directory (default $AGENTOS_APP_DATA)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return c.help(stdout)
		}
		return c.usage(stdout, stderr, err.Error())
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return c.usage(stdout, stderr, "missing command")
	}
	cmd, cmdArgs := rest[0], rest[1:]
	if cmd == "help" || (len(cmdArgs) > 0 && isHelpFlag(cmdArgs[0])) {
		return c.help(stdout)
	}
	stream, isStream := c.Streams[cmd]
	extra, isExtra := c.Commands[cmd]
	if !isStream && !isExtra && !contains(c.DebugCommands, cmd) && cmd != "tool" {
		return c.usage(stdout, stderr, fmt.Sprintf("unknown command %q", cmd))
	}
	if isStream {
		// From here on stdout belongs to the command.
		stdout = nil
	}
	dir := *dataDir
	if dir == "" && getenv != nil {
		dir = getenv("AGENTOS_APP_DATA")
	}
	if dir == "" {
		return c.usage(stdout, stderr, "no data directory: pass --data DIR or set AGENTOS_APP_DATA")
	}
	// A first run (a fresh --data DIR) starts with an empty store.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, err)
		return c.fail(stdout, stderr, fmt.Sprintf("The %s app could not create its data directory.", c.Name), false)
	}
	app, err := c.Open(ctx, dir)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", c.Name, err)
		return c.fail(stdout, stderr, fmt.Sprintf("The %s app could not open its data.", c.Name), false)
	}
	defer app.Close()
	var out any
	switch {
	case isStream:
		_, err = stream(ctx, app, cmdArgs)
	case isExtra:
		out, err = extra(ctx, app, cmdArgs)
	default:
		out, err = app.Debug(ctx, cmd, cmdArgs)
	}
	var ue *UsageError
	var te *ToolCallError
	switch {
	case err == nil:
		if isStream {
			return ExitOK
		}
		return writeJSON(stdout, out, ExitOK)
	case errors.As(err, &ue):
		return c.usage(stdout, stderr, ue.Msg)
	case errors.As(err, &te):
		return c.fail(stdout, stderr, te.Sentence, true)
	}
	if s, ok := IsUserError(err); ok {
		return c.fail(stdout, stderr, s, false)
	}
	// Internals go to stderr only; the JSON keeps the one-sentence form.
	fmt.Fprintf(stderr, "%s %s: %v\n", c.Name, cmd, err)
	if isStream {
		return ExitFailed
	}
	return c.fail(stdout, stderr, fmt.Sprintf("The %s command failed.", cmd), false)
}

// fail reports a failed command: one JSON document on stdout, or, when
// stdout is nil (a stream command owns it), the sentence on stderr.
func (c CLI) fail(stdout, stderr io.Writer, sentence string, isToolError bool) int {
	if stdout == nil {
		fmt.Fprintf(stderr, "%s: %s\n", c.Name, sentence)
		return ExitFailed
	}
	doc := map[string]any{"error": sentence}
	if isToolError {
		doc["isError"] = true
	}
	return writeJSON(stdout, doc, ExitFailed)
}

func isHelpFlag(s string) bool { return s == "--help" || s == "-h" || s == "-help" }

// help prints what the binary does and how to call it (exit 0): `<app>
// --help`, `<app> help` and `<app> <command> --help`.
func (c CLI) help(stdout io.Writer) int {
	if stdout == nil {
		stdout = io.Discard
	}
	var debug []string
	for _, d := range c.DebugCommands {
		if d != "tool" && c.Streams[d] == nil && c.Commands[d] == nil {
			debug = append(debug, d)
		}
	}
	var extra []string
	for k := range c.Commands {
		if c.Streams[k] == nil {
			extra = append(extra, k)
		}
	}
	sort.Strings(debug)
	sort.Strings(extra)
	fmt.Fprintf(stdout, "usage: %s [--data DIR] <command> [args]\n\n", c.Name)
	fmt.Fprintf(stdout, "The %s sample app of AgentOS: its tools over MCP, and debug commands that print one JSON document.\n\n", c.Name)
	fmt.Fprintln(stdout, "commands:")
	if c.Streams["serve"] != nil {
		fmt.Fprintln(stdout, "  serve --server NAME [--socket S]  the MCP service on $AGENTOS_SOCKET (the runtime's launcher starts it)")
	}
	if c.Streams["mcp"] != nil {
		fmt.Fprintln(stdout, "  mcp --stdio                       one MCP session on stdin/stdout (MCP Inspector, any MCP client)")
	}
	fmt.Fprintln(stdout, "  tool NAME ['{json args}']         call one tool and print {\"result\": …} or {\"error\": …}")
	for _, e := range extra {
		fmt.Fprintf(stdout, "  %s\n", e)
	}
	if len(debug) > 0 {
		fmt.Fprintf(stdout, "  %-33s debug commands\n", strings.Join(debug, ", "))
	}
	fmt.Fprintln(stdout, "\nThe data directory is --data DIR, else $AGENTOS_APP_DATA; it is created when missing.")
	fmt.Fprintln(stdout, "Exit codes: 0 done, 1 failed (the JSON says why), 2 usage.")
	return ExitOK
}

func (c CLI) usage(stdout, stderr io.Writer, msg string) int {
	cmds := append([]string{"tool"}, c.DebugCommands...)
	for k := range c.Commands {
		cmds = append(cmds, k)
	}
	for k := range c.Streams {
		cmds = append(cmds, k)
	}
	sort.Strings(cmds)
	cmds = dedupSorted(cmds)
	if stdout == nil {
		fmt.Fprintf(stderr, "%s: usage: %s\n", c.Name, msg)
	}
	fmt.Fprintf(stderr, "usage: %s [--data DIR] <command> [args]\ncommands: %s\n", c.Name, strings.Join(cmds, ", "))
	if stdout == nil {
		return ExitUsage
	}
	return writeJSON(stdout, map[string]any{"error": "usage: " + msg}, ExitUsage)
}

func dedupSorted(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

func writeJSON(w io.Writer, v any, code int) int {
	s, err := Compact(v)
	if err != nil {
		s = `{"error":"The result could not be encoded."}`
		code = ExitFailed
	}
	fmt.Fprintln(w, s)
	return code
}

// ToolCommand runs `tool <name> ['<json args>']` against tools: it calls
// the handler through Run and returns {"result": <structured>}, or a
// *ToolCallError carrying the isError sentence.
func ToolCommand(ctx context.Context, tools []Tool, args []string) (any, error) {
	if len(args) < 1 || len(args) > 2 {
		return nil, &UsageError{Msg: "tool <name> ['<json args>']"}
	}
	var raw json.RawMessage
	if len(args) == 2 {
		raw = json.RawMessage(args[1])
	}
	for _, t := range tools {
		if t.Name == args[0] {
			res := Run(ctx, t, raw)
			if res.IsError {
				return nil, &ToolCallError{Sentence: res.Text}
			}
			return map[string]any{"result": res.Structured}, nil
		}
	}
	return nil, &ToolCallError{Sentence: fmt.Sprintf("Unknown tool %q.", args[0])}
}

// DebugArgs parses the optional single JSON-object argument of a debug
// command (`notes raw_prompt '{"note_id":3}'`). No argument is an empty
// object; more than one is a usage error.
func DebugArgs(cmd string, args []string) (*Args, error) {
	switch len(args) {
	case 0:
		return ParseArgs(nil)
	case 1:
		return ParseArgs(json.RawMessage(args[0]))
	}
	return nil, &UsageError{Msg: fmt.Sprintf("%s takes at most one JSON object argument", cmd)}
}
