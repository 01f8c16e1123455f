package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"

	"github.com/stretchr/testify/assert"
)

// verdictCase is one table case: scenarios with their executor scripts,
// and what the run must report.
type verdictCase struct {
	name string
	// scenarios maps a scenario document (name: …) to its script.
	scenarios []scriptedScenario
	devices   []string
	opts      func(*Options)
	// want maps scenario name → verdict and attempt verdicts ("pass fail").
	want map[string]wantScenario
	// check runs extra assertions.
	check func(t *testing.T, res *Result, l *fakeLeaser, e *fakeExecutor)
}

type scriptedScenario struct {
	doc    string
	script []string
}

type wantScenario struct {
	verdict  reports.Verdict
	attempts string
	reason   string
}

func sc(name string, script ...string) scriptedScenario {
	return scriptedScenario{doc: "name: " + name + "\nsteps: [{sleep: 1s}]\n", script: script}
}

func scDoc(doc string, script ...string) scriptedScenario {
	return scriptedScenario{doc: doc, script: script}
}

func attemptsOf(s reports.Scenario) string {
	var v []string
	for _, a := range s.Attempts {
		w := string(a.Verdict)
		if a.LabFault {
			w += "(lab)"
		}
		v = append(v, w)
	}
	return strings.Join(v, " ")
}

