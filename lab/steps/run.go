package steps

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/model/script"
)

// attempt is the state of one attempt while it runs.
type attempt struct {
	// ctx is the attempt's context, for what outlives one step (the
	// consent driver).
	ctx     context.Context
	sc      *scenario.Scenario
	env     *Env
	log     *slog.Logger
	start   time.Time
	roles   map[string]*Target
	defRole string
	// declared are the scenario's named checks in declaration order.
	declared []string

	// mu guards the fields that follow: background steps save and record
	// concurrently with the foreground.
	mu       sync.Mutex
	saved    map[string]any
	records  []StepRecord
	recIndex map[string]int // step name and save name → index in records
	recorded map[string]reports.Check
	failures []reports.Check // one per failed step
	bg       map[string]*bgStep
	stepTime time.Duration
	prompts  []string // save names of prompts, for artifacts
	dumps    map[string]bool

	// Per role, created on first use and closed by close.
	acp      map[string]*acpConn
	bridges  map[string]*bridgeState
	consent  map[string]*recorder
	offsets  map[string]map[string]int64
	snapshot map[string]any
	// clocks says per role whether the runtime's clock is virtual.
	clocks map[string]bool

	// uiMu guards the ui consent driver's browsers (one per role) and the
	// cards they answered; it is held across a tap.
	uiMu   sync.Mutex
	hands  map[string]*hand
	shots  []shot
	uiSeen map[string]any // per role: console errors, outside requests
}

type bgStep struct {
	st   *scenario.Step
	n    int
	t    *Target
	done chan struct{}
	out  any
	err  error
	rec  int
}

