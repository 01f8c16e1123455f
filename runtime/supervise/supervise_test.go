package supervise

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/apptest"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/clock/clocktest"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// The test binary doubles as a fake runtime: `<bin> fake-runtime PLAN RECORD`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == "fake-runtime" {
		os.Exit(fakeRuntime(os.Args[2], os.Args[3]))
	}
	os.Exit(m.Run())
}

// fakeRuntime plays one incarnation: the n-th line of PLAN (the last one
// repeats) for the n-th start, as counted by the lines of RECORD, where
// it appends what it saw.
func fakeRuntime(plan, record string) int {
	// SIGTERM is handled from the first instruction: the supervisor may
	// stop a runtime as soon as it started.
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	lines, _ := readLines(plan)
	done, _ := readLines(record)
	step := lines[min(len(done), len(lines)-1)]
	wd, _ := os.Getwd()
	heartbeat := func(tasks int, state string) {
		os.WriteFile("heartbeat.tmp", fmt.Appendf(nil, "pid=%d\ntasks=%d\nat=%d\nstate=%s\n", os.Getpid(), tasks, time.Now().UnixMilli(), state), 0o644)
		os.Rename("heartbeat.tmp", "heartbeat")
	}
	// The record line comes after the first heartbeat, so a test that saw
	// it knows the heartbeat is there.
	recordStart := func() bool {
		f, err := os.OpenFile(record, os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			return false
		}
		groups, _ := os.Getgroups()
		tmpdir, hasTmp := os.LookupEnv("TMPDIR")
		fmt.Fprintf(f, "start uid=%d groups=%v tmpdir=%v%s safe=%s root=%s wd=%s step=%s\n", os.Getuid(), groups, hasTmp, tmpdir,
			os.Getenv("AGENTOS_SAFE_MODE"), os.Getenv("AGENTOS_ROOT"), wd, step)
		f.Close()
		return true
	}
	if fields := strings.Fields(step); len(fields) == 4 && fields[0] == "apps" {
		// apps BUNDLE PACKAGE PREFIX: install and start an app through
		// the supervisor's launcher, then check who listens.
		heartbeat(0, "idle")
		recordStart()
		result := launchApp(fields[1], fields[2], transport.Names{Prefix: fields[3]})
		f, _ := os.OpenFile(record, os.O_WRONLY|os.O_APPEND, 0)
		fmt.Fprintln(f, result)
		f.Close()
		<-term
		heartbeat(0, "stopping")
		return 0
	}
	switch step {
	case "busy-die":
		heartbeat(1, "busy")
		recordStart()
		return 1
	case "idle-die":
		heartbeat(0, "idle")
		recordStart()
		return 1
	case "crash":
		recordStart()
		return 2
	case "run", "run-busy":
		tasks := 0
		if step == "run-busy" {
			tasks = 1
		}
		heartbeat(tasks, "idle")
		recordStart()
		<-term
		heartbeat(0, "stopping")
		return 0
	}
	return 3
}

func launchApp(bundle, pkg string, names transport.Names) string {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := launcher.NewClient(launcher.SocketName(names))
	res, err := c.Install(ctx, bundle)
	if err != nil {
		return "app error install: " + err.Error()
	}
	p, err := c.Start(ctx, pkg, "main")
	if err != nil {
		return "app error start: " + err.Error()
	}
	conn, err := transport.Dial(ctx, p.Socket)
	if err != nil {
		return "app error dial: " + err.Error()
	}
	defer conn.Close()
	cred, err := transport.PeerCred(conn)
	if err != nil {
		return "app error cred: " + err.Error()
	}
	return fmt.Sprintf("app uid=%d listener=%d runtime=%d", res.Package.UID, cred.UID, os.Getuid())
}

func readLines(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if sc.Text() != "" {
			out = append(out, sc.Text())
		}
	}
	return out, sc.Err()
}

const testRuntimeUID = 10088

type harness struct {
	t      *testing.T
	root   string
	record string
	modDir string
	names  transport.Names
	sup    *Supervisor
	seen   chan Status
	cancel context.CancelFunc
	done   chan error
}

