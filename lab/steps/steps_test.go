package steps

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

const notesPkg = "org.agentos.sample.notes"

func env(t *testing.T, rt *fakeRuntime, dev *fakeDevice) (*Env, *fakeStub) {
	t.Helper()
	if dev == nil {
		dev = &fakeDevice{serial: "127.0.0.1:5000"}
	}
	stub := &fakeStub{}
	return &Env{
		Targets: []*Target{{Role: "device1", Device: dev, Ctl: rt, Kind: "virtual", StubToken: "tok"}},
		Stub:    stub, RunDir: t.TempDir(), RelDir: "artifacts/x/attempt-1", Attempt: 1,
	}, stub
}

// checks renders the result's checks as "name=ok" lines.
func checks(r *Result) string {
	var out []string
	for _, c := range r.Checks {
		out = append(out, fmt.Sprintf("%s=%v", c.Name, c.OK))
	}
	return strings.Join(out, " ")
}

func find(r *Result, name string) reports.Check {
	for _, c := range r.Checks {
		if c.Name == name {
			return c
		}
	}
	return reports.Check{}
}

func TestChecksAndInvariants(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		rt.apps[notesPkg] = []string{"7"}
		e, stub := env(t, rt, nil)
		s := parse(t, `
name: t
model: {script: {steps: [{text: hi}]}}
setup:
  - reset: notes
  - seed: notes
steps:
  - app: {name: notes, args: [delete]}
    save: deleted
checks:
  - {name: oneLeft, dump: notes, path: .total, eq: 1, upstream: a.py/b/oneLeft}
  - {name: deletedFirst, saved: deleted, path: .deleted, eq: "1"}
invariants:
  - nothing_deleted: [notes]
    upstream: a.py/b/nothingDeleted
`)
		r := Run(context.Background(), s, e)
		if r.Err != nil || r.LabFault != nil {
			t.Fatalf("err %v lab %v", r.Err, r.LabFault)
		}
		if got := checks(r); got != "oneLeft=true deletedFirst=true nothingDeleted=false" {
			t.Errorf("checks %s", got)
		}
		inv := find(r, "nothingDeleted")
		if inv.Evidence != "notes:1" || inv.Upstream != "a.py/b/nothingDeleted" || !strings.Contains(inv.Detail, "1 item(s) deleted") {
			t.Errorf("invariant %+v", inv)
		}
		if find(r, "oneLeft").Upstream != "a.py/b/oneLeft" {
			t.Error("upstream lost")
		}
		if stub.bound["tok"] == nil {
			t.Error("the model script was not bound to the device's token")
		}
		if !r.Failed() {
			t.Error("Failed() = false with a failed invariant")
		}
	})
}

// TestChecksByDeviceKind: a check for other device kinds (an Android UI
// check on a virtual device) is skipped with the reason and never
// evaluated; it neither passes nor fails the attempt. On a device of its
// kind it is evaluated like any other.
func TestChecksByDeviceKind(t *testing.T) {
	const sc = `
name: t
steps:
  - check: {name: midway, kinds: [phone], shell: "dumpsys activity processes", path: .stdout, contains: isFrozen=false}
checks:
  - {name: everywhere, of: status, exists: true}
  - {name: onPhones, kinds: [phone, emulator], shell: "dumpsys notification", path: .stdout, contains: desktop_access}
`
	for _, tc := range []struct {
		kind, want string
		skipped    bool
		failed     bool
	}{
		{"virtual", "midway=false everywhere=true onPhones=false", true, false},
		{"phone", "midway=false everywhere=true onPhones=false", false, true},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := newRuntime()
				var ran []string
				dev := &fakeDevice{serial: "127.0.0.1:5000", shell: func(cmd string, _ bool) (devices.Result, error) {
					ran = append(ran, cmd)
					return devices.Result{Stdout: []byte("nothing here")}, nil
				}}
				e, _ := env(t, rt, dev)
				e.Targets[0].Kind = tc.kind
				r := Run(context.Background(), parse(t, sc), e)
				require.NoError(t, r.Err)
				assert.Equal(t, tc.want, checks(r))
				for _, name := range []string{"midway", "onPhones"} {
					c := find(r, name)
					assert.Equal(t, tc.skipped, c.Skipped, name)
					assert.Equal(t, tc.failed, c.Failed(), name)
					if tc.skipped {
						assert.Equal(t, "skipped: not applicable on virtual devices", c.Detail, name)
					}
				}
				assert.Equal(t, tc.failed, r.Failed())
				assert.Equal(t, tc.skipped, !slices.ContainsFunc(ran, func(cmd string) bool { return strings.Contains(cmd, "dumpsys") }),
					"a skipped check ran its command, or an applicable one did not")
			})
		})
	}
}

