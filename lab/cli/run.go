package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/devices/adbserver"
	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/lab/build"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/lab/provision"
	"github.com/agentoslab/agentlab/lab/runner"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/reports"
	"github.com/agentoslab/agentlab/runtime/module"
	"github.com/spf13/cobra"
)

func init() { register(newRunCmd) }

// runFlags are agentlab run's flags.
type runFlags struct {
	tags, excludeTags []string
	shard             string
	scenarios         []string
	repeat            int
	untilFail         bool
	parallel          int
	keepDevices       bool
}

const runLong = `Run the scenario suite: start the devices lab.yaml names (virtual devices,
adb servers' devices), gate each on its health, build the runtime and the apps for
their ABIs (cached), provision every device (module, runtime, apps, model, plugins),
then run the selected scenarios on a dynamic queue over the leased devices, retrying
failures within their budgets and re-queueing attempts lost to the lab on another
device. Every report format is written into --out (results.json, junit.xml,
summary.md, report.html, upstream-checks.json, console.txt) with each attempt's
artifacts under artifacts/, and the console table is printed.

Before the run is declared done, every artifact and report is scanned for the model
key, pairing codes and tokens and the bundle-signing key; a leak fails the run.

Without lab.yaml the built-in default runs the whole suite (./scenarios) on two
virtual devices with the lab's model stub.

Reproduce a case with --scenario NAME --repeat N (or --until-fail): one device,
every attempt kept with its artifacts, a pass/fail count at the end.

The first Ctrl-C stops queueing and lets running scenarios finish (devices released,
reports written); a second one aborts them.

Exit codes:
  0  every scenario passed (flaky and skipped allowed)
  1  at least one product failure, or a leaked secret
  2  usage or configuration error (nothing ran)
  3  no failures and no lab faults, but a person touched a device
  4  lab faults only (devices lost, provisioning failed)`

func newRunCmd(a *app) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Provision devices and run the scenario suite; write every report",
		Long:  runLong,
		Example: `  agentlab run
  agentlab run --tags nightly --exclude-tags slow --out out/nightly
  agentlab run --shard 1/4 --parallel 2
  agentlab run --scenario notes/revoke --repeat 20 --until-fail --keep-devices`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSuite(cmd, a, &f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.tags, "tags", nil, "run scenarios with one of these tags (comma-separated or repeated; with lab.yaml's tags)")
	fl.StringSliceVar(&f.excludeTags, "exclude-tags", nil, "skip scenarios with any of these tags")
	fl.StringVar(&f.shard, "shard", "", "run shard i of n (0-based, \"i/n\"); scenarios are assigned by a hash of their name")
	fl.StringArrayVar(&f.scenarios, "scenario", nil, "run only this scenario (repeatable)")
	fl.IntVar(&f.repeat, "repeat", 0, "run the one selected scenario N times on one device, keeping every attempt")
	fl.BoolVar(&f.untilFail, "until-fail", false, "with one scenario: repeat until it fails (at most --repeat, default 100)")
	fl.IntVar(&f.parallel, "parallel", 0, "scenarios running at once (default lab.yaml's parallelism, else one per device)")
	fl.BoolVar(&f.keepDevices, "keep-devices", false, "leave the virtual devices running afterwards (agentlab vdevice stop ends them)")
	return cmd
}

// parseShard reads "i/n".
func parseShard(s string) (int, int, error) {
	i, n, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, fmt.Errorf("want i/n, got %q", s)
	}
	idx, err1 := strconv.Atoi(i)
	cnt, err2 := strconv.Atoi(n)
	if err1 != nil || err2 != nil || cnt < 1 || idx < 0 || idx >= cnt {
		return 0, 0, fmt.Errorf("want i/n with 0 <= i < n, got %q", s)
	}
	return idx, cnt, nil
}

// loadSuite loads and validates the scenarios lab.yaml names; an invalid
// suite is a usage error listing every problem.
func loadSuite(cmd *cobra.Command, paths []string) ([]*scenario.Scenario, error) {
	suite, err := scenario.LoadAll(paths)
	if err != nil {
		if errors.Is(err, scenario.ErrInvalid) {
			return nil, &usageError{msg: "invalid scenarios:\n" + err.Error(), hint: "agentlab scenarios validate --help (and lab/scenario/DSL.md)"}
		}
		return nil, usagef(cmd, "scenarios: %v", err)
	}
	return suite, nil
}