// start runs a supervisor over a fake runtime that follows plan.
func start(t *testing.T, plan []string, mod func(*Options)) *harness {
	t.Helper()
	testenv.NeedRoot(t)
	open := apptest.OpenDir(t)
	bin := apptest.Stage(t, "")
	h := &harness{t: t, root: filepath.Join(open, "root"), record: filepath.Join(open, "record"), modDir: filepath.Join(open, "module"), seen: make(chan Status, 1000)}
	os.MkdirAll(h.modDir, 0o755)
	planFile := filepath.Join(open, "plan")
	os.WriteFile(planFile, []byte(strings.Join(plan, "\n")+"\n"), 0o644)
	os.WriteFile(h.record, nil, 0o666)
	os.Chmod(h.record, 0o666)
	os.WriteFile(filepath.Join(h.modDir, "module.prop"), []byte("id=agentos\nname=AgentOS\nversion=0.3.0\nversionCode=3\n"), 0o644)
	var b [4]byte
	rand.Read(b[:])
	h.names = transport.Names{Prefix: "s" + hex.EncodeToString(b[:]) + "-"}
	o := &Options{
		Root: h.root, ModDir: h.modDir, RuntimeCmd: []string{bin, "fake-runtime", planFile, h.record},
		RuntimeUID: testRuntimeUID, Names: h.names, Getprop: "-",
		AndroidPackagesList: filepath.Join(open, "no-packages.list"),
		Timing: Timing{PollBusy: 10 * time.Millisecond, PollIdle: 20 * time.Millisecond, BackoffBase: 20 * time.Millisecond,
			BackoffMax: 80 * time.Millisecond, ResetAfter: 30 * time.Second, LoopWindow: time.Minute, StopGrace: 3 * time.Second,
			BootPoll: 10 * time.Millisecond},
		Observe: func(s Status) { h.seen <- s },
	}
	o.Installer.PasswdFile = filepath.Join(open, "none")
	if mod != nil {
		mod(o)
	}
	sup, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.sup = sup
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(20 * time.Second):
			t.Error("supervisor did not stop")
		}
	})
	return h
}

// await returns the first status (from now on) that matches.
func (h *harness) await(what string, ok func(Status) bool) Status {
	h.t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		select {
		case s := <-h.seen:
			if ok(s) {
				return s
			}
		case err := <-h.done:
			h.t.Fatalf("supervisor exited (%v) while waiting for %s", err, what)
		case <-deadline:
			h.t.Fatalf("no status %s (last %+v)", what, h.sup.Status())
		}
	}
}

// awaitStarts waits until the fake runtime recorded n starts (it writes
// its record line after the supervisor reported the start) and returns
// them.
func (h *harness) awaitStarts(n int) []string {
	h.t.Helper()
	var s []string
	require.Eventually(h.t, func() bool { s = h.starts(); return len(s) >= n }, 20*time.Second, 5*time.Millisecond,
		"never %d starts recorded", n)
	return s
}

func (h *harness) starts() []string {
	h.t.Helper()
	lines, err := readLines(h.record)
	if err != nil {
		h.t.Fatal(err)
	}
	return lines
}

func TestRuntimeRunsAsItsUID(t *testing.T) {
	h := start(t, []string{"run"}, nil)
	st := h.await("ok", func(s Status) bool { return s.State == StateOK })
	if st.RuntimePID <= 0 || st.Reason != ReasonRuntimeUp || st.ModuleVersion != "0.3.0" || st.ModuleVersionCode != "3" {
		t.Fatalf("status %+v", st)
	}
	starts := h.awaitStarts(1)
	p := h.sup.Paths()
	// The runtime has the inet group (Android's network permission) and,
	// as from service.sh, no TMPDIR (runtime/platform makes one).
	want := fmt.Sprintf("start uid=%d groups=[3003] tmpdir=false safe= root=%s wd=%s step=run", testRuntimeUID, h.root, p.RuntimeData())
	if len(starts) != 1 || starts[0] != want {
		t.Fatalf("starts %q, want %q", starts, want)
	}
	fi, err := os.Stat(p.RuntimeData())
	if err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != testRuntimeUID || fi.Mode().Perm() != 0o700 {
		t.Fatalf("runtime data dir: %v %v", fi.Mode(), err)
	}
	// The status file says the same, and the runtime can read it.
	file, err := ReadStatus(p.Status())
	if err != nil || file.State != StateOK || file.RuntimePID != st.RuntimePID || file.Seq != st.Seq {
		t.Fatalf("status file %+v %v", file, err)
	}
	if fi, _ := os.Stat(p.Status()); fi.Mode().Perm() != 0o644 {
		t.Fatalf("status mode %v", fi.Mode())
	}
	// The launcher runs inside, for the runtime's uid only.
	if _, err := launcher.NewClient(launcher.SocketName(h.names)).List(context.Background()); !errors.Is(err, launcher.ErrRefused) {
		t.Fatalf("launcher served root: %v", err)
	}
	// SIGTERM to the supervisor (ctx) stops the runtime gracefully.
	h.cancel()
	if err := <-h.done; err != nil {
		t.Fatal(err)
	}
	if hb, err := ReadHeartbeat(p.Heartbeat()); err != nil || hb.State != "stopping" {
		t.Fatalf("runtime not stopped gracefully: %+v %v", hb, err)
	}
	if file, _ := ReadStatus(p.Status()); file.State != StateStopped || file.Reason != ReasonSupervisorExited {
		t.Fatalf("final status %+v", file)
	}
	h.done <- nil // for the cleanup
}

