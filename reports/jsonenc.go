package reports

import (
	"io"
	"math"
	"strconv"
	"time"
	"unicode/utf8"
)

// results.json is the largest thing a run writes (tens of MB for a nightly
// run), and encoding/json's reflection made it the slowest format. This
// writer produces exactly the bytes of encoding/json's indented encoding
// (two spaces, HTML not escaped) of the model types, field by field;
// TestJSONEncoderMatchesEncodingJSON and FuzzDecode hold it to that.

// jsonOut is an indenting JSON emitter that flushes to w as it goes.
type jsonOut struct {
	w        io.Writer
	buf      []byte
	err      error
	first    []bool // per open container: nothing written in it yet
	afterKey bool
}

const jsonFlushAt = 64 << 10

func newJSONOut(w io.Writer) *jsonOut {
	return &jsonOut{w: w, buf: make([]byte, 0, 2*jsonFlushAt)}
}

func (j *jsonOut) flush() error {
	if j.err == nil && len(j.buf) > 0 {
		_, j.err = j.w.Write(j.buf)
	}
	j.buf = j.buf[:0]
	return j.err
}

// elem starts a value or a key: a comma, a line break and the indent,
// except right after a key.
func (j *jsonOut) elem() {
	if j.afterKey {
		j.afterKey = false
		return
	}
	n := len(j.first)
	if n == 0 {
		return
	}
	if !j.first[n-1] {
		j.buf = append(j.buf, ',')
	}
	j.first[n-1] = false
	j.newline()
	if len(j.buf) >= jsonFlushAt {
		j.flush()
	}
}

func (j *jsonOut) newline() {
	j.buf = append(j.buf, '\n')
	for range len(j.first) {
		j.buf = append(j.buf, ' ', ' ')
	}
}

func (j *jsonOut) open(c byte) {
	j.elem()
	j.buf = append(j.buf, c)
	j.first = append(j.first, true)
}

func (j *jsonOut) close(c byte) {
	empty := j.first[len(j.first)-1]
	j.first = j.first[:len(j.first)-1]
	if !empty {
		j.newline()
	}
	j.buf = append(j.buf, c)
}

func (j *jsonOut) key(k string) {
	j.elem()
	j.buf = appendJSONString(j.buf, k)
	j.buf = append(j.buf, ':', ' ')
	j.afterKey = true
}

func (j *jsonOut) str(s string) {
	j.elem()
	j.buf = appendJSONString(j.buf, s)
}

func (j *jsonOut) int(n int64) {
	j.elem()
	j.buf = strconv.AppendInt(j.buf, n, 10)
}

func (j *jsonOut) bool(b bool) {
	j.elem()
	j.buf = strconv.AppendBool(j.buf, b)
}

// time writes t as time.Time.MarshalJSON does.
func (j *jsonOut) time(t time.Time) {
	j.elem()
	j.buf = append(j.buf, '"')
	j.buf = t.AppendFormat(j.buf, time.RFC3339Nano)
	j.buf = append(j.buf, '"')
}

func (j *jsonOut) strs(ss []string) {
	if ss == nil {
		j.elem()
		j.buf = append(j.buf, "null"...)
		return
	}
	j.open('[')
	for _, s := range ss {
		j.str(s)
	}
	j.close(']')
}

// Field helpers: name and value, honouring omitempty / omitzero.
func (j *jsonOut) fStr(k, v string)            { j.key(k); j.str(v) }
func (j *jsonOut) fInt(k string, v int64)      { j.key(k); j.int(v) }
func (j *jsonOut) fBool(k string, v bool)      { j.key(k); j.bool(v) }
func (j *jsonOut) fTime(k string, v time.Time) { j.key(k); j.time(v) }
func (j *jsonOut) fStrs(k string, v []string)  { j.key(k); j.strs(v) }

func (j *jsonOut) oStr(k, v string) {
	if v != "" {
		j.fStr(k, v)
	}
}

func (j *jsonOut) oInt(k string, v int64) {
	if v != 0 {
		j.fInt(k, v)
	}
}

// null writes a nil slice as encoding/json does.
func (j *jsonOut) null() {
	j.elem()
	j.buf = append(j.buf, "null"...)
}

