package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/lab"
	"github.com/agentoslab/agentlab/lab/provision"
	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
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

Outside the source tree, --prebuilt DIR (or an artifacts.json next to agentlab)
provides the runtime and the apps. --json prints each device's result as a list.

Virtual devices must be running (agentlab vdevice start); agentlab run starts its
own. The model stub only serves while agentlab runs: a stub model set here answers
again once agentlab run points the runtime at its own stub.`,
		Example: `  agentlab vdevice start && agentlab provision
  agentlab provision -s R5CT12345 -s emulator-5554
  agentlab provision --desktop --json
  agentlab provision --prebuilt /opt/agentlab`,
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
			o := a.labOptions()
			inv, err := lab.OpenInventory(ctx, cfg, o)
			if err != nil {
				return err
			}
			defer inv.Close()
			var targets []*lab.Device
			for _, d := range inv.Usable() {
				if len(serials) == 0 || slices.Contains(serials, d.Serial) || slices.Contains(serials, d.Name) {
					targets = append(targets, d)
				}
			}
			if len(targets) == 0 {
				return exitWith(ExitFailed, fmt.Errorf("no device to provision among the sources in %s (start virtual devices with agentlab vdevice start; see agentlab devices)", cfg.Source))
			}
			o.Build = bf.options()
			arts, err := lab.Build(ctx, cfg, targets, o)
			if err != nil {
				return err
			}
			po := &lab.ProvisionOptions{Desktop: desktop, Start: provision.StartMode(start)}
			var bars *provision.BarReporter
			if isTerminal(a.stderr) && !a.asJSON {
				ids := make([]string, len(targets))
				for i, d := range targets {
					ids[i] = d.Serial
				}
				bars = provision.NewBarReporter(a.stderr, ids, len(provision.StepNames))
				po.Reporter, po.Done = bars, bars.Done
			}
			results, err := lab.Provision(ctx, cfg, targets, arts, o, po)
			if bars != nil {
				bars.Wait()
			}
			if err != nil {
				return err
			}
			return printProvision(a, results)
		},
	}
	cmd.Flags().StringSliceVarP(&serials, "serial", "s", nil, "device serial or virtual device name (repeatable; default every device)")
	cmd.Flags().BoolVar(&desktop, "desktop", false, "turn desktop access on (lab.yaml provision.desktop)")
	cmd.Flags().StringVar(&start, "start", "", "how to start a new module: reboot or service (default: reboot for Magisk/KernelSU, service for adb-root)")
	bf.addFlags(cmd, true)
	completeSerials(cmd, a, "serial")
	return cmd
}

func printProvision(a *app, results []lab.ProvisionResult) error {
	var failed []string
	for _, r := range results {
		if r.Error != "" {
			failed = append(failed, r.Serial)
		}
	}
	if a.asJSON {
		if err := writeJSON(a, results); err != nil {
			return err
		}
	} else {
		rows := make([][]string, len(results))
		for i, r := range results {
			var changed []string
			var total time.Duration
			root, runtime := "", ""
			if r.Result != nil {
				for _, s := range r.Result.Steps {
					total += s.Duration
					if s.Changed {
						changed = append(changed, s.Name)
					}
				}
				root, runtime = string(r.Result.Root), r.Result.RuntimeVersion
			}
			outcome := "ready"
			if r.Error != "" {
				outcome = "FAILED: " + r.Error
			}
			rows[i] = []string{r.Serial, dash(root), dash(runtime), dash(strings.Join(changed, ",")), total.Round(time.Millisecond).String(), outcome}
		}
		if err := printTable(a, []string{"serial", "root", "runtime", "changed", "time", "result"}, rows); err != nil {
			return err
		}
	}
	if len(failed) > 0 {
		return exitWith(ExitFailed, errors.New("provisioning failed on "+strings.Join(failed, ", ")))
	}
	return nil
}