func runSuite(cmd *cobra.Command, a *app, f *runFlags) error {
	cfg, err := a.config()
	if err != nil {
		return err
	}
	sel := runner.Selection{Tags: cfg.Tags, Names: f.scenarios, ShardIndex: cfg.Shard.Index, ShardCount: cfg.Shard.Count}
	sel.Tags.Include = append(slices.Clone(sel.Tags.Include), f.tags...)
	sel.Tags.Exclude = append(slices.Clone(sel.Tags.Exclude), f.excludeTags...)
	if f.shard != "" {
		if sel.ShardIndex, sel.ShardCount, err = parseShard(f.shard); err != nil {
			return usagef(cmd, "--shard: %v", err)
		}
	}
	if f.repeat < 0 || f.parallel < 0 {
		return usagef(cmd, "--repeat and --parallel must not be negative")
	}
	suite, err := loadSuite(cmd, cfg.Scenarios)
	if err != nil {
		return err
	}
	run, filtered, err := runner.Select(suite, sel)
	if err != nil {
		return usagef(cmd, "%v", err)
	}
	if len(run) == 0 {
		all, _, _ := runner.Select(suite, runner.Selection{Tags: sel.Tags, Names: sel.Names})
		if len(all) == 0 {
			return usagef(cmd, "the selection matches no scenario (%d in the suite; see agentlab scenarios list)", len(suite))
		}
	}
	if (f.repeat > 0 || f.untilFail) && len(run) != 1 {
		return usagef(cmd, "--repeat and --until-fail reproduce one scenario; the selection has %d (use --scenario NAME)", len(run))
	}
	l := &labRun{a: a, cfg: cfg, f: f, sel: sel, started: time.Now(), runID: newRunID()}
	return l.main(cmd.Context(), run, filtered)
}

func newRunID() string {
	var b [4]byte
	rand.Read(b[:])
	return "run-" + time.Now().UTC().Format("20060102-150405") + "-" + hex.EncodeToString(b[:])
}

// labRun is one agentlab run: what it started, so that it can stop it.
type labRun struct {
	a       *app
	cfg     *config.Config
	f       *runFlags
	sel     runner.Selection
	started time.Time
	runID   string
	out     string

	stub     *modelstub.Stub
	adbSrvs  []*adbserver.Server
	sources  []pool.Source
	servers  []serverRef
	handles  map[string]devices.Device
	infos    map[string]devices.Info
	serials  []string
	vdevs    []*virtual.Device
	pool     *pool.Pool
	devs     map[string]*reports.Device
	order    []string
	tokens   map[string]string
	kinds    map[string]reports.DeviceKind
	provided []string

	mu      sync.Mutex
	secrets []reports.Secret
}

func (l *labRun) secret(s reports.Secret) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, x := range l.secrets {
		if string(x.Value) == string(s.Value) {
			return
		}
	}
	l.secrets = append(l.secrets, s)
}

func (l *labRun) logf(format string, args ...any) {
	fmt.Fprintf(l.a.stderr, "agentlab run: "+format+"\n", args...)
}

// main runs the lab: devices, build, provisioning, the queue, reports.
func (l *labRun) main(ctx context.Context, run, filtered []*scenario.Scenario) error {
	cfg := l.cfg
	l.out = cfg.Output
	if err := os.MkdirAll(l.out, 0o755); err != nil {
		return err
	}
	defer l.close()
	if cfg.Model.Mode == config.ModelLive {
		key, err := cfg.Model.Key(l.a.lookupEnv)
		if err != nil {
			return exitWith(reports.ExitUsage, err)
		}
		l.secret(reports.Secret{Name: "model key", Value: []byte(key)})
	}
	l.signingKeySecrets()
	if len(run) > 0 {
		if err := l.startDevices(ctx); err != nil {
			return exitWith(reports.ExitLabFaults, err)
		}
		arts, err := l.build(ctx)
		if err != nil {
			return exitWith(reports.ExitLabFaults, fmt.Errorf("build: %w", err))
		}
		if err := l.provision(ctx, arts); err != nil {
			return exitWith(reports.ExitLabFaults, err)
		}
	}
	res, err := l.queue(ctx, run, filtered)
	if err != nil {
		return err
	}
	return l.report(res)
}

