package apptool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
)

// MaxWireChars bounds one encoded tool result on the plugin channel (spec
// §4.9: a larger response is replaced by an error).
const MaxWireChars = 65536

// wireEnvelope is room for the JSON-RPC and MCP result envelope around the
// two copies of the result.
const wireEnvelope = 512

// WireCost is what v occupies on the channel, in bytes (never fewer than
// characters): the compact JSON once as an escaped text item and once as
// structuredContent, plus the envelope. Results whose cost stays within
// MaxWireChars always fit.
func WireCost(v any) int {
	text, err := Compact(v)
	if err != nil {
		return MaxWireChars + 1
	}
	quoted, err := Compact(text)
	if err != nil {
		return MaxWireChars + 1
	}
	return len(text) + len(quoted) + wireEnvelope
}

// Fit returns the largest k in [0, n] for which build(k) fits
// MaxWireChars (0 when even build(0) does not), so list tools cut a page
// at an item boundary and answer next_offset instead of failing.
// build(k) must grow with k.
func Fit(n int, build func(k int) any) int {
	if n <= 0 || WireCost(build(n)) <= MaxWireChars {
		return max(n, 0)
	}
	// Largest k with build(k) fitting, among 0..n-1.
	return sort.Search(n, func(k int) bool { return WireCost(build(k+1)) > MaxWireChars })
}

// ErrUsage marks a debug command called with the wrong arguments; the
// command-line shell exits 2 for it.
var ErrUsage = errors.New("usage")

// Usagef returns an error wrapping ErrUsage.
func Usagef(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrUsage, fmt.Sprintf(format, args...))
}

// Outcome is the document the debug "tool" command prints:
// {"result": <structured>} or {"error": "<sentence>", "isError": true}.
type Outcome struct{ Result }

// MarshalJSON implements json.Marshaler.
func (o Outcome) MarshalJSON() ([]byte, error) {
	if o.IsError {
		return json.Marshal(struct {
			Error   string `json:"error"`
			IsError bool   `json:"isError"`
		}{o.Text, true})
	}
	// The text is the compact JSON of the structured result; reuse it so a
	// JSON null result prints as {"result":null}.
	return []byte(`{"result":` + o.Text + `}`), nil
}

// Find returns the tool called name.
func Find(tools []Tool, name string) (Tool, bool) {
	for _, t := range tools {
		if t.Name == name {
			return t, true
		}
	}
	return Tool{}, false
}

// CallTool is the debug "tool <name> ['<json args>']" command: it runs one
// handler directly through Run.
func CallTool(ctx context.Context, tools []Tool, args []string) (Outcome, error) {
	if len(args) < 1 || len(args) > 2 {
		return Outcome{}, Usagef("tool <name> ['<json args>']")
	}
	t, ok := Find(tools, args[0])
	if !ok {
		return Outcome{}, Errorf("Unknown tool %q.", args[0])
	}
	var raw json.RawMessage
	if len(args) == 2 {
		raw = json.RawMessage(args[1])
	}
	return Outcome{Run(ctx, t, raw)}, nil
}
