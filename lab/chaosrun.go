package lab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/lab/chaos"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/faults"
)

// ChaosFile is the summary agentlab chaos writes into the output folder.
const ChaosFile = "chaos.json"

// DefaultChaosSteps is how many actions a chaos sequence has.
const DefaultChaosSteps = 8

// ChaosOptions configure Chaos.
type ChaosOptions struct {
	// Seed draws the first sequence; sequence i is drawn from Seed+i, and
	// its model answers from the same seed.
	Seed int64
	// Budget is how long to run sequences (per fault with Faults); the
	// shrinking of a violation found in time finishes after it.
	Budget time.Duration
	// Steps is the actions per sequence; default DefaultChaosSteps.
	Steps int
	// Kinds limits the actions drawn; empty draws every kind.
	Kinds []chaos.Kind
	// Faults, when set, runs the fault-injection runtime (virtual devices
	// only, as agentlab mutate does) and chaos against each fault in turn,
	// each until its first violation is shrunk or Budget is spent.
	Faults []string
}

// ChaosResult is what Chaos ran and found (chaos.json).
type ChaosResult struct {
	Seed      int64 `json:"seed"`
	Sequences int   `json:"sequences"`
	// Steps are the actions run, shrinking's reruns included.
	Steps int `json:"steps"`
	// Exercised counts, per invariant, the checks evaluated.
	Exercised map[string]int `json:"exercised"`
	// StepFailures are sequences that failed on a step rather than an
	// invariant (a refusal, a timeout): reported, never shrunk.
	StepFailures []ChaosStepFailure `json:"stepFailures"`
	Violations   []ChaosViolation   `json:"violations"`
	// LabFaults are sequences the lab lost (a device went away): neither
	// a pass nor a failure.
	LabFaults int `json:"labFaults"`
	// Faults are the faults run (with Faults): each one's violation, if
	// chaos found one.
	Faults     []ChaosFault `json:"faults,omitempty"`
	DurationMs int64        `json:"durationMs"`
}

// ChaosStepFailure is a sequence whose scenario failed on a step.
type ChaosStepFailure struct {
	Fault  string `json:"fault,omitempty"`
	Seed   int64  `json:"seed"`
	Check  string `json:"check"`
	Detail string `json:"detail"`
}

// ChaosViolation is a broken invariant, shrunk.
type ChaosViolation struct {
	Fault     string `json:"fault,omitempty"`
	Invariant string `json:"invariant"`
	Seed      int64  `json:"seed"`
	Check     string `json:"check"`
	Detail    string `json:"detail"`
	// Found is the failing sequence as drawn; Shrunk the shortest one
	// that still fails on the invariant, with the runs it took.
	Found  []string `json:"found"`
	Shrunk []string `json:"shrunk"`
	Runs   int      `json:"runs"`
	// File is the shrunk sequence's scenario, relative to the output.
	File string `json:"file"`
}

// ChaosFault is one fault's round.
type ChaosFault struct {
	Name      string `json:"name"`
	Found     bool   `json:"found"`
	Invariant string `json:"invariant,omitempty"`
	ShrunkTo  int    `json:"shrunkTo,omitempty"`
	Sequences int    `json:"sequences"`
	File      string `json:"file,omitempty"`
}

