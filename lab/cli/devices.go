package cli

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentoslab/agentlab/lab"
	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/spf13/cobra"
)

// deviceRow is one line of `agentlab devices`.
type deviceRow struct {
	*lab.Device
	Model    string `json:"model,omitempty"`
	API      int    `json:"apiLevel,omitempty"`
	ABI      string `json:"abi,omitempty"`
	Root     string `json:"rootMethod,omitempty"`
	Health   string `json:"health"`
	Runtime  string `json:"runtime"`
	ProbeErr string `json:"error,omitempty"`
}

// probeTimeout bounds each probe of a device.
const probeTimeout = 10 * time.Second

// probe fills in what the device says about itself and its runtime.
func probe(ctx context.Context, d *lab.Device) deviceRow {
	row := deviceRow{Device: d, Health: "-", Runtime: "-"}
	if !d.Usable() {
		return row
	}
	dev := d.Handle()
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	info, err := dev.Info(ctx)
	if err != nil {
		row.Health, row.ProbeErr = "unresponsive", err.Error()
		return row
	}
	row.Model, row.API, row.ABI, row.Root = info.Model, info.APILevel, info.ABI, string(info.Root)
	res, err := dev.Shell(ctx, "getprop sys.boot_completed")
	switch {
	case err != nil:
		row.Health, row.ProbeErr = "unresponsive", err.Error()
		return row
	case strings.TrimSpace(string(res.Stdout)) != "1":
		row.Health = "booting"
	default:
		row.Health = "healthy"
	}
	st, err := runtimectl.New(dev, &runtimectl.Options{OneShot: true}).Status(ctx)
	switch {
	case err == nil:
		row.Runtime = "agentosd " + st.Version
		if st.SafeMode {
			row.Runtime += " (safe mode)"
		}
	case errors.Is(err, runtimectl.ErrNotInstalled):
		row.Runtime = "not installed"
	case errors.Is(err, runtimectl.ErrUnreachable):
		row.Runtime = "installed, not running"
	default:
		row.Runtime = "unknown"
		row.ProbeErr = err.Error()
	}
	return row
}

func newDevicesCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "devices",
		Short: "List the devices lab.yaml names, with health, root method and runtime status",
		Long: `List every device the configuration's sources provide: the devices of each adb
server (filtered by include/exclude; a server whose patterns admit none of its
devices is listed with the serials it has), the virtual devices on disk (running
ones are probed through a private adb server), and the emulators configured.

For each device it shows the adb state, model, API level, ABI, root method, health
(healthy: answers the shell and has booted) and the AgentOS runtime's status from
"agentosd ctl status" (version, or not installed / not running). --json prints the
same rows as a list.`,
		Example: `  agentlab devices
  agentlab devices --json
  agentlab --config nightly.yaml devices`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.config()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			inv, err := lab.OpenInventory(ctx, cfg, a.labOptions())
			if err != nil {
				return err
			}
			defer inv.Close()
			rows := make([]deviceRow, len(inv.Devices))
			var wg sync.WaitGroup
			for i, d := range inv.Devices {
				wg.Go(func() { rows[i] = probe(ctx, d) })
			}
			wg.Wait()
			if a.asJSON {
				return writeJSON(a, rows)
			}
			if len(rows) == 0 {
				_, err := fmt.Fprintf(a.stdout, "no devices (sources in %s)\n", cfg.Source)
				return err
			}
			body := make([][]string, len(rows))
			for i, r := range rows {
				api := "-"
				if r.API > 0 {
					api = strconv.Itoa(r.API)
				}
				body[i] = []string{r.Source, dash(r.Serial), dash(r.Name), r.State, dash(r.Model), api, dash(r.ABI), dash(r.Root), r.Health, r.Runtime}
			}
			return printTable(a, []string{"source", "serial", "name", "state", "model", "api", "abi", "root", "health", "runtime"}, body)
		},
	}
}