// startDevices starts the virtual devices and lists every device the
// sources admit, with its handle and what it reports about itself.
func (l *labRun) startDevices(ctx context.Context) error {
	cfg := l.cfg
	var vsrv *adb.Server
	for _, s := range cfg.Devices.ADB {
		srv := adb.NewServer(s.Server, &adb.Options{Logger: l.a.logger()})
		l.sources = append(l.sources, admitted{Source: pool.ADB(srv), cfg: s})
		l.servers = append(l.servers, serverRef{srv: srv, admits: s.Admits})
		if vsrv == nil {
			vsrv = srv
		}
	}
	if v := cfg.Devices.Virtual; v != nil && v.Count > 0 {
		if vsrv == nil {
			s, err := adbserver.Start(ctx, &adbserver.Options{Logger: l.a.logger()})
			if err != nil {
				return fmt.Errorf("adb server for the virtual devices: %w", err)
			}
			l.adbSrvs = append(l.adbSrvs, s)
			vsrv = adb.NewServer(s.Addr(), &adb.Options{Logger: l.a.logger()})
			l.sources = append(l.sources, pool.ADB(vsrv))
			l.servers = append(l.servers, serverRef{srv: vsrv, admits: func(string) bool { return true }})
		}
		if err := l.startVirtual(ctx, v, vsrv); err != nil {
			return err
		}
	}
	if len(l.sources) == 0 {
		return errors.New("lab.yaml names no device source (devices.adb or devices.virtual)")
	}
	l.handles = map[string]devices.Device{}
	l.infos = map[string]devices.Info{}
	for _, sr := range l.servers {
		entries, err := sr.srv.Devices(ctx)
		if err != nil {
			l.logf("adb server %s: %v", sr.srv.Addr(), err)
			continue
		}
		for _, e := range entries {
			if e.State != "device" || !sr.admits(e.Serial) {
				continue
			}
			dev := sr.srv.Device(e.Serial)
			pctx, cancel := context.WithTimeout(ctx, l.cfg.Timeouts.Health.D())
			info, err := dev.Info(pctx)
			cancel()
			if err != nil {
				l.logf("%s: %v", e.Serial, err)
				continue
			}
			l.handles[e.Serial] = dev
			l.infos[e.Serial] = info
			l.serials = append(l.serials, e.Serial)
		}
	}
	if len(l.handles) == 0 {
		return errors.New("no device answered (agentlab devices shows what lab.yaml names)")
	}
	return nil
}

// openPool puts the provisioned devices under the pool's health-gated
// leases; devices whose provisioning failed are quarantined.
func (l *labRun) openPool(ctx context.Context, failed map[string]string) error {
	p, err := pool.New(&pool.Options{Sources: l.sources, Labels: l.cfg.Devices.Labels, Logger: l.a.logger(),
		Health: pool.Health{ShellTimeout: min(l.cfg.Timeouts.Health.D(), 30*time.Second)}})
	if err != nil {
		return err
	}
	l.pool = p
	if err := p.Refresh(ctx); err != nil {
		return fmt.Errorf("device inventory: %w", err)
	}
	for serial, reason := range failed {
		p.Quarantine(serial, reason)
	}
	return nil
}

type serverRef struct {
	srv    *adb.Server
	admits func(string) bool
}

// admitted is an adb source limited to the serials lab.yaml admits.
type admitted struct {
	pool.Source
	cfg config.ADBServer
}

func (s admitted) Devices(ctx context.Context) ([]pool.Found, error) {
	found, err := s.Source.Devices(ctx)
	var out []pool.Found
	for _, f := range found {
		if s.cfg.Admits(f.Serial) {
			out = append(out, f)
		}
	}
	return out, err
}