func TestVerdicts(t *testing.T) {
	cases := []verdictCase{
		{name: "pass", scenarios: []scriptedScenario{sc("a", "pass")},
			want: map[string]wantScenario{"a": {reports.VerdictPass, "pass", ""}}},
		{name: "fail on every attempt", scenarios: []scriptedScenario{sc("a", "fail")},
			want: map[string]wantScenario{"a": {reports.VerdictFail, "fail fail", "failed: named: got 1, want 0"}}},
		{name: "flaky", scenarios: []scriptedScenario{sc("a", "fail", "pass")},
			want: map[string]wantScenario{"a": {reports.VerdictFlaky, "fail pass", "passed on attempt 2 after a failure"}}},
		{name: "per-scenario attempts", scenarios: []scriptedScenario{scDoc("name: a\nattempts: 3\nsteps: [{sleep: 1s}]\n", "fail", "fail", "pass")},
			want: map[string]wantScenario{"a": {reports.VerdictFlaky, "fail fail pass", ""}}},
		{name: "attempts 1 never retries", scenarios: []scriptedScenario{scDoc("name: a\nattempts: 1\nsteps: [{sleep: 1s}]\n", "fail", "pass")},
			want: map[string]wantScenario{"a": {reports.VerdictFail, "fail", ""}}},
		{name: "lab fault re-queued on the other device",
			scenarios: []scriptedScenario{sc("a", "lab", "pass")},
			want:      map[string]wantScenario{"a": {reports.VerdictPass, "error(lab) pass", ""}},
			check: func(t *testing.T, res *Result, l *fakeLeaser, e *fakeExecutor) {
				a := res.Scenarios[0].Attempts
				if a[0].Device == a[1].Device {
					t.Errorf("re-queued on the same device %s", a[0].Device)
				}
				if !slices.Contains(l.released, a[0].Device+":adb: device gone") {
					t.Errorf("the failed device was not released with a fault: %v", l.released)
				}
			}},
		{name: "device lost mid-attempt is an error, not a failure",
			scenarios: []scriptedScenario{sc("a", "lost", "pass")},
			want:      map[string]wantScenario{"a": {reports.VerdictPass, "error(lab) pass", ""}},
			check: func(t *testing.T, res *Result, l *fakeLeaser, e *fakeExecutor) {
				a := res.Scenarios[0].Attempts
				if !strings.Contains(a[0].Error, "lease lost") || a[1].Device == a[0].Device {
					t.Errorf("attempts %+v", a)
				}
				if res.Scenarios[0].Verdict == reports.VerdictFail {
					t.Error("a lost device counted as a product failure")
				}
			}},
		{name: "lab faults only end in error",
			scenarios: []scriptedScenario{sc("a", "lab")},
			want:      map[string]wantScenario{"a": {reports.VerdictError, "error(lab) error(lab) error(lab) error(lab)", "lost to the lab: adb: device gone"}}},
		{name: "lab fault after a failure keeps the failure",
			scenarios: []scriptedScenario{sc("a", "fail", "lab", "lab", "lab", "lab", "lab")},
			want:      map[string]wantScenario{"a": {reports.VerdictFail, "fail error(lab) error(lab) error(lab) error(lab)", "failed: named: got 1, want 0"}}},
		{name: "run-wide retry budget",
			scenarios: []scriptedScenario{sc("a", "fail"), sc("b", "fail"), sc("c", "fail")},
			devices:   []string{"d1"},
			opts:      func(o *Options) { o.RetryBudget = 1 },
			want: map[string]wantScenario{
				"a": {reports.VerdictFail, "fail fail", ""},
				"b": {reports.VerdictFail, "fail", ""},
				"c": {reports.VerdictFail, "fail", ""}}},
		{name: "no retry budget at all",
			scenarios: []scriptedScenario{sc("a", "fail", "pass")},
			opts:      func(o *Options) { o.RetryBudget = -1 },
			want:      map[string]wantScenario{"a": {reports.VerdictFail, "fail", ""}}},
		{name: "lab-fault re-queue budget",
			scenarios: []scriptedScenario{sc("a", "lab", "pass"), sc("b", "lab", "pass")},
			devices:   []string{"d1"},
			opts:      func(o *Options) { o.LabFaultRequeues = 1 },
			want: map[string]wantScenario{
				"a": {reports.VerdictPass, "error(lab) pass", ""},
				"b": {reports.VerdictError, "error(lab)", ""}}},
		{name: "touched and failed is inconclusive, never retried",
			devices:   []string{"phone-1"},
			scenarios: []scriptedScenario{sc("a", "touch", "pass")},
			want:      map[string]wantScenario{"a": {reports.VerdictInconclusive, "inconclusive", "failed while a person touched the device (2 touches): named: got 1, want 0"}}},
		{name: "touched but passed is a pass",
			scenarios: []scriptedScenario{sc("a", "touchpass")},
			want:      map[string]wantScenario{"a": {reports.VerdictPass, "pass", ""}}},
		{name: "timeout is a product failure",
			scenarios: []scriptedScenario{scDoc("name: a\ntimeout: 30s\nsteps: [{sleep: 1s}]\n", "hang", "pass")},
			want:      map[string]wantScenario{"a": {reports.VerdictFlaky, "fail pass", ""}}},
		{name: "needs not met are skipped",
			scenarios: []scriptedScenario{
				scDoc("name: live\nmodel: live\nsteps: [{sleep: 1s}]\nchecks: [{name: c, upstream: x.py/a/c, of: status, exists: true}]\n"),
				scDoc("name: apps\nneeds: {apps: [sms]}\nsteps: [{sleep: 1s}]\n"),
				scDoc("name: three\ndevices: 3\nsteps: [{sleep: 1s}]\n"),
				scDoc("name: phone\nneeds: {kinds: [phone]}\nsteps: [{sleep: 1s}]\n"),
				scDoc("name: api\nneeds: {min_api: 40}\nsteps: [{sleep: 1s}]\n"),
				sc("ok", "pass"),
			},
			opts: func(o *Options) { o.Apps = []string{"notes"} },
			want: map[string]wantScenario{
				"live":  {reports.VerdictSkipped, "", "needs a live model; the run uses the stub"},
				"apps":  {reports.VerdictSkipped, "", "needs apps the run did not provision: sms"},
				"three": {reports.VerdictSkipped, "", "needs 3 device(s); the run has 2"},
				"phone": {reports.VerdictSkipped, "", "needs 1 phone device(s); the run has 0"},
				"api":   {reports.VerdictSkipped, "", "needs 1 device(s); the run has 0"},
				"ok":    {reports.VerdictPass, "pass", ""}},
			// A scenario the run cannot meet still lists its checks,
			// skipped with the reason, so its upstream rows are counted.
			check: func(t *testing.T, res *Result, _ *fakeLeaser, _ *fakeExecutor) {
				for _, s := range res.Scenarios {
					if s.Name == "live" {
						assert.Equal(t, []reports.Check{{Name: "c", Skipped: true, Upstream: "x.py/a/c",
							Detail: "skipped: needs a live model; the run uses the stub"}}, s.Checks)
					}
				}
			}},
		{name: "stub scenario on a live run is skipped",
			scenarios: []scriptedScenario{scDoc("name: scripted\nmodel: {script: {steps: [{text: hi}]}}\nsteps: [{sleep: 1s}]\n"),
				scDoc("name: any\nneeds: {model: any}\nsteps: [{sleep: 1s}]\n", "pass")},
			opts: func(o *Options) { o.Model = scenario.ModelLive },
			want: map[string]wantScenario{
				"scripted": {reports.VerdictSkipped, "", "needs the model stub (a scripted model); the run uses a live model"},
				"any":      {reports.VerdictPass, "pass", ""}}},
		{name: "multi-device scenario gets distinct devices",
			devices:   []string{"d1", "d2", "d3"},
			scenarios: []scriptedScenario{scDoc("name: pair\ndevices: [a, b]\nsteps: [{sleep: 1s}]\n", "pass"), sc("x", "pass"), sc("y", "pass")},
			want: map[string]wantScenario{"pair": {reports.VerdictPass, "pass", ""}, "x": {reports.VerdictPass, "pass", ""},
				"y": {reports.VerdictPass, "pass", ""}},
			check: func(t *testing.T, res *Result, l *fakeLeaser, e *fakeExecutor) {
				for _, s := range res.Scenarios {
					if s.Name == "pair" && (len(s.Devices) != 2 || s.Devices[0] == s.Devices[1]) {
						t.Errorf("pair ran on %v", s.Devices)
					}
				}
			}},
		{name: "quarantined devices are not used",
			devices:   []string{"d1", "d2"},
			scenarios: []scriptedScenario{sc("a", "lost", "lost", "pass"), sc("b", "pass"), sc("c", "pass")},
			want: map[string]wantScenario{
				"a": {reports.VerdictError, "error(lab) error(lab)", "no device: every device that fits the scenario is quarantined or gone"},
				"b": {reports.VerdictError, "", "no device: every device that fits the scenario is quarantined or gone"},
				"c": {reports.VerdictError, "", ""}},
			opts: func(o *Options) { o.Parallel = 1 }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				res, l, e := runCase(t, c)
				for _, s := range res.Scenarios {
					w, ok := c.want[s.Name]
					if !ok {
						t.Errorf("unexpected scenario %q", s.Name)
						continue
					}
					if s.Verdict != w.verdict || attemptsOf(s) != w.attempts || (w.reason != "" && s.Reason != w.reason) {
						t.Errorf("%s: verdict %s attempts %q reason %q\n want %s %q %q", s.Name, s.Verdict, attemptsOf(s), s.Reason, w.verdict, w.attempts, w.reason)
					}
				}
				if len(res.Scenarios) != len(c.want) {
					t.Errorf("%d scenarios reported, want %d", len(res.Scenarios), len(c.want))
				}
				if c.check != nil {
					c.check(t, res, l, e)
				}
				if len(l.leased) != 0 {
					t.Errorf("leases not released: %v", l.leased)
				}
				run := &reports.Run{SchemaVersion: reports.SchemaVersion, RunID: "r", Model: reports.Model{Kind: reports.ModelStub},
					Devices: res.Devices, Scenarios: res.Scenarios}
				if err := run.Validate(); err != nil {
					t.Errorf("the results do not validate: %v", err)
				}
			})
		})
	}
}