// appendJSONString quotes s as encoding/json does with HTML escaping off:
// short escapes for \b \f \n \r \t, \u00XX for other control characters,
// U+FFFD for invalid UTF-8, and \u2028 \u2029 escaped.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// encodeRun writes r as results.json.
func encodeRun(w io.Writer, r *Run) error {
	j := newJSONOut(w)
	j.open('{')
	j.fStr("schemaVersion", r.SchemaVersion)
	j.fStr("runId", r.RunID)
	j.fTime("startedAt", r.StartedAt)
	j.fTime("finishedAt", r.FinishedAt)
	j.fStr("labVersion", r.LabVersion)
	j.fStr("configDigest", r.ConfigDigest)
	j.fStr("host", r.Host)

	j.key("selection")
	j.open('{')
	j.fStrs("tags", r.Selection.Tags)
	if len(r.Selection.ExcludeTags) > 0 {
		j.fStrs("excludeTags", r.Selection.ExcludeTags)
	}
	j.fInt("shardIndex", int64(r.Selection.ShardIndex))
	j.fInt("shardCount", int64(r.Selection.ShardCount))
	j.close('}')

	j.key("model")
	j.open('{')
	j.fStr("kind", string(r.Model.Kind))
	j.oStr("provider", r.Model.Provider)
	j.oStr("name", r.Model.Name)
	j.close('}')

	j.key("devices")
	if r.Devices == nil {
		j.null()
	} else {
		j.open('[')
		for i := range r.Devices {
			encodeDevice(j, &r.Devices[i])
		}
		j.close(']')
	}

	j.key("scenarios")
	if r.Scenarios == nil {
		j.null()
	} else {
		j.open('[')
		for i := range r.Scenarios {
			encodeScenario(j, &r.Scenarios[i])
		}
		j.close(']')
	}

	if r.Soak != nil {
		j.key("soak")
		encodeSoak(j, r.Soak)
	}

	s := &r.Summary
	j.key("summary")
	j.open('{')
	for _, f := range []struct {
		k        string
		v        int
		omitZero bool
	}{
		{"total", s.Total, false}, {"pass", s.Pass, false}, {"fail", s.Fail, false}, {"flaky", s.Flaky, false},
		{"error", s.Error, false}, {"skipped", s.Skipped, false}, {"inconclusive", s.Inconclusive, false},
		{"attempts", s.Attempts, false}, {"labFaultAttempts", s.LabFaultAttempts, false}, {"checks", s.Checks, false},
		{"checksPassed", s.ChecksPassed, false}, {"checksSkipped", s.ChecksSkipped, true}, {"devices", s.Devices, false},
		{"quarantinedDevices", s.QuarantinedDevices, false}, {"exitCode", s.ExitCode, false},
	} {
		if f.omitZero && f.v == 0 {
			continue
		}
		j.fInt(f.k, int64(f.v))
	}
	j.close('}')
	j.close('}')
	j.buf = append(j.buf, '\n')
	return j.flush()
}

func encodeDevice(j *jsonOut, d *Device) {
	j.open('{')
	j.fStr("serial", d.Serial)
	j.fStr("name", d.Name)
	j.fStr("kind", string(d.Kind))
	j.fStr("model", d.Model)
	j.fInt("apiLevel", int64(d.APILevel))
	j.fStr("abi", d.ABI)
	j.fStr("rootMethod", d.RootMethod)
	j.fStr("runtimeVersion", d.RuntimeVersion)
	j.key("health")
	if d.Health == nil {
		j.null()
	} else {
		j.open('[')
		for _, h := range d.Health {
			j.open('{')
			j.fTime("at", h.At)
			j.fStr("state", h.State)
			j.oStr("detail", h.Detail)
			j.close('}')
		}
		j.close(']')
	}
	j.oStr("quarantineReason", d.QuarantineReason)
	j.key("timeline")
	if d.Timeline == nil {
		j.null()
	} else {
		j.open('[')
		for _, e := range d.Timeline {
			j.open('{')
			j.fStr("kind", string(e.Kind))
			j.fStr("label", e.Label)
			j.fTime("start", e.Start)
			if !e.End.IsZero() {
				j.fTime("end", e.End)
			}
			j.oStr("scenario", e.Scenario)
			j.oInt("attempt", int64(e.Attempt))
			j.oStr("verdict", string(e.Verdict))
			j.oStr("detail", e.Detail)
			j.close('}')
		}
		j.close(']')
	}
	j.close('}')
}

func encodeScenario(j *jsonOut, s *Scenario) {
	j.open('{')
	j.fStr("name", s.Name)
	j.fStr("file", s.File)
	j.fStrs("tags", s.Tags)
	j.fStrs("devices", s.Devices)
	j.fStr("verdict", string(s.Verdict))
	j.oStr("reason", s.Reason)
	j.fInt("durationMs", s.DurationMs)
	j.oInt("personTouches", int64(s.PersonTouches))
	j.key("attempts")
	if s.Attempts == nil {
		j.null()
	} else {
		j.open('[')
		for i := range s.Attempts {
			a := &s.Attempts[i]
			j.open('{')
			j.fInt("attempt", int64(a.Number))
			j.fStr("device", a.Device)
			j.fStr("verdict", string(a.Verdict))
			j.fBool("labFault", a.LabFault)
			j.oStr("error", a.Error)
			j.fTime("startedAt", a.StartedAt)
			j.fTime("finishedAt", a.FinishedAt)
			j.key("checks")
			encodeChecks(j, a.Checks)
			j.key("artifacts")
			encodeArtifacts(j, a.Artifacts)
			j.close('}')
		}
		j.close(']')
	}
	j.key("checks")
	encodeChecks(j, s.Checks)
	j.key("artifacts")
	encodeArtifacts(j, s.Artifacts)
	j.close('}')
}

