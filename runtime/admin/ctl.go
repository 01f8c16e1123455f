package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// Exit codes of `agentosd ctl`.
const (
	ExitOK          = 0
	ExitFailed      = 1 // the runtime refused or the call failed
	ExitUsage       = 2
	ExitUnreachable = 3 // no runtime answers on the admin socket
)

// Verb is one `agentosd ctl <group> <verb>` command: how to turn its
// arguments into a method call and how to print the result.
type Verb struct {
	// Group is the first word ("app"); "" for a top-level verb ("status").
	Group string
	// Name is the verb ("install").
	Name string
	// Method is the admin method called.
	Method string
	// Args is the argument synopsis for the usage text ("FILE").
	Args string
	// Summary is one line for the usage text.
	Summary string
	// Params builds the params from the arguments after the verb (with
	// --json removed). Secrets are read from stdin here, never taken
	// from args. Return a *UsageError for a bad command line. Nil means
	// the verb takes no arguments and sends no params.
	Params func(args []string, stdin io.Reader) (any, error)
	// Text prints the result for people; nil prints indented JSON.
	Text func(w io.Writer, result json.RawMessage) error
	// Finish, when set, replaces printing: it writes the result (in
	// text or JSON form) and returns the exit code (`app run` exits with
	// the app's code).
	Finish func(result json.RawMessage, asJSON bool, stdout, stderr io.Writer) int
	// Timeout bounds the call; 0 means 30 s. A verb whose Params knows
	// better (a --timeout flag) returns TimeoutParams.
	Timeout time.Duration
}

// TimeoutParams lets Verb.Params set the call's timeout along with its
// params (for verbs whose run time is given on the command line).
type TimeoutParams struct {
	Params  any
	Timeout time.Duration
}

func (v Verb) path() string {
	if v.Group == "" {
		return v.Name
	}
	return v.Group + " " + v.Name
}

// UsageError is a command line ctl cannot run (exit 2).
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError.
func Usagef(format string, args ...any) error { return &UsageError{Msg: fmt.Sprintf(format, args...)} }

var verbs struct {
	mu sync.Mutex
	vs []Verb // sorted by path
}

// RegisterVerb adds ctl verbs. A duplicate group+name, or a verb without
// a name or method, panics.
func RegisterVerb(vs ...Verb) {
	verbs.mu.Lock()
	defer verbs.mu.Unlock()
	for _, v := range vs {
		if v.Name == "" || v.Method == "" || strings.ContainsAny(v.Group+v.Name, " \t") {
			panic(fmt.Sprintf("admin: bad verb %q %q", v.Group, v.Name))
		}
		i, found := slices.BinarySearchFunc(verbs.vs, v.path(), func(e Verb, p string) int { return strings.Compare(e.path(), p) })
		if found {
			panic("admin: verb registered twice: " + v.path())
		}
		verbs.vs = slices.Insert(verbs.vs, i, v)
	}
}

// Verbs returns the registered verbs sorted by group and name.
func Verbs() []Verb {
	verbs.mu.Lock()
	defer verbs.mu.Unlock()
	return slices.Clone(verbs.vs)
}