// TestChaosModelBound: a scenario's model: {chaos: {seed}} binds the
// chaos model with its seed to the device's token, not a script.
func TestChaosModelBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, stub := env(t, newRuntime(), nil)
		r := Run(context.Background(), parse(t, "name: t\nmodel: {chaos: {seed: 17}}\nsteps:\n  - sleep: 1ms\n"), e)
		require.NoError(t, r.Err)
		assert.Equal(t, map[string]int64{"tok": 17}, stub.chaos)
		assert.NotContains(t, stub.bound, "tok")
	})
}

// TestStepFailure: a failed step is a failed check; the named checks are
// not reached; invariants are still evaluated.
func TestStepFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		rt.apps[notesPkg] = []string{"1"}
		e, _ := env(t, rt, nil)
		s := parse(t, `
name: t
steps:
  - app: {name: notes, args: [crash]}
  - app: {name: notes, args: [delete]}
checks:
  - {name: never, of: status, exists: true}
invariants:
  - nothing_deleted: notes
`)
		r := Run(context.Background(), s, e)
		if r.Err == nil || r.LabFault != nil {
			t.Fatalf("err %v lab %v", r.Err, r.LabFault)
		}
		if got := checks(r); got != "step 1 app=false never=false nothingDeleted=true" {
			t.Errorf("checks %s", got)
		}
		if d := find(r, "never").Detail; d != "not reached: step 1 app failed" {
			t.Errorf("detail %q", d)
		}
		if d := find(r, "step 1 app").Detail; !strings.Contains(d, "notes crash exited 2: boom") {
			t.Errorf("step detail %q", d)
		}
		if slices.Contains(rt.verbs(), "app run "+notesPkg+" -- delete") {
			t.Error("a step after the failure ran")
		}
	})
}

func TestAllowError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		rt.fail["callers remove"] = errcode.New(errcode.InvalidParams, "agentos.acp.not_found: a.b").WithDetails(map[string]any{"reason": "not_found"})
		e, _ := env(t, rt, nil)
		s := parse(t, `
name: t
steps:
  - callers: {remove: a.b}
    allow_error: true
    save: removed
checks:
  - {name: notFound, saved: removed, path: .error.details.reason, eq: not_found}
  - {name: code, saved: removed, path: .error.code, eq: invalid_params}
`)
		r := Run(context.Background(), s, e)
		if got := checks(r); got != "notFound=true code=true" || r.Err != nil {
			t.Errorf("checks %s err %v", got, r.Err)
		}
	})
}

// TestLabFault: a device that goes away ends the attempt as a lab fault,
// not a product failure.
func TestLabFault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		dev := &fakeDevice{serial: "s"}
		e, _ := env(t, rt, dev)
		s := parse(t, "name: t\nsteps:\n  - run: {shell: 'true'}\n  - run: {shell: 'true'}\n")
		dev.gone = true
		r := Run(context.Background(), s, e)
		if r.LabFault == nil || r.Err != nil || !IsLabFault(r.LabFault) {
			t.Errorf("lab %v err %v", r.LabFault, r.Err)
		}
		// A cancelled attempt whose cause is a lost lease is a lab fault too.
		dev.gone = false
		ctx, cancel := context.WithCancelCause(context.Background())
		cancel(fmt.Errorf("s: %w", errLeaseLostForTest))
		r = Run(ctx, s, e)
		if r.LabFault == nil {
			t.Errorf("lost lease: lab %v err %v", r.LabFault, r.Err)
		}
	})
}

