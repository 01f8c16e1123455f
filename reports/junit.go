package reports

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// JUnit layout (documented in SCHEMA.md, "junit.xml"). The document keeps
// within what both stock schemas allow — the Jenkins xUnit plugin's
// junit-10.xsd and the Ant JUnit schema — so every CI reporter loads it:
//
//   - <testsuites> carries no attributes (Ant's allows none);
//   - the first <testsuite> is the run itself ("agentlab"): run and device
//     facts as properties, one system-out line per device, no testcases;
//   - then one <testsuite> per scenario, named by the scenario, with its
//     verdict, attempts, tags and devices as properties, its named checks
//     with evidence and artifacts in system-out and earlier attempts in
//     system-err (Ant requires properties, system-out and system-err on
//     every suite);
//   - pass, flaky and fail scenarios have one <testcase> per named check
//     (classname is the scenario name with "/" as "."), a failed check
//     carrying <failure type="check">; a failure no check explains, and
//     every error, skipped and inconclusive scenario, is one testcase named
//     by the scenario: <failure type="fail">, <error type="lab-fault">,
//     <skipped>, <skipped message="inconclusive: …">. A lab fault is never
//     reported as a failed check;
//   - a testcase holds at most one child and nothing else (Ant allows no
//     system-out or properties inside a testcase); the first testcase of a
//     suite carries the scenario's wall time, the others 0, so reporters
//     that add testcase times get the scenario's.

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Hostname   string          `xml:"hostname,attr"`
	ID         int             `xml:"id,attr"`
	Package    string          `xml:"package,attr"`
	Properties junitProperties `xml:"properties"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  junitText       `xml:"system-out"`
	SystemErr  junitText       `xml:"system-err"`
}

type junitProperties struct {
	Props []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Failure   *junitProblem `xml:"failure,omitempty"`
}

// junitText is element text kept readable: CDATA, so line breaks stay line
// breaks instead of becoming character references.
type junitText struct {
	Text string `xml:",cdata"`
}

func text(s string) junitText { return junitText{Text: xmlSafe(s)} }

// xmlSafe replaces the characters XML 1.0 forbids (control characters
// such as ESC from a colourised log) with U+FFFD; encoding/xml does this for
// escaped text but not for CDATA.
func xmlSafe(s string) string {
	clean := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= utf8.RuneSelf || c < 0x20 && c != '\t' && c != '\n' && c != '\r' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if !xmlChar(r) {
			return '\uFFFD'
		}
		return r
	}, s)
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Body    string `xml:",cdata"`
}

// junitTimestamp is the Ant/Jenkins form: ISO 8601 without a zone (UTC).
const junitTimestamp = "2006-01-02T15:04:05"

func writeJUnit(w io.Writer, r *Run) error {
	return encodeJUnit(w, junitDoc(r))
}

// runSuite names the suite that describes the run itself. Scenario names
// always hold a "/" (area/name), so it never collides with one.
const runSuite = "agentlab"

// junitDoc lays r out as JUnit suites and testcases.
func junitDoc(r *Run) *junitSuites {
	doc := &junitSuites{}
	host := strings.TrimSpace(oneLine(r.Host))
	if host == "" {
		host = "localhost" // Ant's schema asks for a host name, and says which
	}
	doc.Suites = append(doc.Suites, junitRunSuite(r, host))
	devs := make(map[string]*Device, len(r.Devices))
	for i := range r.Devices {
		devs[r.Devices[i].Serial] = &r.Devices[i]
	}
	for i := range r.Scenarios {
		s := &r.Scenarios[i]
		suite := junitSuite{
			Name:       nonBlank(s.Name, "(unnamed scenario)"),
			ID:         len(doc.Suites),
			Package:    runSuite,
			Hostname:   host,
			Time:       seconds(s.DurationMs),
			Timestamp:  junitTime(scenarioStart(r, s)),
			Properties: scenarioProperties(r, s, devs),
			Cases:      junitTestcases(s),
			SystemOut:  text(systemOut(s)),
			SystemErr:  text(earlierAttempts(s)),
		}
		for _, c := range suite.Cases {
			switch {
			case c.Failure != nil:
				suite.Failures++
			case c.Error != nil:
				suite.Errors++
			case c.Skipped != nil:
				suite.Skipped++
			}
		}
		suite.Tests = len(suite.Cases)
		doc.Suites = append(doc.Suites, suite)
	}
	return doc
}

// junitRunSuite is the suite describing the run: its facts and devices.
func junitRunSuite(r *Run, host string) junitSuite {
	props := []junitProperty{
		{"runId", r.RunID},
		{"labVersion", r.LabVersion},
		{"configDigest", r.ConfigDigest},
		{"model", modelLine(r.Model)},
		{"selection", selectionLine(r.Selection)},
	}
	var out strings.Builder
	for i := range r.Devices {
		d := &r.Devices[i]
		p := "device." + d.Serial + "."
		props = append(props,
			junitProperty{p + "name", d.Name},
			junitProperty{p + "kind", string(d.Kind)},
			junitProperty{p + "model", d.Model},
			junitProperty{p + "apiLevel", strconv.Itoa(d.APILevel)},
			junitProperty{p + "abi", d.ABI},
			junitProperty{p + "rootMethod", d.RootMethod},
			junitProperty{p + "runtimeVersion", d.RuntimeVersion},
		)
		fmt.Fprintf(&out, "device %s (%s, %s, API %d, %s): ", d.Serial, d.Name, d.Kind, d.APILevel, d.ABI)
		if d.Quarantined() {
			props = append(props, junitProperty{p + "quarantineReason", oneLine(d.QuarantineReason)})
			out.WriteString("quarantined: " + oneLine(d.QuarantineReason) + "\n")
		} else {
			out.WriteString("healthy\n")
		}
	}
	s := r.Summary
	fmt.Fprintf(&out, "%s\n%s\n%s, %d lost to lab faults; %s\n", headline(s), countsLine(s),
		plural(s.Attempts, "attempt"), s.LabFaultAttempts, checksLine(s))
	return junitSuite{
		Name: runSuite, ID: 0, Package: runSuite, Hostname: host,
		Time:       seconds(max(0, r.FinishedAt.Sub(r.StartedAt).Milliseconds())),
		Timestamp:  junitTime(r.StartedAt),
		Properties: junitProperties{Props: props},
		SystemOut:  text(out.String()),
	}
}

// scenarioStart is when the scenario's first attempt started, else when
// the run did.
func scenarioStart(r *Run, s *Scenario) time.Time {
	if len(s.Attempts) > 0 && !s.Attempts[0].StartedAt.IsZero() {
		return s.Attempts[0].StartedAt
	}
	return r.StartedAt
}

// junitTime is the Ant/Jenkins timestamp: ISO 8601 in UTC without a zone
// (Ant's schema refuses one); a zero time is the zero time, not omitted,
// because Ant's schema requires the attribute.
func junitTime(t time.Time) string {
	return t.UTC().Format(junitTimestamp)
}

func nonBlank(s, fallback string) string {
	if strings.TrimSpace(s) == "" {
		return fallback
	}
	return s
}

// encodeJUnit writes doc exactly as encoding/xml's Encoder with a two-space
// indent would (TestJUnitEncoderMatchesEncodingXML holds it to that), in a
// fraction of the time: junit.xml of a nightly run is megabytes.
func encodeJUnit(out io.Writer, doc *junitSuites) error {
	w := bufio.NewWriterSize(out, 64<<10)
	w.WriteString(xml.Header)
	w.WriteString(`<testsuites>`)
	for i := range doc.Suites {
		s := &doc.Suites[i]
		w.WriteString("\n  <testsuite name=\"")
		xmlAttr(w, s.Name)
		fmt.Fprintf(w, `" tests="%d" failures="%d" errors="%d" skipped="%d" time="`, s.Tests, s.Failures, s.Errors, s.Skipped)
		xmlAttr(w, s.Time)
		w.WriteString(`" timestamp="`)
		xmlAttr(w, s.Timestamp)
		w.WriteString(`" hostname="`)
		xmlAttr(w, s.Hostname)
		fmt.Fprintf(w, `" id="%d" package="`, s.ID)
		xmlAttr(w, s.Package)
		w.WriteString(`">`)
		encodeJUnitProperties(w, &s.Properties, "    ")
		for j := range s.Cases {
			c := &s.Cases[j]
			w.WriteString("\n    <testcase name=\"")
			xmlAttr(w, c.Name)
			w.WriteString(`" classname="`)
			xmlAttr(w, c.Classname)
			w.WriteString(`" time="`)
			xmlAttr(w, c.Time)
			w.WriteString(`">`)
			children := c.Skipped != nil || c.Error != nil || c.Failure != nil
			if c.Skipped != nil {
				w.WriteString("\n      <skipped message=\"")
				xmlAttr(w, c.Skipped.Message)
				w.WriteString(`"></skipped>`)
			}
			encodeJUnitProblem(w, "error", c.Error)
			encodeJUnitProblem(w, "failure", c.Failure)
			if children {
				w.WriteString("\n    ")
			}
			w.WriteString("</testcase>")
		}
		encodeJUnitText(w, "system-out", s.SystemOut)
		encodeJUnitText(w, "system-err", s.SystemErr)
		w.WriteString("\n  </testsuite>")
	}
	if len(doc.Suites) > 0 {
		w.WriteString("\n")
	}
	w.WriteString("</testsuites>\n")
	return w.Flush()
}