// CtlIO is where ctl reads and writes.
type CtlIO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Ctl runs `agentosd ctl` with args (after "ctl") and returns the exit
// code:
//
//	agentosd ctl [--socket-prefix P] [--socket-dir D] [--timeout D] <group> <verb> [args] [--json]
//
// Human text by default; --json prints the raw result (or the wire
// error) as received.
func Ctl(ctx context.Context, args []string, cio CtlIO) int {
	if cio.Stdin == nil {
		cio.Stdin = strings.NewReader("")
	}
	if cio.Stdout == nil {
		cio.Stdout = io.Discard
	}
	if cio.Stderr == nil {
		cio.Stderr = io.Discard
	}
	fs := flag.NewFlagSet("ctl", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	prefix := fs.String("socket-prefix", "", "socket-name prefix of the runtime")
	dir := fs.String("socket-dir", "", "directory of socket files (systems without abstract sockets)")
	timeout := fs.Duration("timeout", 0, "bound for the call (default per verb)")
	asJSON := fs.Bool("json", false, "print raw JSON")
	if err := fs.Parse(args); err != nil {
		return ctlUsage(cio.Stderr, err.Error())
	}
	rest, jsonFlag := stripJSONFlag(fs.Args())
	*asJSON = *asJSON || jsonFlag
	if len(rest) == 0 {
		return ctlUsage(cio.Stderr, "missing command")
	}
	if rest[0] == "help" {
		printVerbs(cio.Stdout)
		return ExitOK
	}
	v, vargs, ok := findVerb(rest)
	if !ok {
		return ctlUsage(cio.Stderr, fmt.Sprintf("unknown command %q", strings.Join(rest[:min(2, len(rest))], " ")))
	}

	var params any
	callTimeout := v.Timeout
	if v.Params != nil {
		p, err := v.Params(vargs, cio.Stdin)
		if err != nil {
			var ue *UsageError
			if errors.As(err, &ue) {
				return ctlUsage(cio.Stderr, fmt.Sprintf("%s: %s (usage: agentosd ctl %s %s)", v.path(), ue.Msg, v.path(), v.Args))
			}
			fmt.Fprintf(cio.Stderr, "agentosd ctl %s: %v\n", v.path(), err)
			return ExitFailed
		}
		if tp, ok := p.(TimeoutParams); ok {
			p, callTimeout = tp.Params, tp.Timeout
		}
		params = p
	} else if len(vargs) > 0 {
		return ctlUsage(cio.Stderr, fmt.Sprintf("%s takes no arguments", v.path()))
	}
	if *timeout > 0 {
		callTimeout = *timeout
	}
	if callTimeout <= 0 {
		callTimeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()

	names := transport.Names{Prefix: *prefix, Dir: *dir}
	c, err := Dial(ctx, names.Admin())
	if err != nil {
		fmt.Fprintf(cio.Stderr, "agentosd ctl: the runtime is not reachable on %s (is agentosd running?)\n", names.Admin())
		return ExitUnreachable
	}
	defer c.Close()
	res, err := c.CallRaw(ctx, v.Method, params)
	if err != nil {
		var e *errcode.Error
		if errors.As(err, &e) {
			if *asJSON {
				b, _ := json.Marshal(struct {
					Error errcode.WireError `json:"error"`
				}{e.Wire()})
				fmt.Fprintf(cio.Stdout, "%s\n", b)
			} else {
				fmt.Fprintf(cio.Stderr, "agentosd ctl %s: %s\n", v.path(), e.Message())
			}
			return ExitFailed
		}
		if errors.Is(err, ErrNoReply) {
			fmt.Fprintf(cio.Stderr, "agentosd ctl %s: the runtime closed the connection without answering (only root, shell and the runtime may use it)\n", v.path())
			return ExitFailed
		}
		fmt.Fprintf(cio.Stderr, "agentosd ctl %s: %v\n", v.path(), err)
		return ExitFailed
	}
	if v.Finish != nil {
		return v.Finish(res, *asJSON, cio.Stdout, cio.Stderr)
	}
	if *asJSON {
		fmt.Fprintf(cio.Stdout, "%s\n", res)
		return ExitOK
	}
	if v.Text == nil {
		var buf bytes.Buffer
		if json.Indent(&buf, res, "", "  ") != nil {
			buf.Reset()
			buf.Write(res)
		}
		fmt.Fprintf(cio.Stdout, "%s\n", buf.Bytes())
		return ExitOK
	}
	if err := v.Text(cio.Stdout, res); err != nil {
		fmt.Fprintf(cio.Stderr, "agentosd ctl %s: %v\n", v.path(), err)
		return ExitFailed
	}
	return ExitOK
}

// stripJSONFlag removes --json (and -json) before a "--" separator.
func stripJSONFlag(args []string) ([]string, bool) {
	out := make([]string, 0, len(args))
	found := false
	for i, a := range args {
		if a == "--" {
			out = append(out, args[i:]...)
			break
		}
		if a == "--json" || a == "-json" {
			found = true
			continue
		}
		out = append(out, a)
	}
	return out, found
}

func findVerb(rest []string) (Verb, []string, bool) {
	vs := Verbs()
	if len(rest) >= 2 {
		for _, v := range vs {
			if v.Group == rest[0] && v.Name == rest[1] {
				return v, rest[2:], true
			}
		}
	}
	for _, v := range vs {
		if v.Group == "" && v.Name == rest[0] {
			return v, rest[1:], true
		}
	}
	return Verb{}, nil, false
}

func ctlUsage(w io.Writer, msg string) int {
	fmt.Fprintf(w, "agentosd ctl: %s\n", msg)
	fmt.Fprintln(w, "usage: agentosd ctl [--socket-prefix P] [--socket-dir D] [--timeout D] <command> [args] [--json]")
	fmt.Fprintln(w, "commands (agentosd ctl help):")
	printVerbs(w)
	return ExitUsage
}

func printVerbs(w io.Writer) {
	for _, v := range Verbs() {
		syn := strings.TrimSpace(v.path() + " " + v.Args)
		fmt.Fprintf(w, "  %-36s %s\n", syn, v.Summary)
	}
}
