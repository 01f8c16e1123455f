package scenario

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func TestParseGood(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/good/*.yaml")
	if len(files) == 0 {
		t.Fatal("no good scenarios")
	}
	for _, f := range files {
		s, err := Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if s.Name == "" || len(s.Steps) == 0 {
			t.Errorf("%s: parsed to %+v", f, s)
		}
	}
}

// TestParseBad: every bad file is rejected, and every problem names the
// file, a line and a column. The messages are golden files.
func TestParseBad(t *testing.T) {
	t.Parallel()
	files, _ := filepath.Glob("testdata/bad/*.yaml")
	posRE := regexp.MustCompile(`^testdata/bad/[a-z-]+(\.fragment)?\.yaml:\d+:\d+: `)
	for _, f := range files {
		if !IsScenarioFile(f) {
			continue // a fragment the bad files include
		}
		_, err := Load(f)
		var se *Error
		if !errors.As(err, &se) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: accepted, or not an *Error: %v", f, err)
			continue
		}
		for _, p := range se.Problems {
			if !posRE.MatchString(p.String()) {
				t.Errorf("%s: problem without file:line:col: %q", f, p.String())
			}
		}
		golden(t, strings.TrimSuffix(f, ".yaml")+".golden", err.Error()+"\n")
	}
}

func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs (go test -update if intended):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

func TestParseTable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, doc string
		// want is a substring of the error; "" means valid.
		want string
	}{
		{"minimal", "name: a\nsteps: [{sleep: 1s}]\n", ""},
		{"empty", "", "empty document"},
		{"two documents", "name: a\nsteps: [{sleep: 1s}]\n---\nname: b\n", "one document"},
		{"list document", "- a\n", "want a mapping"},
		{"reset shorthand", "name: a\nsteps: [{reset: notes}]\n", ""},
		{"reset package", "name: a\nsteps: [{reset: org.example.app}]\n", ""},
		{"unknown app", "name: a\nsteps: [{reset: nope}]\n", `unknown app "nope"`},
		{"suggest", "name: a\nsteps: [{sleep: 1s, devic: x}]\n", `did you mean "device"`},
		{"role", "name: a\ndevices: [x]\nsteps: [{sleep: 1s, device: y}]\n", `unknown device role "y"`},
		{"default roles", "name: a\ndevices: 2\nsteps: [{sleep: 1s, device: device2}]\n", ""},
		{"repeated key", "name: a\nname: b\nsteps: [{sleep: 1s}]\n", "repeated key (first at line 1)"},
		{"bool type", "name: a\nsteps: [{sleep: 1s, background: yes please}]\n", "want true or false"},
		{"negative duration", "name: a\nsteps: [{sleep: -1s}]\n", "negative"},
		{"session of a non-prompt", "name: a\nsteps: [{sleep: 1s, save: x}, {prompt: {text: hi, session: x}}]\n", "no earlier prompt"},
		{"continued session with options", "name: a\nsteps: [{prompt: {text: hi}}, {prompt: {text: hi, session: prompt, mode: chat}}]\n", "keeps its options"},
		{"await twice", "name: a\nsteps: [{run: {shell: id}, background: true}, {await: run}, {await: run}]\n", "already awaited"},
		{"live and stub", "name: a\nmodel: live\nneeds: {model: stub}\nsteps: [{sleep: 1s}]\n", "cannot be stub"},
		{"script file missing", "name: a\nmodel: {file: nowhere.script.yaml}\nsteps: [{sleep: 1s}]\n", "cannot read the script"},
		{"inline script", "name: a\nmodel: {script: {steps: [{text: hi}]}}\nsteps: [{sleep: 1s}]\n", ""},
		{"bad script", "name: a\nmodel: {script: {steps: [{text: hi, colour: blue}]}}\nsteps: [{sleep: 1s}]\n", "colour"},
		{"var ref", "name: a\nvars: {x: '1'}\nsteps: [{run: {shell: 'echo ${vars.x}'}}]\n", ""},
		{"unclosed ref", "name: a\nsteps: [{run: {shell: 'echo ${x'}}]\n", "unclosed"},
		{"literal ref", "name: a\nsteps: [{run: {shell: 'echo $${x} $? $$'}}]\n", ""},
		{"len shorthand", "name: a\nsteps: [{sleep: 1s}]\nchecks: [{name: c, of: callers, path: .callers, len: 0}]\n", ""},
		{"exists false with eq", "name: a\nsteps: [{sleep: 1s}]\nchecks: [{name: c, of: callers, exists: false, eq: 1}]\n", "can never hold"},
		{"group empty", "name: a\nsteps: [{sleep: 1s}]\nchecks: [{name: c, any_of: []}]\n", "empty group"},
		{"wait check dup", "name: a\nsteps: [{wait: {until: {of: status}, check: {name: c}}}]\nchecks: [{name: c, of: status}]\n", `check "c" is also defined`},
		{"timing bounds", "name: a\nsteps: [{sleep: 1s, name: s}]\nchecks: [{name: c, timing: {step: s, min: 2s, max: 1s}}]\n", "above max"},
		{"tool scope too long", "name: a\nsteps: [{prompt: {text: hi, tool_scope: [" + strings.Repeat("{plugin: p, tool: t},", 33) + "]}}]\n", "more than 32"},
		{"rule without match", "name: a\nsteps: [{consent: {rules: [{choice: DENY}]}}]\n", "matches by index"},
		{"invariant unknown items", "name: a\nsteps: [{sleep: 1s}]\ninvariants: [{nothing_deleted: [mcptest]}]\n", "does not know how to list"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc), "case.yaml", nil)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("want valid, got %v", err)
			case c.want != "" && err == nil:
				t.Errorf("want an error containing %q, got none", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Errorf("want an error containing %q, got %v", c.want, err)
			case err != nil && !strings.HasPrefix(err.Error(), "case.yaml:"):
				t.Errorf("error does not start with the file: %v", err)
			}
		})
	}
}

func TestStepKinds(t *testing.T) {
	t.Parallel()
	s, err := Load("testdata/good/two-devices.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, st := range s.AllSteps() {
		kinds = append(kinds, st.Kind())
	}
	want := "run run sleep reboot kill restart restart plugins tools approval tap consent run check prompt prompt"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("kinds:\n got %s\nwant %s", got, want)
	}
	if got := s.Roles(); strings.Join(got, ",") != "attacker,victim" {
		t.Errorf("roles %v", got)
	}
	if s.Steps[0].OutputName() != "victimSerial" || s.Steps[2].OutputName() != "sleep" {
		t.Errorf("output names %q %q", s.Steps[0].OutputName(), s.Steps[2].OutputName())
	}
	if p := s.Pos("steps[3].reboot"); p != "testdata/good/two-devices.yaml:11:5" {
		t.Errorf("Pos = %q", p)
	}
}

func TestLoadAll(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, doc string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "name: a\nmodel: {file: scripts/echo.script.yaml}\nsteps: [{sleep: 1s}]\n")
	write("scripts/echo.script.yaml", "steps: [{echo: true}]\n")
	write("sub/b.yml", "name: b\nsteps: [{sleep: 1s}]\n")
	write("_draft.yaml", "not: a scenario\n")
	write("testdata/c.yaml", "not: a scenario\n")
	write("notes.txt", "ignored\n")
	got, err := LoadAll([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "a" || got[1].Name != "b" {
		t.Fatalf("got %d scenarios", len(got))
	}
	if got[0].Model.Parsed == nil {
		t.Error("model file not parsed")
	}
	write("dup.yaml", "name: b\nsteps: [{sleep: 1s}]\n")
	write("broken.yaml", "name: c\n")
	_, err = LoadAll([]string{dir})
	if err == nil || !strings.Contains(err.Error(), `scenario "b" is also defined in`) || !strings.Contains(err.Error(), "broken.yaml") {
		t.Errorf("LoadAll with a duplicate and a broken file: %v", err)
	}
}

func TestIsScenarioFile(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"a.yaml": true, "a.yml": true, "dir/b.yaml": true,
		"a.script.yaml": false, "a.script.yml": false, "_a.yaml": false, ".a.yaml": false, "a.json": false,
	} {
		if got := IsScenarioFile(name); got != want {
			t.Errorf("IsScenarioFile(%q) = %v", name, got)
		}
	}
}

// TestPathReferences: a ${…} reference in any matcher path is refused at
// its line (paths are literal); a path with a plain $ is not.
func TestPathReferences(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, check string
		refused     bool
	}{
		{"in a filter", `{name: c, of: callers, path: '.callers[?packageName=="${vars.pkg}"].state', eq: allowed}`, true},
		{"as a key", `{name: c, of: callers, path: '.${vars.pkg}', exists: true}`, true},
		{"as an index", `{name: c, of: callers, path: '.callers[${vars.i}]', exists: true}`, true},
		{"escaped is still not literal text", `{name: c, of: callers, path: '.callers[?x=="$${y}"]', exists: true}`, true},
		{"nested matcher", `{name: c, of: callers, path: .callers, none: {path: '.${vars.pkg}', eq: 1}}`, true},
		{"count matcher", `{name: c, of: callers, path: .callers, count: {path: '${vars.x}', eq: 1}}`, true},
		{"group member", `{name: c, all_of: [{of: status, path: '.${vars.k}', exists: true}]}`, true},
		{"reference in a value", `{name: c, of: callers, path: '.callers[*].packageName', any: {eq: '${vars.pkg}'}}`, false},
		{"dollar at the end of a regex", `{name: c, of: callers, path: '.callers[?packageName=~"notes$"]', exists: true}`, false},
		{"escaped dollar brace in a regex", `{name: c, of: callers, path: '.callers[?packageName=~"\\$\\{"]', exists: false}`, false},
	}
	for _, c := range cases {
		doc := "name: p\nvars: {pkg: org.agentos.sample.notes, i: '1', x: a, k: b}\nsteps:\n  - sleep: 1ms\nchecks:\n  - " + c.check + "\n"
		_, err := Parse([]byte(doc), "p.yaml", nil)
		if !c.refused {
			if err != nil {
				t.Errorf("%s: refused: %v", c.name, err)
			}
			continue
		}
		var se *Error
		if !errors.As(err, &se) || len(se.Problems) != 1 {
			t.Errorf("%s: want one problem, got %v", c.name, err)
			continue
		}
		p := se.Problems[0]
		if p.File != "p.yaml" || p.Line != 6 || !strings.HasSuffix(p.Path, "path") || !strings.Contains(p.Msg, "paths are literal") {
			t.Errorf("%s: problem %q (line %d, field %s)", c.name, p.String(), p.Line, p.Path)
		}
	}
}

// TestSkeleton: the skeleton of agentlab scenarios new validates, with the
// suite's fragment and without it, and refuses names that are no file.
func TestSkeleton(t *testing.T) {
	t.Parallel()
	for _, withFragment := range []bool{true, false} {
		file := "../../scenarios/notes/create-then-get.yaml"
		b, err := Skeleton("notes/create-then-get", file, withFragment)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Parse(b, file, nil)
		if err != nil {
			t.Fatalf("fragment %v: the skeleton does not validate:\n%v\n%s", withFragment, err, b)
		}
		if s.Name != "notes/create-then-get" || s.Steps[0].Caller.App != "org.agentos.test.acp.notes.createthenget" {
			t.Errorf("skeleton %+v", s)
		}
	}
	for _, bad := range []string{"create", "a/b/c", "Notes/x", "/x", "x/"} {
		if _, err := Skeleton(bad, "x.yaml", true); err == nil {
			t.Errorf("Skeleton(%q) accepted", bad)
		}
	}
}