func runCase(t *testing.T, c verdictCase) (*Result, *fakeLeaser, *fakeExecutor) {
	t.Helper()
	devs := c.devices
	if devs == nil {
		devs = []string{"d1", "d2"}
	}
	l := newLeaser(devs...)
	e := &fakeExecutor{scripts: map[string][]string{}}
	var scs []*scenario.Scenario
	for _, s := range c.scenarios {
		parsed := mustScenario(t, s.doc)
		scs = append(scs, parsed)
		e.scripts[parsed.Name] = s.script
	}
	o := Options{Scenarios: scs, Leaser: l, Executor: e, RunDir: t.TempDir(), Model: scenario.ModelStub,
		AcquireTimeout: time.Minute}
	if c.opts != nil {
		c.opts(&o)
	}
	var devices []reports.Device
	for _, d := range devs {
		devices = append(devices, reports.Device{Serial: d, Name: d, Kind: reports.DeviceVirtual, Health: []reports.HealthRecord{}, Timeline: []reports.Event{}})
	}
	o.Devices = devices
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return res, l, e
}

func TestFilteredAreSkipped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeaser("d1")
		res, err := Run(context.Background(), Options{
			Scenarios: []*scenario.Scenario{mustScenario(t, "name: a\nsteps: [{sleep: 1s}]\n")},
			Filtered:  []*scenario.Scenario{mustScenario(t, "name: b\ntags: [slow]\nsteps: [{sleep: 1s}]\n")},
			Leaser:    l, Executor: &fakeExecutor{}, RunDir: t.TempDir(),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Scenarios) != 2 || res.Scenarios[1].Verdict != reports.VerdictSkipped || res.Scenarios[1].Reason != "excluded by the tag filters" {
			t.Errorf("got %+v", res.Scenarios)
		}
	})
}

