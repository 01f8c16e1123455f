package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/spf13/cobra"
)

func init() { register(newDevicesCmd) }

// deviceRow is one line of `agentlab devices`.
type deviceRow struct {
	invDevice
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
func probe(ctx context.Context, d invDevice) deviceRow {
	row := deviceRow{invDevice: d, Health: "-", Runtime: "-"}
	if d.dev == nil || d.State != "device" && d.State != "running" {
		return row
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	info, err := d.dev.Info(ctx)
	if err != nil {
		row.Health, row.ProbeErr = "unresponsive", err.Error()
		return row
	}
	row.Model, row.API, row.ABI, row.Root = info.Model, info.APILevel, info.ABI, string(info.Root)
	res, err := d.dev.Shell(ctx, "getprop sys.boot_completed")
	switch {
	case err != nil:
		row.Health, row.ProbeErr = "unresponsive", err.Error()
		return row
	case strings.TrimSpace(string(res.Stdout)) != "1":
		row.Health = "booting"
	default:
		row.Health = "healthy"
	}
	st, err := runtimectl.New(d.dev, nil).Status(ctx)
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
server (filtered by include/exclude), the virtual devices on disk (running ones are
probed through a private adb server), and the emulators the run would start.

For each device it shows the adb state, model, API level, ABI, root method, health
(healthy: answers the shell and has booted) and the AgentOS runtime's status from
"agentosd ctl status" (version, or not installed / not running).`,
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
			inv, closer, err := inventory(ctx, cfg, a.stderr)
			defer closer.Close()
			if err != nil {
				return err
			}
			rows := make([]deviceRow, len(inv))
			var wg sync.WaitGroup
			for i, d := range inv {
				wg.Add(1)
				go func() {
					defer wg.Done()
					rows[i] = probe(ctx, d)
				}()
			}
			wg.Wait()
			if a.asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			if len(rows) == 0 {
				fmt.Fprintf(a.stdout, "no devices (sources in %s)\n", cfg.Source)
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "SOURCE\tSERIAL\tNAME\tSTATE\tMODEL\tAPI\tABI\tROOT\tHEALTH\tRUNTIME")
			for _, r := range rows {
				api := "-"
				if r.API > 0 {
					api = strconv.Itoa(r.API)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Source, dash(r.Serial), dash(r.Name), r.State,
					dash(r.Model), api, dash(r.ABI), dash(r.Root), r.Health, r.Runtime)
			}
			return tw.Flush()
		},
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