// startVirtual starts (or adopts running) virtual devices vdev-1 … and
// connects them to srv.
func (l *labRun) startVirtual(ctx context.Context, v *config.Virtual, srv *adb.Server) error {
	dir := l.cfg.VirtualStateDir()
	running := map[string]virtual.Info{}
	if infos, err := virtual.List(dir); err == nil {
		for _, in := range infos {
			if in.State == "running" {
				running[in.Name] = in
			}
		}
	}
	type started struct {
		name, serial string
		err          error
	}
	results := make([]started, v.Count)
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range v.Count {
		name := "vdev-" + strconv.Itoa(i+1)
		if in, ok := running[name]; ok {
			results[i] = started{name: name, serial: in.Serial}
			continue
		}
		wg.Go(func() {
			o := &virtual.Options{Name: name, StateDir: dir, SDK: v.SDK, RootMethod: v.RootMethod, Logger: l.a.logger()}
			if l.f.keepDevices {
				in, err := virtual.StartDetached(ctx, o)
				if err != nil {
					results[i] = started{name: name, err: err}
					return
				}
				results[i] = started{name: name, serial: in.Serial}
				return
			}
			d, err := virtual.Start(ctx, o)
			if err != nil {
				results[i] = started{name: name, err: err}
				return
			}
			mu.Lock()
			l.vdevs = append(l.vdevs, d)
			mu.Unlock()
			results[i] = started{name: name, serial: d.Serial()}
		})
	}
	wg.Wait()
	var errs []error
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("virtual device %s: %w", r.name, r.err))
			continue
		}
		if err := srv.Connect(ctx, r.serial); err != nil {
			errs = append(errs, fmt.Errorf("adb connect %s: %w", r.serial, err))
			continue
		}
		l.deviceRecord(r.serial).Name = r.name
	}
	if len(errs) == len(results) && len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, err := range errs {
		l.logf("%v", err)
	}
	return nil
}

// deviceRecord is the report's record of a device, created on first use.
func (l *labRun) deviceRecord(serial string) *reports.Device {
	if l.devs == nil {
		l.devs = map[string]*reports.Device{}
	}
	d := l.devs[serial]
	if d == nil {
		d = &reports.Device{Serial: serial, Name: serial, Kind: reports.DevicePhone, Health: []reports.HealthRecord{}, Timeline: []reports.Event{}}
		l.devs[serial] = d
		l.order = append(l.order, serial)
	}
	return d
}

// build builds for the ABIs of the inventory.
func (l *labRun) build(ctx context.Context) (*build.Artifacts, error) {
	var abis []string
	for _, serial := range l.serials {
		if abi := l.infos[serial].ABI; abi != "" && !slices.Contains(abis, abi) {
			abis = append(abis, abi)
		}
	}
	bf := &buildFlags{abis: abis}
	if len(l.cfg.Build.ABIs) > 0 {
		bf.abis = nil
	}
	l.logf("building for %s", strings.Join(abis, ", "))
	o := l.a.buildOptions(l.cfg, bf, "")
	o.Progress = nil
	return build.Build(ctx, o)
}