// TestStopFinishesRunning: Stop (the first Ctrl-C) lets the running
// attempt finish, queues nothing more and reports the rest as skipped.
func TestStopFinishesRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeaser("d1")
		stop := make(chan struct{})
		e := &fakeExecutor{scripts: map[string][]string{"a": {"pass"}}}
		e.started = func(name string, n int) {
			if name == "a" {
				close(stop)
				synctest.Wait()
			}
		}
		var scs []*scenario.Scenario
		for _, n := range []string{"a", "b", "c"} {
			scs = append(scs, mustScenario(t, "name: "+n+"\nsteps: [{sleep: 1s}]\n"))
		}
		res, err := Run(context.Background(), Options{Scenarios: scs, Leaser: l, Executor: e, RunDir: t.TempDir(), Stop: stop})
		if err != nil {
			t.Fatal(err)
		}
		got := fmt.Sprint(res.Scenarios[0].Verdict, res.Scenarios[1].Verdict, res.Scenarios[2].Verdict)
		if got != "passskippedskipped" || !res.Interrupted || !strings.Contains(res.Scenarios[1].Reason, "interrupted") {
			t.Errorf("verdicts %s interrupted %v: %+v", got, res.Interrupted, res.Scenarios[1])
		}
	})
}

// TestAbortCancelsRunning: cancelling the context (the second Ctrl-C)
// aborts the running attempt; devices are released all the same.
func TestAbortCancelsRunning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLeaser("d1")
		ctx, cancel := context.WithCancel(context.Background())
		e := &fakeExecutor{scripts: map[string][]string{"a": {"hang"}}}
		e.started = func(string, int) { cancel() }
		res, err := Run(ctx, Options{Scenarios: []*scenario.Scenario{mustScenario(t, "name: a\nsteps: [{sleep: 1s}]\n"),
			mustScenario(t, "name: b\nsteps: [{sleep: 1s}]\n")}, Leaser: l, Executor: e, RunDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Interrupted || len(l.leased) != 0 || res.Scenarios[1].Verdict != reports.VerdictSkipped {
			t.Errorf("interrupted %v leased %v b %s", res.Interrupted, l.leased, res.Scenarios[1].Verdict)
		}
		if a := res.Scenarios[0]; len(a.Attempts) != 1 {
			t.Errorf("a: %+v", a)
		}
	})
}

