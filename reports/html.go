package reports

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// report.html is one file: inline CSS, an inline SVG timeline, <details>
// sections and CSS-only verdict filters, so it reads the same with
// JavaScript off; the little script only adds "expand/collapse all".
//
// The page is written by hand rather than with html/template, which is an
// order of magnitude slower on a nightly run's thousands of scenarios; every
// piece of run data goes through text, attr or href below, which escape it.

//go:embed report.css
var reportCSS string

//go:embed report.js
var reportJS string

// htmlWriter writes HTML with escaping. Write errors are sticky in the
// bufio.Writer and reported by Flush.
type htmlWriter struct {
	*bufio.Writer
}

// raw writes trusted markup.
func (w htmlWriter) raw(s string) { w.WriteString(s) }

// rawf writes trusted markup with formatted values that need no escaping
// (numbers, identifiers made here).
func (w htmlWriter) rawf(format string, args ...any) { fmt.Fprintf(w, format, args...) }

// text writes s escaped for element content and quoted attribute values.
func (w htmlWriter) text(s string) {
	last := 0
	for i := 0; i < len(s); i++ {
		var esc string
		switch s[i] {
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case 0:
			esc = "\uFFFD"
		default:
			continue
		}
		w.WriteString(s[last:i])
		w.WriteString(esc)
		last = i + 1
	}
	w.WriteString(s[last:])
}

// href writes a relative link target: percent-encoded, and never a scheme
// ("javascript:x" becomes "./javascript:x").
func (w htmlWriter) href(p string) {
	w.text((&url.URL{Path: p}).String())
}

// tagged writes <tag class="cls">text</tag>.
func (w htmlWriter) tagged(tag, cls, s string) {
	w.WriteByte('<')
	w.WriteString(tag)
	if cls != "" {
		w.WriteString(` class="`)
		w.WriteString(cls)
		w.WriteByte('"')
	}
	w.WriteByte('>')
	w.text(s)
	w.WriteString("</")
	w.WriteString(tag)
	w.WriteByte('>')
}

func (w htmlWriter) badge(v Verdict) {
	w.raw(`<span class="badge v-`)
	w.text(string(v))
	w.raw(`">`)
	w.text(string(v))
	w.raw(`</span>`)
}

func (w htmlWriter) fact(name, value string) {
	w.raw("<dt>" + name + "</dt><dd>")
	w.text(value)
	w.raw("</dd>\n")
}

func writeHTML(out io.Writer, r *Run) error { return writeHTMLWith(out, r, nil) }

