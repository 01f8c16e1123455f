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

// verbTable is a ctl verb table sorted by path.
type verbTable []Verb

// newVerbTable sorts vs. A duplicate group+name, or a verb without a name
// or method, is a programming error of the wiring and panics.
func newVerbTable(vs []Verb) verbTable {
	t := make(verbTable, 0, len(vs))
	for _, v := range vs {
		if v.Name == "" || v.Method == "" || strings.ContainsAny(v.Group+v.Name, " \t") {
			panic(fmt.Sprintf("admin: bad verb %q %q", v.Group, v.Name))
		}
		i, found := slices.BinarySearchFunc(t, v.path(), func(e Verb, p string) int { return strings.Compare(e.path(), p) })
		if found {
			panic("admin: verb listed twice: " + v.path())
		}
		t = slices.Insert(t, i, v)
	}
	return t
}

// CtlIO is where ctl reads and writes.
type CtlIO struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Ctl runs `agentosd ctl` with args (after "ctl") over verbs (the
// runtime's whole verb table, which the composition root assembles) and
// returns the exit code:
//
//	agentosd ctl [--socket-prefix P] [--socket-dir D] [--timeout D] <group> <verb> [args] [--json]
//
// Human text by default; --json prints the raw result (or the wire
// error) as received. --help (or -h, or `help [group [verb]]`) anywhere
// before a "--" prints the help of what precedes it on stdout and exits 0.
func Ctl(ctx context.Context, verbs []Verb, args []string, cio CtlIO) int {
	vt := newVerbTable(verbs)
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
	lines := fs.Bool("lines", false, "serve one JSON request per stdin line (for programs)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			vt.help(cio.Stdout, nil)
			return ExitOK
		}
		return vt.usage(cio.Stderr, err.Error())
	}
	if *lines {
		if fs.NFlag() > 1 || fs.NArg() > 0 {
			return vt.usage(cio.Stderr, "--lines takes no other arguments: each request line carries its own")
		}
		return ctlLines(ctx, verbs, cio)
	}
	rest, jsonFlag := stripJSONFlag(fs.Args())
	*asJSON = *asJSON || jsonFlag
	if len(rest) == 0 {
		return vt.usage(cio.Stderr, "missing command")
	}
	if words, ok := helpWords(rest); ok {
		if !vt.help(cio.Stdout, words) {
			return vt.usage(cio.Stderr, fmt.Sprintf("unknown command %q", strings.Join(words, " ")))
		}
		return ExitOK
	}
	v, vargs, ok := vt.find(rest)
	if !ok {
		if len(rest) == 1 && vt.isGroup(rest[0]) {
			fmt.Fprintf(cio.Stderr, "agentosd ctl: %s needs a verb\n", rest[0])
			vt.help(cio.Stderr, rest[:1])
			return ExitUsage
		}
		return vt.usage(cio.Stderr, fmt.Sprintf("unknown command %q", strings.Join(rest[:min(2, len(rest))], " ")))
	}

	var params any
	callTimeout := v.Timeout
	if v.Params != nil {
		p, err := v.Params(vargs, cio.Stdin)
		if err != nil {
			var ue *UsageError
			if errors.As(err, &ue) {
				return vt.usage(cio.Stderr, fmt.Sprintf("%s: %s (usage: agentosd ctl %s %s)", v.path(), ue.Msg, v.path(), v.Args))
			}
			fmt.Fprintf(cio.Stderr, "agentosd ctl %s: %v\n", v.path(), err)
			return ExitFailed
		}
		if tp, ok := p.(TimeoutParams); ok {
			p, callTimeout = tp.Params, tp.Timeout
		}
		params = p
	} else if len(vargs) > 0 {
		return vt.usage(cio.Stderr, fmt.Sprintf("%s takes no arguments", v.path()))
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

// helpWords reports a request for help and the command words it is
// about: "help [words]", or words followed by --help or -h (before a
// "--" that starts an app's own command line).
func helpWords(rest []string) ([]string, bool) {
	if rest[0] == "help" {
		return rest[1:], true
	}
	var words []string
	for _, a := range rest {
		switch {
		case a == "--":
			return nil, false
		case a == "--help" || a == "-help" || a == "-h":
			return words, true
		case !strings.HasPrefix(a, "-"):
			words = append(words, a)
		}
	}
	return nil, false
}

func (vt verbTable) find(rest []string) (Verb, []string, bool) {
	if len(rest) >= 2 {
		for _, v := range vt {
			if v.Group == rest[0] && v.Name == rest[1] {
				return v, rest[2:], true
			}
		}
	}
	for _, v := range vt {
		if v.Group == "" && v.Name == rest[0] {
			return v, rest[1:], true
		}
	}
	return Verb{}, nil, false
}

func (vt verbTable) isGroup(name string) bool {
	return slices.ContainsFunc(vt, func(v Verb) bool { return v.Group == name })
}

const ctlSynopsis = "usage: agentosd ctl [--socket-prefix P] [--socket-dir D] [--timeout D] <command> [args] [--json]"

func (vt verbTable) usage(w io.Writer, msg string) int {
	fmt.Fprintf(w, "agentosd ctl: %s\n", msg)
	fmt.Fprintln(w, ctlSynopsis)
	fmt.Fprintln(w, "commands (agentosd ctl --help):")
	vt.list(w, "")
	return ExitUsage
}

// help prints the help of the command named by words (all commands for
// none); it reports false when words name nothing.
func (vt verbTable) help(w io.Writer, words []string) bool {
	switch {
	case len(words) == 0:
		fmt.Fprintln(w, "agentosd ctl: the owner's control commands, sent to a running runtime on its admin socket")
		fmt.Fprintln(w, "(root, shell and the runtime's own uid only).")
		fmt.Fprintln(w)
		fmt.Fprintln(w, ctlSynopsis)
		fmt.Fprintln(w)
		fmt.Fprintln(w, "flags:")
		fmt.Fprintln(w, "  --socket-prefix P   socket-name prefix of the runtime (serve --socket-prefix)")
		fmt.Fprintln(w, "  --socket-dir D      directory of socket files (systems without abstract sockets)")
		fmt.Fprintln(w, "  --timeout D         bound for the call (default per command)")
		fmt.Fprintln(w, "  --json              print the raw JSON result (or error)")
		fmt.Fprintln(w, "  --lines             for programs: read one request per stdin line,")
		fmt.Fprintln(w, "                      {\"args\":[\"--json\",\"status\"],\"stdin\":\"\"}, and answer each with")
		fmt.Fprintln(w, "                      {\"exit\":N,\"stdout\":\"…\",\"stderr\":\"…\"} (what the one-shot command does)")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "commands:")
		vt.list(w, "")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "agentosd ctl <command> --help shows one command.")
		fmt.Fprintf(w, "exit codes: %d ok, %d refused or failed, %d usage, %d runtime not reachable\n", ExitOK, ExitFailed, ExitUsage, ExitUnreachable)
		return true
	case len(words) >= 2:
		if v, _, ok := vt.find(words); ok && v.Group != "" {
			vt.verbHelp(w, v)
			return true
		}
	}
	if v, _, ok := vt.find(words[:1]); ok && v.Group == "" {
		vt.verbHelp(w, v)
		return true
	}
	if !vt.isGroup(words[0]) {
		return false
	}
	fmt.Fprintf(w, "usage: agentosd ctl %s <verb> [args] [--json]\n\nverbs:\n", words[0])
	vt.list(w, words[0])
	return true
}

func (vt verbTable) verbHelp(w io.Writer, v Verb) {
	fmt.Fprintf(w, "usage: agentosd ctl %s [--json]\n\n", strings.TrimSpace(v.path()+" "+v.Args))
	fmt.Fprintf(w, "%s (admin method %s)\n", v.Summary, v.Method)
}

// list prints the verbs of group ("" lists every verb).
func (vt verbTable) list(w io.Writer, group string) {
	for _, v := range vt {
		if group != "" && v.Group != group {
			continue
		}
		syn := strings.TrimSpace(v.path() + " " + v.Args)
		if len(syn) > 36 {
			fmt.Fprintf(w, "  %s\n  %-36s %s\n", syn, "", v.Summary)
			continue
		}
		fmt.Fprintf(w, "  %-36s %s\n", syn, v.Summary)
	}
}