// provision provisions every device in parallel, each with its own stub
// token; a device that fails is quarantined and the run goes on with the
// others.
func (l *labRun) provision(ctx context.Context, arts *build.Artifacts) error {
	cfg := l.cfg
	base := &provision.Options{
		Apps:         cfg.Provision.Apps,
		Desktop:      cfg.Provision.Desktop,
		ReadyTimeout: cfg.Timeouts.Health.D() * 2,
		Logger:       l.a.logger(),
		Reporter:     provision.NewLineReporter(l.a.stderr),
	}
	switch {
	case len(cfg.Provision.Plugins) == 1 && cfg.Provision.Plugins[0] == "none":
		base.Plugins = []string{}
	case len(cfg.Provision.Plugins) > 0:
		base.Plugins = cfg.Provision.Plugins
	}
	var live *provision.LiveModel
	if cfg.Model.Mode == config.ModelLive {
		key, _ := cfg.Model.Key(l.a.lookupEnv)
		live = &provision.LiveModel{Provider: cfg.Model.Provider, BaseURL: cfg.Model.BaseURL, Model: cfg.Model.Name, Key: key}
	} else {
		s, err := modelstub.Start(&modelstub.Options{Logger: l.a.logger()})
		if err != nil {
			return fmt.Errorf("model stub: %w", err)
		}
		l.stub = s
	}
	for _, b := range arts.Bundles {
		if len(cfg.Provision.Apps) == 0 || slices.Contains(cfg.Provision.Apps, b.App) || slices.Contains(cfg.Provision.Apps, b.Package) {
			l.provided = append(l.provided, b.App)
		}
	}
	l.tokens, l.kinds = map[string]string{}, map[string]reports.DeviceKind{}
	type outcome struct {
		serial string
		res    *provision.Result
		err    error
		start  time.Time
		end    time.Time
		info   devices.Info
	}
	results := make([]outcome, len(l.serials))
	var wg sync.WaitGroup
	for i, serial := range l.serials {
		info, dev := l.infos[serial], l.handles[serial]
		token := modelstub.NewToken()
		l.tokens[serial] = token
		l.kinds[serial] = runner.KindOf(info, serial)
		o := *base
		if l.stub != nil {
			l.stub.Bind(token, nil)
			o.Model.Stub = &provision.StubModel{Port: l.stub.Port(), Token: token}
		} else {
			o.Model.Live = live
		}
		wg.Go(func() {
			start := time.Now()
			pctx, cancel := context.WithTimeout(ctx, cfg.Timeouts.Provision.D())
			defer cancel()
			// A virtual device gets the runtime whose clock the lab advances.
			res, err := provision.Provision(pctx, dev, arts.For(l.kinds[serial] == reports.DeviceVirtual), &o)
			results[i] = outcome{serial: serial, res: res, err: err, start: start, end: time.Now(), info: info}
		})
	}
	wg.Wait()
	ready := 0
	failed := map[string]string{}
	for _, r := range results {
		d := l.deviceRecord(r.serial)
		d.Kind = l.kinds[r.serial]
		d.Model, d.APILevel, d.ABI, d.RootMethod = r.info.Model, r.info.APILevel, r.info.ABI, string(r.info.Root)
		if d.Kind == reports.DeviceVirtual {
			d.RootMethod = "virtual"
		}
		ev := reports.Event{Kind: reports.EventProvision, Label: "provision", Start: r.start, End: r.end}
		if r.res != nil {
			d.RuntimeVersion = r.res.RuntimeVersion
		}
		if r.err != nil {
			ev.Verdict, ev.Detail = reports.VerdictError, clipText(r.err.Error(), 300)
			l.logf("provisioning %s failed: %v", r.serial, r.err)
			d.QuarantineReason = "provisioning failed: " + clipText(r.err.Error(), 200)
			failed[r.serial] = d.QuarantineReason
			d.Health = append(d.Health, reports.HealthRecord{At: r.end, State: "quarantined", Detail: d.QuarantineReason})
		} else {
			ready++
			d.Health = append(d.Health, reports.HealthRecord{At: r.end, State: "healthy", Detail: "provisioned"})
		}
		d.Timeline = append(d.Timeline, ev)
	}
	if ready == 0 {
		return errors.New("provisioning failed on every device")
	}
	return l.openPool(ctx, failed)
}