var errLeaseLostForTest = fmt.Errorf("lease: %w", ErrLabFault)

// TestTimeoutIsProduct: the scenario's timeout is a product failure.
func TestTimeoutIsProduct(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		rt.delay["status"] = time.Hour
		e, _ := env(t, rt, nil)
		s := parse(t, "name: t\nsteps:\n  - run: {ctl: [status]}\n    timeout: 2h\nchecks:\n  - {name: c, of: callers, exists: true}\n")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r := Run(ctx, s, e)
		if r.LabFault != nil || r.Err == nil || !strings.Contains(r.Err.Error(), "timed out") {
			t.Errorf("lab %v err %v", r.LabFault, r.Err)
		}
	})
}

func TestConsentDriver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		e, _ := env(t, rt, nil)
		s := parse(t, `
name: t
setup:
  - consent:
      rules:
        - {index: 1, choice: DENY}
        - {tool: "event_create|Create an alarm", choice: ALLOW_ONCE}
        - {risk: high, choice: DENY}
      default: none
      interval: 100ms
steps:
  - sleep: 5s
checks:
  - {name: four, of: cards, len: 4}
  - {name: firstDenied, of: cards, path: '[0].answeredWith', eq: DENY}
  - {name: initiator, of: cards, all: {path: .initiatorLine, contains: org.agentos.sample.notes}}
  - {name: noneLeftAlone, of: cards, path: '[?answeredWith==""]', count: 0}
invariants:
  - cards_only: [event_create, alarm_create, Create an alarm]
`)
		go func() {
			time.Sleep(time.Second)
			rt.addCard("req_1", "mcp__calendar__calendar__event_create", "Create event", "write", notesPkg)
			time.Sleep(time.Second)
			rt.addCard("req_2", "mcp__calendar__calendar__event_create", "Create event", "write", notesPkg)
			rt.addCard("req_3", "mcp__alarm__alarm__alarm_create", "Create an alarm", "write", notesPkg)
			time.Sleep(time.Second)
			rt.addCard("req_4", "mcp__notes__notes__note_delete", "Delete note", "high", notesPkg)
		}()
		r := Run(context.Background(), s, e)
		if got := checks(r); got != "four=true firstDenied=true initiator=true noneLeftAlone=true cardsOnly=false" {
			t.Errorf("checks %s", got)
		}
		want := map[string]string{"req_1": "DENY", "req_2": "ALLOW_ONCE", "req_3": "ALLOW_ONCE", "req_4": "DENY"}
		for id, c := range want {
			if rt.answers[id] != c {
				t.Errorf("%s answered %q, want %q", id, rt.answers[id], c)
			}
		}
		if rt.mode != "off" {
			t.Errorf("consent mode %q, want off while the driver answers", rt.mode)
		}
		if d := find(r, "cardsOnly").Detail; !strings.Contains(d, "Delete note") {
			t.Errorf("cardsOnly detail %q", d)
		}
	})
}

func TestTap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		e, _ := env(t, rt, nil)
		s := parse(t, `
name: t
steps:
  - consent: {mode: off}
  - tap: {card: 2, choice: ALLOW_ONCE}
    save: tapped
  - tap: {card: 2, choice: DENY}
    allow_error: true
`)
		go func() {
			time.Sleep(2 * time.Second)
			rt.addCard("req_a", "x", "X", "write", notesPkg)
			time.Sleep(time.Second)
			rt.addCard("req_b", "y", "Y", "write", notesPkg)
		}()
		r := Run(context.Background(), s, e)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		if rt.answers["req_b"] != "ALLOW_ONCE" || rt.answers["req_a"] != "" {
			t.Errorf("answers %v", rt.answers)
		}
	})
}

func TestBackgroundTimingWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		rt.apps[notesPkg] = []string{"1"}
		rt.delay["app run"] = 3 * time.Second
		e, _ := env(t, rt, nil)
		s := parse(t, `
name: t
steps:
  - name: slow
    ask: {app: notes, args: {note_id: 1}}
    background: true
  - name: mark
    sleep: 1s
  - wait:
      until: {of: callers, path: .channels.thirdParty, eq: 1}
      timeout: 2s
      check: {name: neverOpened, upstream: a.py/b/neverOpened}
  - await: ask
checks:
  - {name: askDone, saved: ask, path: .state, eq: done}
  - {name: slowTook3s, timing: {step: slow, min: 3s, max: 4s}}
  - {name: markWithin, timing: {from: slow, to: mark, max: 1500ms}}
`)
		r := Run(context.Background(), s, e)
		if got := checks(r); got != "neverOpened=false askDone=true slowTook3s=true markWithin=true" {
			t.Errorf("checks %s (err %v)", got, r.Err)
		}
		if d := find(r, "neverOpened").Detail; !strings.Contains(d, "did not hold within 2s") {
			t.Errorf("wait detail %q", d)
		}
		var askArgs string
		for _, c := range rt.verbs() {
			if strings.Contains(c, "ask_agent") {
				askArgs = c
			}
		}
		if !strings.Contains(askArgs, `{"note_id":1}`) || !strings.Contains(askArgs, "--timeout") {
			t.Errorf("ask call %q", askArgs)
		}
	})
}

func TestReferences(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		rt.apps[notesPkg] = nil
		e, _ := env(t, rt, nil)
		s := parse(t, `
name: t
vars: {who: lab}
setup:
  - seed: notes
    save: seeded
steps:
  - app: {name: notes, args: [dump]}
    save: d
  - ask: {app: notes, args: {note_id: '${d.notes[1].id}', text: 'from ${vars.who} on ${device.serial}'}}
`)
		r := Run(context.Background(), s, e)
		if r.Err != nil {
			t.Fatal(r.Err)
		}
		var ask string
		for _, c := range rt.verbs() {
			if strings.Contains(c, "ask_agent") {
				ask = c
			}
		}
		if !strings.Contains(ask, `"note_id":"2"`) || !strings.Contains(ask, `"text":"from lab on 127.0.0.1:5000"`) {
			t.Errorf("ask %q", ask)
		}
	})
}

func TestCollect(t *testing.T) {
	rt := newRuntime()
	rt.apps[notesPkg] = []string{"1"}
	dev := &fakeDevice{serial: "s", shell: func(cmd string, su bool) (devices.Result, error) {
		switch {
		case strings.HasPrefix(cmd, "stat"):
			return devices.Result{Stdout: []byte("5\n10\n")}, nil
		case strings.Contains(cmd, "runtime.log"):
			return devices.Result{Stdout: []byte("runtime lines\n")}, nil
		case cmd == "getprop":
			return devices.Result{Stdout: []byte("[ro.product.model]: [x]\n")}, nil
		}
		return devices.Result{}, nil
	}}
	e, _ := env(t, rt, dev)
	s := parse(t, "name: t\nneeds: {apps: [notes]}\nsteps:\n  - run: {shell: 'true'}\n")
	r := Run(context.Background(), s, e)
	arts, err := r.Collect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range arts {
		names = append(names, filepath.Base(a.Path)+":"+string(a.Kind))
		if _, err := os.Stat(filepath.Join(e.RunDir, a.Path)); err != nil || !strings.HasPrefix(a.Path, "artifacts/x/attempt-1/") || len(a.SHA256) != 64 {
			t.Errorf("artifact %+v: %v", a, err)
		}
	}
	slices.Sort(names)
	want := "consent-recent.json:consent-audit dump-notes.json:dump model-requests.json:other props.txt:props runtime.log:log steps.json:other"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("artifacts\n got %s\nwant %s", got, want)
	}
	var steps []StepRecord
	b, _ := os.ReadFile(filepath.Join(e.RunDir, "artifacts/x/attempt-1/steps.json"))
	if json.Unmarshal(b, &steps) != nil || len(steps) != 1 || steps[0].Kind != "run" {
		t.Errorf("steps.json %s", b)
	}
	found := false
	for _, c := range rt.verbs() {
		found = found || c == "app run "+notesPkg+" -- dump"
	}
	if !found {
		t.Error("the needed app was not dumped")
	}
}