// writeHTMLWith is writeHTML with extra sections after the scenarios.
func writeHTMLWith(out io.Writer, r *Run, extra func(htmlWriter)) error {
	w := htmlWriter{bufio.NewWriterSize(out, 64<<10)}
	s := r.Summary
	ids := make(map[*Scenario]string, len(r.Scenarios))
	for i := range r.Scenarios {
		ids[&r.Scenarios[i]] = "sc-" + strconv.Itoa(i+1)
	}

	w.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
	w.raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n")
	w.raw(`<meta name="generator" content="agentlab reports, schema `)
	w.text(r.SchemaVersion)
	w.raw("\">\n<title>agentlab run ")
	w.text(r.RunID)
	w.raw(": ")
	w.text(headline(s))
	w.raw("</title>\n<style>\n" + reportCSS + "</style>\n</head>\n<body>\n")

	// Header: headline, facts, counts.
	w.raw("<header>\n<h1>agentlab run <code>")
	w.text(r.RunID)
	w.rawf("</code></h1>\n<p class=\"headline exit-%d\">", s.ExitCode)
	w.text(headline(s))
	w.rawf(" (exit code %d)</p>\n<dl class=\"facts\">\n", s.ExitCode)
	w.fact("started", stamp(r.StartedAt))
	finished := stamp(r.FinishedAt)
	if !r.StartedAt.IsZero() && !r.FinishedAt.IsZero() {
		finished += " (" + humanDuration(r.FinishedAt.Sub(r.StartedAt)) + ")"
	}
	w.fact("finished", finished)
	w.fact("lab", r.LabVersion)
	w.fact("host", r.Host)
	w.raw("<dt>config</dt><dd><code>")
	w.text(r.ConfigDigest)
	w.raw("</code></dd>\n")
	w.fact("model", modelLine(r.Model))
	w.fact("selection", selectionLine(r.Selection))
	w.fact("attempts", fmt.Sprintf("%d (%d lost to lab faults)", s.Attempts, s.LabFaultAttempts))
	w.fact("checks", checksLine(s))
	w.rawf("</dl>\n<ul class=\"counts\">\n<li>%s</li>\n", plural(s.Total, "scenario"))
	for _, v := range verdictOrder {
		w.raw("<li>")
		w.badge(v)
		w.rawf(" %d</li>\n", s.Count(v))
	}
	w.raw("</ul>\n</header>\n\n")

	writeHTMLDevices(w, r)
	writeHTMLSuites(w, r)
	writeHTMLTimeline(w, r, ids)
	writeHTMLScenarios(w, r, ids)
	writeHTMLSoak(w, r)
	if extra != nil {
		extra(w)
	}

	w.raw("<footer>results schema ")
	w.text(r.SchemaVersion)
	w.raw(" · run ")
	w.text(r.RunID)
	w.raw("</footer>\n<script>\n" + reportJS + "</script>\n</body>\n</html>\n")
	return w.Flush()
}

// writeHTMLSuites is the per-suite count of upstream checks ("§10.7
// real_supervisor.py: 21/21"), so a reader sees at a glance how much of
// each upstream suite the run covered and passed.
func writeHTMLSuites(w htmlWriter, r *Run) {
	suites := SuiteCounts(r)
	if len(suites) == 0 {
		return
	}
	w.raw("<section id=\"suites\">\n<h2>Upstream suites</h2>\n<table>\n<thead><tr><th>suite</th><th>passed</th><th>failed</th><th>skipped</th></tr></thead>\n<tbody>\n")
	for _, s := range suites {
		w.raw("<tr>")
		w.tagged("td", "mono", s.Suite)
		w.tagged("td", "num", fmt.Sprintf("%d/%d", s.Passed, s.Checks))
		w.tagged("td", "num", strconv.Itoa(s.Failed))
		w.tagged("td", "num", strconv.Itoa(s.Skipped))
		w.raw("</tr>\n")
	}
	w.raw("</tbody>\n</table>\n</section>\n\n")
}

func writeHTMLDevices(w htmlWriter, r *Run) {
	groups := groupByDevice(r)
	w.raw("<section id=\"devices\">\n<h2>Devices</h2>\n<table>\n<thead><tr><th>device</th><th>kind</th><th>model</th><th>API</th><th>ABI</th><th>root</th><th>runtime</th>")
	for _, v := range verdictOrder {
		w.raw("<th>" + string(v) + "</th>")
	}
	w.raw("<th>state</th></tr></thead>\n<tbody>\n")
	for _, g := range groups {
		d := g.Device
		if d == nil {
			d = &Device{}
		}
		if d.Quarantined() {
			w.raw(`<tr class="quarantined">`)
		} else {
			w.raw("<tr>")
		}
		w.tagged("td", "mono", deviceTitle(g))
		w.tagged("td", "", string(d.Kind))
		w.tagged("td", "", d.Model)
		w.tagged("td", "num", apiLevel(d.APILevel))
		w.tagged("td", "", d.ABI)
		w.tagged("td", "", d.RootMethod)
		w.tagged("td", "", d.RuntimeVersion)
		for _, v := range verdictOrder {
			w.rawf(`<td class="num">%d</td>`, g.Counts[v])
		}
		w.tagged("td", "", healthWord(g.Device))
		w.raw("</tr>\n")
	}
	w.raw("</tbody>\n</table>\n")
	for i := range r.Devices {
		d := &r.Devices[i]
		if len(d.Health) == 0 {
			continue
		}
		w.raw(`<details class="health"><summary>Health history of `)
		w.text(d.Serial)
		w.rawf(" (%d)</summary>\n<ul>\n", len(d.Health))
		for _, h := range d.Health {
			line := stamp(h.At) + ": " + h.State
			if h.Detail != "" {
				line += ": " + h.Detail
			}
			w.tagged("li", "", line)
			w.raw("\n")
		}
		w.raw("</ul>\n</details>\n")
	}
}

