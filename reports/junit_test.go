package reports

import (
	"bytes"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The stock JUnit schemas, restated from their constraints (see the
// comments at the top of each file).
var junitSchemas = map[string]string{
	"jenkins-xunit": "testdata/schema/junit-jenkins.xsd",
	"ant":           "testdata/schema/junit-ant.xsd",
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

// failingRun is a run whose one scenario failed a named check, and whose
// other failed a step no check explains.
func failingRun() *Run {
	r := sampleRun()
	keep := r.Scenarios[:0]
	for _, s := range r.Scenarios {
		if s.Verdict == VerdictFail {
			keep = append(keep, s)
		}
	}
	step := keep[0]
	step.Name, step.Reason = "notes/step-fails", "step 3 (ask): the caller exited 1"
	step.Checks = []Check{{Name: "created", OK: true}}
	step.Attempts = []Attempt{{Number: 1, Device: "vd-1", Verdict: VerdictFail, Error: "ask: exit status 1", StartedAt: at(5), FinishedAt: at(9), Checks: step.Checks}}
	r.Scenarios = append(keep, step)
	r.Host = ""
	return r
}

// xmllint validates doc against schema with libxml2's xmllint and returns
// its complaint. xmllint is an independent XSD implementation (Debian
// package libxml2-utils; .ci/run installs it).
func xmllint(t *testing.T, schema string, doc []byte) error {
	t.Helper()
	bin, err := exec.LookPath("xmllint")
	if err != nil {
		t.Skip("xmllint not installed (apt-get install libxml2-utils)")
	}
	path := filepath.Join(t.TempDir(), "junit.xml")
	require.NoError(t, os.WriteFile(path, doc, 0o644))
	out, err := exec.Command(bin, "--noout", "--schema", schema, path).CombinedOutput()
	if err != nil {
		return &xmllintError{string(out)}
	}
	return nil
}

type xmllintError struct{ out string }

func (e *xmllintError) Error() string { return e.out }

// TestJUnitStockSchemas validates junit.xml of the sample run, of a run with
// a failing scenario, of a run with hostile text and of an empty run
// against both stock-derived schemas.
func TestJUnitStockSchemas(t *testing.T) {
	runs := map[string]*Run{
		"sample":  sampleRun(),
		"failing": failingRun(),
		"hostile": hostileRun(),
		"empty":   {RunID: "empty", Model: Model{Kind: ModelStub}},
		"big":     bigRun(50),
	}
	for name, r := range runs {
		doc := renderT(t, r, FormatJUnit)
		for schemaName, schema := range junitSchemas {
			assert.NoError(t, xmllint(t, schema, doc), "%s: junit.xml does not satisfy %s", name, schemaName)
		}
	}
}

// TestJUnitSchemasRefuse: the schemas are not rubber stamps. Each refuses
// what its stock original refuses — among them what junit.xml used to
// hold (properties inside a testcase, attributes on testsuites, a
// testcase with system-out).
func TestJUnitSchemasRefuse(t *testing.T) {
	const suite = `<testsuite name="s" tests="1" failures="0" errors="0" skipped="0" time="1.0" timestamp="2026-01-01T00:00:00" hostname="h" id="0" package="p">`
	cases := []struct {
		name, doc string
		refusedBy []string
	}{
		{"properties inside a testcase", `<testsuites>` + suite + `<properties/><testcase name="c" classname="k" time="0"><properties><property name="a" value="b"/></properties></testcase><system-out/><system-err/></testsuite></testsuites>`,
			[]string{"jenkins-xunit", "ant"}},
		{"tests not a number", `<testsuites><testsuite name="s" tests="one" failures="0" errors="0" skipped="0" time="1" timestamp="2026-01-01T00:00:00" hostname="h" id="0" package="p"><properties/><system-out/><system-err/></testsuite></testsuites>`,
			[]string{"ant"}},
		{"a testcase without a name", `<testsuites>` + suite + `<properties/><testcase classname="k" time="0"/><system-out/><system-err/></testsuite></testsuites>`,
			[]string{"jenkins-xunit", "ant"}},
		{"attributes on testsuites", `<testsuites tests="1">` + suite + `<properties/><system-out/><system-err/></testsuite></testsuites>`,
			[]string{"ant"}},
		{"system-out inside a testcase", `<testsuites>` + suite + `<properties/><testcase name="c" classname="k" time="0"><system-out>x</system-out></testcase><system-out/><system-err/></testsuite></testsuites>`,
			[]string{"ant"}},
		{"a suite without system-err", `<testsuites>` + suite + `<properties/><system-out/></testsuite></testsuites>`,
			[]string{"ant"}},
		{"a timestamp with a zone", `<testsuites><testsuite name="s" tests="0" failures="0" errors="0" time="1" timestamp="2026-01-01T00:00:00Z" hostname="h" id="0" package="p"><properties/><system-out/><system-err/></testsuite></testsuites>`,
			[]string{"ant"}},
		{"a failure without a type", `<testsuites>` + suite + `<properties/><testcase name="c" classname="k" time="0"><failure message="m"/></testcase><system-out/><system-err/></testsuite></testsuites>`,
			[]string{"ant"}},
		{"a negative suite time", `<testsuites><testsuite name="s" tests="0" failures="0" errors="0" time="-1" timestamp="2026-01-01T00:00:00" hostname="h" id="0" package="p"><properties/><system-out/><system-err/></testsuite></testsuites>`,
			[]string{"jenkins-xunit"}},
	}
	for _, tc := range cases {
		for schemaName, schema := range junitSchemas {
			err := xmllint(t, schema, []byte(tc.doc))
			if slices.Contains(tc.refusedBy, schemaName) {
				assert.Error(t, err, "%s: %s accepted it", tc.name, schemaName)
			} else {
				assert.NoError(t, err, "%s: %s refused it", tc.name, schemaName)
			}
		}
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

// parsedSuite is a testsuite as a CI system reads it back.
type parsedSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []parsedCase    `xml:"testcase"`
	SystemOut  string          `xml:"system-out"`
	SystemErr  string          `xml:"system-err"`
}

type parsedCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Skipped   *junitSkipped `xml:"skipped"`
	Failure   *parsedText   `xml:"failure"`
	Error     *parsedText   `xml:"error"`
}

type parsedText struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

func (s *parsedSuite) prop(name string) string {
	for _, p := range s.Properties {
		if p.Name == name {
			return p.Value
		}
	}
	return ""
}

func (s *parsedSuite) testcase(name string) *parsedCase {
	for i := range s.Cases {
		if s.Cases[i].Name == name {
			return &s.Cases[i]
		}
	}
	return nil
}

func parseJUnit(t *testing.T, r *Run) map[string]*parsedSuite {
	t.Helper()
	var parsed struct {
		Suites []parsedSuite `xml:"testsuite"`
	}
	require.NoError(t, xml.Unmarshal(renderT(t, r, FormatJUnit), &parsed))
	out := map[string]*parsedSuite{}
	for i := range parsed.Suites {
		out[parsed.Suites[i].Name] = &parsed.Suites[i]
	}
	return out
}

// TestJUnitContent checks the mapping a CI system relies on: a run suite
// with the devices, one suite per scenario, one testcase per named check
// (a failed check a failure with its evidence), a lab fault an error and
// never a failed check, skipped and inconclusive scenarios skipped, flaky
// and re-queued attempts in system-err, every named check in system-out.
func TestJUnitContent(t *testing.T) {
	t.Parallel()
	sample := sampleRun()
	suites := parseJUnit(t, sample)
	require.Len(t, suites, len(sample.Scenarios)+1, "one suite per scenario and one for the run")

	run := suites[runSuite]
	require.NotNil(t, run)
	assert.Equal(t, 0, run.Tests)
	assert.Equal(t, sample.RunID, run.prop("runId"))
	assert.Equal(t, "offline at 01:02:05; reconnect and reboot did not bring it back", run.prop("device.R58M12345.quarantineReason"))
	assert.Contains(t, run.SystemOut, "device R58M12345 (pixel-7, phone, API 36, arm64-v8a): quarantined")

	revoke := suites["third-party/revoke-closes"]
	require.NotNil(t, revoke)
	assert.Equal(t, 7, revoke.Tests, "one testcase per named check")
	assert.Equal(t, 2, revoke.Failures)
	assert.Equal(t, "fail", revoke.prop("verdict"))
	assert.Equal(t, "emulator-5554", revoke.prop("device.1.serial"))
	assert.Equal(t, "34", revoke.prop("device.1.apiLevel"))
	c := revoke.testcase("tasksCancelled")
	require.NotNil(t, c)
	require.NotNil(t, c.Failure)
	assert.Equal(t, "third-party.revoke-closes", c.Classname)
	assert.Equal(t, "check", c.Failure.Type)
	assert.Equal(t, "usage.activeTasks still 1 after 15 s", c.Failure.Message)
	assert.Contains(t, c.Failure.Text, "evidence: artifact:artifacts/third-party__revoke-closes/attempt-1/caller-list.json")
	assert.Contains(t, c.Failure.Text, "[upstream: third_party.py/revoke-closes/tasksCancelled]")
	assert.Equal(t, "48.000", revoke.Cases[0].Time, "the first testcase carries the scenario's time")
	assert.Equal(t, "0.000", revoke.Cases[1].Time)
	if pass := revoke.testcase("slotFreed"); assert.NotNil(t, pass) {
		assert.Nil(t, pass.Failure)
	}
	for _, ch := range sample.Scenarios[0].Checks {
		assert.Contains(t, revoke.SystemOut, "] "+ch.Name, "system-out lists every check")
	}

	flaky := suites["ext/plugin-death"]
	assert.Equal(t, "true", flaky.prop("flaky"))
	assert.Zero(t, flaky.Failures+flaky.Errors+flaky.Skipped, "flaky passes")
	assert.Contains(t, flaky.SystemErr, "attempt 1 on vd-1: fail; failed checks: reconnected")

	requeued := suites["sms/injection"]
	assert.Zero(t, requeued.Failures+requeued.Errors)
	assert.Contains(t, requeued.SystemErr, "attempt 1 on R58M12345: error (lab fault)")

	lab := suites["notes/always-allow"]
	require.Len(t, lab.Cases, 1, "a lab fault is one error, never failed checks")
	require.NotNil(t, lab.Cases[0].Error)
	assert.Equal(t, "notes/always-allow", lab.Cases[0].Name)
	assert.Equal(t, "lab-fault", lab.Cases[0].Error.Type)
	assert.Contains(t, lab.Cases[0].Error.Text, "attempt 2 on vd-1")
	assert.Equal(t, 1, lab.Errors)
	assert.Zero(t, lab.Failures)

	live := suites["notes/live-create"]
	require.Len(t, live.Cases, 1)
	require.NotNil(t, live.Cases[0].Skipped)
	assert.True(t, strings.HasPrefix(live.Cases[0].Skipped.Message, "inconclusive:"))
	assert.Zero(t, live.Failures, "an inconclusive scenario's failed checks are not failures")

	peer := suites["sms/send-peer"]
	require.Len(t, peer.Cases, 1)
	require.NotNil(t, peer.Cases[0].Skipped)
	assert.Equal(t, "needs 2 emulators with telephony; the pool has 1", peer.Cases[0].Skipped.Message)

	// A failure no check explains is one more testcase, named by the
	// scenario.
	failing := parseJUnit(t, failingRun())
	step := failing["notes/step-fails"]
	require.NotNil(t, step)
	require.Len(t, step.Cases, 2)
	assert.Nil(t, step.testcase("created").Failure)
	whole := step.testcase("notes/step-fails")
	require.NotNil(t, whole)
	require.NotNil(t, whole.Failure)
	assert.Equal(t, "fail", whole.Failure.Type)
	assert.Contains(t, whole.Failure.Text, "ask: exit status 1")
}
