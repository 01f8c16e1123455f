package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/runner"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/lab/testsite"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/module"
)

// Kinds of Error, matched with errors.Is.
var (
	// ErrConfig: the configuration or the selection cannot run; nothing
	// ran (exit 2).
	ErrConfig = errors.New("configuration error")
	// ErrLabFault: the lab could not get to the scenarios — no device
	// answered, the build failed, provisioning failed everywhere (exit 4).
	ErrLabFault = errors.New("lab fault")
	// ErrLeaked: a secret leaked into the reports; the run's output must
	// not be published (exit 1).
	ErrLeaked = errors.New("secrets leaked into the reports")
)

// Error is a run that did not happen, stopped before its scenarios, or
// leaked a secret: Kind says which.
type Error struct {
	Kind error
	Err  error
	// Hint names what to read or run about it.
	Hint string
}

func (e *Error) Error() string   { return e.Err.Error() }
func (e *Error) Unwrap() []error { return []error{e.Kind, e.Err} }

func labFault(format string, args ...any) error {
	return &Error{Kind: ErrLabFault, Err: fmt.Errorf(format, args...), Hint: "agentlab devices; agentlab doctor"}
}

// ExitCode is agentlab run's exit code for what Run returned: 2 for
// ErrConfig, 4 for ErrLabFault, 1 for ErrLeaked or any other error (an
// interrupted set-up, an output folder that cannot be written), else the
// run's own (reports.ExitCode).
func ExitCode(run *reports.Run, err error) int {
	switch {
	case errors.Is(err, ErrConfig):
		return reports.ExitUsage
	case errors.Is(err, ErrLeaked):
		return reports.ExitFailures
	case errors.Is(err, ErrLabFault):
		return reports.ExitLabFaults
	case err != nil:
		return reports.ExitFailures
	}
	return reports.ExitCode(run)
}

// Options configure Run (and the other entry points, which read the parts
// they need). The zero value (or nil) works.
type Options struct {
	// Version is the lab's version, stamped into the results and (made
	// safe for module.prop) into what is built; default "dev".
	Version string
	// Parallel bounds the scenarios running at once; 0 takes lab.yaml's
	// parallelism, else one per device.
	Parallel int
	// Repeat and UntilFail reproduce the one selected scenario on one
	// device, every attempt kept (see runner.Options).
	Repeat    int
	UntilFail bool
	// Soak, when positive, repeats the selection until this much time is
	// spent, sampling every device's runtime and the host adb server
	// after every iteration (lab/soak); a figure that grows past its
	// bound fails the run as the lab/soak scenario.
	Soak time.Duration
	// KeepDevices leaves the virtual devices the run starts running
	// afterwards (agentlab vdevice stop ends them).
	KeepDevices bool
	// Stop, when closed, ends the run early: during set-up it aborts it;
	// in the queue running scenarios finish and the rest are reported
	// skipped. Cancelling Run's context aborts running scenarios too.
	Stop <-chan struct{}
	// ConsentDriver, when set, answers every scenario's consent and
	// authorization cards with this driver (admin or ui), whatever the
	// scenario says; Chromium is the ui driver's browser ("" finds one).
	ConsentDriver string
	Chromium      string
	// Build says where the runtime and apps come from.
	Build BuildOptions
	// LookupEnv reads the environment (the live model's key); nil is
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Progress receives a line per lab event, for people: devices, build,
	// provisioning steps, every attempt's verdict. Nil discards.
	Progress io.Writer
	// Logger receives debug details; nil discards.
	Logger *slog.Logger

	who string // the command progress lines name
}

func (o *Options) orDefault() *Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.LookupEnv == nil {
		c.LookupEnv = os.LookupEnv
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.who == "" {
		c.who = "agentlab"
	}
	return &c
}

func progressf(o *Options, format string, args ...any) {
	fmt.Fprintf(o.Progress, o.who+": "+format+"\n", args...)
}

// stopTimeout bounds stopping the virtual devices a run started.
const stopTimeout = 30 * time.Second

// run is one Run: what it started, so that it can stop it.
type run struct {
	cfg     *config.Config
	o       *Options
	plan    *Plan
	started time.Time
	id      string
	out     string

	inv      *Inventory
	devs     []*Device // the devices that answered the probe, in inventory order
	prov     *provisioning
	pool     *pool.Pool
	provided []string // the apps provisioned (short names)

	mu      sync.Mutex // guards secrets
	secrets []reports.Secret

	records []reports.Device // the devices' records as the last queue left them
	soaked  *reports.Soak    // what a soak sampled
	// soakIteration is the soak's iteration the queue runs (0: no soak).
	soakIteration int
}

