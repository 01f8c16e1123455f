// Package runner runs a selection of scenarios over leased devices: a
// dynamic queue of (scenario, attempt) served by workers that lease
// health-gated devices from the pool (one per role), attempts with a
// per-scenario and a run-wide retry budget, attempts lost to the lab
// re-queued on another device within their own budget, verdicts (pass,
// flaky, fail, error, skipped, inconclusive), per-attempt artifacts and a
// per-device timeline. It also reproduces one scenario on one device
// (Repeat, UntilFail).
//
// The runner owns scheduling and verdicts; what an attempt does on the
// devices is the Executor's (DeviceExecutor runs lab/steps), and where
// devices come from is the Leaser's (Pool adapts devices/pool).
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
)

// Lease is exclusive use of one device (a *pool.Lease, adapted by Pool).
type Lease interface {
	Device() devices.Device
	Serial() string
	// Lost is closed when the pool takes the device away.
	Lost() <-chan struct{}
	Release(pool.Outcome) error
}

// Leaser hands out leases.
type Leaser interface {
	// Acquire waits for a device that matches sel and passes the health
	// gate (see pool.Pool.Acquire).
	Acquire(ctx context.Context, sel pool.Selector) (Lease, error)
	// Devices is the inventory.
	Devices() []pool.Status
}

// Events is an optional ability of a Leaser: the pool's state changes,
// for the devices' health and timeline.
type Events interface {
	Subscribe(buf int) (<-chan pool.Event, func())
}

// Executor runs one attempt on its leased devices.
type Executor interface {
	Run(ctx context.Context, a *Attempt) *Outcome
}

// Attempt is one attempt for an Executor.
type Attempt struct {
	Scenario *scenario.Scenario
	Number   int
	// Leases are the leased devices, one per role in role order.
	Leases []Lease
	// RunDir is the run's output directory; RelDir the attempt's folder
	// under it for artifacts.
	RunDir, RelDir string
	// Keep says, once the outcome is known, whether its artifacts are
	// kept (failed: a check or a step failed, or the lab lost it).
	Keep func(failed bool) bool
}

// Outcome is what an attempt did.
type Outcome struct {
	Checks []reports.Check
	// Err is a product failure beyond the checks (a step failed).
	Err error
	// LabFault means the lab lost the attempt.
	LabFault  error
	Touches   int
	Artifacts []reports.Artifact
	// StepTime is the time spent inside steps (device and model time).
	StepTime time.Duration
}

// failed reports whether the outcome is a product failure.
func (o *Outcome) failed() bool {
	if o.Err != nil {
		return true
	}
	for _, c := range o.Checks {
		if c.Failed() {
			return true
		}
	}
	return false
}

// Options configure a run.
type Options struct {
	Scenarios []*scenario.Scenario
	// Filtered are scenarios left out by tags, reported as skipped.
	Filtered []*scenario.Scenario
	Leaser   Leaser
	Executor Executor
	// RunDir is the run's output directory.
	RunDir string
	// Base is the selector every lease starts from (root, the module).
	Base pool.Selector
	// Attempts is the default most attempts per scenario (default 2);
	// RetryBudget bounds retries of product failures across the run
	// (default 20); LabFaultRequeues bounds re-queues of attempts lost to
	// the lab across the run (default 10).
	Attempts         int
	RetryBudget      int
	LabFaultRequeues int
	// Timeout is the default per-attempt timeout (default 5 min).
	Timeout time.Duration
	// Parallel bounds the attempts running at once; default the number of
	// devices in the inventory.
	Parallel int
	// AcquireTimeout bounds the wait for a device (default 10 min).
	AcquireTimeout time.Duration
	// Keep is the artifact policy; nil keeps failures' artifacts.
	Keep func(failed bool) bool
	// Model is the run's model: stub or live.
	Model string
	// Apps are the apps provisioned (short names); nil means any.
	Apps []string
	// Repeat runs the one scenario this many times on one device, every
	// attempt kept; UntilFail stops at the first failure (Repeat 0 then
	// means at most DefaultUntilFail).
	Repeat    int
	UntilFail bool
	// Stop, when closed, stops queueing: running attempts finish, the
	// rest is reported skipped. Cancelling Run's context aborts running
	// attempts too.
	Stop <-chan struct{}
	// Devices are the run's devices as the lab knows them before the
	// queue (provisioning events, runtime versions); the runner adds
	// leases, attempts, health and recoveries.
	Devices []reports.Device
	// NamePrefix is put before every scenario's name in the results (a
	// pool's name, when several pools run the suite).
	NamePrefix string
	// Progress is told about each attempt as it ends; nil tells no one.
	Progress func(scenario string, a reports.Attempt)
	Logger   *slog.Logger
}

