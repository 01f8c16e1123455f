package lab

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/lab/build"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/lab/provision"
	"github.com/agentoslab/agentlab/lab/testsite"
)

// ProvisionOptions are what `agentlab provision` asks for beyond lab.yaml.
type ProvisionOptions struct {
	// Desktop turns desktop access on even when lab.yaml does not.
	Desktop bool
	// Start says how a new module is started (default: by root method).
	Start provision.StartMode
	// Reporter is told about each device's steps; nil reports a line per
	// step to Options.Progress.
	Reporter provision.Reporter
	// Done is told when a device is done (progress bars), if set.
	Done func(serial string)
}

// ProvisionResult is one device's provisioning.
type ProvisionResult struct {
	Serial string            `json:"serial"`
	Result *provision.Result `json:"result"`
	Error  string            `json:"error,omitempty"`

	start, end time.Time
	err        error
}

// provisioning is the one place that maps the configuration to
// provisioning: the options every device shares, and the model — the live
// provider lab.yaml names (its key from the environment), or the lab's
// stub, started here, with one token per device.
type provisioning struct {
	base provision.Options
	live *provision.LiveModel
	stub *modelstub.Stub
	// record holds the provider and model a recording stub relays to.
	record *provision.StubModel
	// site is the lab's test site, served to every device.
	site *testsite.Server
}

func newProvisioning(cfg *config.Config, o *Options, po *ProvisionOptions) (*provisioning, error) {
	if po == nil {
		po = &ProvisionOptions{}
	}
	p := &provisioning{base: provision.Options{
		Apps:         cfg.Provision.Apps,
		Desktop:      po.Desktop || cfg.Provision.Desktop,
		Start:        po.Start,
		ReadyTimeout: cfg.Timeouts.Health.D() * 2,
		Reporter:     po.Reporter,
		Logger:       o.Logger,
	}}
	if p.base.Reporter == nil {
		p.base.Reporter = provision.NewLineReporter(o.Progress)
	}
	switch {
	case len(cfg.Provision.Plugins) == 1 && cfg.Provision.Plugins[0] == "none":
		p.base.Plugins = []string{}
	case len(cfg.Provision.Plugins) > 0:
		p.base.Plugins = cfg.Provision.Plugins
	}
	site, err := testsite.Start("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.site = site
	p.base.Site = &provision.Site{Port: site.Port()}
	so := &modelstub.Options{Logger: o.Logger}
	if cfg.Model.Mode == config.ModelChaos {
		so.Chaos = &modelstub.Chaos{Seed: cfg.Model.Seed}
	}
	if cfg.Model.Live() {
		key, err := cfg.Model.Key(o.LookupEnv)
		if err != nil {
			site.Close()
			return nil, &Error{Kind: ErrConfig, Err: err, Hint: "export " + cfg.Model.KeyEnv}
		}
		if cfg.Model.Mode == config.ModelLive {
			p.live = &provision.LiveModel{Provider: cfg.Model.Provider, BaseURL: cfg.Model.BaseURL, Model: cfg.Model.Name, Key: key}
			return p, nil
		}
		// Record: the runtimes talk to the stub in the provider's dialect
		// and the stub, holding the key, relays.
		so.Upstream = &modelstub.Upstream{API: cfg.Model.Provider, BaseURL: cfg.Model.BaseURL, Key: key}
		p.record = &provision.StubModel{Provider: cfg.Model.Provider, Model: cfg.Model.Name}
	}
	stub, err := modelstub.Start(so)
	if err != nil {
		site.Close()
		return nil, fmt.Errorf("model stub: %w", err)
	}
	p.stub = stub
	return p, nil
}

// options are d's provisioning options: the shared ones and its model.
// With the stub, d gets a token of its own, bound to no script yet.
func (p *provisioning) options(d *Device) *provision.Options {
	o := p.base
	if p.stub != nil {
		if d.token == "" {
			d.token = modelstub.NewToken()
		}
		p.stub.Bind(d.token, nil)
		o.Model.Stub = &provision.StubModel{Port: p.stub.Port(), Token: d.token}
		if p.record != nil {
			o.Model.Stub.Provider, o.Model.Stub.Model = p.record.Provider, p.record.Model
		}
		if d.published {
			o.Model.Stub.Host = modelstub.DeviceHost
		}
	} else {
		o.Model.Live = p.live
	}
	return &o
}

func (p *provisioning) close() {
	if p == nil {
		return
	}
	if p.stub != nil {
		p.stub.Close()
	}
	if p.site != nil {
		p.site.Close()
	}
}

// provisionAll provisions devs in parallel, each within lab.yaml's
// provisioning timeout, and marks those that became ready.
func (p *provisioning) provisionAll(ctx context.Context, cfg *config.Config, devs []*Device, arts *build.Artifacts, done func(string)) []ProvisionResult {
	results := make([]ProvisionResult, len(devs))
	var wg sync.WaitGroup
	for i, d := range devs {
		o := p.options(d)
		wg.Go(func() {
			start := time.Now()
			dctx, cancel := context.WithTimeout(ctx, cfg.Timeouts.Provision.D())
			defer cancel()
			// A virtual device gets the runtime whose clock the lab advances.
			res, err := provision.Provision(dctx, d.dev, arts.For(d.virtual()), o)
			results[i] = ProvisionResult{Serial: d.Serial, Result: res, start: start, end: time.Now(), err: err}
			if err != nil {
				results[i].Error = err.Error()
			}
			d.ready = err == nil
			if done != nil {
				done(d.Serial)
			}
		})
	}
	wg.Wait()
	return results
}

// Provision installs the module and the apps on devs, sets the model and
// enables the plugins, as lab.yaml and po say; it is what `agentlab
// provision` does. With the stub model a stub serves only until Provision
// returns (agentlab run points the runtimes at its own). arts comes from
// Build.
func Provision(ctx context.Context, cfg *config.Config, devs []*Device, arts *build.Artifacts, opts *Options, po *ProvisionOptions) ([]ProvisionResult, error) {
	o := opts.orDefault()
	p, err := newProvisioning(cfg, o, po)
	if err != nil {
		return nil, err
	}
	defer p.close()
	var done func(string)
	if po != nil {
		done = po.Done
	}
	return p.provisionAll(ctx, cfg, devs, arts, done), nil
}

// abisOf are the distinct ABIs of devs that have been probed.
func abisOf(devs []*Device) []string {
	var abis []string
	for _, d := range devs {
		if abi := d.info.ABI; abi != "" && !slices.Contains(abis, abi) {
			abis = append(abis, abi)
		}
	}
	return abis
}