// Run is agentlab run: it starts or adopts the devices cfg names, probes
// them, builds for their ABIs (or takes prebuilt artifacts), provisions
// every device (one that fails is quarantined, the others go on), puts
// them under health-gated leases, runs the selected scenarios on a
// dynamic queue and writes every report format into cfg.Output, after
// scanning artifacts and reports for leaked secrets.
//
// It returns the run as written to results.json. The error is an Error
// of kind ErrConfig (nothing ran), ErrLabFault (no scenario ran: no
// reports either) or ErrLeaked (the run is returned, its reports must not
// be published); ExitCode maps both to agentlab run's exit code.
func Run(ctx context.Context, cfg *config.Config, sel Selection, opts *Options) (*reports.Run, error) {
	o := opts.orDefault()
	o.who = "agentlab run"
	plan, err := NewPlan(cfg, sel)
	if err != nil {
		return nil, err
	}
	if err := plan.Check(o); err != nil {
		return nil, err
	}
	if len(plan.Run) > 0 {
		// Where the runtime comes from is known before a device starts.
		if _, _, err := artifactSource(o.Build.Prebuilt); err != nil {
			return nil, err
		}
	}
	r := &run{cfg: cfg, o: o, plan: plan, started: time.Now(), id: newRunID(), out: cfg.Output}
	if err := os.MkdirAll(r.out, 0o755); err != nil {
		return nil, fmt.Errorf("output: %w", err)
	}
	defer r.close()
	if err := r.modelKeySecret(); err != nil {
		return nil, err
	}
	r.signingKeySecrets()
	res := &runner.Result{}
	if len(plan.Run) > 0 {
		if err := r.setUp(ctx); err != nil {
			return nil, err
		}
		if r.o.Soak > 0 {
			res, err = r.soak(ctx)
		} else {
			res, err = r.queue(ctx, "")
		}
		if err != nil {
			return nil, err
		}
	}
	return r.report(res)
}

// setUp takes the run from lab.yaml to leasable, provisioned devices. A
// closed Stop aborts it like a cancelled ctx.
func (r *run) setUp(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	if r.o.Stop != nil {
		done := make(chan struct{})
		defer close(done)
		go func() {
			select {
			case <-r.o.Stop:
				cancel()
			case <-done:
			}
		}()
	}
	inv, err := openInventory(ctx, r.cfg, &inventoryOptions{start: true, keep: r.o.KeepDevices, progress: r.o.Progress, logger: r.o.Logger})
	if err != nil {
		return labFault("%w", err)
	}
	r.inv = inv
	if len(inv.sources) == 0 {
		return &Error{Kind: ErrConfig, Err: fmt.Errorf("%s names no device source (devices.adb or devices.virtual)", r.cfg.Source), Hint: "agentlab devices"}
	}
	r.devs = probeAll(ctx, r.cfg, inv.Usable(), r.o)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if len(r.devs) == 0 {
		msg := "no device answered"
		if p := inv.problems(); len(p) > 0 {
			msg += ":\n  " + strings.Join(p, "\n  ")
		}
		return labFault("%s", msg)
	}
	bo := r.o.Build
	if bo.OutDir == "" {
		bo.OutDir = filepath.Join(r.out, "build")
	}
	bopts := *r.o
	bopts.Build = bo
	arts, err := Build(ctx, r.cfg, r.devs, &bopts)
	switch {
	case errors.Is(err, ErrConfig) || ctx.Err() != nil && err != nil:
		return err
	case err != nil:
		return labFault("build: %w", err)
	}
	for _, b := range arts.Bundles {
		if len(r.cfg.Provision.Apps) == 0 || slices.Contains(r.cfg.Provision.Apps, b.App) || slices.Contains(r.cfg.Provision.Apps, b.Package) {
			r.provided = append(r.provided, b.App)
		}
	}
	r.prov, err = newProvisioning(r.cfg, r.o, nil)
	if err != nil {
		if errors.Is(err, ErrConfig) {
			return err
		}
		return labFault("%w", err)
	}
	results := r.prov.provisionAll(ctx, r.cfg, r.devs, arts, nil)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ready := 0
	for i, res := range results {
		d := r.devs[i]
		ev := reports.Event{Kind: reports.EventProvision, Label: "provision", Start: res.start, End: res.end}
		if res.Result != nil {
			d.record.RuntimeVersion = res.Result.RuntimeVersion
		}
		if res.err != nil {
			ev.Verdict, ev.Detail = reports.VerdictError, clip(res.err.Error(), 300)
			progressf(r.o, "provisioning %s failed: %v", d.Serial, res.err)
			d.record.QuarantineReason = "provisioning failed: " + clip(res.err.Error(), 200)
			d.record.Health = append(d.record.Health, reports.HealthRecord{At: res.end, State: "quarantined", Detail: d.record.QuarantineReason})
		} else {
			ready++
			d.record.Health = append(d.record.Health, reports.HealthRecord{At: res.end, State: "healthy", Detail: "provisioned"})
		}
		d.record.Timeline = append(d.record.Timeline, ev)
	}
	if ready == 0 {
		return labFault("provisioning failed on every device")
	}
	return r.openPool(ctx)
}

