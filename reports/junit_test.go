package reports

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentoslab/agentlab/reports/internal/xsd"
)

const junitXSD = "testdata/junit.xsd"

func junitSchema(t testing.TB) *xsd.Schema {
	t.Helper()
	f, err := os.Open(junitXSD)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := xsd.Parse(f)
	if err != nil {
		t.Fatalf("parse %s: %v", junitXSD, err)
	}
	return s
}

// hostileRun is the sample with text that XML must escape or cannot hold.
func hostileRun() *Run {
	r := sampleRun()
	r.Host = `lab "1" <&>`
	s := &r.Scenarios[0]
	s.Reason = "ANSI \x1b[31mred\x1b[0m and NUL \x00 and ]]> end of CDATA"
	s.Checks[4].Detail = "line one\nline two ]]> <tag> & \x07"
	r.Scenarios[1].Name = "bad \xff utf-8 \uFFFE and\ttab\r\nnewline 'q'"
	r.Scenarios[1].Tags = []string{"a\x01b"}
	r.Devices[0].QuarantineReason = "\x00 nul"
	return r
}

// TestJUnitMatchesXSD validates junit.xml of the sample run, of a run with
// hostile text and of an empty run against the checked-in JUnit schema.
func TestJUnitMatchesXSD(t *testing.T) {
	t.Parallel()
	schema := junitSchema(t)
	runs := map[string]*Run{
		"sample":  sampleRun(),
		"hostile": hostileRun(),
		"empty":   {RunID: "empty", Model: Model{Kind: ModelStub}},
	}
	for name, r := range runs {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			doc := renderT(t, r, FormatJUnit)
			if err := schema.Validate(bytes.NewReader(doc)); err != nil {
				t.Fatalf("junit.xml does not satisfy %s: %v", junitXSD, err)
			}
		})
	}
	// The schema is not a rubber stamp: a document it must refuse.
	bad := `<testsuites><testsuite name="x" tests="one"><testcase/></testsuite></testsuites>`
	if err := schema.Validate(strings.NewReader(bad)); err == nil {
		t.Fatal("the JUnit schema accepted tests=\"one\" and a testcase without a name")
	}
}

// TestJUnitEncoderMatchesEncodingXML holds the hand-written encoder to the
// bytes encoding/xml produces for the same document.
func TestJUnitEncoderMatchesEncodingXML(t *testing.T) {
	t.Parallel()
	runs := map[string]*Run{
		"sample":  sampleRun(),
		"hostile": hostileRun(),
		"empty":   {RunID: "e", Model: Model{Kind: ModelStub}},
		"big":     bigRun(300),
	}
	runs["no devices"] = sampleRun()
	runs["no devices"].Devices = nil
	for name, r := range runs {
		doc := junitDoc(prepare(r))
		var fast, std bytes.Buffer
		if err := encodeJUnit(&fast, doc); err != nil {
			t.Fatal(err)
		}
		std.WriteString(xml.Header)
		enc := xml.NewEncoder(&std)
		enc.Indent("", "  ")
		if err := enc.Encode(doc); err != nil {
			t.Fatal(err)
		}
		enc.Close()
		std.WriteString("\n")
		if !bytes.Equal(fast.Bytes(), std.Bytes()) {
			t.Errorf("%s: hand-written junit.xml differs from encoding/xml:\n%s", name, firstDiff(std.Bytes(), fast.Bytes()))
		}
	}
}

// TestJUnitXmllint validates the same documents with libxml2's xmllint,
// an independent XSD implementation, when it is installed (Debian package
// libxml2-utils); otherwise it skips.
func TestJUnitXmllint(t *testing.T) {
	t.Parallel()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils); the Go validator in TestJUnitMatchesXSD still runs")
	}
	dir := t.TempDir()
	for name, r := range map[string]*Run{"sample": sampleRun(), "hostile": hostileRun()} {
		path := filepath.Join(dir, name+".xml")
		if err := os.WriteFile(path, renderT(t, r, FormatJUnit), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command(xmllint, "--noout", "--schema", junitXSD, path).CombinedOutput()
		if err != nil {
			t.Errorf("xmllint %s: %v\n%s", name, err, out)
		}
	}
}