func TestRepeat(t *testing.T) {
	cases := []struct {
		script    []string
		repeat    int
		untilFail bool
		verdict   reports.Verdict
		attempts  string
		reason    string
	}{
		{[]string{"pass"}, 3, false, reports.VerdictPass, "pass pass pass", "repeat: 3 passed, 0 failed, 0 lost to the lab of 3"},
		{[]string{"pass", "pass", "fail", "pass"}, 4, false, reports.VerdictFlaky, "pass pass fail pass", "repeat: 3 passed, 1 failed, 0 lost to the lab of 4"},
		{[]string{"pass", "pass", "fail", "pass"}, 0, true, reports.VerdictFlaky, "pass pass fail", "repeat: 2 passed, 1 failed, 0 lost to the lab of 3"},
		{[]string{"fail"}, 2, false, reports.VerdictFail, "fail fail", ""},
		{[]string{"pass", "lab"}, 5, false, reports.VerdictError, "pass error(lab)", "repeat: 1 passed, 0 failed, 1 lost to the lab of 2"},
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newLeaser("d1", "d2")
				e := &fakeExecutor{scripts: map[string][]string{"a": c.script}}
				res, err := Run(context.Background(), Options{Scenarios: []*scenario.Scenario{mustScenario(t, "name: a\nsteps: [{sleep: 1s}]\n")},
					Leaser: l, Executor: e, RunDir: t.TempDir(), Repeat: c.repeat, UntilFail: c.untilFail})
				if err != nil {
					t.Fatal(err)
				}
				s := res.Scenarios[0]
				if s.Verdict != c.verdict || attemptsOf(s) != c.attempts || (c.reason != "" && s.Reason != c.reason) {
					t.Errorf("got %s %q %q, want %s %q %q", s.Verdict, attemptsOf(s), s.Reason, c.verdict, c.attempts, c.reason)
				}
				devs := map[string]bool{}
				for _, a := range s.Attempts {
					devs[a.Device] = true
				}
				if len(devs) != 1 {
					t.Errorf("repeat used %d devices", len(devs))
				}
			})
		})
	}
}