func TestCountTouches(t *testing.T) {
	start := time.Unix(1700000000, 0)
	log := []byte(`--------- beginning of events
1699999999.500  1000  1000 I input_interaction: Interaction with: org.agentos.app/.MainActivity
1700000001.250  1000  1000 I input_interaction: Interaction with: org.agentos.sample.notes/.Main
1700000002.000  1000  1000 I input_interaction: Interaction with: com.android.launcher3
1700000003.000  1000  1000 I input_interaction: Interaction with: org.agentos.app/.MainActivity
garbage line agentos input_interaction
`)
	if n := CountTouches(log, start); n != 2 {
		t.Errorf("CountTouches = %d, want 2", n)
	}
	if n := CountTouches(nil, start); n != 0 {
		t.Errorf("empty log: %d", n)
	}
}

// TestTouchesOnRealDevicesOnly: virtual devices are never asked for
// touches; a phone's touches are counted.
func TestTouchesOnRealDevicesOnly(t *testing.T) {
	asked := 0
	now := time.Now()
	dev := &fakeDevice{serial: "phone", shell: func(cmd string, su bool) (devices.Result, error) {
		if strings.HasPrefix(cmd, "logcat") {
			asked++
			line := fmt.Sprintf("%d.000  1 1 I input_interaction: Interaction with: org.agentos.app\n", now.Add(time.Hour).Unix())
			return devices.Result{Stdout: []byte(line)}, nil
		}
		return devices.Result{}, nil
	}}
	rt := newRuntime()
	e, _ := env(t, rt, dev)
	s := parse(t, "name: t\nsteps:\n  - run: {shell: 'true'}\n")
	if r := Run(context.Background(), s, e); r.Touches != 0 || asked != 0 {
		t.Errorf("virtual: touches %d asked %d", r.Touches, asked)
	}
	e.Targets[0].Kind = "phone"
	if r := Run(context.Background(), s, e); r.Touches != 1 || asked != 1 {
		t.Errorf("phone: touches %d asked %d", r.Touches, asked)
	}
}

// TestToggles: plugins are named by id, name or app; tools by final name.
func TestToggles(t *testing.T) {
	rt := newRuntime()
	e, _ := env(t, rt, nil)
	s := parse(t, `
name: t
steps:
  - plugins: {enable: [mcptest], disable: [org.agentos.test.mcp.plugin/agent-plugin]}
  - tools: {disable: [mcp__mcptest__test__wipe]}
  - plugins: {enable: [nothing-like-it]}
    allow_error: true
    save: missing
checks:
  - {name: missing, saved: missing, path: .error.message, contains: 'no plugin "nothing-like-it"'}
`)
	r := Run(context.Background(), s, e)
	if got := checks(r); got != "missing=true" || r.Err != nil {
		t.Errorf("checks %s err %v", got, r.Err)
	}
	calls := strings.Join(rt.verbs(), "\n")
	for _, want := range []string{"plugins enable org.agentos.test.mcp.plugin/agent-plugin", "plugins disable org.agentos.test.mcp.plugin/agent-plugin",
		"plugins tool-disable mcp__mcptest__test__wipe"} {
		if !strings.Contains(calls, want) {
			t.Errorf("no call %q in\n%s", want, calls)
		}
	}
}

