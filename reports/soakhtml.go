package reports

import (
	"strconv"
	"strings"
	"time"
)

// FormatFigure renders a soak figure of unit for people.
func FormatFigure(unit string, v float64) string {
	if unit == "bytes" {
		return strconv.FormatFloat(v/(1<<20), 'f', 1, 64) + " MiB"
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// The soak charts' size, in CSS pixels.
const (
	chartW, chartH = 240, 48
	chartPad       = 2
)

// writeHTMLSoak is the soak section: per series a line with its figures
// and a small inline SVG chart (no script: the report must read the same
// with JavaScript off).
func writeHTMLSoak(w htmlWriter, r *Run) {
	if r.Soak == nil {
		return
	}
	s := r.Soak
	w.raw("<section class=\"soak\">\n<h2>Soak</h2>\n<p>")
	w.text(plural(s.Iterations, "iteration") + " in " + humanDuration(time.Duration(s.DurationMs)*time.Millisecond))
	w.raw("</p>\n<table>\n<tr><th>device</th><th>figure</th><th>first → last</th><th>growth (bound)</th><th>chart</th></tr>\n")
	for _, sr := range s.Series {
		w.raw("<tr><td>")
		w.text(sr.Device)
		w.raw("</td><td>")
		w.text(sr.Metric)
		w.raw("</td><td>")
		if n := len(sr.Samples); n > 0 {
			w.text(FormatFigure(sr.Unit, sr.Samples[0].Value) + " → " + FormatFigure(sr.Unit, sr.Samples[n-1].Value))
		}
		w.raw("</td><td>")
		if sr.Grew {
			w.badge(VerdictFail)
			w.raw(" ")
		}
		w.text(FormatFigure(sr.Unit, sr.Growth) + " (" + FormatFigure(sr.Unit, sr.Bound) + ")")
		w.raw("</td><td>")
		soakSVG(w, sr)
		w.raw("</td></tr>\n")
	}
	w.raw("</table>\n</section>\n\n")
}

// soakSVG draws a series as a polyline scaled to its own range; the
// label (device and metric, escaped) is the chart's accessible title.
func soakSVG(w htmlWriter, sr SoakSeries) {
	var b strings.Builder
	w.rawf(`<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" role="img"><title>`,
		chartW, chartH, chartW, chartH)
	w.text(sr.Device + " " + sr.Metric)
	b.WriteString("</title>")
	n := len(sr.Samples)
	if n > 0 {
		lo, hi := sr.Samples[0].Value, sr.Samples[0].Value
		for _, s := range sr.Samples {
			lo, hi = min(lo, s.Value), max(hi, s.Value)
		}
		span := hi - lo
		b.WriteString(`<polyline fill="none" stroke="`)
		if sr.Grew {
			b.WriteString("#cf222e")
		} else {
			b.WriteString("#0969da")
		}
		b.WriteString(`" stroke-width="1.5" points="`)
		for i, s := range sr.Samples {
			x := float64(chartPad)
			if n > 1 {
				x += float64(i) * float64(chartW-2*chartPad) / float64(n-1)
			}
			y := float64(chartH) / 2 // a flat series is a line through the middle
			if span > 0 {
				y = float64(chartPad) + (hi-s.Value)/span*float64(chartH-2*chartPad)
			}
			if i > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(strconv.FormatFloat(x, 'f', 1, 64) + "," + strconv.FormatFloat(y, 'f', 1, 64))
		}
		b.WriteString(`"/>`)
	}
	b.WriteString("</svg>")
	w.raw(b.String())
}