// Defaults of Options.
const (
	DefaultAttempts         = 2
	DefaultRetryBudget      = 20
	DefaultLabFaultRequeues = 10
	DefaultTimeout          = 5 * time.Minute
	DefaultAcquireTimeout   = 10 * time.Minute
	DefaultUntilFail        = 100
	// maxLabFaultsPerScenario bounds one scenario's re-queues, so that a
	// scenario that keeps killing devices does not eat the run's budget.
	maxLabFaultsPerScenario = 3
)

// Result is what a run produced.
type Result struct {
	Scenarios []reports.Scenario
	Devices   []reports.Device
	// Overheads are the lab's own time per attempt: the attempt's wall
	// time (lease, executor, release) minus the time inside its steps.
	Overheads []time.Duration
	// Interrupted is true when Stop or the context ended the run early.
	Interrupted bool
}

// item is one scenario's progress through the queue.
type item struct {
	sc      *scenario.Scenario
	pos     int
	res     reports.Scenario
	product int // attempts that were not lab faults
	labs    int
	avoid   map[string]bool
}

type runner struct {
	o   Options
	log *slog.Logger

	// mu guards the fields that follow.
	mu        sync.Mutex
	cond      *sync.Cond
	queue     []*item
	inFlight  int
	retries   int
	requeues  int
	stopping  bool
	devices   map[string]*reports.Device
	order     []string
	overheads []time.Duration

	// stopCtx is cancelled when the run stops queueing.
	stopCtx    context.Context
	stopCancel context.CancelFunc

	acquireMu sync.Mutex // one multi-device acquisition at a time
}

