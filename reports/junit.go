package reports

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"path"
	"strconv"
	"strings"
	"unicode/utf8"
)

// JUnit layout (documented in SCHEMA.md, "junit.xml"):
//
//   - one <testsuite> per device, named by its serial, in serial order, each
//     with the device's facts as properties; scenarios that ran on no device
//     are in a last suite named "unassigned";
//   - one <testcase> per scenario (so JUnit counts equal scenario counts),
//     filed under its primary device; classname is the scenario file without
//     extension, slashes turned into dots;
//   - every named check is a line of the testcase's <system-out>;
//   - fail → <failure>, error → <error>, skipped and inconclusive →
//     <skipped message=…> (inconclusive messages start "inconclusive:");
//   - flaky passes, with the property flaky=true and the failed attempts in
//     <system-err>; any scenario with several attempts lists them there.

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string           `xml:"name,attr"`
	Tests      int              `xml:"tests,attr"`
	Failures   int              `xml:"failures,attr"`
	Errors     int              `xml:"errors,attr"`
	Skipped    int              `xml:"skipped,attr"`
	Time       string           `xml:"time,attr"`
	Timestamp  string           `xml:"timestamp,attr,omitempty"`
	Hostname   string           `xml:"hostname,attr,omitempty"`
	ID         int              `xml:"id,attr"`
	Package    string           `xml:"package,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Cases      []junitCase      `xml:"testcase"`
}

type junitProperties struct {
	Props []junitProperty `xml:"property"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string           `xml:"name,attr"`
	Classname  string           `xml:"classname,attr"`
	Time       string           `xml:"time,attr"`
	Properties *junitProperties `xml:"properties,omitempty"`
	Skipped    *junitSkipped    `xml:"skipped,omitempty"`
	Error      *junitProblem    `xml:"error,omitempty"`
	Failure    *junitProblem    `xml:"failure,omitempty"`
	SystemOut  *junitText       `xml:"system-out,omitempty"`
	SystemErr  *junitText       `xml:"system-err,omitempty"`
}

// junitText is element text kept readable: CDATA, so line breaks stay line
// breaks instead of becoming character references.
type junitText struct {
	Text string `xml:",cdata"`
}

func cdata(s string) *junitText {
	if s == "" {
		return nil
	}
	return &junitText{Text: xmlSafe(s)}
}

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

// junitDoc lays r out as JUnit suites and testcases.
func junitDoc(r *Run) *junitSuites {
	doc := &junitSuites{Name: "agentlab " + r.RunID}
	var totalMs int64
	for i, g := range groupByDevice(r) {
		suite := junitSuite{
			Name:     g.Serial,
			ID:       i,
			Package:  "agentlab",
			Hostname: r.Host,
		}
		if !r.StartedAt.IsZero() {
			suite.Timestamp = r.StartedAt.UTC().Format(junitTimestamp)
		}
		suite.Properties = deviceProperties(r, g.Device)
		var ms int64
		for _, s := range g.Scenarios {
			c := junitTestcase(s)
			suite.Cases = append(suite.Cases, c)
			ms += s.DurationMs
			switch s.Verdict {
			case VerdictPass, VerdictFlaky:
			case VerdictFail:
				suite.Failures++
			case VerdictSkipped, VerdictInconclusive:
				suite.Skipped++
			default:
				suite.Errors++
			}
		}
		suite.Tests = len(suite.Cases)
		suite.Time = seconds(ms)
		totalMs += ms
		doc.Tests += suite.Tests
		doc.Failures += suite.Failures
		doc.Errors += suite.Errors
		doc.Suites = append(doc.Suites, suite)
	}
	doc.Time = seconds(totalMs)
	return doc
}