func encodeJUnitProperties(w *bufio.Writer, p *junitProperties, indent string) {
	w.WriteString("\n" + indent + "<properties>")
	for _, prop := range p.Props {
		w.WriteString("\n" + indent + "  <property name=\"")
		xmlAttr(w, prop.Name)
		w.WriteString(`" value="`)
		xmlAttr(w, prop.Value)
		w.WriteString(`"></property>`)
	}
	if len(p.Props) > 0 {
		w.WriteString("\n" + indent)
	}
	w.WriteString("</properties>")
}

func encodeJUnitProblem(w *bufio.Writer, tag string, p *junitProblem) {
	if p == nil {
		return
	}
	w.WriteString("\n      <" + tag + ` message="`)
	xmlAttr(w, p.Message)
	w.WriteString(`" type="`)
	xmlAttr(w, p.Type)
	w.WriteString(`">`)
	xmlCDATA(w, p.Body)
	w.WriteString("</" + tag + ">")
}

func encodeJUnitText(w *bufio.Writer, tag string, t junitText) {
	w.WriteString("\n    <" + tag + ">")
	xmlCDATA(w, t.Text)
	w.WriteString("</" + tag + ">")
}

// xmlAttr escapes s as encoding/xml escapes attribute values.
func xmlAttr(w *bufio.Writer, s string) {
	last := 0
	for i := 0; i < len(s); {
		r, width := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch r {
		case '"':
			esc = "&#34;"
		case '\'':
			esc = "&#39;"
		case '&':
			esc = "&amp;"
		case '<':
			esc = "&lt;"
		case '>':
			esc = "&gt;"
		case '\t':
			esc = "&#x9;"
		case '\n':
			esc = "&#xA;"
		case '\r':
			esc = "&#xD;"
		default:
			if !xmlChar(r) || (r == utf8.RuneError && width == 1) {
				esc = "\uFFFD"
			}
		}
		if esc != "" {
			w.WriteString(s[last:i])
			w.WriteString(esc)
			last = i + width
		}
		i += width
	}
	w.WriteString(s[last:])
}

