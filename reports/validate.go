package reports

import (
	"errors"
	"fmt"
	"path"
	"strconv"
	"strings"
)

// ErrSchemaVersion reports a results document whose schemaVersion is
// missing, malformed or of another major version.
var ErrSchemaVersion = errors.New("unsupported schema version")

// ErrInvalid reports a results document that breaks the model's rules.
var ErrInvalid = errors.New("invalid results")

// maxProblems bounds how many problems one validation error lists.
const maxProblems = 20

// Validate checks r against the rules of the results model: a supported
// schema version, known verdicts and kinds, unique scenario, device and
// check names, attempts numbered 1..n, references to known devices and
// artifacts, and clean relative artifact paths. The error wraps ErrInvalid
// (or ErrSchemaVersion) and names each offending field and value.
func (r *Run) Validate() error {
	if err := checkVersion(r.SchemaVersion); err != nil {
		return err
	}
	v := &validator{}
	if r.RunID == "" {
		v.add("runId", "", "is empty")
	}
	if !r.StartedAt.IsZero() && !r.FinishedAt.IsZero() && r.FinishedAt.Before(r.StartedAt) {
		v.add("finishedAt", r.FinishedAt.String(), "is before startedAt")
	}
	switch r.Model.Kind {
	case ModelStub:
	case ModelLive:
		if r.Model.Provider == "" {
			v.add("model.provider", "", "is empty for a live model")
		}
	default:
		v.add("model.kind", string(r.Model.Kind), "is neither stub nor live")
	}
	if sel := r.Selection; sel.ShardCount > 1 && (sel.ShardIndex < 0 || sel.ShardIndex >= sel.ShardCount) {
		v.add("selection.shardIndex", strconv.Itoa(sel.ShardIndex), fmt.Sprintf("is outside 0..%d", sel.ShardCount-1))
	}
	serials := make(map[string]bool, len(r.Devices))
	for i := range r.Devices {
		d := &r.Devices[i]
		f := fmt.Sprintf("devices[%d]", i)
		switch {
		case d.Serial == "":
			v.add(f+".serial", "", "is empty")
		case serials[d.Serial]:
			v.add(f+".serial", d.Serial, "is listed twice")
		}
		serials[d.Serial] = true
		switch d.Kind {
		case DeviceVirtual, DeviceEmulator, DevicePhone:
		default:
			v.add(f+".kind", string(d.Kind), "is not virtual, emulator or phone")
		}
		for j, e := range d.Timeline {
			if !e.End.IsZero() && e.End.Before(e.Start) {
				v.add(fmt.Sprintf("%s.timeline[%d].end", f, j), e.End.String(), "is before start")
			}
		}
	}
	names := make(map[string]bool, len(r.Scenarios))
	for i := range r.Scenarios {
		s := &r.Scenarios[i]
		f := fmt.Sprintf("scenarios[%d]", i)
		switch {
		case s.Name == "":
			v.add(f+".name", "", "is empty")
		case names[s.Name]:
			v.add(f+".name", s.Name, "is used by another scenario")
		}
		names[s.Name] = true
		if !s.Verdict.Valid() {
			v.add(f+".verdict", string(s.Verdict), "is not a verdict")
		}
		if s.DurationMs < 0 {
			v.add(f+".durationMs", strconv.FormatInt(s.DurationMs, 10), "is negative")
		}
		for j, d := range s.Devices {
			if !serials[d] {
				v.add(fmt.Sprintf("%s.devices[%d]", f, j), d, "is not a device of the run")
			}
		}
		artifacts := make(map[string]bool)
		for j, a := range s.Artifacts {
			v.artifact(fmt.Sprintf("%s.artifacts[%d]", f, j), a)
			artifacts[a.Path] = true
		}
		for j := range s.Attempts {
			a := &s.Attempts[j]
			af := fmt.Sprintf("%s.attempts[%d]", f, j)
			if a.Number != j+1 {
				v.add(af+".attempt", strconv.Itoa(a.Number), fmt.Sprintf("should be %d", j+1))
			}
			if !a.Verdict.Valid() {
				v.add(af+".verdict", string(a.Verdict), "is not a verdict")
			}
			if a.Device != "" && !serials[a.Device] {
				v.add(af+".device", a.Device, "is not a device of the run")
			}
			if !a.StartedAt.IsZero() && !a.FinishedAt.IsZero() && a.FinishedAt.Before(a.StartedAt) {
				v.add(af+".finishedAt", a.FinishedAt.String(), "is before startedAt")
			}
			for k, art := range a.Artifacts {
				v.artifact(fmt.Sprintf("%s.artifacts[%d]", af, k), art)
				artifacts[art.Path] = true
			}
			v.checks(af+".checks", a.Checks, nil)
		}
		v.checks(f+".checks", s.Checks, artifacts)
	}
	return v.err()
}

