package acptestclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
)

// Op is one operation of a plan. Op names the kind; the other fields
// apply to the kinds the package doc lists.
type Op struct {
	Op string `json:"op"`
	// As names the result (and the connection, session or prompt the op
	// makes); default "<op><index>" (connect: "c").
	As string `json:"as,omitempty"`
	// Conn is a connection (connect's as, or raw_open's for raw ops);
	// default the last one connected.
	Conn string `json:"conn,omitempty"`
	// Session is a session of this plan (its as) or a session id.
	Session string `json:"session,omitempty"`
	// ID is a session for load, resume, fork and delete: a session of
	// this plan (its as) or any id, such as another app's.
	ID string `json:"id,omitempty"`

	// connect
	MaxWaitMs     int    `json:"maxWaitMs,omitempty"`
	RetryMs       int    `json:"retryMs,omitempty"`
	ClientName    string `json:"clientName,omitempty"`
	ClientVersion string `json:"clientVersion,omitempty"`

	// new, fork, load, resume, list
	Scope      *[]acpclient.ToolRef `json:"scope,omitempty"`
	MCPServers []Server             `json:"mcpServers,omitempty"`
	Cwd        string               `json:"cwd,omitempty"`

	// prompt
	Text string `json:"text,omitempty"`
	// Pad fills the text with "x" up to this many characters (UTF-16
	// units), for prompts larger than a command-line argument.
	Pad           int  `json:"pad,omitempty"`
	Times         int  `json:"times,omitempty"`
	Background    bool `json:"background,omitempty"`
	CancelAfterMs int  `json:"cancelAfterMs,omitempty"`
	// DropText leaves the text out of the result (stream.sha256 and
	// stream.chars stand for it): for streams of megabytes.
	DropText bool `json:"dropText,omitempty"`
	// BusyRetryMs sends a prompt again while the runtime refuses it with
	// quota busy, for up to this long: the runtime may answer a prompt
	// before it frees the app's one slot (see PromptOut.BusyRetries).
	BusyRetryMs int `json:"busyRetryMs,omitempty"`
	// Prompt is the background prompt await waits for (its as).
	Prompt string `json:"prompt,omitempty"`

	// set_mode, set_model
	Mode  string `json:"mode,omitempty"`
	Model string `json:"model,omitempty"`

	// raw, dial: Send is one JSON-RPC message; Line is sent as written
	// (either, not both). Socket is caller, admin, acp or a socket name.
	Send   json.RawMessage `json:"send,omitempty"`
	Line   *string         `json:"line,omitempty"`
	Socket string          `json:"socket,omitempty"`
	// ReadMs bounds how long raw and dial read what comes back.
	ReadMs int `json:"readMs,omitempty"`

	// wait_closed, await, sleep, wait_clock
	TimeoutMs int `json:"timeoutMs,omitempty"`
	Ms        int `json:"ms,omitempty"`
	// Since is wait_clock's reference: an earlier raw clock.show's as.
	Since string `json:"since,omitempty"`
}

// Server is a caller-supplied MCP server of new, fork, load or resume.
type Server struct {
	Name    string   `json:"name"`
	URL     string   `json:"url"`
	Headers []Header `json:"headers,omitempty"`
}

// Header is one header of a Server.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Kinds of operations.
const (
	OpConnect    = "connect"
	OpDisconnect = "disconnect"
	OpWaitClosed = "wait_closed"
	OpNew        = "new"
	OpFork       = "fork"
	OpLoad       = "load"
	OpResume     = "resume"
	OpList       = "list"
	OpDelete     = "delete"
	OpClose      = "close"
	OpSetMode    = "set_mode"
	OpSetModel   = "set_model"
	OpPrompt     = "prompt"
	OpCancel     = "cancel"
	OpAwait      = "await"
	OpWaitText   = "wait_text"
	OpRawOpen    = "raw_open"
	OpRawConnect = "raw_connect"
	OpRaw        = "raw"
	OpRawRead    = "raw_read"
	OpRawClose   = "raw_close"
	OpDial       = "dial"
	OpSleep      = "sleep"
	OpWaitClock  = "wait_clock"
	OpListen     = "listen"
)

// Ops lists every kind, in the package doc's order.
var Ops = []string{OpConnect, OpDisconnect, OpWaitClosed, OpNew, OpFork, OpLoad, OpResume, OpList, OpDelete, OpClose,
	OpSetMode, OpSetModel, OpPrompt, OpCancel, OpAwait, OpWaitText, OpRawOpen, OpRawConnect, OpRaw, OpRawRead, OpRawClose, OpDial, OpSleep, OpWaitClock, OpListen}

// Bounds of a plan: what crosses into the runtime stays small and every
// wait ends.
const (
	MaxOps        = 256
	MaxPad        = 300_000
	MaxTimes      = 100
	MaxWaitMs     = 10 * 60 * 1000
	DefaultReadMs = 3000
	MaxLine       = 1 << 20
)

var nameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]{0,63}$`)

// ErrPlan is every problem with a plan's text.
var ErrPlan = errors.New("bad plan")

// ParsePlan reads the arguments of run: each one JSON operation, a JSON
// array of operations, or {"ops":[…]}. Unknown keys are errors.
func ParsePlan(args []string) ([]Op, error) {
	var ops []Op
	for i, a := range args {
		a = strings.TrimSpace(a)
		var batch []Op
		switch {
		case strings.HasPrefix(a, "["):
			if err := decodeStrict(a, &batch); err != nil {
				return nil, fmt.Errorf("%w: argument %d: %v", ErrPlan, i+1, err)
			}
		case strings.HasPrefix(a, "{"):
			var probe map[string]json.RawMessage
			if err := json.Unmarshal([]byte(a), &probe); err != nil {
				return nil, fmt.Errorf("%w: argument %d: %v", ErrPlan, i+1, err)
			}
			if _, ok := probe["ops"]; ok && len(probe) == 1 {
				var p struct {
					Ops []Op `json:"ops"`
				}
				if err := decodeStrict(a, &p); err != nil {
					return nil, fmt.Errorf("%w: argument %d: %v", ErrPlan, i+1, err)
				}
				batch = p.Ops
				break
			}
			var op Op
			if err := decodeStrict(a, &op); err != nil {
				return nil, fmt.Errorf("%w: argument %d: %v", ErrPlan, i+1, err)
			}
			batch = []Op{op}
		default:
			return nil, fmt.Errorf("%w: argument %d is not a JSON object or array", ErrPlan, i+1)
		}
		ops = append(ops, batch...)
		if len(ops) > MaxOps {
			return nil, fmt.Errorf("%w: more than %d operations", ErrPlan, MaxOps)
		}
	}
	if len(ops) == 0 {
		return nil, fmt.Errorf("%w: no operations", ErrPlan)
	}
	if err := validate(ops); err != nil {
		return nil, err
	}
	return ops, nil
}

func decodeStrict(s string, v any) error {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("text after the JSON value")
	}
	return nil
}

// validate checks what the runner relies on and fills the default names.
func validate(ops []Op) error {
	named := map[string]bool{}
	for i := range ops {
		op := &ops[i]
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%w: operation %d (%s): %s", ErrPlan, i+1, op.Op, fmt.Sprintf(format, args...))
		}
		if !slices.Contains(Ops, op.Op) {
			return bad("unknown op; want one of %s", strings.Join(Ops, ", "))
		}
		if op.As == "" {
			op.As = fmt.Sprintf("%s%d", strings.ReplaceAll(op.Op, "_", ""), i+1)
			if op.Op == OpConnect && !named["c"] {
				op.As = "c"
			}
		}
		if !nameRE.MatchString(op.As) {
			return bad("as %q: want a letter, then letters, digits, _ or -", op.As)
		}
		if named[op.As] {
			return bad("as %q is used twice", op.As)
		}
		named[op.As] = true
		for _, ms := range []int{op.MaxWaitMs, op.RetryMs, op.CancelAfterMs, op.BusyRetryMs, op.ReadMs, op.TimeoutMs, op.Ms} {
			if ms < 0 || ms > MaxWaitMs {
				return bad("a duration outside 0..%d ms", MaxWaitMs)
			}
		}
		if op.Pad < 0 || op.Pad > MaxPad {
			return bad("pad outside 0..%d", MaxPad)
		}
		if op.Times < 0 || op.Times > MaxTimes {
			return bad("times outside 0..%d", MaxTimes)
		}
		switch op.Op {
		case OpPrompt:
			if op.Session == "" {
				return bad("needs session")
			}
			if op.Background && op.Times > 1 {
				return bad("background and times do not mix")
			}
		case OpClose, OpSetMode, OpSetModel, OpCancel:
			if op.Session == "" {
				return bad("needs session")
			}
		case OpLoad, OpResume, OpFork, OpDelete:
			if op.ID == "" {
				return bad("needs id")
			}
		case OpAwait, OpWaitText:
			if op.Prompt == "" {
				return bad("needs prompt")
			}
		case OpRaw:
			if (len(op.Send) == 0) == (op.Line == nil) {
				return bad("needs exactly one of send and line")
			}
			if len(op.Send) > 0 && !json.Valid(op.Send) {
				return bad("send is not JSON")
			}
		case OpDial, OpRawConnect:
			if op.Socket == "" {
				return bad("needs socket")
			}
		case OpWaitClock:
			if op.Ms <= 0 {
				return bad("needs ms")
			}
		case OpListen:
			if op.Socket == "" || op.Ms <= 0 {
				return bad("needs socket and ms")
			}
		}
		if op.Line != nil && (len(*op.Line) > MaxLine || bytes.ContainsAny([]byte(*op.Line), "\n")) {
			return bad("line longer than %d bytes or holding a newline", MaxLine)
		}
	}
	return nil
}

// promptText is the op's text padded to Pad characters.
func (op *Op) promptText() string {
	t := op.Text
	if n := op.Pad - utf16Len(t); n > 0 {
		t += strings.Repeat("x", n)
	}
	return t
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r > 0xFFFF {
			n += 2
		} else {
			n++
		}
	}
	return n
}