// probeAll asks each device what it is (in parallel, each within the
// health timeout) and starts its report record; it returns those that
// answered, in order.
func probeAll(ctx context.Context, cfg *config.Config, devs []*Device, o *Options) []*Device {
	var wg sync.WaitGroup
	ok := make([]bool, len(devs))
	for i, d := range devs {
		if d.record != nil {
			ok[i] = true
			continue
		}
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, cfg.Timeouts.Health.D())
			info, err := d.dev.Info(pctx)
			cancel()
			if err != nil {
				progressf(o, "%s: %v", d.Serial, err)
				return
			}
			d.info = info
			kind := runner.KindOf(info, d.Serial)
			rec := &reports.Device{Serial: d.Serial, Name: d.Serial, Kind: kind, Model: info.Model, APILevel: info.APILevel, ABI: info.ABI,
				RootMethod: string(info.Root), Health: []reports.HealthRecord{}, Timeline: []reports.Event{}}
			if d.Name != "" {
				rec.Name = d.Name
			}
			if kind == reports.DeviceVirtual {
				rec.RootMethod = "virtual"
			}
			d.record = rec
			ok[i] = true
		})
	}
	wg.Wait()
	var out []*Device
	for i, d := range devs {
		if ok[i] {
			out = append(out, d)
		}
	}
	return out
}

// openPool puts the devices under the pool's health-gated leases; those
// whose provisioning failed are quarantined.
func (r *run) openPool(ctx context.Context) error {
	p, err := pool.New(&pool.Options{Sources: r.inv.sources, Labels: r.cfg.Devices.Labels, Logger: r.o.Logger,
		Health: pool.Health{ShellTimeout: min(r.cfg.Timeouts.Health.D(), 30*time.Second)}})
	if err != nil {
		return labFault("%w", err)
	}
	r.pool = p
	if err := p.Refresh(ctx); err != nil {
		return labFault("device inventory: %w", err)
	}
	for _, d := range r.devs {
		if !d.ready {
			p.Quarantine(d.Serial, d.record.QuarantineReason)
		}
	}
	return nil
}