// Run runs the scenarios and returns their results.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Leaser == nil || o.Executor == nil {
		return nil, errors.New("runner: Leaser and Executor are required")
	}
	if o.Attempts <= 0 {
		o.Attempts = DefaultAttempts
	}
	if o.RetryBudget == 0 {
		o.RetryBudget = DefaultRetryBudget
	}
	if o.LabFaultRequeues == 0 {
		o.LabFaultRequeues = DefaultLabFaultRequeues
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.AcquireTimeout <= 0 {
		o.AcquireTimeout = DefaultAcquireTimeout
	}
	if o.Keep == nil {
		o.Keep = func(failed bool) bool { return failed }
	}
	r := &runner{o: o, log: o.Logger, retries: max(o.RetryBudget, 0), requeues: max(o.LabFaultRequeues, 0), devices: map[string]*reports.Device{}}
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	r.cond = sync.NewCond(&r.mu)
	r.stopCtx, r.stopCancel = context.WithCancel(context.Background())
	defer r.stopCancel()
	for i := range o.Devices {
		d := o.Devices[i]
		r.devices[d.Serial] = &d
		r.order = append(r.order, d.Serial)
	}
	stopEvents := r.watchPool()
	defer stopEvents()

	items := make([]*item, 0, len(o.Scenarios))
	for i, sc := range o.Scenarios {
		it := &item{sc: sc, pos: i, avoid: map[string]bool{}, res: reports.Scenario{
			Name: o.NamePrefix + sc.Name, File: sc.File, Tags: nonNil(sc.Tags), Devices: []string{}, Attempts: []reports.Attempt{},
			Checks: []reports.Check{}, Artifacts: []reports.Artifact{}}}
		items = append(items, it)
	}
	res := &Result{}
	if o.Repeat > 0 || o.UntilFail {
		if len(items) != 1 {
			return nil, fmt.Errorf("runner: repeat needs exactly one scenario, got %d", len(items))
		}
		r.repeat(ctx, items[0])
	} else {
		for _, it := range items {
			if reason := r.unmet(it.sc); reason != "" {
				it.res.Checks = skippedChecks(it.sc, reason)
				r.finish(it, reports.VerdictSkipped, reason)
				continue
			}
			r.queue = append(r.queue, it)
		}
		r.work(ctx)
	}
	r.mu.Lock()
	res.Interrupted = r.stopping || ctx.Err() != nil
	r.mu.Unlock()
	for _, it := range items {
		if it.res.Verdict == "" {
			it.res.Verdict, it.res.Reason = reports.VerdictSkipped, "not run: the run was interrupted"
		}
		res.Scenarios = append(res.Scenarios, it.res)
	}
	for _, sc := range o.Filtered {
		res.Scenarios = append(res.Scenarios, reports.Scenario{Name: o.NamePrefix + sc.Name, File: sc.File, Tags: nonNil(sc.Tags),
			Devices: []string{}, Verdict: reports.VerdictSkipped, Reason: "excluded by the tag filters",
			Attempts: []reports.Attempt{}, Checks: []reports.Check{}, Artifacts: []reports.Artifact{}})
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.order {
		d := *r.devices[s]
		d.Timeline = slices.Clone(d.Timeline)
		slices.SortStableFunc(d.Timeline, func(a, b reports.Event) int { return a.Start.Compare(b.Start) })
		res.Devices = append(res.Devices, d)
	}
	res.Overheads = slices.Clone(r.overheads)
	return res, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// skippedChecks lists a scenario's named checks as skipped for reason, so
// a scenario the run cannot meet still shows every upstream check it maps
// (and the per-suite counts say how many were not evaluated).
func skippedChecks(sc *scenario.Scenario, reason string) []reports.Check {
	out := []reports.Check{}
	for _, c := range sc.Checks {
		out = append(out, reports.Check{Name: c.Name, Skipped: true, Detail: "skipped: " + reason, Upstream: c.Upstream})
	}
	return out
}

// unmet says why the run cannot meet a scenario's needs ("" if it can).
func (r *runner) unmet(sc *scenario.Scenario) string {
	switch nm := sc.NeedsModel(); {
	case nm == scenario.ModelLive && r.o.Model != scenario.ModelLive:
		return "needs a live model; the run uses the stub"
	case nm == scenario.ModelStub && r.o.Model == scenario.ModelLive:
		return "needs the model stub (a scripted model); the run uses a live model"
	}
	if r.o.Apps != nil {
		var missing []string
		for _, a := range sc.Needs.Apps {
			if !slices.Contains(r.o.Apps, scenario.AppName(pkgOf(a))) && !slices.Contains(r.o.Apps, a) {
				missing = append(missing, a)
			}
		}
		if len(missing) > 0 {
			return "needs apps the run did not provision: " + strings.Join(missing, ", ")
		}
	}
	usable := 0
	for _, st := range r.o.Leaser.Devices() {
		if st.State == pool.StateQuarantined || st.State == pool.StateGone {
			continue
		}
		if r.fits(sc, st) {
			usable++
		}
	}
	if roles := len(sc.Roles()); usable < roles {
		what := "device"
		if len(sc.Needs.Kinds) > 0 {
			what = strings.Join(sc.Needs.Kinds, " or ") + " device"
		}
		return fmt.Sprintf("needs %d %s(s); the run has %d", roles, what, usable)
	}
	return ""
}

func pkgOf(app string) string {
	p, _ := scenario.PackageOf(app)
	return p
}

// fits reports whether a device can serve the scenario by attributes.
func (r *runner) fits(sc *scenario.Scenario, st pool.Status) bool {
	if !r.o.Base.Matches(st.Info, st.Labels) {
		return false
	}
	if len(sc.Needs.Kinds) > 0 && !slices.Contains(sc.Needs.Kinds, string(KindOf(st.Info, st.Serial))) {
		return false
	}
	return sc.Needs.MinAPI == 0 || st.Info.APILevel >= sc.Needs.MinAPI
}

// KindOf tells a virtual device, an emulator and a phone apart.
func KindOf(info devices.Info, serial string) reports.DeviceKind {
	switch {
	case info.Product == "agentlab_vdev" || strings.HasPrefix(info.Product, "agentlab"):
		return reports.DeviceVirtual
	case strings.HasPrefix(serial, "emulator-") || strings.HasPrefix(info.Product, "sdk_") ||
		strings.Contains(info.Product, "emulator") || strings.HasPrefix(info.Device, "emu") || strings.HasPrefix(info.Device, "generic"):
		return reports.DeviceEmulator
	}
	return reports.DevicePhone
}

// work runs the queue with Parallel workers until it is empty, or until
// Stop or the context stops it.
func (r *runner) work(ctx context.Context) {
	n := r.o.Parallel
	if n <= 0 {
		n = len(r.o.Leaser.Devices())
	}
	n = max(min(n, len(r.queue)), 1)
	var bg sync.WaitGroup
	quit := make(chan struct{})
	if r.o.Stop != nil {
		bg.Go(func() {
			select {
			case <-r.o.Stop:
				r.stop()
			case <-quit:
			}
		})
	}
	// A cancelled context wakes the workers waiting for work.
	unhook := context.AfterFunc(ctx, r.stop)
	var workers sync.WaitGroup
	for range n {
		workers.Go(func() {
			for {
				it := r.next(ctx)
				if it == nil {
					return
				}
				r.runItem(ctx, it)
			}
		})
	}
	workers.Wait()
	close(quit)
	bg.Wait()
	unhook()
}

// stop stops queueing: waiting workers return, acquisitions end.
func (r *runner) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.stopping = true
	r.stopCancel()
	r.cond.Broadcast()
}

// next returns the next item, or nil when there is no more work.
func (r *runner) next(ctx context.Context) *item {
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		if r.stopping || ctx.Err() != nil {
			return nil
		}
		if len(r.queue) > 0 {
			it := r.queue[0]
			r.queue = r.queue[1:]
			r.inFlight++
			return it
		}
		if r.inFlight == 0 {
			return nil
		}
		r.cond.Wait()
	}
}

