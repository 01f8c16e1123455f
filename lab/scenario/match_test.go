package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// matcherOf parses a check's matcher from YAML, through the real parser.
func checkOf(t testing.TB, yamlCheck string) *Check {
	t.Helper()
	s, err := Parse([]byte("name: m\nsteps: [{sleep: 1s, name: s1}, {sleep: 1s, name: s2}]\nchecks:\n  - "+yamlCheck+"\n"), "m.yaml", nil)
	if err != nil {
		t.Fatalf("%s: %v", yamlCheck, err)
	}
	return &s.Checks[0]
}

func TestMatcher(t *testing.T) {
	t.Parallel()
	v := doc(t, callersDoc)
	look := func(name string) (any, bool) {
		if name == "vars" {
			return map[string]any{"pkg": "org.agentos.sample.sms", "n": 1.0}, true
		}
		return nil, false
	}
	cases := []struct {
		check string
		ok    bool
		// detail is a substring of the failure detail.
		detail string
	}{
		{`{name: c, of: callers, path: .channels.thirdParty, eq: 1}`, true, ""},
		{`{name: c, of: callers, path: .channels.thirdParty, eq: 0}`, false, "got 1, want 0"},
		{`{name: c, of: callers, path: .channels.thirdParty, ne: 0}`, true, ""},
		{`{name: c, of: callers, path: .channels.thirdParty, ne: 1}`, false, "anything else"},
		{`{name: c, of: callers, path: .channels.open, gt: 1, lt: 3, ge: 2, le: 2}`, true, ""},
		{`{name: c, of: callers, path: .channels.open, gt: 2}`, false, "want > 2"},
		{`{name: c, of: callers, path: '.callers[0].state', gt: 2}`, false, "want a number"},
		{`{name: c, of: callers, path: '.callers[0].state', in: [pending, allowed]}`, true, ""},
		{`{name: c, of: callers, path: '.callers[0].state', in: [pending, denied]}`, false, "want one of [pending, denied]"},
		{`{name: c, of: callers, path: '.callers[0].packageName', contains: sample}`, true, ""},
		{`{name: c, of: callers, path: .tags, contains: "b b"}`, true, ""},
		{`{name: c, of: callers, path: .tags, contains: d}`, false, "does not contain"},
		{`{name: c, of: callers, path: .channels, contains: open}`, true, ""},
		{`{name: c, of: callers, path: '.callers[0].signingDigest', matches: '^[0-9a-f]{64}$'}`, true, ""},
		{`{name: c, of: callers, path: '.callers[1].state', matches: '^a'}`, false, "does not match"},
		{`{name: c, of: callers, path: .callers, len: 3}`, true, ""},
		{`{name: c, of: callers, path: .callers, len: {gt: 3}}`, false, "len: got 3, want > 3"},
		{`{name: c, of: callers, path: '.callers[0].state', len: 7}`, true, ""},
		{`{name: c, of: callers, path: .channels.open, len: 1}`, false, "no length"},
		{`{name: c, of: callers, path: '.callers[*].state', count: 3}`, true, ""},
		{`{name: c, of: callers, path: '.callers[?state=="x"]', count: 0}`, true, ""},
		{`{name: c, of: callers, path: '.callers[*].state', eq: allowed}`, false, "selects 3 values"},
		{`{name: c, of: callers, path: .callers, count: 1}`, true, ""},
		{`{name: c, of: callers, count: 1}`, true, ""},
		{`{name: c, of: callers, path: '.callers[*].usage.activeTasks', all: {le: 1}}`, true, ""},
		{`{name: c, of: callers, path: '.callers[*].usage.activeTasks', all: {eq: 0}}`, false, "all: element 0"},
		{`{name: c, of: callers, path: .callers, any: {path: .state, eq: denied}}`, true, ""},
		{`{name: c, of: callers, path: .callers, any: {path: .state, eq: gone}}`, false, "no element matches"},
		{`{name: c, of: callers, path: .callers, none: {path: .state, eq: gone}}`, true, ""},
		{`{name: c, of: callers, path: .callers, none: {path: .state, eq: pending}}`, false, "none: element 1"},
		{`{name: c, of: callers, path: .empty, all: {eq: 1}}`, true, ""},
		{`{name: c, of: callers, path: .channels.open, not: {eq: 3}}`, true, ""},
		{`{name: c, of: callers, path: .channels.open, not: {eq: 2}}`, false, "not: the value matches"},
		{`{name: c, of: callers, path: .missing, exists: false}`, true, ""},
		{`{name: c, of: callers, path: .null, exists: false}`, true, ""},
		{`{name: c, of: callers, path: .channels, exists: false}`, false, "want nothing"},
		{`{name: c, of: callers, path: .missing, exists: true}`, false, "selects nothing"},
		{`{name: c, of: callers, path: .missing}`, false, "selects nothing"},
		{`{name: c, of: callers, path: .channels}`, true, ""},
		{`{name: c, of: callers, path: .missing, eq: 1}`, false, "selects nothing"},
		{`{name: c, of: callers, path: '.callers[1].packageName', eq: '${vars.pkg}'}`, true, ""},
		{`{name: c, of: callers, path: '.channels.thirdParty', eq: '${vars.n}'}`, true, ""},
		{`{name: c, of: callers, path: '.channels.thirdParty', eq: '${vars.none}'}`, false, "selects nothing"},
		{`{name: c, of: callers, path: '.channels', eq: {thirdParty: 1, open: 2}}`, true, ""},
	}
	for _, c := range cases {
		ch := checkOf(t, c.check)
		ok, detail, _, err := ch.Eval(func(*Condition) (any, error) { return v, nil }, look)
		if err != nil {
			t.Errorf("%s: %v", c.check, err)
		}
		if ok != c.ok || !strings.Contains(detail, c.detail) {
			t.Errorf("%s: ok=%v detail=%q, want ok=%v detail containing %q", c.check, ok, detail, c.ok, c.detail)
		}
	}
}