// queue runs the scenarios on the pool, each configured pool in turn;
// prefix goes before every scenario's name (a soak's iteration).
func (r *run) queue(ctx context.Context, prefix string) (*runner.Result, error) {
	tokens, kinds := map[string]string{}, map[string]reports.DeviceKind{}
	records := r.records
	for _, d := range r.devs {
		tokens[d.Serial], kinds[d.Serial] = d.token, d.record.Kind
		if r.records == nil {
			records = append(records, *d.record)
		}
	}
	exec := &runner.DeviceExecutor{Tokens: tokens, Kinds: kinds, Secret: r.secret, Logger: r.o.Logger,
		ConsentDriver: r.o.ConsentDriver, Chromium: r.o.Chromium, NoLogcat: !r.cfg.Artifacts.Logcat, NoScreenshots: !r.cfg.Artifacts.Screenshot}
	// A reboot loses the reverses: the stub's and the test site's.
	var reverses [][2]string
	if stub := r.prov.stub; stub != nil {
		exec.Stub = stub
		port := "tcp:" + strconv.Itoa(stub.Port())
		reverses = append(reverses, [2]string{port, port})
	}
	if site := r.prov.site; site != nil {
		reverses = append(reverses, [2]string{"tcp:" + strconv.Itoa(testsite.DevicePort), "tcp:" + strconv.Itoa(site.Port())})
	}
	if len(reverses) > 0 {
		exec.AfterReboot = func(ctx context.Context, dev devices.Device) error {
			for _, rv := range reverses {
				if _, err := dev.Reverse(ctx, rv[0], rv[1]); err != nil {
					return fmt.Errorf("adb reverse %s: %w", rv[0], err)
				}
			}
			return nil
		}
	}
	parallel := r.o.Parallel
	if parallel == 0 {
		parallel = r.cfg.Parallelism
	}
	model := scenario.ModelStub
	if r.cfg.Model.Live() {
		model = scenario.ModelLive
	}
	keep := r.cfg.Artifacts.Keep
	if r.cfg.Model.Mode == config.ModelRecord {
		// Every attempt's recording is kept: a pass is worth replaying too.
		keep = func(bool) bool { return true }
	}
	pools := r.cfg.Pools
	if len(pools) == 0 {
		pools = []config.Pool{{}}
	}
	filtered := r.plan.Filtered
	if r.soakIteration > 1 {
		filtered = nil // the first iteration reports them skipped
	}
	total := &runner.Result{}
	for _, p := range pools {
		base := p.Selector()
		base.NeedRoot, base.Module = true, module.ID
		ro := runner.Options{
			Scenarios: r.plan.Run, Filtered: filtered, Leaser: runner.Pool(r.pool), Executor: exec, RunDir: r.out,
			Base: base, Attempts: r.cfg.Retries.Attempts, RetryBudget: r.cfg.Retries.Budget, LabFaultRequeues: r.cfg.Retries.LabFaultRequeues,
			Timeout: r.cfg.Timeouts.Scenario.D(), Parallel: parallel, Keep: keep, Model: model, Apps: r.provided,
			Repeat: r.o.Repeat, UntilFail: r.o.UntilFail, Stop: r.o.Stop, Devices: records, Logger: r.o.Logger,
			Progress: func(name string, at reports.Attempt) {
				progressf(r.o, "%-12s %s #%d on %s (%s)", strings.ToUpper(string(at.Verdict)), name, at.Number, at.Device,
					at.FinishedAt.Sub(at.StartedAt).Round(10*time.Millisecond))
			},
		}
		ro.NamePrefix = prefix
		if p.Name != "" {
			ro.NamePrefix += p.Name + "/"
		}
		res, err := runner.Run(ctx, ro)
		if err != nil {
			return nil, err
		}
		total.Scenarios = append(total.Scenarios, res.Scenarios...)
		total.Devices = res.Devices
		records = res.Devices
		r.records = res.Devices
		total.Overheads = append(total.Overheads, res.Overheads...)
		total.Interrupted = total.Interrupted || res.Interrupted
		if res.Interrupted {
			break
		}
	}
	return total, nil
}

// report assembles the run, scans the artifacts and then the reports for
// leaked secrets, and writes every format.
func (r *run) report(res *runner.Result) (*reports.Run, error) {
	cfg := r.cfg
	host, _ := os.Hostname()
	sel := r.plan.Selection
	out := &reports.Run{
		SchemaVersion: reports.SchemaVersion, RunID: r.id, StartedAt: r.started, FinishedAt: time.Now(),
		LabVersion: r.o.Version, ConfigDigest: cfg.Digest(), Host: host,
		Selection: reports.Selection{Tags: nonNil(sel.Tags.Include), ExcludeTags: sel.Tags.Exclude,
			ShardIndex: sel.ShardIndex, ShardCount: sel.ShardCount},
		Model:     reports.Model{Kind: reports.ModelStub},
		Devices:   res.Devices,
		Scenarios: res.Scenarios,
		Soak:      r.soaked,
	}
	if out.Devices == nil {
		for _, d := range r.devs {
			out.Devices = append(out.Devices, *d.record)
		}
	}
	out.Devices, out.Scenarios = nonNil(out.Devices), nonNil(out.Scenarios)
	if cfg.Model.Live() {
		out.Model = reports.Model{Kind: reports.ModelLive, Provider: cfg.Model.Provider, Name: cfg.Model.Name}
	}
	// Artifacts first: a leak there fails the run and is reported in it.
	secrets := r.secretList()
	artifacts := filepath.Join(r.out, "artifacts")
	if _, err := os.Stat(artifacts); err == nil && len(secrets) > 0 {
		leaks, err := reports.ScanForSecrets([]string{artifacts}, secrets)
		if err != nil {
			progressf(r.o, "leak scan: %v", err)
		}
		if len(leaks) > 0 {
			out.Scenarios = append(out.Scenarios, leakScenario(r.out, leaks))
		}
	}
	if err := reports.Write(r.out, out); err != nil {
		return out, fmt.Errorf("writing reports: %w", err)
	}
	var files []string
	for _, f := range reports.Formats() {
		files = append(files, filepath.Join(r.out, f.FileName()))
	}
	if leaks, _ := reports.ScanForSecrets(files, secrets); len(leaks) > 0 {
		var names []string
		for _, lk := range leaks {
			names = append(names, lk.String())
		}
		return out, &Error{Kind: ErrLeaked,
			Err: fmt.Errorf("secrets leaked into the reports — do not publish %s:\n  %s", r.out, strings.Join(names, "\n  "))}
	}
	progressf(r.o, "reports in %s (report.html, junit.xml, results.json …)", r.out)
	return out, nil
}