// TestAppCommandTimeout: an app command may run as long as its step allows
// (a little less, so the launcher's kill is what the step reports), within
// the launcher's maximum — a step of 150 s must not be cut at the
// launcher's 60 s default.
func TestAppCommandTimeout(t *testing.T) {
	for _, tc := range []struct{ step, want string }{
		{"", "--timeout 55s"},
		{"timeout: 150s", "--timeout 2m25s"},
		{"timeout: 20m", "--timeout 10m0s"},
		{"timeout: 3s", "--timeout 1s"},
	} {
		t.Run(tc.step, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rt := newRuntime()
				rt.apps[notesPkg] = []string{"1"}
				e, _ := env(t, rt, nil)
				s := parse(t, `
name: t
steps:
  - app: {name: notes, args: [dump]}
    `+tc.step+`
`)
				if r := Run(context.Background(), s, e); r.Err != nil {
					t.Fatal(r.Err)
				}
				want := "app run " + notesPkg + " " + tc.want + " -- dump"
				if !slices.Contains(rt.verbs(), want) {
					t.Errorf("ctl calls %q, want %q", rt.verbs(), want)
				}
			})
		})
	}
}

// TestModelRequestsOnLiveModel: with a live model the lab records no
// requests, so of: model_requests is the empty list — count: 0 and an
// any_of written for live runs hold, a check that needs a request fails —
// and the evidence (and a failure's detail) says the model is live. With
// the stub the recorded requests are tested as before.
func TestModelRequestsOnLiveModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, check string
		live        bool
		ok          bool
		evidence    string // exact
		detail      string // contained
	}{
		{"count 0", `{name: c, of: model_requests, count: 0}`, true, true,
			"the model is live: no requests were recorded: []", ""},
		{"count 0 over every request", `{name: c, of: model_requests, path: '[*]', count: 0}`, true, true,
			"the model is live: no requests were recorded: null", ""},
		{"len 0", `{name: c, of: model_requests, len: 0}`, true, true,
			"the model is live: no requests were recorded: []", ""},
		{"none offered a delete tool", `{name: c, of: model_requests, path: '[*].tools', none: {contains: notes_delete}}`, true, true,
			"the model is live: no requests were recorded: null", ""},
		{"any_of outcome for live runs", `{name: c, any_of: [{of: model_requests, path: '[*].tools', any: {contains: notes_create}}, {of: model_requests, count: 0}]}`, true, true,
			"the model is live: no requests were recorded: []", "outcome 2 of 2"},
		{"a request needed", `{name: c, of: model_requests, path: '[0].tools', exists: true}`, true, false,
			"the model is live: no requests were recorded: null",
			"model_requests (the model is live: no requests were recorded): [0].tools selects nothing"},
		{"count 1 fails", `{name: c, of: model_requests, count: {ge: 1}}`, true, false,
			"the model is live: no requests were recorded: []", "count: got 0, want >= 1"},
		{"stub: recorded requests counted", `{name: c, of: model_requests, count: 1}`, false, true,
			"", ""},
		{"stub: recorded tools", `{name: c, of: model_requests, path: '[0].tools', contains: notes_create}`, false, true,
			`["notes_create"]`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				e, stub := env(t, newRuntime(), nil)
				if tt.live {
					e.Stub, e.Targets[0].StubToken = nil, ""
				} else {
					stub.reqs = []modelstub.Recorded{{Model: "stub", Tools: []string{"notes_create"}, Status: 200}}
				}
				s := parse(t, "name: t\nsteps:\n  - sleep: 1ms\nchecks:\n  - "+tt.check+"\n")
				r := Run(context.Background(), s, e)
				if r.Err != nil || r.LabFault != nil {
					t.Fatalf("err %v lab %v", r.Err, r.LabFault)
				}
				c := find(r, "c")
				if c.OK != tt.ok {
					t.Errorf("ok = %v, want %v (detail %q)", c.OK, tt.ok, c.Detail)
				}
				if tt.evidence != "" && c.Evidence != tt.evidence {
					t.Errorf("evidence %q, want %q", c.Evidence, tt.evidence)
				}
				if tt.live && !strings.Contains(c.Evidence, "the model is live") {
					t.Errorf("evidence %q does not say the model is live", c.Evidence)
				}
				if !tt.live && strings.Contains(c.Evidence+c.Detail, "live") {
					t.Errorf("a stub run's check says live: %+v", c)
				}
				if !strings.Contains(c.Detail, tt.detail) {
					t.Errorf("detail %q, want it to contain %q", c.Detail, tt.detail)
				}
			})
		})
	}
}