// parsedCase is a testcase as a CI system reads it back.
type parsedCase struct {
	Suite      string
	Name       string          `xml:"name,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Skipped    *junitSkipped   `xml:"skipped"`
	Failure    *parsedText     `xml:"failure"`
	Error      *parsedText     `xml:"error"`
	SystemOut  string          `xml:"system-out"`
	SystemErr  string          `xml:"system-err"`
}

type parsedText struct {
	Text string `xml:",chardata"`
}

func (c *parsedCase) prop(name string) string {
	for _, p := range c.Properties {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

// TestJUnitContent checks the mapping a CI system relies on: one testcase
// per scenario in per-device suites, the verdict elements, flaky and
// re-queued attempts in system-err, every named check in system-out.
func TestJUnitContent(t *testing.T) {
	t.Parallel()
	var parsed struct {
		Tests  int `xml:"tests,attr"`
		Suites []struct {
			Name  string       `xml:"name,attr"`
			Cases []parsedCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(renderT(t, sampleRun(), FormatJUnit), &parsed); err != nil {
		t.Fatal(err)
	}
	var suites []string
	cases := map[string]*parsedCase{}
	for _, s := range parsed.Suites {
		suites = append(suites, s.Name)
		for i := range s.Cases {
			c := &s.Cases[i]
			c.Suite = s.Name
			cases[c.Name] = c
		}
	}
	if got, want := strings.Join(suites, ","), "R58M12345,emulator-5554,vd-1,unassigned"; got != want {
		t.Errorf("suites = %s, want %s", got, want)
	}
	if n := len(sampleRun().Scenarios); len(cases) != n || parsed.Tests != n {
		t.Errorf("%d testcases, tests=%d; want one per scenario (%d)", len(cases), parsed.Tests, n)
	}

	c := cases["third-party/revoke-closes"]
	if c.Suite != "emulator-5554" || c.Failure == nil || !strings.Contains(c.Failure.Text, "[FAIL] tasksCancelled") {
		t.Errorf("fail: suite %s, failure %+v", c.Suite, c.Failure)
	}
	for _, ch := range sampleRun().Scenarios[0].Checks {
		if !strings.Contains(c.SystemOut, "] "+ch.Name) {
			t.Errorf("fail: system-out lacks check %s", ch.Name)
		}
	}
	c = cases["ext/plugin-death"]
	if c.prop("flaky") != "true" || c.Skipped != nil || c.Failure != nil || c.Error != nil ||
		!strings.Contains(c.SystemErr, "attempt 1 on vd-1: fail; failed checks: reconnected") {
		t.Errorf("flaky: passes with flaky=true and the failed attempt in system-err; got %+v", c)
	}
	c = cases["sms/injection"]
	if c.Suite != "emulator-5554" || c.Failure != nil || c.Error != nil ||
		!strings.Contains(c.SystemErr, "attempt 1 on R58M12345: error (lab fault)") {
		t.Errorf("re-queued: passes on the second device with the lost attempt in system-err; got %+v", c)
	}
	c = cases["notes/always-allow"]
	if c.Error == nil || !strings.Contains(c.Error.Text, "attempt 2 on vd-1") || c.Failure != nil {
		t.Errorf("error: want <error> listing the attempts; got %+v", c)
	}
	c = cases["notes/live-create"]
	if c.Skipped == nil || !strings.HasPrefix(c.Skipped.Message, "inconclusive:") || c.Failure != nil {
		t.Errorf("inconclusive: want <skipped message=\"inconclusive: …\">; got %+v", c)
	}
	c = cases["sms/send-peer"]
	if c.Suite != "unassigned" || c.Skipped == nil || strings.HasPrefix(c.Skipped.Message, "inconclusive") {
		t.Errorf("skipped: got %+v", c)
	}
}