func TestConditionGroups(t *testing.T) {
	t.Parallel()
	values := map[string]any{
		"dump alarm":    doc(t, `{"alarms": []}`),
		"dump calendar": doc(t, `{"events": [{"title": "weekly run", "rrule": "FREQ=WEEKLY"}]}`),
	}
	fetch := func(c *Condition) (any, error) {
		if c.Timing != nil {
			return 1500 * time.Millisecond, nil
		}
		v, ok := values[c.SubjectName()]
		if !ok {
			return nil, errors.New("device gone")
		}
		return v, nil
	}
	cases := []struct {
		check  string
		ok     bool
		detail string
		err    bool
	}{
		{`{name: c, any_of: [{dump: alarm, path: .alarms, len: {ge: 1}}, {dump: calendar, path: '.events[*].rrule', any: {contains: WEEKLY}}]}`, true, "outcome 2 of 2", false},
		{`{name: c, any_of: [{dump: alarm, path: .alarms, len: 1}, {dump: calendar, path: .events, len: 2}]}`, false, "no accepted outcome", false},
		{`{name: c, all_of: [{dump: alarm, path: .alarms, len: 0}, {dump: calendar, path: .events, len: 1}]}`, true, "", false},
		{`{name: c, all_of: [{dump: alarm, path: .alarms, len: 0}, {dump: calendar, path: .events, len: 0}]}`, false, "all_of[1]", false},
		{`{name: c, all_of: [{dump: todo, path: .todos, len: 0}]}`, false, "device gone", true},
		{`{name: c, timing: {step: s1, max: 2s}}`, true, "", false},
		{`{name: c, timing: {step: s1, max: 1s}}`, false, "want at most 1s", false},
		{`{name: c, timing: {from: s1, to: s2.end, min: 2s}}`, false, "want at least 2s", false},
	}
	for _, c := range cases {
		ch := checkOf(t, c.check)
		ok, detail, _, err := ch.Eval(fetch, nil)
		if ok != c.ok || !strings.Contains(detail, c.detail) || (err != nil) != c.err {
			t.Errorf("%s: ok=%v detail=%q err=%v; want ok=%v detail~%q err=%v", c.check, ok, detail, err, c.ok, c.detail, c.err)
		}
	}
}

// TestCountWithoutPath: without a path, count counts a list subject's
// elements (nothing is selected but the subject); another subject counts
// as one value.
func TestCountWithoutPath(t *testing.T) {
	t.Parallel()
	cases := []struct {
		subject string
		check   string
		ok      bool
		detail  string
	}{
		{`[]`, `count: 0`, true, ""},
		{`[]`, `count: {ge: 1}`, false, "count: got 0, want >= 1"},
		{`[{"a": 1}, {"a": 2}]`, `count: 2`, true, ""},
		{`[{"a": 1}, {"a": 2}]`, `path: '[*]', count: 2`, true, ""},
		{`[{"a": 1}, {"a": 2}]`, `path: '[?a==2]', count: 1`, true, ""},
		{`[[1, 2, 3]]`, `path: '[0]', count: 1`, true, ""},
		{`{"a": [1]}`, `count: 1`, true, ""},
		{`null`, `count: 1`, true, ""},
	}
	for _, c := range cases {
		ch := checkOf(t, "{name: c, of: cards, "+c.check+"}")
		v := doc(t, c.subject)
		ok, detail, _, err := ch.Eval(func(*Condition) (any, error) { return v, nil }, nil)
		if err != nil || ok != c.ok || !strings.Contains(detail, c.detail) {
			t.Errorf("%s over %s: ok=%v detail=%q err=%v, want ok=%v detail~%q", c.check, c.subject, ok, detail, err, c.ok, c.detail)
		}
	}
}

// TestNotedSubject: a Noted subject is tested by its value; its note
// leads the evidence and names the subject in a failure's detail, inside
// groups too.
func TestNotedSubject(t *testing.T) {
	t.Parallel()
	const note = "the model is live: no requests were recorded"
	fetch := func(c *Condition) (any, error) {
		if c.Of == OfModelRequests {
			return Noted{Value: []any{}, Note: note}, nil
		}
		return doc(t, `{"safeMode": false}`), nil
	}
	cases := []struct {
		check, evidence, detail string
		ok                      bool
	}{
		{`{name: c, of: model_requests, count: 0}`, note + ": []", "", true},
		{`{name: c, of: model_requests, len: 0}`, note + ": []", "", true},
		{`{name: c, of: model_requests, path: '[*].tools', none: {contains: x}}`, note + ": null", "", true},
		{`{name: c, of: model_requests, path: '[0].system', exists: true}`, note + ": null",
			"model_requests (" + note + "): [0].system selects nothing", false},
		{`{name: c, all_of: [{of: status, path: .safeMode, eq: false}, {of: model_requests, count: 0}]}`, "false; " + note + ": []", "", true},
		{`{name: c, any_of: [{of: model_requests, count: 1}, {of: status, path: .safeMode, eq: true}]}`, "",
			"[0] model_requests (" + note + "): count: got 0, want 1", false},
	}
	for _, c := range cases {
		ok, detail, evidence, err := checkOf(t, c.check).Eval(fetch, nil)
		if err != nil || ok != c.ok || evidence != c.evidence || !strings.Contains(detail, c.detail) {
			t.Errorf("%s: ok=%v evidence=%q detail=%q err=%v; want ok=%v evidence=%q detail~%q",
				c.check, ok, evidence, detail, err, c.ok, c.evidence, c.detail)
		}
	}
}