// requeue puts an item back (front: it has waited already), or finishes
// it when the run is stopping.
func (r *runner) requeue(it *item) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight--
	r.queue = append([]*item{it}, r.queue...)
	r.cond.Broadcast()
}

func (r *runner) done() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inFlight--
	r.cond.Broadcast()
}

// runItem runs the next attempt of it and decides what follows.
func (r *runner) runItem(ctx context.Context, it *item) {
	a, serials := r.attempt(ctx, it)
	if a == nil {
		r.done()
		return
	}
	switch a.Verdict {
	case reports.VerdictError:
		if r.mayRequeue(ctx, it, serials) {
			r.log.Info("attempt lost to the lab; re-queued", "scenario", it.sc.Name, "attempt", a.Number, "device", a.Device, "err", a.Error)
			r.requeue(it)
			return
		}
	case reports.VerdictFail:
		if r.mayRetry(ctx, it) {
			r.requeue(it)
			return
		}
	}
	r.finish(it, "", "")
	r.done()
}

func (r *runner) mayRequeue(ctx context.Context, it *item, serials []string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopping || ctx.Err() != nil || r.requeues <= 0 || it.labs > maxLabFaultsPerScenario {
		return false
	}
	r.requeues--
	for _, s := range serials {
		it.avoid[s] = true
	}
	return true
}

func (r *runner) mayRetry(ctx context.Context, it *item) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	max := r.o.Attempts
	if it.sc.Attempts > 0 {
		max = it.sc.Attempts
	}
	if r.stopping || ctx.Err() != nil || it.product >= max || r.retries <= 0 {
		return false
	}
	r.retries--
	return true
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// attemptDir is the attempt's artifact folder relative to the run dir.
func attemptDir(name string, n int) string {
	return path.Join("artifacts", strings.Trim(unsafeName.ReplaceAllString(name, "_"), "_."), fmt.Sprintf("attempt-%d", n))
}

// attempt leases devices for it and runs one attempt. It returns nil when
// no attempt ran (the run is stopping); a device that could not be leased
// finishes the item as an error.
func (r *runner) attempt(ctx context.Context, it *item) (*reports.Attempt, []string) {
	start := time.Now()
	leases, err := r.acquire(ctx, it)
	if err != nil {
		if ctx.Err() != nil || r.isStopping() {
			return nil, nil
		}
		r.finish(it, reports.VerdictError, "no device: "+err.Error())
		return nil, nil
	}
	serials := make([]string, len(leases))
	for i, l := range leases {
		serials[i] = l.Serial()
	}
	n := len(it.res.Attempts) + 1
	at := &Attempt{Scenario: it.sc, Number: n, Leases: leases, RunDir: r.o.RunDir, RelDir: attemptDir(it.res.Name, n), Keep: r.o.Keep}
	if r.o.Repeat > 0 || r.o.UntilFail {
		at.Keep = func(bool) bool { return true }
	}
	out, started, finished := r.execute(ctx, at, leases)
	a := r.record(it, at, out, serials, started, finished)
	r.release(leases, out)
	r.noteLease(serials, start, time.Now(), it.sc.Name, n)
	r.mu.Lock()
	r.overheads = append(r.overheads, max(time.Since(start)-out.StepTime, 0))
	r.mu.Unlock()
	if r.o.Progress != nil {
		r.o.Progress(it.res.Name, *a)
	}
	return a, serials
}