// Run runs one attempt of sc on env's devices and returns its outcome.
// It never returns early on a product failure: invariants are evaluated
// and every named check is reported. A lab fault ends it at once.
func Run(ctx context.Context, sc *scenario.Scenario, env *Env) *Result {
	a := &attempt{
		ctx: ctx, sc: sc, env: env, log: env.Logger, start: time.Now(), roles: map[string]*Target{},
		saved: map[string]any{}, recIndex: map[string]int{}, recorded: map[string]reports.Check{},
		bg: map[string]*bgStep{}, dumps: map[string]bool{}, acp: map[string]*acpConn{}, bridges: map[string]*bridgeState{}, consent: map[string]*recorder{},
		offsets: map[string]map[string]int64{}, snapshot: map[string]any{}, clocks: map[string]bool{},
		hands: map[string]*hand{}, uiSeen: map[string]any{},
	}
	if a.log == nil {
		a.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	roles := sc.Roles()
	a.defRole = roles[0]
	for i, r := range roles {
		if i < len(env.Targets) {
			a.roles[r] = env.Targets[i]
		}
	}
	a.declared = declaredChecks(sc)
	res := &Result{Start: a.start, run: a}
	if len(env.Targets) < len(roles) {
		res.LabFault = labFault("start", fmt.Errorf("the scenario has %d roles, the attempt %d devices", len(roles), len(env.Targets)))
		res.End = time.Now()
		return res
	}
	err := a.run(ctx)
	a.close()
	if err != nil {
		if lab := a.classify(ctx, err); lab != nil {
			res.LabFault = lab
		} else {
			res.Err = err
		}
	}
	if res.LabFault == nil {
		n, terr := a.touches(context.WithoutCancel(ctx))
		res.Touches = n
		if terr != nil {
			a.log.Debug("touch detection", "err", terr)
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	res.Checks = a.results(err)
	res.Steps = append([]StepRecord(nil), a.records...)
	res.StepTime = a.stepTime
	res.End = time.Now()
	return res
}

// classify returns the lab fault err stands for, or nil for a product
// failure.
func (a *attempt) classify(ctx context.Context, err error) error {
	if IsLabFault(err) {
		return err
	}
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		switch {
		case IsLabFault(cause):
			return cause
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return nil
		}
		return labFault("attempt", fmt.Errorf("aborted: %w", cause))
	}
	return nil
}

// run does the attempt; its error is the first failure that ended it.
func (a *attempt) run(ctx context.Context) error {
	if err := a.begin(ctx); err != nil {
		return err
	}
	var failed error
	n := 0
	for i := range a.sc.Setup {
		n++
		if failed = a.step(ctx, n, &a.sc.Setup[i]); failed != nil {
			break
		}
	}
	if failed == nil {
		if err := a.takeSnapshots(ctx); err != nil {
			return err
		}
		for i := range a.sc.Steps {
			n++
			if failed = a.step(ctx, n, &a.sc.Steps[i]); failed != nil {
				break
			}
		}
	}
	if err := a.awaitAll(ctx, failed != nil); err != nil && failed == nil {
		failed = err
	}
	if failed != nil {
		if lab := a.classify(ctx, failed); lab != nil {
			return lab
		}
		if ctx.Err() != nil {
			failed = fmt.Errorf("the scenario timed out: %w", failed)
		}
	} else {
		if err := a.checkAll(ctx, a.sc.Checks); err != nil {
			return err
		}
	}
	// Invariants hold whatever happened; they need a context that the
	// scenario's timeout has not ended.
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	if ctx.Err() != nil && a.classify(ctx, ctx.Err()) != nil {
		return ctx.Err()
	}
	if err := a.invariants(ictx); err != nil {
		return err
	}
	return failed
}

// begin prepares the devices: the model, log offsets, the consent
// recorder, desktop access.
func (a *attempt) begin(ctx context.Context) error {
	usesCards := usesCards(a.sc)
	for _, r := range a.sc.Roles() {
		t := a.roles[r]
		if a.env.Stub != nil && t.StubToken != "" {
			var sc *script.Script
			if a.sc.Model != nil {
				sc = a.sc.Model.Parsed
			}
			var err error
			if m := a.sc.Model; m != nil && m.Chaos != nil {
				err = a.env.Stub.BindChaos(t.StubToken, &modelstub.Chaos{Seed: m.Chaos.Seed})
			} else {
				err = a.env.Stub.Bind(t.StubToken, sc)
			}
			if err != nil {
				return labFault("bind the model script", err)
			}
		}
		if err := a.markLogs(ctx, t); err != nil {
			return err
		}
		if usesCards {
			if err := a.recorderOf(ctx, t).start(ctx, ctx); err != nil {
				return err
			}
		}
		if a.sc.Needs.Desktop {
			if err := enableDesktop(ctx, t); err != nil {
				return fmt.Errorf("desktop access: %w", err)
			}
		}
	}
	return nil
}

// close stops what the attempt started.
func (a *attempt) close() {
	for _, r := range a.consent {
		r.stop()
	}
	for _, c := range a.acp {
		c.close()
	}
	for _, b := range a.bridges {
		b.close()
	}
	a.closeHands()
}

func (a *attempt) target(role string) *Target {
	if role == "" {
		role = a.defRole
	}
	return a.roles[role]
}

func (a *attempt) stepTimeout(st *scenario.Step) time.Duration {
	if st.Timeout > 0 {
		return st.Timeout.D()
	}
	switch st.Kind() {
	case scenario.KindAsk, scenario.KindPrompt:
		return DefaultModelTimeout
	case scenario.KindReboot:
		return DefaultRebootTimeout
	case scenario.KindWait:
		if st.Wait.For > 0 {
			return st.Wait.For.D() + 30*time.Second
		}
		w := st.Wait.Timeout.D()
		if w == 0 {
			w = DefaultWaitTimeout
		}
		return w + 30*time.Second
	case scenario.KindSleep:
		return st.Sleep.D() + 5*time.Second
	case scenario.KindAwait:
		return DefaultModelTimeout
	}
	if a.env.StepTimeout > 0 {
		return a.env.StepTimeout
	}
	return DefaultStepTimeout
}

func stepName(st *scenario.Step, n int) string {
	return fmt.Sprintf("step %d %s", n, st.Kind())
}

// step runs one step in the foreground, or starts it in the background.
func (a *attempt) step(ctx context.Context, n int, st *scenario.Step) error {
	t := a.target(st.Device)
	rec := StepRecord{Index: n, Name: st.Name, Kind: st.Kind(), Role: t.Role, Start: time.Now(), Output: st.OutputName()}
	a.mu.Lock()
	idx := len(a.records)
	a.records = append(a.records, rec)
	if st.Name != "" {
		a.recIndex[st.Name] = idx
	}
	a.recIndex[st.OutputName()] = idx
	a.mu.Unlock()
	timeout := a.stepTimeout(st)
	if st.Background {
		b := &bgStep{st: st, n: n, t: t, done: make(chan struct{}), rec: idx}
		a.mu.Lock()
		a.bg[st.OutputName()] = b
		a.mu.Unlock()
		go func() {
			defer close(b.done)
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			b.out, b.err = a.exec(sctx, n, t, st)
			a.finish(idx, b.err)
		}()
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, timeout)
	out, err := a.exec(sctx, n, t, st)
	cancel()
	a.mu.Lock()
	a.stepTime += time.Since(rec.Start)
	a.mu.Unlock()
	return a.settle(ctx, n, st, out, err, idx)
}

// settle saves a finished step's output, or turns its error into a
// failed check.
func (a *attempt) settle(ctx context.Context, n int, st *scenario.Step, out any, err error, idx int) error {
	if err != nil && st.AllowError && !IsLabFault(err) && ctx.Err() == nil {
		out, err = errorOutput(err), nil
	}
	a.finish(idx, err)
	if err != nil {
		a.log.Info("step failed", "step", n, "kind", st.Kind(), "err", err)
		if a.classify(ctx, err) == nil {
			a.mu.Lock()
			a.failures = append(a.failures, reports.Check{Name: stepName(st, n), Detail: clip(err.Error(), 1000)})
			a.mu.Unlock()
		}
		return err
	}
	a.mu.Lock()
	if out != nil || st.Save != "" {
		a.saved[st.OutputName()] = out
		if st.Name != "" {
			a.saved[st.Name] = out
		}
	}
	a.mu.Unlock()
	return nil
}

func (a *attempt) finish(idx int, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.records[idx].End = time.Now()
	if err != nil {
		a.records[idx].Error = clip(err.Error(), 500)
	}
}

// await waits for a background step and settles it.
func (a *attempt) await(ctx context.Context, name string) error {
	a.mu.Lock()
	b := a.bg[name]
	delete(a.bg, name)
	a.mu.Unlock()
	if b == nil {
		return fmt.Errorf("await %s: no background step of that name is running", name)
	}
	select {
	case <-b.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	return a.settle(ctx, b.n, b.st, b.out, b.err, b.rec)
}

// awaitAll waits for the background steps nobody awaited; after a
// failure they are abandoned (their contexts end with the attempt's).
func (a *attempt) awaitAll(ctx context.Context, failed bool) error {
	a.mu.Lock()
	var names []string
	for name := range a.bg {
		names = append(names, name)
	}
	a.mu.Unlock()
	var first error
	for _, name := range names {
		if failed {
			a.mu.Lock()
			b := a.bg[name]
			a.mu.Unlock()
			// Wait briefly so that its record is complete; its result
			// no longer matters.
			select {
			case <-b.done:
			case <-time.After(5 * time.Second):
			}
			continue
		}
		if err := a.await(ctx, name); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// declaredChecks lists the scenario's named checks in order.
func declaredChecks(sc *scenario.Scenario) []string {
	var out []string
	for _, st := range sc.AllSteps() {
		switch {
		case st.Check != nil:
			out = append(out, st.Check.Name)
		case st.Wait != nil && st.Wait.Check != nil:
			out = append(out, st.Wait.Check.Name)
		}
	}
	for _, c := range sc.Checks {
		out = append(out, c.Name)
	}
	for _, inv := range sc.Invariants {
		out = append(out, inv.Name)
	}
	return out
}

// upstreamOf finds the upstream mapping of a declared check.
func upstreamOf(sc *scenario.Scenario, name string) string {
	for _, st := range sc.AllSteps() {
		switch {
		case st.Check != nil && st.Check.Name == name:
			return st.Check.Upstream
		case st.Wait != nil && st.Wait.Check != nil && st.Wait.Check.Name == name:
			return st.Wait.Check.Upstream
		}
	}
	for _, c := range sc.Checks {
		if c.Name == name {
			return c.Upstream
		}
	}
	for _, inv := range sc.Invariants {
		if inv.Name == name {
			return inv.Upstream
		}
	}
	return ""
}

// record keeps a named check's result.
func (a *attempt) record(c reports.Check) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recorded[c.Name] = c
}

// results are the attempt's checks: failed steps first, then every
// declared check in order, those never evaluated as not reached.
// Called with a.mu held.
func (a *attempt) results(failure error) []reports.Check {
	out := append([]reports.Check(nil), a.failures...)
	reason := "not reached"
	if len(a.failures) > 0 {
		reason = "not reached: " + a.failures[0].Name + " failed"
	} else if failure != nil {
		reason = "not reached: " + clip(failure.Error(), 200)
	}
	for _, name := range a.declared {
		c, ok := a.recorded[name]
		if !ok {
			c = reports.Check{Name: name, Detail: reason, Upstream: upstreamOf(a.sc, name)}
		}
		out = append(out, c)
	}
	if failure != nil && len(a.failures) == 0 && !IsLabFault(failure) {
		// A failure no step owns (the scenario's timeout while awaiting).
		out = append([]reports.Check{{Name: "attempt", Detail: clip(failure.Error(), 1000)}}, out...)
	}
	return out
}

// checkAll evaluates checks that share one reading of each subject.
func (a *attempt) checkAll(ctx context.Context, checks []scenario.Check) error {
	cache := map[string]any{}
	for i := range checks {
		c := &checks[i]
		rc, err := a.namedCheck(ctx, c, cache)
		if err != nil {
			return err
		}
		a.record(rc)
	}
	return nil
}

// namedCheck evaluates a scenario's check, or reports it skipped on a
// device kind it does not apply to (an Android UI or freezer check on a
// virtual device): skipped is neither a pass nor a failure.
func (a *attempt) namedCheck(ctx context.Context, c *scenario.Check, cache map[string]any) (reports.Check, error) {
	if kind := a.target(c.Device).Kind; !c.AppliesTo(kind) {
		return reports.Check{Name: c.Name, Skipped: true, Detail: "skipped: not applicable on " + kind + " devices", Upstream: c.Upstream}, nil
	}
	return a.evalCheck(ctx, c.Name, c.Upstream, &c.Condition, cache)
}

// evalCheck evaluates one named condition. Only a lab fault is returned
// as an error; anything else is a failed check.
func (a *attempt) evalCheck(ctx context.Context, name, upstream string, cond *scenario.Condition, cache map[string]any) (reports.Check, error) {
	ok, detail, evidence, err := a.eval(ctx, cond, cache)
	if err != nil && a.classify(ctx, err) != nil {
		return reports.Check{}, a.classify(ctx, err)
	}
	return reports.Check{Name: name, OK: ok && err == nil, Detail: clip(detail, 1000), Evidence: evidence, Upstream: upstream}, nil
}

// eval evaluates a condition, reading subjects through cache (nil: fresh).
func (a *attempt) eval(ctx context.Context, cond *scenario.Condition, cache map[string]any) (bool, string, string, error) {
	fetch := func(c *scenario.Condition) (any, error) {
		t := a.target(c.Device)
		key := t.Role + "\x00" + c.SubjectName()
		if cache != nil {
			if v, ok := cache[key]; ok {
				return v, nil
			}
		}
		v, err := a.subject(ctx, t, c)
		if err == nil && cache != nil && c.Timing == nil && c.Saved == "" && c.Events == "" {
			cache[key] = v
		}
		return v, err
	}
	return cond.Eval(fetch, a.lookup(a.target(cond.Device)))
}

// lookup resolves ${…} references for steps acting on t.
func (a *attempt) lookup(t *Target) scenario.Lookup {
	return func(name string) (any, bool) {
		switch name {
		case "vars":
			m := make(map[string]any, len(a.sc.Vars))
			for k, v := range a.sc.Vars {
				m[k] = v
			}
			return m, true
		case "device":
			return map[string]any{"serial": t.Device.Serial(), "role": t.Role, "kind": t.Kind}, true
		case "attempt":
			return map[string]any{"number": float64(a.env.Attempt)}, true
		case "scenario":
			return map[string]any{"name": a.sc.Name}, true
		case scenario.RefScripts:
			m, err := a.sc.ScriptTexts(a.lookup(t))
			if err != nil {
				return nil, false
			}
			return m, true
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		v, ok := a.saved[name]
		return v, ok
	}
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

// usesCards reports whether the scenario needs the consent recorder.
func usesCards(sc *scenario.Scenario) bool {
	for _, st := range sc.AllSteps() {
		if st.Tap != nil || (st.Consent != nil && (st.Consent.Rules != nil || st.Consent.Default != "" || st.Consent.Mode == scenario.ConsentAsk)) {
			return true
		}
		if st.Check != nil && condUses(&st.Check.Condition, scenario.OfCards) {
			return true
		}
		if st.Wait != nil && condUses(&st.Wait.Until, scenario.OfCards) {
			return true
		}
	}
	for i := range sc.Checks {
		if condUses(&sc.Checks[i].Condition, scenario.OfCards) {
			return true
		}
	}
	for _, inv := range sc.Invariants {
		if inv.CardsOnly != nil || (inv.Condition != nil && condUses(inv.Condition, scenario.OfCards)) {
			return true
		}
	}
	return false
}

func condUses(c *scenario.Condition, of string) bool {
	if c.Of == of {
		return true
	}
	for i := range c.AllOf {
		if condUses(&c.AllOf[i], of) {
			return true
		}
	}
	for i := range c.AnyOf {
		if condUses(&c.AnyOf[i], of) {
			return true
		}
	}
	return false
}