func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// queue runs the scenarios on the pool (each configured pool in turn),
// handling Ctrl-C: the first stops queueing, the second aborts.
func (l *labRun) queue(ctx context.Context, run, filtered []*scenario.Scenario) (*runner.Result, error) {
	if len(run) == 0 {
		return &runner.Result{}, nil
	}
	rctx, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	stop := make(chan struct{})
	var stopOnce sync.Once
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var bg sync.WaitGroup
	quit := make(chan struct{})
	defer func() {
		close(quit)
		bg.Wait()
	}()
	// main's signal context and sigs both see a Ctrl-C: the context (or
	// the first signal) stops queueing, a second signal aborts.
	bg.Go(func() {
		done, n := ctx.Done(), 0
		first := func() {
			stopOnce.Do(func() {
				close(stop)
				l.logf("interrupted: finishing the running scenarios (Ctrl-C again to abort them)")
			})
		}
		for {
			select {
			case <-done:
				done = nil
				first()
			case <-sigs:
				n++
				if n == 1 {
					first()
					continue
				}
				l.logf("aborting the running scenarios")
				abort()
				return
			case <-quit:
				return
			}
		}
	})
	exec := &runner.DeviceExecutor{Tokens: l.tokens, Kinds: l.kinds, Secret: l.secret, Logger: l.a.logger()}
	if l.stub != nil {
		exec.Stub = l.stub
		port := l.stub.Port()
		exec.AfterReboot = func(ctx context.Context, dev devices.Device) error {
			_, err := dev.Reverse(ctx, "tcp:"+strconv.Itoa(port), "tcp:"+strconv.Itoa(port))
			return err
		}
	}
	parallel := l.f.parallel
	if parallel == 0 {
		parallel = l.cfg.Parallelism
	}
	model := scenario.ModelStub
	if l.cfg.Model.Mode == config.ModelLive {
		model = scenario.ModelLive
	}
	var devs []reports.Device
	for _, s := range l.order {
		devs = append(devs, *l.devs[s])
	}
	pools := l.cfg.Pools
	if len(pools) == 0 {
		pools = []config.Pool{{}}
	}
	total := &runner.Result{}
	for _, p := range pools {
		base := p.Selector()
		base.NeedRoot, base.Module = true, module.ID
		o := runner.Options{
			Scenarios: run, Filtered: filtered, Leaser: runner.Pool(l.pool), Executor: exec, RunDir: l.out,
			Base: base, Attempts: l.cfg.Retries.Attempts, RetryBudget: l.cfg.Retries.Budget, LabFaultRequeues: l.cfg.Retries.LabFaultRequeues,
			Timeout: l.cfg.Timeouts.Scenario.D(), Parallel: parallel, Keep: l.cfg.Artifacts.Keep, Model: model, Apps: l.provided,
			Repeat: l.f.repeat, UntilFail: l.f.untilFail, Stop: stop, Devices: devs, Logger: l.a.logger(),
			Progress: func(name string, at reports.Attempt) {
				l.logf("%-12s %s #%d on %s (%s)", strings.ToUpper(string(at.Verdict)), name, at.Number, at.Device,
					at.FinishedAt.Sub(at.StartedAt).Round(10*time.Millisecond))
			},
		}
		if p.Name != "" {
			o.NamePrefix = p.Name + "/"
		}
		res, err := runner.Run(rctx, o)
		if err != nil {
			return nil, err
		}
		total.Scenarios = append(total.Scenarios, res.Scenarios...)
		total.Devices = res.Devices
		devs = res.Devices
		total.Overheads = append(total.Overheads, res.Overheads...)
		total.Interrupted = total.Interrupted || res.Interrupted
		if res.Interrupted {
			break
		}
	}
	if l.f.repeat > 0 || l.f.untilFail {
		for _, s := range total.Scenarios {
			counts := map[reports.Verdict]int{}
			for _, at := range s.Attempts {
				counts[at.Verdict]++
			}
			fmt.Fprintf(l.a.stdout, "%s: %d attempts: %d passed, %d failed, %d lost to the lab, %d inconclusive\n", s.Name, len(s.Attempts),
				counts[reports.VerdictPass], counts[reports.VerdictFail], counts[reports.VerdictError], counts[reports.VerdictInconclusive])
		}
	}
	return total, nil
}