func (r *runner) isStopping() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stopping
}

// acquire leases one device per role.
func (r *runner) acquire(ctx context.Context, it *item) ([]Lease, error) {
	roles := it.sc.Roles()
	if len(roles) > 1 {
		// Two multi-device scenarios acquiring at once could each hold
		// half of what the other needs.
		r.acquireMu.Lock()
		defer r.acquireMu.Unlock()
	}
	actx, cancel := context.WithTimeout(ctx, r.o.AcquireTimeout)
	defer cancel()
	// Stopping ends the wait for a device (running attempts go on).
	defer context.AfterFunc(r.stopCtx, cancel)()
	var leases []Lease
	for range roles {
		sel := r.selector(it, leases)
		if len(sel.Serials) == 0 && r.noneUsable(it) {
			releaseAll(leases, pool.OK)
			return nil, errors.New("every device that fits the scenario is quarantined or gone")
		}
		l, err := r.o.Leaser.Acquire(actx, sel)
		if err != nil {
			releaseAll(leases, pool.OK)
			return nil, err
		}
		leases = append(leases, l)
	}
	return leases, nil
}

func releaseAll(leases []Lease, o pool.Outcome) {
	for _, l := range leases {
		l.Release(o)
	}
}

// selector is the lease selector for it's next role: the base, the
// scenario's needs, and, after a lab fault, other devices than the one
// that failed when there are any.
func (r *runner) selector(it *item, held []Lease) pool.Selector {
	sel := r.o.Base
	sel.NeedRoot = sel.NeedRoot || it.sc.Needs.Root
	if it.sc.Needs.MinAPI > sel.MinAPI {
		sel.MinAPI = it.sc.Needs.MinAPI
	}
	avoid := cloneSet(it.avoid)
	for _, l := range held {
		avoid[l.Serial()] = true
	}
	if len(avoid) == 0 && len(it.sc.Needs.Kinds) == 0 {
		return sel
	}
	var allowed, fallback []string
	for _, st := range r.o.Leaser.Devices() {
		if st.State == pool.StateQuarantined || st.State == pool.StateGone || !r.fits(it.sc, st) {
			continue
		}
		if len(sel.Serials) > 0 && !slices.Contains(sel.Serials, st.Serial) {
			continue
		}
		if held := slices.ContainsFunc(held, func(l Lease) bool { return l.Serial() == st.Serial }); held {
			continue
		}
		fallback = append(fallback, st.Serial)
		if !avoid[st.Serial] {
			allowed = append(allowed, st.Serial)
		}
	}
	switch {
	case len(allowed) > 0:
		sel.Serials = allowed
	case len(fallback) > 0:
		// Only the device that failed is left: better it than nothing.
		sel.Serials = fallback
	default:
		sel.Serials = nil
	}
	return sel
}