type validator struct {
	problems []string
	dropped  int
}

func (v *validator) add(field, value, problem string) {
	if len(v.problems) >= maxProblems {
		v.dropped++
		return
	}
	if value == "" {
		v.problems = append(v.problems, field+" "+problem)
		return
	}
	v.problems = append(v.problems, fmt.Sprintf("%s %q %s", field, value, problem))
}

func (v *validator) artifact(f string, a Artifact) {
	if !cleanRelative(a.Path) {
		v.add(f+".path", a.Path, "is not a clean relative slash-separated path")
	}
	if a.Kind == "" {
		v.add(f+".kind", "", "is empty")
	}
	if a.Size < 0 {
		v.add(f+".size", strconv.FormatInt(a.Size, 10), "is negative")
	}
	if !isHex64(a.SHA256) {
		v.add(f+".sha256", a.SHA256, "is not 64 lower-case hex digits")
	}
}

// checks validates a check list; when artifacts is non-nil, evidence that
// points at an artifact must name one of them.
func (v *validator) checks(f string, cs []Check, artifacts map[string]bool) {
	seen := make(map[string]bool, len(cs))
	for i, c := range cs {
		cf := fmt.Sprintf("%s[%d]", f, i)
		switch {
		case c.Name == "":
			v.add(cf+".name", "", "is empty")
		case seen[c.Name]:
			v.add(cf+".name", c.Name, "is used by another check of the same list")
		}
		seen[c.Name] = true
		if p, ok := c.EvidenceArtifact(); ok && artifacts != nil && !artifacts[p] {
			v.add(cf+".evidence", c.Evidence, "points at an artifact the scenario does not list")
		}
	}
}

func (v *validator) err() error {
	if len(v.problems) == 0 {
		return nil
	}
	msg := strings.Join(v.problems, "; ")
	if v.dropped > 0 {
		msg += fmt.Sprintf("; and %d more", v.dropped)
	}
	return fmt.Errorf("%w: %s", ErrInvalid, msg)
}

// cleanRelative reports whether p is a clean, relative, slash-separated
// path that stays inside its root.
func cleanRelative(p string) bool {
	return p != "" && !strings.Contains(p, `\`) && !path.IsAbs(p) && path.Clean(p) == p &&
		p != ".." && !strings.HasPrefix(p, "../")
}

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// parseVersion splits "major.minor" into numbers.
func parseVersion(s string) (major, minor int, ok bool) {
	maj, min, found := strings.Cut(s, ".")
	if !found {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(maj)
	minor, err2 := strconv.Atoi(min)
	if err1 != nil || err2 != nil || major < 0 || minor < 0 || strings.HasPrefix(maj, "+") || strings.HasPrefix(min, "+") {
		return 0, 0, false
	}
	return major, minor, true
}

func checkVersion(s string) error {
	if s == "" {
		return fmt.Errorf("%w: schemaVersion is missing (this build reads %d.x)", ErrSchemaVersion, SchemaMajor)
	}
	major, _, ok := parseVersion(s)
	if !ok {
		return fmt.Errorf("%w: schemaVersion %q is not major.minor (this build reads %d.x)", ErrSchemaVersion, s, SchemaMajor)
	}
	if major != SchemaMajor {
		return fmt.Errorf("%w: schemaVersion %q (this build reads %d.x)", ErrSchemaVersion, s, SchemaMajor)
	}
	return nil
}
