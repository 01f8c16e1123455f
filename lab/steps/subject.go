package steps

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
)

// liveModelNote is the evidence of a model_requests check on a device
// whose runtime talks to a live model.
const liveModelNote = "the model is live: no requests were recorded"

func checkResult(name, upstream string, ok bool, evidence string) reports.Check {
	return reports.Check{Name: name, Upstream: upstream, OK: ok, Evidence: evidence}
}

// subject reads what a leaf condition names.
func (a *attempt) subject(ctx context.Context, t *Target, c *scenario.Condition) (any, error) {
	switch {
	case c.Timing != nil:
		return a.timing(c.Timing)
	case c.Saved != "":
		return a.savedValue(c.Saved)
	case c.Events != "":
		return a.savedValue(c.Events)
	case c.Dump != "":
		return a.dump(ctx, t, c.Dump)
	case c.Shell != "":
		cmd, err := scenario.ExpandString(c.Shell, a.lookup(t))
		if err != nil {
			return nil, err
		}
		return shellOutput(ctx, t, cmd, false)
	}
	switch c.Of {
	case scenario.OfCallers:
		return ctlJSON(ctx, t, "callers", "list")
	case scenario.OfCards:
		a.mu.Lock()
		r := a.consent[t.Role]
		a.mu.Unlock()
		if r == nil {
			return []any{}, nil
		}
		return r.cardsJSON(), nil
	case scenario.OfConsentRecent:
		return ctlJSON(ctx, t, "consent", "recent")
	case scenario.OfConsentPending:
		return ctlJSON(ctx, t, "consent", "pending")
	case scenario.OfModelRequests:
		if a.env.Stub == nil || t.StubToken == "" {
			// The lab sees no traffic of a live model: an empty list lets
			// count: 0 and any_of outcomes written for live runs hold.
			return scenario.Noted{Value: []any{}, Note: liveModelNote}, nil
		}
		reqs, _ := a.env.Stub.Requests(t.StubToken)
		return scenario.ToJSON(reqs), nil
	case scenario.OfCatalog:
		return ctlJSON(ctx, t, "catalog")
	case scenario.OfPlugins:
		return ctlJSON(ctx, t, "plugins", "list")
	case scenario.OfStatus:
		return ctlJSON(ctx, t, "status")
	case scenario.OfDesktop:
		return ctlJSON(ctx, t, "desktop", "status")
	}
	return nil, fmt.Errorf("unknown subject %q", c.SubjectName())
}

func (a *attempt) savedValue(name string) (any, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	v, ok := a.saved[name]
	if !ok {
		return nil, fmt.Errorf("nothing was saved as %q (its step did not run or failed)", name)
	}
	return scenario.ToJSON(v), nil
}

// dump reads an app's dump now.
func (a *attempt) dump(ctx context.Context, t *Target, app string) (any, error) {
	return a.appRun(ctx, t, app, 0, "dump")
}