// xmlCDATA writes s as a CDATA section, splitting it around "]]>"; nothing
// for an empty s.
func xmlCDATA(w *bufio.Writer, s string) {
	if s == "" {
		return
	}
	w.WriteString("<![CDATA[")
	for {
		before, after, ok := strings.Cut(s, "]]>")
		if !ok {
			break
		}
		w.WriteString(before)
		w.WriteString("]]]]><![CDATA[>")
		s = after
	}
	w.WriteString(s)
	w.WriteString("]]>")
}

// xmlChar reports whether r may appear in an XML 1.0 document.
func xmlChar(r rune) bool {
	return r == 0x09 || r == 0x0A || r == 0x0D ||
		r >= 0x20 && r <= 0xD7FF || r >= 0xE000 && r <= 0xFFFD || r >= 0x10000 && r <= 0x10FFFF
}

// scenarioProperties are a scenario suite's properties: the run, the
// verdict and its facts, and the devices the deciding attempt ran on.
func scenarioProperties(r *Run, s *Scenario, devs map[string]*Device) junitProperties {
	props := []junitProperty{
		{"runId", r.RunID},
		{"verdict", string(s.Verdict)},
		{"attempts", strconv.Itoa(len(s.Attempts))},
	}
	if s.Verdict == VerdictFlaky {
		props = append(props, junitProperty{"flaky", "true"})
	}
	if s.File != "" {
		props = append(props, junitProperty{"file", s.File})
	}
	if len(s.Tags) > 0 {
		props = append(props, junitProperty{"tags", strings.Join(s.Tags, ",")})
	}
	if s.PersonTouches > 0 {
		props = append(props, junitProperty{"personTouches", strconv.Itoa(s.PersonTouches)})
	}
	if r := reasonOf(s); r != "" {
		props = append(props, junitProperty{"reason", r})
	}
	for i, serial := range s.Devices {
		p := "device." + strconv.Itoa(i+1) + "."
		props = append(props, junitProperty{p + "serial", serial})
		if d := devs[serial]; d != nil {
			props = append(props,
				junitProperty{p + "kind", string(d.Kind)},
				junitProperty{p + "model", d.Model},
				junitProperty{p + "apiLevel", strconv.Itoa(d.APILevel)},
				junitProperty{p + "abi", d.ABI},
				junitProperty{p + "runtimeVersion", d.RuntimeVersion},
			)
		}
	}
	return junitProperties{Props: props}
}

