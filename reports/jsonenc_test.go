package reports

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// jsonTwins encodes v with the hand-written encoder and with encoding/json
// and fails unless the bytes are equal.
func jsonTwins(t testing.TB, name string, r *Run) {
	t.Helper()
	var fast, std bytes.Buffer
	if err := encodeRun(&fast, r); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(&std, r); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fast.Bytes(), std.Bytes()) {
		t.Fatalf("%s: hand-written results.json differs from encoding/json:\n%s", name, firstDiff(std.Bytes(), fast.Bytes()))
	}
	doc := upstreamOf(r)
	fast.Reset()
	std.Reset()
	if err := encodeUpstream(&fast, doc); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(&std, doc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fast.Bytes(), std.Bytes()) {
		t.Fatalf("%s: hand-written upstream-checks.json differs from encoding/json:\n%s", name, firstDiff(std.Bytes(), fast.Bytes()))
	}
}

// TestJSONEncoderMatchesEncodingJSON holds the hand-written encoder to the
// bytes encoding/json produces, for prepared runs and for raw ones with nil
// slices, zero times and text JSON must escape.
func TestJSONEncoderMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	odd := sampleRun()
	odd.RunID = "quote \" backslash \\ nl \n tab \t bell \a nul \x00 bs \b ff \f del \x7f"
	odd.Host = "invalid \xff\xfe utf-8, \u2028 and \u2029, <html> & 'quotes', 中文, emoji 😀"
	odd.Scenarios[0].Checks[0].Detail = "\x1b[31mred\x1b[0m"
	odd.Scenarios[1].PersonTouches = 3
	odd.Devices[0].Timeline[0].End = time.Time{}
	odd.StartedAt = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("x", 5*3600+1800))
	odd.Selection.ExcludeTags = []string{"slow"}
	odd.Model = Model{Kind: ModelLive, Provider: "anthropic", Name: "m"}
	odd.Scenarios[2].Name = "touch \u2028"
	odd.Scenarios[2].PersonTouches = 1

	raw := sampleRun()
	raw.Scenarios[0].Tags = nil
	raw.Scenarios[1].Attempts[0].Checks = nil
	raw.Devices[1].Health = nil

	soaked := sampleRun()
	soaked.Soak = &Soak{DurationMs: 40_000, Iterations: 3, Series: []SoakSeries{
		{Device: "vd-1", Metric: "runtime.rss", Unit: "bytes", Growth: 1.5e-7, Bound: 16 << 20, Grew: true,
			Samples: []SoakSample{{1, odd.StartedAt, 31457280}, {2, odd.StartedAt, 0.25}, {3, odd.StartedAt, 3e21}}},
		{Device: "host", Metric: "adb.fds", Unit: "count"},
	}}
	runs := map[string]*Run{
		"soak":     prepare(soaked),
		"sample":   prepare(sampleRun()),
		"odd":      prepare(odd),
		"raw":      raw,
		"empty":    {},
		"big":      prepare(bigRun(300)),
		"prepared": prepare(&Run{}),
	}
	for name, r := range runs {
		jsonTwins(t, name, r)
	}
}

// upstreamOf builds the upstream document the way writeUpstream does.
func upstreamOf(r *Run) *upstreamDoc {
	var buf bytes.Buffer
	_ = writeUpstream(&buf, r)
	doc := &upstreamDoc{}
	_ = json.Unmarshal(buf.Bytes(), doc)
	return doc
}