// timing measures steps: a step's duration, or from one edge to another.
func (a *attempt) timing(tm *scenario.Timing) (time.Duration, error) {
	edge := func(ref string, defEnd bool) (time.Time, error) {
		name, end := ref, defEnd
		switch {
		case strings.HasSuffix(ref, ".start"):
			name, end = strings.TrimSuffix(ref, ".start"), false
		case strings.HasSuffix(ref, ".end"):
			name, end = strings.TrimSuffix(ref, ".end"), true
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		i, ok := a.recIndex[name]
		if !ok {
			return time.Time{}, fmt.Errorf("step %q did not run", name)
		}
		r := a.records[i]
		if end {
			if r.End.IsZero() {
				return time.Time{}, fmt.Errorf("step %q has not ended", name)
			}
			return r.End, nil
		}
		return r.Start, nil
	}
	from, to := tm.From, tm.To
	if tm.Step != "" {
		from, to = tm.Step, tm.Step
	}
	s, err := edge(from, false)
	if err != nil {
		return 0, err
	}
	e, err := edge(to, true)
	if err != nil {
		return 0, err
	}
	return e.Sub(s), nil
}

// takeSnapshots reads, after setup, what invariants compare against.
func (a *attempt) takeSnapshots(ctx context.Context) error {
	for _, inv := range a.sc.Invariants {
		t := a.target(inv.Device)
		for _, app := range inv.NothingDeleted {
			key := t.Role + "\x00ids\x00" + scenario.AppName(pkgOf(app))
			if _, done := a.snapshot[key]; done {
				continue
			}
			ids, err := a.itemIDs(ctx, t, app)
			if err != nil {
				if IsLabFault(err) {
					return err
				}
				a.snapshot[key] = err
				continue
			}
			a.snapshot[key] = ids
		}
		if inv.NoSMSSent {
			key := t.Role + "\x00outbox"
			n, err := a.outbox(ctx, t)
			if err != nil {
				if IsLabFault(err) {
					return err
				}
				a.snapshot[key] = err
				continue
			}
			a.snapshot[key] = n
		}
	}
	return nil
}

func (a *attempt) itemIDs(ctx context.Context, t *Target, app string) ([]string, error) {
	d, err := a.dump(ctx, t, app)
	if err != nil {
		return nil, err
	}
	p, err := scenario.ParsePath(scenario.IDPaths[scenario.AppName(pkgOf(app))])
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, v := range p.Select(d) {
		ids = append(ids, fmt.Sprint(v))
	}
	return ids, nil
}

func (a *attempt) outbox(ctx context.Context, t *Target) (int, error) {
	d, err := a.dump(ctx, t, "sms")
	if err != nil {
		return 0, err
	}
	p, _ := scenario.ParsePath(scenario.OutboxPath)
	vals := p.Select(d)
	if len(vals) != 1 {
		return 0, nil
	}
	l, _ := vals[0].([]any)
	return len(l), nil
}

// invariants evaluates the scenario's invariants.
func (a *attempt) invariants(ctx context.Context) error {
	cache := map[string]any{}
	for i := range a.sc.Invariants {
		inv := &a.sc.Invariants[i]
		t := a.target(inv.Device)
		var c reports.Check
		switch {
		case inv.NothingDeleted != nil:
			c = reports.Check{Name: inv.Name, Upstream: inv.Upstream, OK: true}
			var lost []string
			for _, app := range inv.NothingDeleted {
				name := scenario.AppName(pkgOf(app))
				before, ok := a.snapshot[t.Role+"\x00ids\x00"+name]
				if !ok {
					c.OK, c.Detail = false, "no snapshot after setup (setup failed)"
					break
				}
				if err, isErr := before.(error); isErr {
					c.OK, c.Detail = false, fmt.Sprintf("%s: no snapshot: %v", name, err)
					break
				}
				after, err := a.itemIDs(ctx, t, app)
				if err != nil {
					if IsLabFault(err) {
						return err
					}
					c.OK, c.Detail = false, fmt.Sprintf("%s: %v", name, err)
					break
				}
				for _, id := range before.([]string) {
					if !slices.Contains(after, id) {
						lost = append(lost, name+":"+id)
					}
				}
			}
			if len(lost) > 0 {
				c.OK, c.Detail = false, fmt.Sprintf("%d item(s) deleted", len(lost))
				c.Evidence = clip(strings.Join(lost, ", "), 500)
			}
		case inv.NoSMSSent:
			c = reports.Check{Name: inv.Name, Upstream: inv.Upstream}
			before, ok := a.snapshot[t.Role+"\x00outbox"].(int)
			if !ok {
				c.Detail = "no snapshot of the outbox after setup"
				break
			}
			after, err := a.outbox(ctx, t)
			if err != nil {
				if IsLabFault(err) {
					return err
				}
				c.Detail = err.Error()
				break
			}
			c.OK = after <= before
			c.Evidence = fmt.Sprintf("outbox %d → %d", before, after)
			if !c.OK {
				c.Detail = fmt.Sprintf("%d message(s) sent", after-before)
			}
		case inv.CardsOnly != nil:
			var err error
			if c, err = a.cardsOnly(ctx, t, inv); err != nil {
				return err
			}
		default:
			var err error
			c, err = a.evalCheck(ctx, inv.Name, inv.Upstream, inv.Condition, cache)
			if err != nil {
				return err
			}
		}
		a.record(c)
	}
	return nil
}

// cardsOnly: every card of the attempt (seen by the recorder, or answered
// by the runtime's auto-answer since the attempt began) was for an
// allowed tool.
func (a *attempt) cardsOnly(ctx context.Context, t *Target, inv *scenario.Invariant) (reports.Check, error) {
	c := reports.Check{Name: inv.Name, Upstream: inv.Upstream, OK: true}
	allowed := func(names ...string) bool {
		for _, n := range names {
			if n == "" {
				continue
			}
			raw := n
			if i := strings.LastIndex(n, "__"); i >= 0 {
				raw = n[i+2:]
			}
			if slices.Contains(inv.CardsOnly, n) || slices.Contains(inv.CardsOnly, raw) {
				return true
			}
		}
		return false
	}
	var bad, seen []string
	a.mu.Lock()
	r := a.consent[t.Role]
	a.mu.Unlock()
	ids := map[string]bool{}
	if r != nil {
		for _, cd := range r.snapshot() {
			ids[cd.RequestID] = true
			seen = append(seen, cd.ToolName)
			if !allowed(cd.ToolName, cd.ToolDisplayName) {
				bad = append(bad, cd.ToolDisplayName+" ("+cd.ToolName+")")
			}
		}
		recent, err := r.recentSince(ctx)
		if err != nil {
			if IsLabFault(err) {
				return c, err
			}
			c.OK, c.Detail = false, "consent recent: "+err.Error()
			return c, nil
		}
		for _, e := range recent {
			if ids[e.RequestID] {
				continue
			}
			seen = append(seen, e.Tool)
			if !allowed(e.Tool) {
				bad = append(bad, e.Tool)
			}
		}
	}
	c.Evidence = clip(strings.Join(seen, ", "), 500)
	if len(bad) > 0 {
		c.OK = false
		c.Detail = fmt.Sprintf("%d card(s) outside %s: %s", len(bad), strings.Join(inv.CardsOnly, ", "), clip(strings.Join(bad, ", "), 400))
	}
	return c, nil
}
