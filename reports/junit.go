package reports

import (
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
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\t' || r == '\n' || r == '\r':
			return r
		case r < 0x20, r >= 0xD800 && r <= 0xDFFF, r == 0xFFFE, r == 0xFFFF, r == utf8.RuneError:
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
	doc := junitSuites{Name: "agentlab " + r.RunID}
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
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	if err := enc.Close(); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
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
	fmt.Fprintf(&b, "verdict: %s\n", s.Verdict)
	if len(s.Devices) > 0 {
		fmt.Fprintf(&b, "devices: %s\n", strings.Join(s.Devices, ", "))
	}
	fmt.Fprintf(&b, "attempts: %d\n", len(s.Attempts))
	if r := reasonOf(s); r != "" {
		fmt.Fprintf(&b, "reason: %s\n", r)
	}
	fmt.Fprintf(&b, "checks: %d/%d passed\n", passedChecks(s.Checks), len(s.Checks))
	for _, c := range s.Checks {
		b.WriteString(checkLine(c))
		b.WriteByte('\n')
	}
	if len(s.Artifacts) > 0 {
		b.WriteString("artifacts:\n")
		for _, a := range s.Artifacts {
			fmt.Fprintf(&b, "  %s (%s, %d bytes)\n", a.Path, a.Kind, a.Size)
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
