package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/agentoslab/agentlab/lab/build"
	"github.com/agentoslab/agentlab/lab/config"
	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/lab/provision"
	"github.com/agentoslab/agentlab/lab/runner"
	"github.com/agentoslab/agentlab/reports"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

func init() { register(newProvisionCmd) }

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

// provisionResult is one device's line of the summary.
type provisionResult struct {
	Serial string            `json:"serial"`
	Result *provision.Result `json:"result"`
	Error  string            `json:"error,omitempty"`
}

func newProvisionCmd(a *app) *cobra.Command {
	var (
		serials []string
		desktop bool
		start   string
		bf      buildFlags
	)
	cmd := &cobra.Command{
		Use:   "provision",
		Short: "Install the runtime module and apps on devices, set the model, enable plugins",
		Long: `Provision the devices lab.yaml names (or those given with -s): build what is
missing (cached), install the AgentOS module with the device's root method (Magisk,
KernelSU or adb-root), start the runtime and wait for "agentosd ctl status", install
every app bundle, set the model (the lab's stub through adb reverse, or the live
provider of lab.yaml; a key only through stdin) and enable the apps' plugins.

Every step checks first and changes only what differs: provisioning a ready device
changes nothing. A new module is started by rebooting (Magisk, KernelSU; a virtual
device reboots in well under a second) or by running its service.sh as root
(adb-root, or --start service).

Virtual devices must be running (agentlab vdevice start); agentlab run starts its
own. The model stub only serves while agentlab runs: a stub model set here answers
again once agentlab run points the runtime at its own stub.`,
		Example: `  agentlab vdevice start && agentlab provision
  agentlab provision -s R5CT12345 -s emulator-5554
  agentlab provision --desktop --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch provision.StartMode(start) {
			case provision.StartAuto, provision.StartReboot, provision.StartService:
			default:
				return usagef(cmd, "--start %q: want reboot or service (default: by root method)", start)
			}
			cfg, err := a.config()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			inv, closer, err := inventory(ctx, cfg, a.stderr)
			defer closer.Close()
			if err != nil {
				return err
			}
			var targets []invDevice
			for _, d := range inv {
				if d.dev == nil || (d.State != "device" && d.State != "running") {
					continue
				}
				if len(serials) > 0 && !slices.Contains(serials, d.Serial) && !slices.Contains(serials, d.Name) {
					continue
				}
				targets = append(targets, d)
			}
			if len(targets) == 0 {
				return exitWith(ExitFailed, fmt.Errorf("no device to provision among the sources in %s (start virtual devices with agentlab vdevice start; see agentlab devices)", cfg.Source))
			}
			if len(bf.abis) == 0 && len(cfg.Build.ABIs) == 0 {
				for _, d := range targets {
					pctx, cancel := context.WithTimeout(ctx, probeTimeout)
					info, err := d.dev.Info(pctx)
					cancel()
					if err == nil && !slices.Contains(bf.abis, info.ABI) {
						bf.abis = append(bf.abis, info.ABI)
					}
				}
			}
			arts, err := build.Build(ctx, a.buildOptions(cfg, &bf, ""))
			if err != nil {
				return err
			}
			opts, stop, err := a.provisionOptions(cfg, desktop, provision.StartMode(start))
			if err != nil {
				return err
			}
			defer stop()
			results := provisionAll(ctx, a, cfg, targets, arts, opts)
			return printProvision(a, results)
		},
	}
	cmd.Flags().StringSliceVarP(&serials, "serial", "s", nil, "device serial or virtual device name (repeatable; default every device)")
	cmd.Flags().BoolVar(&desktop, "desktop", false, "turn desktop access on (lab.yaml provision.desktop)")
	cmd.Flags().StringVar(&start, "start", "", "how to start a new module: reboot or service (default: reboot for Magisk/KernelSU, service for adb-root)")
	bf.addFlags(cmd)
	return cmd
}

// provisionOptions are the options lab.yaml asks for. With the stub model
// a stub runs until stop.
func (a *app) provisionOptions(cfg *config.Config, desktop bool, start provision.StartMode) (*provision.Options, func(), error) {
	o := &provision.Options{
		Apps:         cfg.Provision.Apps,
		Desktop:      desktop || cfg.Provision.Desktop,
		Start:        start,
		ReadyTimeout: cfg.Timeouts.Health.D() * 2,
		Logger:       a.logger(),
	}
	switch {
	case len(cfg.Provision.Plugins) == 1 && cfg.Provision.Plugins[0] == "none":
		o.Plugins = []string{}
	case len(cfg.Provision.Plugins) > 0:
		o.Plugins = cfg.Provision.Plugins
	}
	stop := func() {}
	switch cfg.Model.Mode {
	case config.ModelLive:
		key, err := cfg.Model.Key(a.lookupEnv)
		if err != nil {
			return nil, nil, err
		}
		o.Model.Live = &provision.LiveModel{Provider: cfg.Model.Provider, BaseURL: cfg.Model.BaseURL, Model: cfg.Model.Name, Key: key}
	default:
		stub, err := modelstub.Start(&modelstub.Options{Logger: a.logger()})
		if err != nil {
			return nil, nil, err
		}
		token := modelstub.NewToken()
		stub.Bind(token, nil)
		o.Model.Stub = &provision.StubModel{Port: stub.Port(), Token: token}
		stop = func() { stub.Close() }
	}
	return o, stop, nil
}

// provisionAll provisions the targets in parallel, each within the
// configured provisioning timeout.
func provisionAll(ctx context.Context, a *app, cfg *config.Config, targets []invDevice, arts *build.Artifacts, opts *provision.Options) []provisionResult {
	serials := make([]string, len(targets))
	for i, d := range targets {
		serials[i] = d.Serial
	}
	var bars *provision.BarReporter
	if isTerminal(a.stderr) && !a.asJSON {
		bars = provision.NewBarReporter(a.stderr, serials, len(provision.StepNames))
		opts.Reporter = bars
	} else {
		opts.Reporter = provision.NewLineReporter(a.stderr)
	}
	results := make([]provisionResult, len(targets))
	var wg sync.WaitGroup
	for i, d := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dctx, cancel := context.WithTimeout(ctx, cfg.Timeouts.Provision.D())
			defer cancel()
			// A virtual device gets the runtime whose clock the lab advances.
			virtual := false
			if info, err := d.dev.Info(dctx); err == nil {
				virtual = runner.KindOf(info, d.Serial) == reports.DeviceVirtual
			}
			res, err := provision.Provision(dctx, d.dev, arts.For(virtual), opts)
			results[i] = provisionResult{Serial: d.Serial, Result: res}
			if err != nil {
				results[i].Error = err.Error()
			}
			if bars != nil {
				bars.Done(d.Serial)
			}
		}()
	}
	wg.Wait()
	if bars != nil {
		bars.Wait()
	}
	return results
}

func printProvision(a *app, results []provisionResult) error {
	var failed []string
	for _, r := range results {
		if r.Error != "" {
			failed = append(failed, r.Serial)
		}
	}
	if a.asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(results); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SERIAL\tROOT\tRUNTIME\tCHANGED\tTIME\tRESULT")
		for _, r := range results {
			var changed []string
			var total time.Duration
			for _, s := range r.Result.Steps {
				total += s.Duration
				if s.Changed {
					changed = append(changed, s.Name)
				}
			}
			outcome := "ready"
			if r.Error != "" {
				outcome = "FAILED: " + r.Error
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.Serial, dash(string(r.Result.Root)), dash(r.Result.RuntimeVersion),
				dash(strings.Join(changed, ",")), total.Round(time.Millisecond), outcome)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return exitWith(ExitFailed, errors.New("provisioning failed on "+strings.Join(failed, ", ")))
	}
	return nil
}