func encodeChecks(j *jsonOut, cs []Check) {
	if cs == nil {
		j.null()
		return
	}
	j.open('[')
	for _, c := range cs {
		j.open('{')
		j.fStr("name", c.Name)
		j.fBool("ok", c.OK)
		j.oStr("detail", c.Detail)
		j.oStr("evidence", c.Evidence)
		j.oStr("upstream", c.Upstream)
		if c.Skipped {
			j.fBool("skipped", true)
		}
		j.close('}')
	}
	j.close(']')
}

func encodeArtifacts(j *jsonOut, as []Artifact) {
	if as == nil {
		j.null()
		return
	}
	j.open('[')
	for _, a := range as {
		j.open('{')
		j.fStr("path", a.Path)
		j.fStr("kind", string(a.Kind))
		j.fInt("size", a.Size)
		j.fStr("sha256", a.SHA256)
		j.close('}')
	}
	j.close(']')
}

// encodeUpstream writes upstream-checks.json (see upstreamDoc).
func encodeUpstream(w io.Writer, d *upstreamDoc) error {
	j := newJSONOut(w)
	j.open('{')
	j.fStr("run_id", d.RunID)
	j.key("checks")
	j.open('[')
	for _, c := range d.Checks {
		j.open('{')
		j.fStr("name", c.Name)
		j.fBool("ok", c.OK)
		j.fStr("detail", c.Detail)
		if c.Skipped {
			j.fBool("skipped", true)
		}
		j.close('}')
	}
	j.close(']')
	j.fInt("passed", int64(d.Passed))
	j.fInt("total", int64(d.Total))
	j.fInt("skipped", int64(d.Skipped))
	j.key("suites")
	j.open('[')
	for _, s := range d.Suites {
		j.open('{')
		j.fStr("suite", s.Suite)
		j.fInt("checks", int64(s.Checks))
		j.fInt("passed", int64(s.Passed))
		j.fInt("failed", int64(s.Failed))
		j.fInt("skipped", int64(s.Skipped))
		j.close('}')
	}
	j.close(']')
	j.fStrs("inconclusive_scenarios", d.InconclusiveScenarios)
	j.key("person_touches_per_scenario")
	j.open('{')
	for _, name := range sortedKeys(d.PersonTouchesPerScenario) {
		j.fInt(name, int64(d.PersonTouchesPerScenario[name]))
	}
	j.close('}')
	j.close('}')
	j.buf = append(j.buf, '\n')
	return j.flush()
}

func encodeSoak(j *jsonOut, s *Soak) {
	j.open('{')
	j.fInt("durationMs", s.DurationMs)
	j.fInt("iterations", int64(s.Iterations))
	j.key("series")
	if s.Series == nil {
		j.null()
	} else {
		j.open('[')
		for _, sr := range s.Series {
			j.open('{')
			j.fStr("device", sr.Device)
			j.fStr("metric", sr.Metric)
			j.fStr("unit", sr.Unit)
			j.key("samples")
			if sr.Samples == nil {
				j.null()
			} else {
				j.open('[')
				for _, sm := range sr.Samples {
					j.open('{')
					j.fInt("iteration", int64(sm.Iteration))
					j.fTime("at", sm.At)
					j.key("value")
					j.float(sm.Value)
					j.close('}')
				}
				j.close(']')
			}
			j.key("growth")
			j.float(sr.Growth)
			j.key("bound")
			j.float(sr.Bound)
			j.fBool("grew", sr.Grew)
			j.close('}')
		}
		j.close(']')
	}
	j.close('}')
}

// float writes f as encoding/json does (finite values only: a soak's
// figures are counts and sizes).
func (j *jsonOut) float(f float64) {
	j.elem()
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	start := len(j.buf)
	j.buf = strconv.AppendFloat(j.buf, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9, as encoding/json does
		n := len(j.buf) - start
		if n >= 4 && j.buf[len(j.buf)-4] == 'e' && j.buf[len(j.buf)-3] == '-' && j.buf[len(j.buf)-2] == '0' {
			j.buf[len(j.buf)-2] = j.buf[len(j.buf)-1]
			j.buf = j.buf[:len(j.buf)-1]
		}
	}
}