func cloneSet(m map[string]bool) map[string]bool {
	out := make(map[string]bool, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// noneUsable reports whether no device that fits the scenario is left.
func (r *runner) noneUsable(it *item) bool {
	for _, st := range r.o.Leaser.Devices() {
		if st.State != pool.StateQuarantined && st.State != pool.StateGone && r.fits(it.sc, st) {
			return false
		}
	}
	return true
}

// execute runs the executor under the scenario's timeout, cancelling it
// with pool.ErrLeaseLost when a lease is lost.
func (r *runner) execute(ctx context.Context, at *Attempt, leases []Lease) (*Outcome, time.Time, time.Time) {
	timeout := r.o.Timeout
	if at.Scenario.Timeout > 0 {
		timeout = at.Scenario.Timeout.D()
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tctx, tcancel := context.WithTimeout(actx, timeout)
	defer tcancel()
	var wg sync.WaitGroup
	watchDone := make(chan struct{})
	for _, l := range leases {
		wg.Go(func() {
			select {
			case <-l.Lost():
				cancel(fmt.Errorf("%s: %w", l.Serial(), pool.ErrLeaseLost))
			case <-watchDone:
			}
		})
	}
	started := time.Now()
	out := r.o.Executor.Run(tctx, at)
	finished := time.Now()
	close(watchDone)
	wg.Wait()
	if out == nil {
		out = &Outcome{LabFault: errors.New("the executor returned no outcome")}
	}
	if cause := context.Cause(actx); out.LabFault == nil && errors.Is(cause, pool.ErrLeaseLost) {
		// The device went away: whatever the checks say, the lab lost it.
		out.LabFault = cause
	}
	return out, started, finished
}

// record adds the attempt to its scenario and the devices' timelines.
func (r *runner) record(it *item, at *Attempt, out *Outcome, serials []string, started, finished time.Time) *reports.Attempt {
	a := reports.Attempt{Number: at.Number, Device: serials[0], StartedAt: started, FinishedAt: finished,
		Checks: nonNilChecks(out.Checks), Artifacts: nonNilArts(out.Artifacts)}
	switch {
	case out.LabFault != nil:
		a.Verdict, a.LabFault, a.Error = reports.VerdictError, true, out.LabFault.Error()
	case out.failed() && out.Touches > 0:
		a.Verdict = reports.VerdictInconclusive
		a.Error = fmt.Sprintf("a person touched the device %d time(s) during the attempt", out.Touches)
	case out.failed():
		a.Verdict = reports.VerdictFail
		if out.Err != nil {
			a.Error = out.Err.Error()
		}
	default:
		a.Verdict = reports.VerdictPass
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if a.LabFault {
		it.labs++
	} else {
		it.product++
	}
	it.res.Attempts = append(it.res.Attempts, a)
	it.res.Devices = serials
	it.res.PersonTouches += out.Touches
	it.res.DurationMs += finished.Sub(started).Milliseconds()
	it.res.Artifacts = append(it.res.Artifacts, a.Artifacts...)
	for _, s := range serials {
		d := r.deviceLocked(s)
		d.Timeline = append(d.Timeline, reports.Event{Kind: reports.EventScenario, Label: it.res.Name, Start: started, End: finished,
			Scenario: it.res.Name, Attempt: at.Number, Verdict: a.Verdict, Detail: clip(a.Error, 200)})
	}
	return &it.res.Attempts[len(it.res.Attempts)-1]
}

func nonNilChecks(c []reports.Check) []reports.Check {
	if c == nil {
		return []reports.Check{}
	}
	return c
}

func nonNilArts(a []reports.Artifact) []reports.Artifact {
	if a == nil {
		return []reports.Artifact{}
	}
	return a
}

// release returns the leases: a lab fault sends the devices to the
// pool's recovery ladder.
func (r *runner) release(leases []Lease, out *Outcome) {
	o := pool.OK
	if out.LabFault != nil {
		o = pool.DeviceFault(clip(out.LabFault.Error(), 200))
	}
	releaseAll(leases, o)
}

// finish sets the scenario's verdict from its attempts (or the verdict
// given when it had none to run).
func (r *runner) finish(it *item, v reports.Verdict, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := &it.res
	if v != "" && len(s.Attempts) == 0 {
		s.Verdict, s.Reason = v, reason
		return
	}
	s.Verdict = reports.VerdictOf(s.Attempts)
	if v == reports.VerdictError && s.Verdict != reports.VerdictFail {
		s.Verdict = reports.VerdictError
	}
	last := s.Attempts[len(s.Attempts)-1]
	s.Checks = last.Checks
	if s.Verdict != reports.VerdictError && last.LabFault {
		// A lab fault after a failure keeps the failure: report the
		// checks of the attempt that failed.
		for i := len(s.Attempts) - 1; i >= 0; i-- {
			if !s.Attempts[i].LabFault {
				s.Checks = s.Attempts[i].Checks
				s.Devices = []string{s.Attempts[i].Device}
				break
			}
		}
	}
	s.Reason = reasonOf(s, reason)
}

// reasonOf says in one line why a verdict is not pass.
func reasonOf(s *reports.Scenario, extra string) string {
	last := s.Attempts[len(s.Attempts)-1]
	switch s.Verdict {
	case reports.VerdictPass:
		return ""
	case reports.VerdictFlaky:
		return fmt.Sprintf("passed on attempt %d after a failure", last.Number)
	case reports.VerdictError:
		if extra != "" {
			return extra
		}
		return "lost to the lab: " + clip(last.Error, 300)
	case reports.VerdictInconclusive:
		return fmt.Sprintf("failed while a person touched the device (%d touches): %s", s.PersonTouches, firstFailure(s.Checks, last.Error))
	case reports.VerdictFail:
		return "failed: " + firstFailure(s.Checks, last.Error)
	}
	return extra
}

func firstFailure(checks []reports.Check, fallback string) string {
	for _, c := range checks {
		if c.Failed() {
			if c.Detail == "" {
				return c.Name
			}
			return clip(c.Name+": "+c.Detail, 300)
		}
	}
	return clip(fallback, 300)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