// TestRuntimeLaunchesApp runs the whole process model: root supervisor →
// runtime as its uid → launcher → app as its own uid, and the runtime
// checks the app's listener uid.
func TestRuntimeLaunchesApp(t *testing.T) {
	testenv.NeedRoot(t)
	open := apptest.OpenDir(t)
	out, err := exec.Command("go", "build", "-o", filepath.Join(open, "testapp"), "github.com/agentoslab/agentlab/runtime/apps/internal/testapp").CombinedOutput()
	if err != nil {
		t.Fatalf("build testapp: %v\n%s", err, out)
	}
	bin, _ := os.ReadFile(filepath.Join(open, "testapp"))
	const pkg = "org.agentos.test.supervised"
	src := fstest.MapFS{
		"app.json": {Data: []byte(`{"package":"` + pkg + `","label":"S","versionCode":1,"binary":"testapp","services":[{"name":"M","kind":"mcp","server":"main"}]}`)},
		apps.BinaryPath(apps.HostABI(), "testapp"): {Data: bin},
	}
	key, _ := apps.GenerateKey()
	var buf bytes.Buffer
	if _, err := apps.Pack(context.Background(), src, key, &buf); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(open, "app.agentapp")
	os.WriteFile(bundle, buf.Bytes(), 0o644)

	var h *harness
	h = start(t, []string{"apps " + bundle + " " + pkg + " PREFIX"}, func(o *Options) {
		// The plan needs the prefix, known only now.
		plan := o.RuntimeCmd[2]
		os.WriteFile(plan, []byte("apps "+bundle+" "+pkg+" "+o.Names.Prefix+"\n"), 0o644)
		o.Installer.FirstUID, o.Installer.LastUID = 10600, 10699
	})
	lines := h.awaitStarts(2)
	want := fmt.Sprintf("app uid=10600 listener=10600 runtime=%d", testRuntimeUID)
	if lines[1] != want {
		t.Fatalf("runtime saw %q, want %q", lines[1], want)
	}
}

func TestRuntimeUIDChangeChownsData(t *testing.T) {
	testenv.NeedRoot(t)
	var root string
	h := start(t, []string{"run"}, func(o *Options) {
		root = o.Root
		// Data left by a runtime that ran as another uid.
		data := filepath.Join(o.Root, runtimeDir)
		os.MkdirAll(filepath.Join(data, "acp"), 0o700)
		os.WriteFile(filepath.Join(data, "acp", "callers.json"), []byte("{}"), 0o600)
		for _, p := range []string{data, filepath.Join(data, "acp"), filepath.Join(data, "acp", "callers.json")} {
			os.Lchown(p, 10077, 10077)
		}
	})
	h.await("ok", func(s Status) bool { return s.State == StateOK })
	fi, err := os.Stat(filepath.Join(root, runtimeDir, "acp", "callers.json"))
	if err != nil || int(fi.Sys().(*syscall.Stat_t).Uid) != testRuntimeUID {
		t.Fatalf("old data not handed to the new uid: %v", err)
	}
}