// Chaos is agentlab chaos: it provisions cfg's devices once and runs
// sequences of chaos actions (lab/chaos), each as a scenario whose model
// is the chaos model, one per device at a time, until the budget is
// spent. A sequence that fails on an invariant is shrunk by delta
// debugging — every candidate rerun as its own scenario — and the
// shortest failing sequence is written as a scenario file into
// chaos/ of the output. chaos.json says what ran: sequences, steps,
// each invariant's checks, the violations.
func Chaos(ctx context.Context, cfg *config.Config, co ChaosOptions, opts *Options) (*ChaosResult, error) {
	o := opts.orDefault()
	o.who = "agentlab chaos"
	if co.Budget <= 0 {
		return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("--budget must be positive"), Hint: "agentlab chaos --help"}
	}
	if co.Steps <= 0 {
		co.Steps = DefaultChaosSteps
	}
	for _, k := range co.Kinds {
		if !slices.Contains(chaos.Kinds(), k) {
			return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("--action %q is no chaos action (known: %s)", k, kindList()), Hint: "agentlab chaos --help"}
		}
	}
	for _, f := range co.Faults {
		if _, ok := faults.Lookup(f); !ok {
			return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("--fault %q is no fault (known: %s)", f, strings.Join(faults.Names(), ", "))}
		}
	}
	if cfg.Model.Live() {
		return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("chaos runs on the model stub's chaos model; lab.yaml asks for a live model")}
	}
	base := *cfg
	base.Model = config.Model{Mode: config.ModelChaos, Seed: co.Seed}
	base.Retries.Attempts = 1 // a retry would only hide what chaos found
	if len(co.Faults) > 0 {
		if o.Build.Prebuilt != "" {
			return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("--fault builds the runtime with the %s tag; --prebuilt cannot be used", FaultTag)}
		}
		if !slices.Contains(base.Build.Tags, FaultTag) {
			base.Build.Tags = append(slices.Clone(base.Build.Tags), FaultTag)
		}
	}
	if _, _, err := artifactSource(o.Build.Prebuilt); err != nil {
		return nil, err
	}
	suite, err := os.MkdirTemp("", "agentlab-chaos-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(suite)
	r := &run{cfg: &base, o: o, plan: &Plan{}, started: time.Now(), id: newRunID(), out: base.Output}
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	defer r.close()
	r.signingKeySecrets()
	if err := r.setUp(ctx); err != nil {
		return nil, err
	}
	if len(co.Faults) > 0 {
		for _, d := range r.devs {
			if d.ready && d.record.Kind != reports.DeviceVirtual {
				return nil, &Error{Kind: ErrConfig, Err: fmt.Errorf("%s is not a virtual device: a faulted runtime runs only on virtual devices", d.Serial)}
			}
		}
	}
	c := &chaosRun{r: r, co: co, suite: suite, res: &ChaosResult{Seed: co.Seed, Exercised: map[string]int{},
		StepFailures: []ChaosStepFailure{}, Violations: []ChaosViolation{}}}
	for _, inv := range chaos.Invariants {
		c.res.Exercised[inv.Name] = 0
	}
	start := time.Now()
	rounds := co.Faults
	if len(rounds) == 0 {
		rounds = []string{""}
	}
	for _, f := range rounds {
		if len(co.Faults) > 0 {
			if err := r.setFault(ctx, f); err != nil {
				return c.res, labFault("fault %s: %w", f, err)
			}
			progressf(o, "chaos: fault %s", f)
		}
		if err := c.round(ctx, f); err != nil {
			c.finish(start)
			return c.res, err
		}
		if r.isStopped() || ctx.Err() != nil {
			break
		}
	}
	if len(co.Faults) > 0 {
		if err := r.setFault(context.WithoutCancel(ctx), ""); err != nil {
			progressf(o, "clearing the fault file: %v", err)
		}
	}
	c.leakScan()
	return c.res, c.finish(start)
}