// Timeline geometry, in SVG user units.
const (
	tlWidth      = 1000
	tlLabelWidth = 170
	tlRowHeight  = 26
	tlAxisHeight = 22
	tlTicks      = 5
)

var timelineLegend = `<p class="legend"><span><span class="swatch" style="background:var(--lease)"></span>lease</span><span><span class="swatch" style="background:var(--provision)"></span>provisioning</span><span><span class="swatch" style="background:var(--recovery)"></span>recovery</span><span><span class="swatch" style="background:var(--quarantine)"></span>quarantine</span><span><span class="swatch" style="background:var(--pass)"></span>scenario pass</span><span><span class="swatch" style="background:var(--fail)"></span>fail</span><span><span class="swatch" style="background:var(--flaky)"></span>flaky</span><span><span class="swatch" style="background:var(--error)"></span>error</span><span><span class="swatch" style="background:var(--inconclusive)"></span>inconclusive</span></p>`

// writeHTMLTimeline draws one row per device: leases as a pale band, other
// events as bars inside it, coloured by kind or verdict, each with a
// tooltip; scenario bars link to the scenario's section.
func writeHTMLTimeline(w htmlWriter, r *Run, ids map[*Scenario]string) {
	t0, t1 := r.StartedAt, r.FinishedAt
	for i := range r.Devices {
		for _, e := range r.Devices[i].Timeline {
			if t0.IsZero() || e.Start.Before(t0) {
				t0 = e.Start
			}
			end := e.End
			if end.IsZero() {
				end = e.Start
			}
			if end.After(t1) {
				t1 = end
			}
		}
	}
	span := t1.Sub(t0)
	if span <= 0 {
		span = time.Second
	}
	plot := tlWidth - tlLabelWidth - 10
	x := func(t time.Time) int {
		return tlLabelWidth + int(float64(plot)*float64(t.Sub(t0))/float64(span))
	}
	byName := make(map[string]string, len(r.Scenarios))
	for i := range r.Scenarios {
		byName[r.Scenarios[i].Name] = ids[&r.Scenarios[i]]
	}
	height := tlAxisHeight + len(r.Devices)*tlRowHeight + 4

	w.raw("<h3>Timeline</h3>\n" + timelineLegend + "\n")
	w.rawf(`<svg class="timeline" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" role="img" aria-label="Device timeline">`+"\n", tlWidth, height)
	for i := 0; i <= tlTicks; i++ {
		at := t0.Add(span * time.Duration(i) / tlTicks)
		tx := x(at)
		anchor := "middle" // the outer labels stay inside the picture
		switch i {
		case 0:
			anchor = "start"
		case tlTicks:
			anchor = "end"
		}
		w.rawf(`<line class="tick" x1="%d" y1="14" x2="%d" y2="%d"></line><text x="%d" y="11" text-anchor="%s">%s</text>`+"\n",
			tx, tx, height, tx, anchor, at.UTC().Format("15:04:05"))
	}
	for i := range r.Devices {
		d := &r.Devices[i]
		y := tlAxisHeight + i*tlRowHeight
		w.rawf(`<g class="device-row"><text x="4" y="%d">`, y+tlRowHeight/2+4)
		w.text(d.Serial)
		w.raw("</text>\n")
		for _, e := range d.Timeline {
			bx, bw := x(e.Start), 0
			if e.End.IsZero() {
				bx, bw = bx-1, 3
			} else {
				bw = max(x(e.End)-bx, 2)
			}
			by, bh := y+5, tlRowHeight-10
			if e.Kind == EventLease {
				by, bh = y+1, tlRowHeight-2
			}
			href := ""
			if e.Kind == EventScenario {
				href = byName[e.Scenario]
			}
			if href != "" {
				w.raw(`<a href="#` + href + `">`)
			}
			w.raw(`<rect class="ev ev-`)
			w.text(string(e.Kind))
			if e.Verdict != "" {
				w.raw(" v-")
				w.text(string(e.Verdict))
			}
			w.rawf(`" x="%d" y="%d" width="%d" height="%d"><title>`, bx, by, bw, bh)
			w.text(eventTitle(e))
			w.raw("</title></rect>")
			if href != "" {
				w.raw("</a>")
			}
			w.raw("\n")
		}
		w.raw("</g>\n")
	}
	w.raw("</svg>\n</section>\n\n")
}