func TestUnstartableRuntime(t *testing.T) {
	h := start(t, []string{"run"}, func(o *Options) { o.RuntimeCmd = []string{"/nonexistent/agentosd", "serve"} })
	st := h.await("stopped", func(s Status) bool { return s.State == StateStopped })
	if st.Reason != ReasonRuntimeStartError {
		t.Fatalf("status %+v", st)
	}
}

func TestSingleInstance(t *testing.T) {
	h := start(t, []string{"run"}, nil)
	h.await("ok", func(s Status) bool { return s.State == StateOK })
	h.awaitStarts(1)
	second, err := New(&Options{Root: h.root, RuntimeCmd: []string{"/bin/false"}, Getprop: "-"})
	if err != nil {
		t.Fatal(err)
	}
	err = second.Run(context.Background())
	var ar *ErrAlreadyRunning
	if !errors.As(err, &ar) || ar.PID != os.Getpid() {
		t.Fatalf("second supervisor: %v", err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("another supervisor is running (pid %d)", os.Getpid())) {
		t.Fatalf("message %q", err)
	}
	if len(h.starts()) != 1 {
		t.Fatal("the second supervisor started a runtime")
	}
}

func TestRestartOnlyWithTasks(t *testing.T) {
	t.Run("busy deaths restart with backoff", func(t *testing.T) {
		h := start(t, []string{"busy-die", "busy-die", "busy-die", "run"}, nil)
		var delays []int64
		for len(delays) < 3 {
			st := h.await("backoff", func(s Status) bool { return s.State == StateBackoff })
			delays = append(delays, st.BackoffMs)
		}
		st := h.await("ok", func(s Status) bool { return s.State == StateOK })
		if want := []int64{20, 40, 80}; fmt.Sprint(delays) != fmt.Sprint(want) {
			t.Fatalf("backoff %v, want %v", delays, want)
		}
		if st.Deaths != 3 || len(h.awaitStarts(4)) != 4 {
			t.Fatalf("deaths %d, starts %d", st.Deaths, len(h.starts()))
		}
	})
	t.Run("idle death left dead until kicked", func(t *testing.T) {
		h := start(t, []string{"idle-die", "run"}, nil)
		st := h.await("stopped", func(s Status) bool { return s.State == StateStopped })
		if st.Reason != ReasonRuntimeDied || st.RuntimePID != 0 {
			t.Fatalf("status %+v", st)
		}
		// Nothing restarts it: several poll periods pass without a start.
		select {
		case s := <-h.seen:
			t.Fatalf("status changed without a kick: %+v", s)
		case <-time.After(200 * time.Millisecond):
		}
		if n := len(h.starts()); n != 1 {
			t.Fatalf("%d starts", n)
		}
		h.sup.Kick()
		h.await("ok after kick", func(s Status) bool { return s.State == StateOK })
		if n := len(h.awaitStarts(2)); n != 2 {
			t.Fatalf("%d starts after the kick", n)
		}
	})
	t.Run("crash without heartbeat after a busy one restarts", func(t *testing.T) {
		h := start(t, []string{"busy-die", "crash", "run"}, nil)
		h.await("backoff 1", func(s Status) bool { return s.State == StateBackoff })
		h.await("backoff 2", func(s Status) bool { return s.State == StateBackoff })
		h.await("ok", func(s Status) bool { return s.State == StateOK })
	})
}

func TestBackoffSequence(t *testing.T) {
	tm := Timing{}.withDefaults()
	var got []time.Duration
	var prev time.Duration
	for i := 0; i < 9; i++ {
		prev = nextBackoff(prev, time.Second, tm)
		got = append(got, prev)
	}
	want := []time.Duration{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i := range want {
		if got[i] != want[i]*time.Second {
			t.Fatalf("sequence %v", got)
		}
	}
	tests := []struct {
		prev, uptime, want time.Duration
	}{
		{0, 0, time.Second},
		{8 * time.Second, 59 * time.Second, 16 * time.Second},
		{32 * time.Second, 60 * time.Second, time.Second}, // up long enough: reset
		{60 * time.Second, time.Hour, time.Second},
	}
	for _, tt := range tests {
		if got := nextBackoff(tt.prev, tt.uptime, tm); got != tt.want {
			t.Errorf("next(%v, up %v) = %v, want %v", tt.prev, tt.uptime, got, tt.want)
		}
	}
	w := &deathWindow{window: 10 * time.Minute}
	t0 := time.Unix(0, 0)
	for i, at := range []time.Duration{0, time.Minute, 9 * time.Minute, 11 * time.Minute} {
		n := w.add(t0.Add(at))
		if want := []int{1, 2, 3, 2}[i]; n != want {
			t.Fatalf("death %d: %d in window, want %d", i, n, want)
		}
	}
}

// awaitPause waits until the supervisor waits on the clock (a restart
// backoff is its only timer on it).
func (h *harness) awaitPause(clk *clocktest.Clock) {
	h.t.Helper()
	require.Eventually(h.t, func() bool { return clk.Pending() == 1 }, 20*time.Second, time.Millisecond, "no backoff armed")
}

// The restart backoff runs on the runtime's clock: a 30 s backoff ends
// the moment the clock passes it — not a millisecond before — however
// little real time went by (the lab advances instead of waiting).
func TestBackoffWaitsOnTheClock(t *testing.T) {
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	h := start(t, []string{"busy-die", "run"}, func(o *Options) {
		o.Clock = clk
		o.Timing.BackoffBase, o.Timing.BackoffMax = 30*time.Second, time.Minute
	})
	st := h.await("backoff", func(s Status) bool { return s.State == StateBackoff })
	require.Equal(t, int64(30000), st.BackoffMs)
	require.Equal(t, clk.Now().UnixMilli(), st.Since)
	h.awaitPause(clk)
	clk.Advance(30*time.Second - time.Millisecond)
	require.Equal(t, 1, clk.Pending(), "the backoff ended early")
	require.Len(t, h.starts(), 1)
	clk.Advance(time.Millisecond)
	h.await("ok", func(s Status) bool { return s.State == StateOK })
	require.Len(t, h.awaitStarts(2), 2)
}

// The crash-loop window (5 deaths in 10 min) is counted on the clock:
// deaths older than ten minutes of it no longer count, so a fifth busy
// death after the clock moved on is a restart, not safe mode.
func TestCrashLoopWindowOnTheClock(t *testing.T) {
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	h := start(t, []string{"busy-die", "busy-die", "busy-die", "busy-die", "busy-die", "run"}, func(o *Options) {
		o.Clock = clk
		o.Timing.BackoffBase, o.Timing.BackoffMax = time.Second, time.Minute
	})
	for i, d := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		st := h.await("backoff", func(s Status) bool { return s.State == StateBackoff })
		require.Equal(t, d.Milliseconds(), st.BackoffMs, "death %d", i+1)
		require.Equal(t, i+1, st.Deaths)
		h.awaitPause(clk)
		clk.Advance(d)
	}
	st := h.await("fourth backoff", func(s Status) bool { return s.State == StateBackoff })
	require.Equal(t, 4, st.Deaths)
	h.awaitPause(clk)
	clk.Advance(11 * time.Minute) // the window rolls past the first four deaths
	st = h.await("fifth backoff", func(s Status) bool { return s.State == StateBackoff || s.State == StateSafeMode })
	require.Equal(t, StateBackoff, st.State, "the old deaths still counted: %+v", st)
	require.Equal(t, 1, st.Deaths)
	require.False(t, st.SafeMode)
	h.awaitPause(clk)
	clk.Advance(time.Duration(st.BackoffMs) * time.Millisecond)
	st = h.await("ok", func(s Status) bool { return s.State == StateOK })
	require.False(t, st.SafeMode)
	_, err := os.Lstat(h.sup.Paths().SafeMode())
	require.ErrorIs(t, err, os.ErrNotExist, "safe-mode marker written")
}

// A runtime that was up for ResetAfter resets the backoff even when it
// died idle: the next busy death waits the base delay again, not the
// double of the one before the healthy stretch.
func TestIdleDeathAfterUptimeResetsBackoff(t *testing.T) {
	clk := clocktest.New(time.Unix(1_700_000_000, 0))
	h := start(t, []string{"busy-die", "run", "busy-die", "run"}, func(o *Options) { o.Clock = clk })
	st := h.await("first backoff", func(s Status) bool { return s.State == StateBackoff })
	require.Equal(t, int64(20), st.BackoffMs)
	h.awaitPause(clk)
	clk.Advance(20 * time.Millisecond)
	st = h.await("ok", func(s Status) bool { return s.State == StateOK })
	h.awaitStarts(2)
	clk.Advance(31 * time.Second) // past ResetAfter (30 s here)
	require.NoError(t, syscall.Kill(st.RuntimePID, syscall.SIGKILL))
	h.await("stopped", func(s Status) bool { return s.State == StateStopped })
	h.sup.Kick()
	st = h.await("second backoff", func(s Status) bool { return s.State == StateBackoff })
	require.Equal(t, int64(20), st.BackoffMs, "the backoff carried over the healthy stretch")
}

func TestCrashLoopSafeMode(t *testing.T) {
	h := start(t, []string{"busy-die", "busy-die", "busy-die", "busy-die", "busy-die", "run"}, nil)
	st := h.await("safe mode", func(s Status) bool { return s.State == StateSafeMode && s.RuntimePID > 0 })
	if st.Reason != ReasonCrashLoop || !st.SafeMode || st.Deaths != 5 {
		t.Fatalf("status %+v", st)
	}
	p := h.sup.Paths()
	if b, err := os.ReadFile(p.SafeMode()); err != nil || strings.TrimSpace(string(b)) != ReasonCrashLoop {
		t.Fatalf("marker %q %v", b, err)
	}
	file, _ := ReadStatus(p.Status())
	if file.State != StateSafeMode || !file.SafeMode || file.Reason != ReasonCrashLoop {
		t.Fatalf("status file %+v", file)
	}
	starts := h.awaitStarts(6)
	if len(starts) != 6 || !strings.Contains(starts[5], "safe=1") || strings.Contains(starts[4], "safe=1") {
		t.Fatalf("starts %q", starts)
	}
	// Removing the marker leaves safe mode: a normal runtime replaces it.
	os.Remove(p.SafeMode())
	st = h.await("ok again", func(s Status) bool { return s.State == StateOK && s.RuntimePID > 0 })
	if st.SafeMode || st.Deaths != 0 || st.Reason != ReasonSafeModeExited {
		t.Fatalf("after safe mode: %+v", st)
	}
	if starts := h.awaitStarts(7); len(starts) != 7 || strings.Contains(starts[6], "safe=1") {
		t.Fatalf("starts %q", starts)
	}
}

func TestSafeModeMarkerSurvivesRestart(t *testing.T) {
	h := start(t, []string{"run"}, func(o *Options) {
		os.MkdirAll(o.Root, 0o755)
		os.WriteFile(filepath.Join(o.Root, safeModeName), []byte("crash_loop\n"), 0o644)
	})
	st := h.await("safe mode", func(s Status) bool { return s.State == StateSafeMode && s.RuntimePID > 0 })
	if !st.SafeMode {
		t.Fatalf("%+v", st)
	}
	if s := h.awaitStarts(1); len(s) != 1 || !strings.Contains(s[0], "safe=1") {
		t.Fatalf("starts %q", s)
	}
}

func TestModuleDisableStops(t *testing.T) {
	for _, flag := range []string{"disable", "remove"} {
		t.Run(flag, func(t *testing.T) {
			h := start(t, []string{"run-busy"}, nil)
			h.await("ok", func(s Status) bool { return s.State == StateOK })
			h.awaitStarts(1)
			os.WriteFile(filepath.Join(h.modDir, flag), nil, 0o644)
			select {
			case err := <-h.done:
				if err != nil {
					t.Fatal(err)
				}
				h.done <- nil
			case <-time.After(20 * time.Second):
				t.Fatal("supervisor kept running")
			}
			file, _ := ReadStatus(h.sup.Paths().Status())
			if file.State != StateStopped || file.Reason != ReasonModuleDisabled {
				t.Fatalf("status %+v", file)
			}
			if hb, _ := ReadHeartbeat(h.sup.Paths().Heartbeat()); hb.State != "stopping" {
				t.Fatalf("runtime not stopped: %+v", hb)
			}
		})
	}
}

func TestWaitsForBoot(t *testing.T) {
	open := apptest.OpenDir(t)
	prop := filepath.Join(open, "boot_completed")
	os.WriteFile(prop, []byte("0\n"), 0o644)
	getprop := filepath.Join(open, "getprop")
	os.WriteFile(getprop, []byte("#!/bin/sh\n[ \"$1\" = sys.boot_completed ] && cat "+prop+"\n"), 0o755)
	h := start(t, []string{"run"}, func(o *Options) { o.Getprop = getprop })
	h.await("init", func(s Status) bool { return s.State == StateInit && s.Reason == ReasonBoot })
	select {
	case s := <-h.seen:
		t.Fatalf("went on before boot completed: %+v", s)
	case <-time.After(100 * time.Millisecond):
	}
	if len(h.starts()) != 0 {
		t.Fatal("runtime started before boot completed")
	}
	os.WriteFile(prop, []byte("1\n"), 0o644)
	h.await("ok", func(s Status) bool { return s.State == StateOK })
}

func TestRuntimeUIDOfAnAndroidPackageRefused(t *testing.T) {
	testenv.NeedRoot(t)
	open := apptest.OpenDir(t)
	plist := filepath.Join(open, "packages.list")
	os.WriteFile(plist, []byte(fmt.Sprintf("com.example.app %d 0 /data/user/0/com.example.app default 3003\n", testRuntimeUID)), 0o644)
	s, _ := New(&Options{Root: filepath.Join(open, "root"), RuntimeUID: testRuntimeUID, Getprop: "-", AndroidPackagesList: plist, RuntimeCmd: []string{"/bin/true"}})
	err := s.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "belongs to an installed Android package") {
		t.Fatalf("err = %v", err)
	}
	if st, _ := ReadStatus(s.Paths().Status()); st.Reason != ReasonUIDConflict {
		t.Fatalf("status %+v", st)
	}
}

