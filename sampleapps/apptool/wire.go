package apptool

import "sort"

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