func kindList() string {
	var s []string
	for _, k := range chaos.Kinds() {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

type chaosRun struct {
	r     *run
	co    ChaosOptions
	suite string
	res   *ChaosResult
	next  int64 // the next sequence's offset from the seed
	batch int   // queue rounds, for unique scenario names
}

// outcome is how one sequence's scenario ended.
type outcome struct {
	invariant, check, detail string
	step                     int
	failed                   bool // failed on a step, not an invariant
	labFault                 bool // the lab lost it (verdict error)
}

// round runs sequences against the current fault until the budget is
// spent, or, with a fault, until one violation is shrunk.
func (c *chaosRun) round(ctx context.Context, fault string) error {
	deadline := time.Now().Add(c.co.Budget)
	fr := ChaosFault{Name: fault}
	defer func() {
		if fault != "" {
			c.res.Faults = append(c.res.Faults, fr)
		}
	}()
	width := max(1, len(c.r.devs))
	for time.Now().Before(deadline) && !c.r.isStopped() && ctx.Err() == nil {
		seeds := make([]int64, width)
		seqs := make([][]chaos.Action, width)
		for i := range seeds {
			seeds[i] = c.co.Seed + c.next
			c.next++
			seqs[i] = chaos.Generate(seeds[i], c.co.Steps, c.co.Kinds)
		}
		outs, err := c.runBatch(ctx, seeds, seqs)
		if err != nil {
			return err
		}
		fr.Sequences += len(seqs)
		c.res.Sequences += len(seqs)
		for i, out := range outs {
			switch {
			case out.invariant != "":
				v, err := c.shrink(ctx, fault, seeds[i], seqs[i], out)
				if err != nil {
					return err
				}
				c.res.Violations = append(c.res.Violations, v)
				progressf(c.r.o, "chaos: %s broken (seed %d), shrunk from %d to %d steps in %d runs: %s",
					v.Invariant, v.Seed, len(v.Found), len(v.Shrunk), v.Runs, v.File)
				if fault != "" {
					fr.Found, fr.Invariant, fr.ShrunkTo, fr.File = true, v.Invariant, len(v.Shrunk), v.File
					return nil
				}
			case out.labFault:
				c.res.LabFaults++
				progressf(c.r.o, "chaos: seed %d lost to a lab fault: %s", seeds[i], out.detail)
			case out.failed:
				c.res.StepFailures = append(c.res.StepFailures, ChaosStepFailure{Fault: fault, Seed: seeds[i], Check: out.check, Detail: out.detail})
				progressf(c.r.o, "chaos: seed %d failed on a step, not an invariant: %s: %s", seeds[i], out.check, out.detail)
			}
		}
	}
	return nil
}

// runBatch runs each sequence as a scenario (one queue, spread over the
// devices) and returns how each ended, counting what ran.
func (c *chaosRun) runBatch(ctx context.Context, seeds []int64, seqs [][]chaos.Action) ([]outcome, error) {
	c.batch++
	var scs []*scenario.Scenario
	names := make([]string, len(seqs))
	for i, seq := range seqs {
		names[i] = fmt.Sprintf("chaos/b%d-%d-seed-%d", c.batch, i, seeds[i])
		doc := chaos.Scenario(chaos.Spec{Name: names[i], Seed: seeds[i], Description: "A chaos sequence.",
			Callers: fmt.Sprintf("b%dn%d", c.batch, i)}, seq)
		file := filepath.Join(c.suite, fmt.Sprintf("b%d-%d.yaml", c.batch, i))
		if err := os.WriteFile(file, doc, 0o644); err != nil {
			return nil, err
		}
		sc, err := scenario.Parse(doc, file, nil)
		if err != nil {
			return nil, fmt.Errorf("chaos: a generated sequence is no valid scenario: %w", err)
		}
		scs = append(scs, sc)
		c.res.Steps += len(seq)
	}
	c.r.plan.Run = scs
	res, err := c.r.queue(ctx, "")
	if err != nil {
		return nil, err
	}
	outs := make([]outcome, len(seqs))
	for _, s := range res.Scenarios {
		i := slices.Index(names, s.Name)
		if i < 0 {
			continue
		}
		outs[i] = c.judge(s)
	}
	return outs, nil
}

// judge reads a sequence's scenario result: the first broken invariant,
// else a failed step, and counts every invariant check evaluated.
func (c *chaosRun) judge(s reports.Scenario) outcome {
	var out outcome
	var stepFail *reports.Check
	for i, ch := range s.Checks {
		if strings.HasPrefix(ch.Detail, "not reached") {
			continue
		}
		inv, step := chaos.InvariantOf(ch.Name)
		if inv != "" {
			c.res.Exercised[inv]++
		}
		if ch.OK {
			continue
		}
		if inv != "" && out.invariant == "" {
			out = outcome{invariant: inv, check: ch.Name, detail: ch.Detail, step: step}
		}
		if inv == "" && stepFail == nil {
			stepFail = &s.Checks[i]
		}
	}
	if out.invariant == "" && s.Verdict == reports.VerdictError {
		out.labFault, out.detail = true, s.Reason
		return out
	}
	if out.invariant == "" && (stepFail != nil || s.Verdict == reports.VerdictFail) {
		out.failed = true
		out.check, out.detail = string(s.Verdict), s.Reason
		if stepFail != nil {
			out.check, out.detail = stepFail.Name, stepFail.Detail
		}
	}
	return out
}

// shrink cuts a failing sequence down: first to the actions up to the one
// whose check broke (what follows cannot have caused it), then by delta
// debugging, each candidate run with the sequence's seed; it writes the
// shortest failing sequence as a scenario file.
func (c *chaosRun) shrink(ctx context.Context, fault string, seed int64, seq []chaos.Action, out outcome) (ChaosViolation, error) {
	v := ChaosViolation{Fault: fault, Invariant: out.invariant, Seed: seed, Check: out.check, Detail: out.detail, Found: actionNames(seq)}
	cut := seq
	if i := slices.IndexFunc(seq, func(a chaos.Action) bool { return a.ID == out.step }); i >= 0 {
		cut = seq[:i+1]
	}
	width := max(1, len(c.r.devs))
	fails := func(ctx context.Context, cands [][]chaos.Action) ([]bool, error) {
		res := make([]bool, len(cands))
		for from := 0; from < len(cands); from += width {
			chunk := cands[from:min(from+width, len(cands))]
			seeds := make([]int64, len(chunk))
			for i := range seeds {
				seeds[i] = seed
			}
			outs, err := c.runBatch(ctx, seeds, chunk)
			if err != nil {
				return nil, err
			}
			v.Runs += len(chunk)
			found := false
			for i, o := range outs {
				res[from+i] = o.invariant == out.invariant
				found = found || res[from+i]
			}
			if found {
				// Shrink takes the first failing candidate; the rest need
				// not run.
				break
			}
		}
		return res, nil
	}
	shrunk := cut
	if len(cut) < len(seq) {
		ok, err := fails(ctx, [][]chaos.Action{cut})
		if err != nil {
			return v, err
		}
		if !ok[0] {
			shrunk = seq // the cut passes: what followed mattered after all
		}
	}
	shrunk, err := chaos.Shrink(ctx, shrunk, fails)
	if err != nil && ctx.Err() == nil {
		return v, err
	}
	v.Shrunk = actionNames(shrunk)
	name := fmt.Sprintf("chaos/%s-seed-%d", kebab(out.invariant), seed)
	if fault != "" {
		name = fmt.Sprintf("chaos/%s-%s", strings.ReplaceAll(fault, "_", "-"), kebab(out.invariant))
	}
	desc := fmt.Sprintf("Found by agentlab chaos (seed %d", seed)
	if fault != "" {
		desc += ", fault " + fault
	}
	desc += fmt.Sprintf(") and shrunk from %d to %d steps: it fails on the invariant %s (%s), at check %s.",
		len(seq), len(shrunk), out.invariant, promise(out.invariant), out.check)
	// Callers of its own: saved scenarios run one after another on a
	// device must not share apps (a fault's leftovers would reach the next).
	sp := chaos.Spec{Name: name, Seed: seed, Description: desc, Callers: fmt.Sprintf("s%d_%s", max(seed, -seed), strings.ToLower(out.invariant))}
	if fault != "" {
		sp.Fault, sp.FaultFile = fault, FaultFile
		sp.Callers = fault
	}
	doc := chaos.Scenario(sp, shrunk)
	v.File = filepath.ToSlash(filepath.Join("chaos", filepath.Base(name)+".yaml"))
	dst := filepath.Join(c.r.out, filepath.FromSlash(v.File))
	if _, err := scenario.Parse(doc, dst, nil); err != nil {
		return v, fmt.Errorf("chaos: the shrunk scenario is invalid: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return v, err
	}
	return v, os.WriteFile(dst, doc, 0o644)
}

// leakScan looks for the run's secrets (the model key among them) in
// every artifact the sequences kept: keyInNoArtifact over the whole run.
func (c *chaosRun) leakScan() {
	secrets := c.r.secretList()
	dir := filepath.Join(c.r.out, "artifacts")
	if _, err := os.Stat(dir); err != nil || len(secrets) == 0 {
		return
	}
	leaks, err := reports.ScanForSecrets([]string{dir}, secrets)
	if err != nil {
		progressf(c.r.o, "leak scan: %v", err)
		return
	}
	c.res.Exercised["keyInNoArtifact"]++
	for _, l := range leaks {
		c.res.Violations = append(c.res.Violations, ChaosViolation{Invariant: "keyInNoArtifact", Check: "leak scan",
			Detail: fmt.Sprintf("%s in %s", l.Secret, l.File), Found: []string{}, Shrunk: []string{}})
	}
}

func (c *chaosRun) finish(start time.Time) error {
	c.res.DurationMs = time.Since(start).Milliseconds()
	b, err := json.MarshalIndent(c.res, "", "  ")
	if err != nil {
		return err
	}
	progressf(c.r.o, "chaos: %d sequences, %d steps, %d violations, %d step failures; %s", c.res.Sequences, c.res.Steps,
		len(c.res.Violations), len(c.res.StepFailures), filepath.Join(c.r.out, ChaosFile))
	return os.WriteFile(filepath.Join(c.r.out, ChaosFile), append(b, '\n'), 0o644)
}

func actionNames(seq []chaos.Action) []string {
	out := make([]string, len(seq))
	for i, a := range seq {
		out[i] = a.String()
	}
	return out
}

func promise(inv string) string {
	for _, i := range chaos.Invariants {
		if i.Name == inv {
			return i.Promise
		}
	}
	return ""
}

// kebab is consentAnswered as consent-answered.
func kebab(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'A' && c <= 'Z' {
			b.WriteByte('-')
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ExitCodeChaos is agentlab chaos's exit code: ExitCode's for errors, 1
// when an invariant broke (with faults: when a fault was not found), else 0.
func ExitCodeChaos(res *ChaosResult, err error) int {
	if err != nil {
		return ExitCode(nil, err)
	}
	if res == nil {
		return reports.ExitFailures
	}
	if len(res.Faults) > 0 {
		for _, f := range res.Faults {
			if !f.Found {
				return reports.ExitFailures
			}
		}
		return reports.ExitOK
	}
	if len(res.Violations) > 0 {
		return reports.ExitFailures
	}
	return reports.ExitOK
}