func eventTitle(e Event) string {
	s := string(e.Kind) + ": " + e.Label
	if e.Scenario != "" {
		s += fmt.Sprintf(" (%s, attempt %d)", e.Scenario, e.Attempt)
	}
	if e.Verdict != "" {
		s += " → " + string(e.Verdict)
	}
	s += "\n" + stamp(e.Start)
	if !e.End.IsZero() {
		s += " – " + stamp(e.End) + " (" + humanDuration(e.End.Sub(e.Start)) + ")"
	}
	if e.Detail != "" {
		s += "\n" + e.Detail
	}
	return s
}

func writeHTMLScenarios(w htmlWriter, r *Run, ids map[*Scenario]string) {
	s := r.Summary
	w.raw("<section id=\"scenarios\">\n<h2>Scenarios</h2>\n<form class=\"filters\" aria-label=\"Filter by verdict\">\n")
	for _, v := range verdictOrder {
		w.rawf(`<label><input type="checkbox" id="f-%s" checked> %s (%d)</label>`+"\n", v, v, s.Count(v))
	}
	w.raw("<button type=\"button\" id=\"expand-all\" hidden>expand all</button>\n<button type=\"button\" id=\"collapse-all\" hidden>collapse all</button>\n</form>\n")
	for _, sc := range bySeverity(r) {
		writeHTMLScenario(w, sc, ids[sc])
	}
	w.raw("</section>\n")
}