// LeakScenario names the lab-level scenario a leak is reported as.
const LeakScenario = "lab/leak-scan"

// leakScenario is the lab-level failure a leak is reported as.
func leakScenario(out string, leaks []reports.Leak) reports.Scenario {
	s := reports.Scenario{Name: LeakScenario, Tags: []string{"lab"}, Devices: []string{}, Verdict: reports.VerdictFail,
		Attempts: []reports.Attempt{}, Artifacts: []reports.Artifact{}}
	seen := map[string]int{}
	for _, lk := range leaks {
		rel, err := filepath.Rel(out, lk.File)
		if err != nil {
			rel = lk.File
		}
		name := "no " + lk.Secret + " in " + filepath.ToSlash(rel)
		seen[name]++
		if seen[name] > 1 {
			name += " #" + strconv.Itoa(seen[name])
		}
		s.Checks = append(s.Checks, reports.Check{Name: name,
			Detail: fmt.Sprintf("the %s occurs %s, first at byte %d", lk.Secret, times(lk.Count), lk.Offset)})
	}
	s.Reason = fmt.Sprintf("secrets leaked into %s: %s", count(len(leaks), "artifact file"), s.Checks[0].Name)
	return s
}

func times(n int) string {
	if n == 1 {
		return "once"
	}
	return strconv.Itoa(n) + " times"
}

func (r *run) secret(s reports.Secret) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, x := range r.secrets {
		if string(x.Value) == string(s.Value) {
			return
		}
	}
	r.secrets = append(r.secrets, s)
}

func (r *run) secretList() []reports.Secret {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.secrets)
}

// modelKeySecret adds a live or recorded run's model key to the secrets
// the artifacts and reports are scanned for.
func (r *run) modelKeySecret() error {
	if !r.cfg.Model.Live() {
		return nil
	}
	key, err := r.cfg.Model.Key(r.o.LookupEnv)
	if err != nil {
		return &Error{Kind: ErrConfig, Err: err, Hint: "export " + r.cfg.Model.KeyEnv}
	}
	r.secret(reports.Secret{Name: "model key", Value: []byte(key)})
	return nil
}

// signingKeySecrets adds the bundle-signing key: its PEM text and its
// base64 body, whichever way it might leak.
func (r *run) signingKeySecrets() {
	b, err := os.ReadFile(r.cfg.SigningKeyPath())
	if err != nil {
		return // no key yet: the build creates it; nothing can have leaked it
	}
	r.secret(reports.Secret{Name: "bundle-signing key", Value: b})
	if blk, _ := pem.Decode(b); blk != nil {
		var body strings.Builder
		for _, ln := range strings.Split(string(pem.EncodeToMemory(blk)), "\n") {
			if ln != "" && !strings.HasPrefix(ln, "-----") {
				body.WriteString(ln)
			}
		}
		if body.Len() >= 16 {
			r.secret(reports.Secret{Name: "bundle-signing key (base64)", Value: []byte(body.String())})
		}
	}
}

// close stops what the run started.
func (r *run) close() {
	if r.pool != nil {
		r.pool.Close()
	}
	r.prov.close()
	r.inv.Close()
}

func newRunID() string {
	var b [4]byte
	rand.Read(b[:])
	return "run-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// BuildVersion is v in the form module.prop accepts: [A-Za-z0-9._+-],
// at most 32 characters.
func BuildVersion(v string) string {
	var b strings.Builder
	for _, r := range v {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._+-", r) {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	s := b.String()
	if len(s) > 32 {
		s = s[:32]
	}
	return s
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