func TestSelect(t *testing.T) {
	var suite []*scenario.Scenario
	for i := range 40 {
		tags := "[smoke]"
		if i%2 == 1 {
			tags = "[slow, nightly]"
		}
		suite = append(suite, mustScenario(t, fmt.Sprintf("name: s%02d\ntags: %s\nsteps: [{sleep: 1s}]\n", i, tags)))
	}
	run, filtered, err := Select(suite, Selection{})
	if err != nil || len(run) != 40 || len(filtered) != 0 {
		t.Fatalf("no selection: %d %d %v", len(run), len(filtered), err)
	}
	run, filtered, _ = Select(suite, Selection{Tags: tagsOf("smoke", "")})
	if len(run) != 20 || len(filtered) != 20 {
		t.Errorf("tags smoke: %d run, %d filtered", len(run), len(filtered))
	}
	run, _, _ = Select(suite, Selection{Tags: tagsOf("", "slow")})
	if len(run) != 20 || run[0].Name != "s00" {
		t.Errorf("exclude slow: %d", len(run))
	}
	run, _, _ = Select(suite, Selection{Names: []string{"s03", "s01"}})
	if len(run) != 2 || run[0].Name != "s01" {
		t.Errorf("names: %v", run)
	}
	if _, _, err := Select(suite, Selection{Names: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), "no scenario named nope") {
		t.Errorf("unknown name: %v", err)
	}
	// --scenario takes globs: 'desktop/*' is the whole area.
	areas := []*scenario.Scenario{
		mustScenario(t, "name: desktop/pairing\nsteps: [{sleep: 1s}]\n"),
		mustScenario(t, "name: desktop/smoke-echo\nsteps: [{sleep: 1s}]\n"),
		mustScenario(t, "name: notes/revoke\nsteps: [{sleep: 1s}]\n"),
	}
	run, _, err = Select(areas, Selection{Names: []string{"desktop/*"}})
	if err != nil || len(run) != 2 || run[0].Name != "desktop/pairing" || run[1].Name != "desktop/smoke-echo" {
		t.Errorf("glob desktop/*: %v %v", run, err)
	}
	if _, _, err := Select(areas, Selection{Names: []string{"notes/create"}}); err == nil || !strings.Contains(err.Error(), "did you mean notes/revoke?") {
		t.Errorf("a name that does not exist names its area's scenarios: %v", err)
	}
	if _, _, err := Select(areas, Selection{Names: []string{"sms/*"}}); err == nil || !strings.Contains(err.Error(), "no scenario named sms/*") {
		t.Errorf("a glob that matches nothing: %v", err)
	}
	if _, _, err := Select(areas, Selection{Names: []string{"desktop/["}}); err == nil {
		t.Error("a malformed glob is accepted")
	}
	// Shards partition the suite, stably: adding scenarios moves no one.
	seen := map[string]int{}
	for i := range 3 {
		run, _, err := Select(suite, Selection{ShardIndex: i, ShardCount: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range run {
			seen[s.Name]++
			if Shard(s.Name, 3) != i {
				t.Errorf("%s in shard %d, hashes to %d", s.Name, i, Shard(s.Name, 3))
			}
		}
		if len(run) == 0 || len(run) == 40 {
			t.Errorf("shard %d has %d scenarios", i, len(run))
		}
	}
	if len(seen) != 40 {
		t.Errorf("shards cover %d of 40", len(seen))
	}
	for n, c := range seen {
		if c != 1 {
			t.Errorf("%s in %d shards", n, c)
		}
	}
	if _, _, err := Select(suite, Selection{ShardIndex: 3, ShardCount: 3}); err == nil {
		t.Error("shard 3/3 accepted")
	}
}

func TestKindOf(t *testing.T) {
	for _, c := range []struct {
		serial, product, device string
		want                    reports.DeviceKind
	}{
		{"127.0.0.1:15555", "agentlab_vdev", "vdev", reports.DeviceVirtual},
		{"emulator-5554", "sdk_gphone64_x86_64", "emu64xa", reports.DeviceEmulator},
		{"10.0.0.5:5555", "sdk_gphone64_arm64", "emu64a", reports.DeviceEmulator},
		{"1A2B3C", "husky", "husky", reports.DevicePhone},
	} {
		info := devicesInfo(c.product, c.device)
		if got := KindOf(info, c.serial); got != c.want {
			t.Errorf("KindOf(%s, %s) = %s, want %s", c.serial, c.product, got, c.want)
		}
	}
}

// TestTimeline: leases and attempts land on the devices' timelines, pool
// events in health and recoveries.
func TestTimeline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &eventLeaser{fakeLeaser: newLeaser("d1"), ch: make(chan pool.Event, 8)}
		e := &fakeExecutor{scripts: map[string][]string{"a": {"pass"}}}
		e.started = func(string, int) {
			now := time.Now()
			l.ch <- pool.Event{Serial: "d1", From: pool.StateRecovering, To: pool.StateRecovering, Step: "reconnect", Time: now}
			l.ch <- pool.Event{Serial: "d1", From: pool.StateRecovering, To: pool.StateQuarantined, Reason: "no boot", Time: now}
			synctest.Wait()
		}
		res, err := Run(context.Background(), Options{Scenarios: []*scenario.Scenario{mustScenario(t, "name: a\nsteps: [{sleep: 1s}]\n")},
			Leaser: l, Executor: e, RunDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Devices) != 1 {
			t.Fatalf("devices %+v", res.Devices)
		}
		d := res.Devices[0]
		var kinds []string
		for _, ev := range d.Timeline {
			kinds = append(kinds, string(ev.Kind))
		}
		got := strings.Join(kinds, " ")
		if got != "recovery quarantine scenario lease" || d.QuarantineReason != "no boot" || len(d.Health) != 1 || d.Health[0].State != "quarantined" {
			t.Errorf("timeline %q quarantine %q health %+v", got, d.QuarantineReason, d.Health)
		}
		if d.Kind != reports.DeviceVirtual || d.RootMethod != "virtual" {
			t.Errorf("device %+v", d)
		}
	})
}

type eventLeaser struct {
	*fakeLeaser
	ch chan pool.Event
}

func (l *eventLeaser) Subscribe(int) (<-chan pool.Event, func()) {
	return l.ch, func() { close(l.ch) }
}

func tagsOf(include, exclude string) config.Tags {
	var t config.Tags
	if include != "" {
		t.Include = []string{include}
	}
	if exclude != "" {
		t.Exclude = []string{exclude}
	}
	return t
}

func devicesInfo(product, device string) devices.Info {
	return devices.Info{Product: product, Device: device}
}