func writeHTMLScenario(w htmlWriter, sc *Scenario, id string) {
	w.raw(`<details class="sc v-`)
	w.text(string(sc.Verdict))
	w.raw(`" id="` + id + `" data-verdict="`)
	w.text(string(sc.Verdict))
	w.raw(`"`)
	if sc.Verdict != VerdictPass && sc.Verdict != VerdictSkipped {
		w.raw(" open")
	}
	w.raw(">\n<summary>")
	w.badge(sc.Verdict)
	w.raw(" ")
	w.text(sc.Name)
	w.raw(`<span class="meta">`)
	if d := sc.PrimaryDevice(); d != "" {
		w.text(d)
		w.raw(" · ")
	}
	w.rawf("%s · %s</span></summary>\n", plural(len(sc.Attempts), "attempt"), humanDuration(sc.Duration()))
	if reason := reasonOf(sc); reason != "" {
		w.tagged("p", "reason", reason)
		w.raw("\n")
	}
	w.raw("<dl class=\"facts\">\n<dt>file</dt><dd><code>")
	w.text(sc.File)
	w.raw("</code></dd>\n")
	if len(sc.Tags) > 0 {
		w.fact("tags", strings.Join(sc.Tags, ", "))
	}
	if len(sc.Devices) > 0 {
		w.fact("devices", strings.Join(sc.Devices, ", "))
	}
	if sc.PersonTouches > 0 {
		w.fact("person touches", strconv.Itoa(sc.PersonTouches))
	}
	w.raw("</dl>\n")

	if len(sc.Checks) > 0 {
		w.raw("<table class=\"checks\">\n<thead><tr><th></th><th>check</th><th>detail</th><th>evidence</th><th>upstream</th></tr></thead>\n<tbody>\n")
		for _, c := range sc.Checks {
			switch {
			case c.OK:
				w.raw(`<tr><td class="ok">PASS</td>`)
			case c.Skipped:
				w.raw(`<tr><td class="skip">SKIP</td>`)
			default:
				w.raw(`<tr class="bad"><td class="notok">FAIL</td>`)
			}
			w.tagged("td", "mono", c.Name)
			w.tagged("td", "", c.Detail)
			w.raw("<td>")
			w.evidence(c)
			w.raw("</td>")
			w.tagged("td", "mono", c.Upstream)
			w.raw("</tr>\n")
		}
		w.raw("</tbody>\n</table>\n")
	} else {
		w.raw("<p>No named checks.</p>\n")
	}

	if len(sc.Attempts) > 0 {
		w.raw("<h4>Attempts</h4>\n<ol class=\"attempts\">\n")
		for i := range sc.Attempts {
			a := &sc.Attempts[i]
			w.raw(`<li class="v-`)
			w.text(string(a.Verdict))
			w.raw(`">`)
			w.badge(a.Verdict)
			if a.LabFault {
				w.raw(" <strong>lab fault</strong>")
			}
			w.raw(` on <span class="mono">`)
			w.text(a.Device)
			w.raw("</span>, ")
			w.text(stamp(a.StartedAt) + " – " + stamp(a.FinishedAt))
			if a.Error != "" {
				w.raw(": ")
				w.text(a.Error)
			}
			first := true
			for _, c := range a.Checks {
				if !c.Failed() {
					continue
				}
				if first {
					w.raw("\n<ul>\n")
					first = false
				}
				w.raw(`<li><span class="mono">`)
				w.text(c.Name)
				w.raw("</span>")
				if c.Detail != "" {
					w.raw(": ")
					w.text(c.Detail)
				}
				if c.Evidence != "" {
					w.raw(" (")
					w.evidence(c)
					w.raw(")")
				}
				w.raw("</li>\n")
			}
			if !first {
				w.raw("</ul>")
			}
			if len(a.Artifacts) > 0 {
				w.raw("\n<ul>\n")
				for _, art := range a.Artifacts {
					w.raw("<li>")
					w.artifactLink(art)
					w.rawf(" (%s, %s)</li>\n", htmlSafeWord(string(art.Kind)), plural64(art.Size, "byte"))
				}
				w.raw("</ul>")
			}
			w.raw("\n</li>\n")
		}
		w.raw("</ol>\n")
	}

	if len(sc.Artifacts) > 0 {
		w.raw("<h4>Artifacts</h4>\n<ul class=\"artifacts\">\n")
		for _, art := range sc.Artifacts {
			w.raw("<li>")
			w.artifactLink(art)
			w.rawf(" (%s, %s, sha256 <code>%s</code>)</li>\n", htmlSafeWord(string(art.Kind)), plural64(art.Size, "byte"), htmlSafeWord(art.SHA256))
		}
		w.raw("</ul>\n")
	}
	w.raw("</details>\n")
}

// evidence writes a check's evidence, as a link when it names an artifact.
func (w htmlWriter) evidence(c Check) {
	if p, ok := c.EvidenceArtifact(); ok {
		w.artifactLink(Artifact{Path: p})
		return
	}
	w.text(c.Evidence)
}

func (w htmlWriter) artifactLink(a Artifact) {
	w.raw(`<a href="`)
	w.href(a.Path)
	w.raw(`">`)
	w.text(a.Path)
	w.raw("</a>")
}

// htmlSafeWord escapes s for use inside rawf, where values are not escaped
// otherwise.
func htmlSafeWord(s string) string {
	if !strings.ContainsAny(s, `&<>"'`+"\x00") {
		return s
	}
	var b strings.Builder
	bw := bufio.NewWriter(&b)
	htmlWriter{bw}.text(s)
	bw.Flush()
	return b.String()
}
