package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// LinesRequest is one call of `agentosd ctl --lines`: the ctl arguments
// (what would follow "ctl" on a command line, --json included) and what
// the verb reads on its stdin (a model key).
type LinesRequest struct {
	Args  []string `json:"args"`
	Stdin string   `json:"stdin,omitempty"`
}

// LinesResponse is the answer to one LinesRequest: what a one-shot
// `agentosd ctl ARGS…` would have exited with and printed.
type LinesResponse struct {
	Exit   int    `json:"exit"`
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr,omitempty"`
}

// maxLinesRequest bounds one request line: the admin request bound plus
// room for the JSON around the arguments.
const maxLinesRequest = MaxRequestChars + 64<<10

// ctlLines serves `agentosd ctl --lines`: one LinesRequest per input line,
// one LinesResponse per output line, in order, until stdin ends.
//
// It exists for programs that run many verbs in a row (the lab runs
// thousands per suite): one long-lived root shell stream replaces an adb
// shell, su and a process start per verb, which cost 20–50 ms each on a
// device. Each request runs exactly as the one-shot command would, so
// answers are the same bytes.
func ctlLines(ctx context.Context, verbs []Verb, cio CtlIO) int {
	sc := bufio.NewScanner(cio.Stdin)
	sc.Buffer(make([]byte, 0, 64<<10), maxLinesRequest)
	enc := json.NewEncoder(cio.Stdout)
	enc.SetEscapeHTML(false)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var req LinesRequest
		var resp LinesResponse
		switch err := json.Unmarshal(line, &req); {
		case err != nil:
			resp = LinesResponse{Exit: ExitUsage, Stderr: fmt.Sprintf("agentosd ctl --lines: bad request line: %v\n", err)}
		case slices.ContainsFunc(req.Args, func(a string) bool { return a == "--lines" || a == "-lines" }):
			resp = LinesResponse{Exit: ExitUsage, Stderr: "agentosd ctl --lines: a request cannot start another --lines\n"}
		default:
			var out, errb bytes.Buffer
			code := Ctl(ctx, verbs, req.Args, CtlIO{Stdin: strings.NewReader(req.Stdin), Stdout: &out, Stderr: &errb})
			resp = LinesResponse{Exit: code, Stdout: out.String(), Stderr: errb.String()}
		}
		if err := enc.Encode(resp); err != nil {
			return ExitFailed // the reader went away
		}
		if f, ok := cio.Stdout.(interface{ Flush() error }); ok {
			f.Flush()
		}
	}
	if err := sc.Err(); err != nil {
		fmt.Fprintf(cio.Stderr, "agentosd ctl --lines: %v\n", err)
		return ExitUsage
	}
	return ExitOK
}
