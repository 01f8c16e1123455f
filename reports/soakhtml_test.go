package reports

import (
	"bufio"
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func soakSeries(device, metric, unit string, grew bool, values ...float64) SoakSeries {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := SoakSeries{Device: device, Metric: metric, Unit: unit, Grew: grew}
	for i, v := range values {
		s.Samples = append(s.Samples, SoakSample{Iteration: i + 1, At: at.Add(time.Duration(i) * time.Minute), Value: v})
	}
	return s
}

// TestSoakSVGGolden pins the charts: a leaking series (red, rising), a
// flat one (a line through the middle), a single sample and a label
// that must be escaped.
func TestSoakSVGGolden(t *testing.T) {
	var buf bytes.Buffer
	w := htmlWriter{bufio.NewWriter(&buf)}
	for _, sr := range []SoakSeries{
		soakSeries("emulator-5554", "runtime.fds", "count", true, 30, 31, 33, 32, 35, 36, 38, 40),
		soakSeries("vd-1", "runtime.goroutines", "count", false, 41, 41, 41, 41),
		soakSeries("host", "adb.rss", "bytes", false, 8<<20),
		soakSeries(`<script>"x"&'y'`, "runtime.rss", "bytes", false, 1, 2),
	} {
		soakSVG(w, sr)
		w.raw("\n")
	}
	require.NoError(t, w.Flush())
	out := buf.String()
	assert.NotContains(t, out, "<script>", "labels are escaped")
	golden(t, "soak.svg.html", buf.Bytes())
}

func TestSoakSection(t *testing.T) {
	r := sampleRun()
	r.Soak = &Soak{DurationMs: 40_000, Iterations: 8, Series: []SoakSeries{
		soakSeries("vd-1", "runtime.fds", "count", true, 30, 31, 33, 32, 35, 36, 38, 40),
	}}
	var buf bytes.Buffer
	require.NoError(t, writeHTML(&buf, r))
	html := buf.String()
	i := strings.Index(html, `<section class="soak">`)
	require.Positive(t, i, "the soak section is in the report")
	assert.Contains(t, html[i:], "8 iterations")
	assert.Contains(t, html[i:], "30 → 40")
	assert.Contains(t, html[i:], "<svg")

	buf.Reset()
	r.Soak = nil
	require.NoError(t, writeHTML(&buf, r))
	assert.NotContains(t, buf.String(), `class="soak"`, "no soak, no section")
}