// recordingStub is a stub that records, as a record run's does.
type recordingStub struct {
	fakeStub
	script string
}

func (s *recordingStub) Recording(_ context.Context, token string) ([]byte, bool, error) {
	return []byte(s.script), true, nil
}

// TestCollectRecording: with a recording stub every attempt keeps the
// device's model script and the manifest replay reads — the scenario
// file, the verdict and the steps that ran. Without one, neither.
func TestCollectRecording(t *testing.T) {
	rt := newRuntime()
	e, _ := env(t, rt, nil)
	rec := &recordingStub{script: "steps:\n  - text: hi\n"}
	e.Stub = rec
	s := parse(t, "name: t\nsteps:\n  - run: {shell: 'true'}\n")
	r := Run(context.Background(), s, e)
	arts, err := r.Collect(context.Background())
	require.NoError(t, err)
	dir := filepath.Join(e.RunDir, "artifacts/x/attempt-1")
	b, err := os.ReadFile(filepath.Join(dir, ScriptFile("")))
	require.NoError(t, err)
	assert.Equal(t, rec.script, string(b))
	b, err = os.ReadFile(filepath.Join(dir, RecordingFile))
	require.NoError(t, err)
	var man Recording
	require.NoError(t, yaml.Unmarshal(b, &man))
	assert.Equal(t, "t", man.Scenario)
	assert.Equal(t, "test.yaml", man.File)
	assert.Equal(t, "pass", man.Verdict)
	assert.Equal(t, map[string]string{"device1": ScriptFile("")}, man.Scripts)
	require.Len(t, man.Steps, 1)
	assert.Equal(t, "run", man.Steps[0].Kind)
	names := map[string]bool{}
	for _, a := range arts {
		names[filepath.Base(a.Path)] = true
	}
	assert.True(t, names[RecordingFile] && names[ScriptFile("")], "both are listed as artifacts")

	e, _ = env(t, rt, nil)
	r = Run(context.Background(), s, e)
	_, err = r.Collect(context.Background())
	require.NoError(t, err)
	assert.NoFileExists(t, filepath.Join(e.RunDir, "artifacts/x/attempt-1", RecordingFile))
}

// TestRestartStartsAKilledRuntime: restart: runtime after kill: runtime
// (an idle runtime killed is left dead until the supervisor is kicked)
// kicks the supervisor and waits for the runtime, instead of failing on
// the status it cannot read.
func TestRestartStartsAKilledRuntime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		rt.fail["status"] = errors.New("agentosd ctl status: runtime not reachable on the device")
		var kicks int
		dev := &fakeDevice{serial: "127.0.0.1:5000", shell: func(cmd string, su bool) (devices.Result, error) {
			if strings.Contains(cmd, "kill -USR1") {
				kicks++
				rt.mu.Lock()
				delete(rt.fail, "status")
				rt.mu.Unlock()
			}
			return devices.Result{}, nil
		}}
		e, _ := env(t, rt, dev)
		r := Run(context.Background(), parse(t, "name: t\nsteps:\n  - restart: runtime\n"), e)
		require.NoError(t, r.Err)
		assert.False(t, r.Failed(), "checks %s", checks(r))
		assert.Equal(t, 1, kicks, "the supervisor was kicked")
	})
}