// junitTestcases are a scenario's testcases (see the layout above).
func junitTestcases(s *Scenario) []junitCase {
	class := junitClassname(s.Name)
	whole := junitCase{Name: nonBlank(s.Name, "(unnamed scenario)"), Classname: class}
	reason := reasonOf(s)
	var cases []junitCase
	switch s.Verdict {
	case VerdictPass, VerdictFlaky, VerdictFail:
		for _, c := range s.Checks {
			tc := junitCase{Name: nonBlank(c.Name, "(unnamed check)"), Classname: class}
			switch {
			case c.Skipped:
				tc.Skipped = &junitSkipped{Message: oneLine(c.Detail)}
			case !c.OK:
				tc.Failure = &junitProblem{Message: oneLine(c.Detail), Type: "check", Body: xmlSafe(checkBody(c))}
			}
			cases = append(cases, tc)
		}
		if s.Verdict == VerdictFail && len(s.FailedChecks()) == 0 {
			// A step failed or the attempt timed out: no check says so.
			whole.Failure = &junitProblem{Message: reason, Type: "fail", Body: xmlSafe(failureBody(s))}
			cases = append(cases, whole)
		}
		if len(cases) == 0 {
			cases = append(cases, whole) // a scenario without named checks still counts
		}
	case VerdictSkipped:
		whole.Skipped = &junitSkipped{Message: reason}
		cases = append(cases, whole)
	case VerdictInconclusive:
		whole.Skipped = &junitSkipped{Message: strings.TrimSpace("inconclusive: " + reason)}
		cases = append(cases, whole)
	default:
		whole.Error = &junitProblem{Message: reason, Type: "lab-fault", Body: xmlSafe(errorBody(s))}
		cases = append(cases, whole)
	}
	for i := range cases {
		cases[i].Time = "0.000"
	}
	cases[0].Time = seconds(s.DurationMs)
	return cases
}

// checkBody is a failed check's text: what was seen, the evidence and the
// upstream check it maps to, one per line.
func checkBody(c Check) string {
	var b strings.Builder
	b.WriteString(checkLine(c))
	b.WriteByte('\n')
	if c.Detail != "" && strings.ContainsAny(c.Detail, "\r\n") {
		b.WriteString(c.Detail)
		b.WriteByte('\n')
	}
	return b.String()
}

// junitClassname turns "third-party/revoke-closes" into
// "third-party.revoke-closes": reporters split classnames at dots into a
// package (the area) and a class (the scenario).
func junitClassname(name string) string {
	name = strings.Trim(name, "/")
	if name == "" {
		return runSuite
	}
	return strings.ReplaceAll(name, "/", ".")
}

func systemOut(s *Scenario) string {
	var b strings.Builder
	size := 160 + len(s.Reason)
	for _, c := range s.Checks {
		size += 32 + len(c.Name) + len(c.Detail) + len(c.Evidence) + len(c.Upstream)
	}
	for _, a := range s.Artifacts {
		size += 40 + len(a.Path) + len(a.Kind)
	}
	b.Grow(size)
	b.WriteString("verdict: " + string(s.Verdict) + "\n")
	if len(s.Devices) > 0 {
		b.WriteString("devices: " + strings.Join(s.Devices, ", ") + "\n")
	}
	b.WriteString("attempts: " + strconv.Itoa(len(s.Attempts)) + "\n")
	if r := reasonOf(s); r != "" {
		b.WriteString("reason: " + r + "\n")
	}
	b.WriteString("checks: " + strconv.Itoa(passedChecks(s.Checks)) + "/" + strconv.Itoa(len(s.Checks)) + " passed\n")
	for _, c := range s.Checks {
		writeCheckLine(&b, c)
		b.WriteByte('\n')
	}
	if len(s.Artifacts) > 0 {
		b.WriteString("artifacts:\n")
		for _, a := range s.Artifacts {
			b.WriteString("  " + a.Path + " (" + string(a.Kind) + ", " + plural64(a.Size, "byte") + ")\n")
		}
	}
	return b.String()
}

// earlierAttempts lists the attempts before the deciding one, with their
// failed checks: a flaky scenario's failure, a re-queued lab fault.
func earlierAttempts(s *Scenario) string {
	if len(s.Attempts) < 2 {
		return ""
	}
	var b strings.Builder
	for _, a := range s.Attempts[:len(s.Attempts)-1] {
		b.WriteString(attemptLine(a))
		b.WriteByte('\n')
		for _, ch := range a.Checks {
			if ch.Failed() {
				b.WriteString("  ")
				b.WriteString(checkLine(ch))
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

func failureBody(s *Scenario) string {
	var b strings.Builder
	for _, c := range s.FailedChecks() {
		b.WriteString(checkLine(c))
		b.WriteByte('\n')
	}
	if n := len(s.Attempts); n > 0 && s.Attempts[n-1].Error != "" {
		b.WriteString(oneLine(s.Attempts[n-1].Error))
		b.WriteByte('\n')
	}
	return b.String()
}

func errorBody(s *Scenario) string {
	var b strings.Builder
	for _, a := range s.Attempts {
		b.WriteString(attemptLine(a))
		b.WriteByte('\n')
	}
	return b.String()
}
