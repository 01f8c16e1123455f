package scenarios

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"gopkg.in/yaml.v3"

	"github.com/agentoslab/agentlab/lab/scenario"
)

var update = flag.Bool("update", false, "rewrite README.md's upstream map from the scenarios")

// The documented tags (README.md, "Tags"): one area tag per scenario,
// and the sets a run selects with --tags.
var (
	areaTags = []string{"apps", "third-party", "channel", "notes", "sms", "ext", "consent", "desktop", "quota", "security", "fault", "platform", "aci"}
	setTags  = []string{tagNightly, tagQualification}
)

const (
	tagNightly       = "nightly"
	tagQualification = "qualification"

	readmePath   = "README.md"
	schemaPath   = "scenario.schema.json"
	upstreamDir  = "upstream"
	mapBegin     = "<!-- upstream-map:begin -->"
	mapEnd       = "<!-- upstream-map:end -->"
	maxListBytes = 1 << 20
)

// upstreamRE is one upstream check: suite file, case, check.
// contractRE is a listing's header line giving the spec's count for the
// suite ("# contract: 21 checks"): the listing must hold exactly that many.
var contractRE = regexp.MustCompile(`^#\s*contract:\s*([0-9]+) checks\b`)

var upstreamRE = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.(py|ts)(-[a-z]+)?/[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`)

// loadSuite parses every scenario of the suite with the lab's validator.
func loadSuite(t *testing.T) []*scenario.Scenario {
	t.Helper()
	all, err := scenario.LoadAll([]string{"."})
	if err != nil {
		t.Fatalf("the suite does not validate (go run ./lab/cmd/agentlab scenarios validate scenarios):\n%v", err)
	}
	return all
}

// TestScenariosValid: every scenario passes the lab's validator and the
// JSON Schema, is named after its file, and carries one area tag and the
// qualification set (nightly is optional) and no tag outside the
// documented set.
func TestScenariosValid(t *testing.T) {
	t.Parallel()
	suite := loadSuite(t)
	schema := resolvedSchema(t)
	for _, s := range suite {
		b, err := os.ReadFile(s.File)
		if err != nil {
			t.Fatal(err)
		}
		if err := validateSchema(schema, b); err != nil {
			t.Errorf("%s: the schema rejects it: %v", s.File, err)
		}
		if want := strings.TrimSuffix(filepath.ToSlash(s.File), filepath.Ext(s.File)); s.Name != want {
			t.Errorf("%s: name %q, want %q (the file's path in the suite, so a report names the file)", s.Pos("name"), s.Name, want)
		}
		if err := checkTags(s.Tags); err != nil {
			t.Errorf("%s: %v", s.Pos("tags"), err)
		}
	}
}

// checkTags enforces the documented tag rules.
func checkTags(tags []string) error {
	var areas []string
	for _, tag := range tags {
		switch {
		case slices.Contains(areaTags, tag):
			areas = append(areas, tag)
		case slices.Contains(setTags, tag):
		default:
			return fmt.Errorf("tag %q is not documented (areas: %s; sets: %s)", tag, strings.Join(areaTags, ", "), strings.Join(setTags, ", "))
		}
	}
	if len(areas) != 1 {
		return fmt.Errorf("want exactly one area tag (%s), have %q", strings.Join(areaTags, ", "), areas)
	}
	if !slices.Contains(tags, tagQualification) {
		return fmt.Errorf("want the %q tag: qualification runs every scenario", tagQualification)
	}
	return nil
}

func TestCheckTags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		tags []string
		ok   bool
	}{
		{[]string{"quota", "nightly", "qualification"}, true},
		{[]string{"fault", "qualification"}, true},
		{[]string{"fault", "nightly"}, false},
		{[]string{"nightly", "qualification"}, false},
		{[]string{"quota", "fault", "qualification"}, false},
		{[]string{"quota", "qualification", "slow"}, false},
		{nil, false},
	} {
		if err := checkTags(tc.tags); (err == nil) != tc.ok {
			t.Errorf("checkTags(%q) = %v, want ok=%v", tc.tags, err, tc.ok)
		}
	}
}

func resolvedSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	b, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", schemaPath, err)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("resolve %s: %v", schemaPath, err)
	}
	return r
}

// validateSchema checks a YAML document as an editor's schema check
// sees it (YAML → JSON).
func validateSchema(r *jsonschema.Resolved, doc []byte) error {
	var v any
	if err := yaml.Unmarshal(doc, &v); err != nil {
		return err
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var j any
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	return r.Validate(j)
}

// named is one named check of a scenario that maps to an upstream check.
type named struct {
	Upstream string
	Scenario string
	Check    string
	Pos      string
}

// namedChecks returns every named check of s with an upstream mapping:
// check steps, waits recorded as checks, checks and invariants.
func namedChecks(s *scenario.Scenario) []named {
	var out []named
	add := func(name, upstream, pos string) {
		if upstream != "" {
			out = append(out, named{Upstream: upstream, Scenario: s.Name, Check: name, Pos: pos})
		}
	}
	for i, st := range s.Setup {
		stepChecks(st, fmt.Sprintf("setup[%d]", i), s, add)
	}
	for i, st := range s.Steps {
		stepChecks(st, fmt.Sprintf("steps[%d]", i), s, add)
	}
	for i, c := range s.Checks {
		add(c.Name, c.Upstream, s.Pos(fmt.Sprintf("checks[%d].upstream", i)))
	}
	for i, inv := range s.Invariants {
		add(invariantName(inv), inv.Upstream, s.Pos(fmt.Sprintf("invariants[%d].upstream", i)))
	}
	return out
}

func stepChecks(st scenario.Step, path string, s *scenario.Scenario, add func(name, upstream, pos string)) {
	switch {
	case st.Check != nil:
		add(st.Check.Name, st.Check.Upstream, s.Pos(path+".check.upstream"))
	case st.Wait != nil && st.Wait.Check != nil:
		add(st.Wait.Check.Name, st.Wait.Check.Upstream, s.Pos(path+".wait.check.upstream"))
	}
}

// invariantName is the name an invariant reports under (DSL.md,
// "Invariants").
func invariantName(inv scenario.Invariant) string {
	switch {
	case inv.Name != "":
		return inv.Name
	case len(inv.NothingDeleted) > 0:
		return "nothingDeleted"
	case inv.NoSMSSent:
		return "noSmsSent"
	case len(inv.CardsOnly) > 0:
		return "cardsOnly"
	}
	return "condition"
}

// listing is the upstream checks of upstream/*.txt, in file order.
type listing struct {
	checks []string
	where  map[string]string // check → file:line
}

// readListing reads every upstream/<suite>.txt: one suite/case/check per
// line, # comments and blank lines ignored, the suite equal to the file's
// name, no line twice.
func readListing(dir string) (*listing, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	slices.Sort(files)
	l := &listing{where: map[string]string{}}
	var problems []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if len(b) > maxListBytes {
			return nil, fmt.Errorf("%s: over %d bytes", f, maxListBytes)
		}
		suite := strings.TrimSuffix(filepath.Base(f), ".txt")
		sc := bufio.NewScanner(bytes.NewReader(b))
		contract, listed := -1, 0
		for n := 1; sc.Scan(); n++ {
			line := strings.TrimSpace(sc.Text())
			if m := contractRE.FindStringSubmatch(line); m != nil {
				contract, _ = strconv.Atoi(m[1])
			}
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			listed++
			at := fmt.Sprintf("%s:%d", f, n)
			switch {
			case !upstreamRE.MatchString(line):
				problems = append(problems, fmt.Sprintf("%s: %q is not suite/case/check", at, line))
			case !strings.HasPrefix(line, suite+"/"):
				problems = append(problems, fmt.Sprintf("%s: %q is not of suite %s", at, line, suite))
			case l.where[line] != "":
				problems = append(problems, fmt.Sprintf("%s: %q is also listed at %s", at, line, l.where[line]))
			default:
				l.checks = append(l.checks, line)
				l.where[line] = at
			}
		}
		if contract >= 0 && listed != contract {
			problems = append(problems, fmt.Sprintf("%s: lists %d checks, the contract counts %d", f, listed, contract))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	return l, nil
}

// coverage compares the listed upstream checks with the scenarios' named
// checks: listed checks no scenario check covers, and scenario checks
// whose upstream is not listed (or not of the suite/case/check form).
func coverage(l *listing, checks []named) (uncovered []string, unlisted []named) {
	covered := map[string]bool{}
	for _, c := range checks {
		if !upstreamRE.MatchString(c.Upstream) || l.where[c.Upstream] == "" {
			unlisted = append(unlisted, c)
			continue
		}
		covered[c.Upstream] = true
	}
	for _, u := range l.checks {
		if !covered[u] {
			uncovered = append(uncovered, u)
		}
	}
	return uncovered, unlisted
}

// mapTable renders the README's table: one row per scenario check, in
// the listing's order, then by scenario and check name.
func mapTable(l *listing, checks []named) string {
	rank := map[string]int{}
	for i, u := range l.checks {
		rank[u] = i
	}
	rows := slices.Clone(checks)
	slices.SortStableFunc(rows, func(a, b named) int {
		if d := rank[a.Upstream] - rank[b.Upstream]; d != 0 {
			return d
		}
		if c := strings.Compare(a.Scenario, b.Scenario); c != 0 {
			return c
		}
		return strings.Compare(a.Check, b.Check)
	})
	var sb strings.Builder
	sb.WriteString("| upstream check | scenario | check |\n|---|---|---|\n")
	for _, r := range rows {
		if _, ok := rank[r.Upstream]; !ok {
			continue
		}
		fmt.Fprintf(&sb, "| `%s` | `%s` | `%s` |\n", r.Upstream, r.Scenario, r.Check)
	}
	return sb.String()
}

// spliceMap replaces what lies between the markers of doc with table.
func spliceMap(doc, table string) (string, error) {
	i := strings.Index(doc, mapBegin)
	j := strings.Index(doc, mapEnd)
	if i < 0 || j < i {
		return "", fmt.Errorf("%s: want the markers %s and %s, in that order", readmePath, mapBegin, mapEnd)
	}
	return doc[:i+len(mapBegin)] + "\n" + table + doc[j:], nil
}

// TestUpstreamMap: every listed upstream check is covered by a named
// check of some scenario, every named check's upstream is listed, and
// README.md's table is current (-update rewrites it).
func TestUpstreamMap(t *testing.T) {
	suite := loadSuite(t)
	l, err := readListing(upstreamDir)
	if err != nil {
		t.Fatal(err)
	}
	var checks []named
	for _, s := range suite {
		checks = append(checks, namedChecks(s)...)
	}
	uncovered, unlisted := coverage(l, checks)
	for _, u := range uncovered {
		t.Errorf("%s: upstream check %s is covered by no scenario check", l.where[u], u)
	}
	for _, c := range unlisted {
		t.Errorf("%s: check %s of %s names upstream %q, which no upstream/*.txt lists", c.Pos, c.Check, c.Scenario, c.Upstream)
	}
	doc, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	want, err := spliceMap(string(doc), mapTable(l, checks))
	if err != nil {
		t.Fatal(err)
	}
	if want == string(doc) {
		return
	}
	if *update {
		if err := os.WriteFile(readmePath, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s: the upstream map is stale; run go test ./scenarios -run TestUpstreamMap -update", readmePath)
}

func TestCoverage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	list := "# comment\n\nx.py/a/one\nx.py/a/two\nx.py/b/three\n"
	if err := os.WriteFile(filepath.Join(dir, "x.py.txt"), []byte(list), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := readListing(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		checks        []named
		wantUncovered []string
		wantUnlisted  int
	}{
		{"none", nil, []string{"x.py/a/one", "x.py/a/two", "x.py/b/three"}, 0},
		{"all", []named{{Upstream: "x.py/a/one"}, {Upstream: "x.py/a/two"}, {Upstream: "x.py/b/three"}}, nil, 0},
		{"twice and missing", []named{{Upstream: "x.py/a/one"}, {Upstream: "x.py/a/one"}, {Upstream: "x.py/b/three"}}, []string{"x.py/a/two"}, 0},
		{"unlisted", []named{{Upstream: "x.py/a/one"}, {Upstream: "x.py/a/two"}, {Upstream: "x.py/b/three"}, {Upstream: "x.py/b/four"}}, nil, 1},
		{"malformed", []named{{Upstream: "x.py/a/one"}, {Upstream: "x.py/a/two"}, {Upstream: "x.py/b/three"}, {Upstream: "x.py/a"}}, nil, 1},
	} {
		uncovered, unlisted := coverage(l, tc.checks)
		if !slices.Equal(uncovered, tc.wantUncovered) || len(unlisted) != tc.wantUnlisted {
			t.Errorf("%s: uncovered %q (want %q), unlisted %d (want %d)", tc.name, uncovered, tc.wantUncovered, len(unlisted), tc.wantUnlisted)
		}
	}
	table := mapTable(l, []named{
		{Upstream: "x.py/b/three", Scenario: "s2", Check: "c3"},
		{Upstream: "x.py/a/one", Scenario: "s2", Check: "c1"},
		{Upstream: "x.py/a/one", Scenario: "s1", Check: "c9"},
	})
	want := "| upstream check | scenario | check |\n|---|---|---|\n" +
		"| `x.py/a/one` | `s1` | `c9` |\n| `x.py/a/one` | `s2` | `c1` |\n| `x.py/b/three` | `s2` | `c3` |\n"
	if table != want {
		t.Errorf("table:\n%s\nwant:\n%s", table, want)
	}
	got, err := spliceMap("a\n"+mapBegin+"\nold\n"+mapEnd+"\nb\n", "T\n")
	if err != nil || got != "a\n"+mapBegin+"\nT\n"+mapEnd+"\nb\n" {
		t.Errorf("spliceMap = %q, %v", got, err)
	}
	if _, err := spliceMap("no markers", "T\n"); err == nil {
		t.Error("spliceMap without markers: no error")
	}
}

func TestReadListingRejects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, file, text string }{
		{"form", "x.py.txt", "x.py/a\n"},
		{"suite", "x.py.txt", "y.py/a/b\n"},
		{"twice", "x.py.txt", "x.py/a/b\nx.py/a/b\n"},
		{"other variant", "x.py-sdk.txt", "x.py-app/a/b\n"},
		{"variant case", "x.py-sdk.txt", "x.py-SDK/a/b\n"},
		{"spaces", "x.py.txt", "x.py/a b/c\n"},
		{"contract count", "x.py.txt", "# contract: 3 checks\nx.py/a/b\nx.py/a/c\n"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, tc.file), []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := readListing(dir); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}