// report assembles results.json, scans for leaks, writes every format,
// prints the console table and returns the exit code.
func (l *labRun) report(res *runner.Result) error {
	cfg := l.cfg
	host, _ := os.Hostname()
	r := &reports.Run{
		SchemaVersion: reports.SchemaVersion, RunID: l.runID, StartedAt: l.started, FinishedAt: time.Now(),
		LabVersion: Version(), ConfigDigest: cfg.Digest(), Host: host,
		Selection: reports.Selection{Tags: nonEmpty(l.sel.Tags.Include), ExcludeTags: l.sel.Tags.Exclude,
			ShardIndex: l.sel.ShardIndex, ShardCount: l.sel.ShardCount},
		Model:     reports.Model{Kind: reports.ModelStub},
		Devices:   res.Devices,
		Scenarios: res.Scenarios,
	}
	if r.Devices == nil {
		for _, s := range l.order {
			r.Devices = append(r.Devices, *l.devs[s])
		}
	}
	if r.Devices == nil {
		r.Devices = []reports.Device{}
	}
	if r.Scenarios == nil {
		r.Scenarios = []reports.Scenario{}
	}
	if cfg.Model.Mode == config.ModelLive {
		r.Model = reports.Model{Kind: reports.ModelLive, Provider: cfg.Model.Provider, Name: cfg.Model.Name}
	}
	// Artifacts first: a leak there fails the run and is reported in it.
	secrets := l.secretList()
	artifacts := filepath.Join(l.out, "artifacts")
	if _, err := os.Stat(artifacts); err == nil && len(secrets) > 0 {
		leaks, err := reports.ScanForSecrets([]string{artifacts}, secrets)
		if err != nil {
			l.logf("leak scan: %v", err)
		}
		if len(leaks) > 0 {
			r.Scenarios = append(r.Scenarios, leakScenario(l.out, leaks))
		}
	}
	if err := reports.Write(l.out, r); err != nil {
		l.logf("writing reports: %v", err)
	}
	if err := reports.WriteConsole(l.a.stdout, r, nil); err != nil {
		return err
	}
	var files []string
	for _, f := range reports.Formats() {
		files = append(files, filepath.Join(l.out, f.FileName()))
	}
	if leaks, _ := reports.ScanForSecrets(files, secrets); len(leaks) > 0 {
		var names []string
		for _, lk := range leaks {
			names = append(names, lk.String())
		}
		return exitWith(reports.ExitFailures, fmt.Errorf("secrets leaked into the reports — do not publish %s:\n  %s", l.out, strings.Join(names, "\n  ")))
	}
	l.logf("reports in %s (report.html, junit.xml, results.json …)", l.out)
	code := reports.ExitCode(r)
	if code == reports.ExitOK {
		return nil
	}
	return exitWith(code, nil)
}

func nonEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// leakScenario is the lab-level failure a leak is reported as.
func leakScenario(out string, leaks []reports.Leak) reports.Scenario {
	s := reports.Scenario{Name: "lab/leak-scan", Tags: []string{"lab"}, Devices: []string{}, Verdict: reports.VerdictFail,
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
		s.Checks = append(s.Checks, reports.Check{Name: name, Detail: fmt.Sprintf("the %s occurs %d time(s), first at byte %d", lk.Secret, lk.Count, lk.Offset)})
	}
	s.Reason = fmt.Sprintf("secrets leaked into %d artifact file(s): %s", len(leaks), s.Checks[0].Name)
	return s
}

func (l *labRun) secretList() []reports.Secret {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.secrets)
}

// signingKeySecrets adds the bundle-signing key: its PEM text and its
// base64 body, whichever way it might leak.
func (l *labRun) signingKeySecrets() {
	b, err := os.ReadFile(l.cfg.SigningKeyPath())
	if err != nil {
		return // no key yet: the build creates it; nothing can have leaked it
	}
	l.secret(reports.Secret{Name: "bundle-signing key", Value: b})
	if blk, _ := pem.Decode(b); blk != nil {
		text := string(pem.EncodeToMemory(blk))
		lines := strings.Split(text, "\n")
		var body strings.Builder
		for _, ln := range lines {
			if ln != "" && !strings.HasPrefix(ln, "-----") {
				body.WriteString(ln)
			}
		}
		if body.Len() >= 16 {
			l.secret(reports.Secret{Name: "bundle-signing key (base64)", Value: []byte(body.String())})
		}
	}
}

// close stops what the run started.
func (l *labRun) close() {
	if l.pool != nil {
		l.pool.Close()
	}
	if l.stub != nil {
		l.stub.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if !l.f.keepDevices {
		var wg sync.WaitGroup
		for _, d := range l.vdevs {
			wg.Go(func() { d.Stop(ctx) })
		}
		wg.Wait()
	}
	// Kept virtual devices live on in their keeper; the next run (or
	// agentlab vdevice) connects them again.
	for _, s := range l.adbSrvs {
		s.Close()
	}
}