func TestHeartbeatReading(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "heartbeat")
	long := strings.Repeat("x=1\n", 20) + "tasks=3\n"
	tests := []struct {
		name  string
		setup func()
		tasks int
		ok    bool
	}{
		{"plain", func() { os.WriteFile(p, []byte("pid=7\ntasks=2\nat=5\nstate=busy\n"), 0o644) }, 2, true},
		{"tasks beyond 16 lines ignored", func() { os.WriteFile(p, []byte(long), 0o644) }, 0, false},
		{"negative tasks", func() { os.WriteFile(p, []byte("tasks=-1\n"), 0o644) }, 0, false},
		{"symlink", func() {
			os.WriteFile(filepath.Join(dir, "real"), []byte("tasks=4\n"), 0o644)
			os.Symlink(filepath.Join(dir, "real"), p)
		}, 0, false},
		{"fifo", func() { syscall.Mkfifo(p, 0o644) }, 0, false},
		{"missing", func() {}, 0, false},
	}
	for _, tt := range tests {
		os.Remove(p)
		tt.setup()
		done := make(chan struct{})
		var hb *Heartbeat
		var err error
		go func() { hb, err = ReadHeartbeat(p); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: read blocked", tt.name)
		}
		if (err == nil) != tt.ok || (tt.ok && hb.Tasks != tt.tasks) {
			t.Errorf("%s: %+v %v", tt.name, hb, err)
		}
	}
}

// RuntimeIdentity is the running runtime's credentials, read from the
// kernel, or the defaults when none runs: the doctor's DNS and HTTPS
// checks run as it.
func TestRuntimeIdentity(t *testing.T) {
	testenv.NeedRoot(t)
	root := t.TempDir()
	def := RuntimeIdentity(root)
	if def.Uid != DefaultRuntimeUID || def.Gid != DefaultRuntimeUID || !slices.Equal(def.Groups, []uint32{3003}) {
		t.Fatalf("default identity %+v", def)
	}
	cmd := exec.Command("/bin/sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 19998, Gid: 19997, Groups: []uint32{3003, 1015}}}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	if err := writeAtomic(Paths{Root: root}.Status(), Status{State: StateOK, RuntimePID: cmd.Process.Pid}.Marshal(), 0o644); err != nil {
		t.Fatal(err)
	}
	got := RuntimeIdentity(root)
	if got.Uid != 19998 || got.Gid != 19997 || !slices.Equal(got.Groups, []uint32{1015, 3003}) {
		t.Fatalf("identity of the running runtime %+v", got)
	}
}