// encodeJUnit writes doc exactly as encoding/xml's Encoder with a two-space
// indent would (TestJUnitEncoderMatchesEncodingXML holds it to that), in a
// fraction of the time: junit.xml of a nightly run is megabytes.
func encodeJUnit(out io.Writer, doc *junitSuites) error {
	w := bufio.NewWriterSize(out, 64<<10)
	w.WriteString(xml.Header)
	w.WriteString(`<testsuites name="`)
	xmlAttr(w, doc.Name)
	fmt.Fprintf(w, `" tests="%d" failures="%d" errors="%d" time="`, doc.Tests, doc.Failures, doc.Errors)
	xmlAttr(w, doc.Time)
	w.WriteString(`">`)
	for i := range doc.Suites {
		s := &doc.Suites[i]
		w.WriteString("\n  <testsuite name=\"")
		xmlAttr(w, s.Name)
		fmt.Fprintf(w, `" tests="%d" failures="%d" errors="%d" skipped="%d" time="`, s.Tests, s.Failures, s.Errors, s.Skipped)
		xmlAttr(w, s.Time)
		if s.Timestamp != "" {
			w.WriteString(`" timestamp="`)
			xmlAttr(w, s.Timestamp)
		}
		if s.Hostname != "" {
			w.WriteString(`" hostname="`)
			xmlAttr(w, s.Hostname)
		}
		fmt.Fprintf(w, `" id="%d" package="`, s.ID)
		xmlAttr(w, s.Package)
		w.WriteString(`">`)
		encodeJUnitProperties(w, s.Properties, "    ")
		for j := range s.Cases {
			c := &s.Cases[j]
			w.WriteString("\n    <testcase name=\"")
			xmlAttr(w, c.Name)
			w.WriteString(`" classname="`)
			xmlAttr(w, c.Classname)
			w.WriteString(`" time="`)
			xmlAttr(w, c.Time)
			w.WriteString(`">`)
			children := c.Properties != nil || c.Skipped != nil || c.Error != nil || c.Failure != nil || c.SystemOut != nil || c.SystemErr != nil
			encodeJUnitProperties(w, c.Properties, "      ")
			if c.Skipped != nil {
				w.WriteString("\n      <skipped message=\"")
				xmlAttr(w, c.Skipped.Message)
				w.WriteString(`"></skipped>`)
			}
			encodeJUnitProblem(w, "error", c.Error)
			encodeJUnitProblem(w, "failure", c.Failure)
			encodeJUnitText(w, "system-out", c.SystemOut)
			encodeJUnitText(w, "system-err", c.SystemErr)
			if children {
				w.WriteString("\n    ")
			}
			w.WriteString("</testcase>")
		}
		if s.Properties != nil || len(s.Cases) > 0 {
			w.WriteString("\n  ")
		}
		w.WriteString("</testsuite>")
	}
	if len(doc.Suites) > 0 {
		w.WriteString("\n")
	}
	w.WriteString("</testsuites>\n")
	return w.Flush()
}

func encodeJUnitProperties(w *bufio.Writer, p *junitProperties, indent string) {
	if p == nil {
		return
	}
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

func encodeJUnitText(w *bufio.Writer, tag string, t *junitText) {
	if t == nil {
		return
	}
	w.WriteString("\n      <" + tag + ">")
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

func deviceProperties(r *Run, d *Device) *junitProperties {
	props := []junitProperty{
		{"runId", r.RunID},
		{"labVersion", r.LabVersion},
		{"model", modelLine(r.Model)},
	}
	if d != nil {
		props = append(props,
			junitProperty{"device.name", d.Name},
			junitProperty{"device.kind", string(d.Kind)},
			junitProperty{"device.model", d.Model},
			junitProperty{"device.apiLevel", strconv.Itoa(d.APILevel)},
			junitProperty{"device.abi", d.ABI},
			junitProperty{"device.rootMethod", d.RootMethod},
			junitProperty{"device.runtimeVersion", d.RuntimeVersion},
		)
		if d.Quarantined() {
			props = append(props, junitProperty{"device.quarantineReason", oneLine(d.QuarantineReason)})
		}
	}
	return &junitProperties{Props: props}
}

func junitTestcase(s *Scenario) junitCase {
	c := junitCase{
		Name:      s.Name,
		Classname: junitClassname(s.File),
		Time:      seconds(s.DurationMs),
	}
	reason := reasonOf(s)
	switch s.Verdict {
	case VerdictPass, VerdictFlaky:
	case VerdictFail:
		c.Failure = &junitProblem{Message: reason, Type: "fail", Body: xmlSafe(failureBody(s))}
	case VerdictSkipped:
		c.Skipped = &junitSkipped{Message: reason}
	case VerdictInconclusive:
		c.Skipped = &junitSkipped{Message: strings.TrimSpace("inconclusive: " + reason)}
	default:
		c.Error = &junitProblem{Message: reason, Type: "lab-fault", Body: xmlSafe(errorBody(s))}
	}
	var props []junitProperty
	props = append(props, junitProperty{"verdict", string(s.Verdict)})
	if s.Verdict == VerdictFlaky {
		props = append(props, junitProperty{"flaky", "true"})
	}
	props = append(props, junitProperty{"attempts", strconv.Itoa(len(s.Attempts))})
	if len(s.Tags) > 0 {
		props = append(props, junitProperty{"tags", strings.Join(s.Tags, ",")})
	}
	if s.PersonTouches > 0 {
		props = append(props, junitProperty{"personTouches", strconv.Itoa(s.PersonTouches)})
	}
	c.Properties = &junitProperties{Props: props}
	c.SystemOut = cdata(systemOut(s))
	if len(s.Attempts) > 1 {
		var b strings.Builder
		for _, a := range s.Attempts[:len(s.Attempts)-1] {
			b.WriteString(attemptLine(a))
			b.WriteByte('\n')
			for _, ch := range a.Checks {
				if !ch.OK {
					b.WriteString("  ")
					b.WriteString(checkLine(ch))
					b.WriteByte('\n')
				}
			}
		}
		c.SystemErr = cdata(b.String())
	}
	return c
}

// junitClassname turns "third_party/revoke.yaml" into "third_party.revoke".
func junitClassname(file string) string {
	if file == "" {
		return "agentlab"
	}
	file = strings.TrimSuffix(file, path.Ext(file))
	return strings.ReplaceAll(strings.Trim(file, "/"), "/", ".")
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
			b.WriteString("  " + a.Path + " (" + string(a.Kind) + ", " + strconv.FormatInt(a.Size, 10) + " bytes)\n")
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
