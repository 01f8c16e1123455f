// Package cli is the "vdevice" command (mounted by the lab as "agentlab
// vdevice"): start, stop, list and reset virtual devices that outlive the
// command, each owned by a detached keeper process.
package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/agentoslab/agentlab/internal/table"

	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/spf13/cobra"
)

// NewCommand returns the vdevice command tree. The binary's main must call
// virtual.Init first.
func NewCommand() *cobra.Command {
	var stateDir string
	root := &cobra.Command{
		Use:   "vdevice",
		Short: "Start, stop, list and reset virtual Android devices",
		Long: "Virtual devices are process trees in their own Linux namespaces that a real adb server\n" +
			"adopts with `adb connect <serial>`. They need Linux and root (CAP_SYS_ADMIN).",
		SilenceUsage: true,
	}
	root.PersistentFlags().StringVar(&stateDir, "state-dir", "", "parent folder of device roots (default $XDG_STATE_HOME/agentlab/vdevices)")
	root.AddCommand(startCmd(&stateDir), stopCmd(&stateDir), listCmd(&stateDir), resetCmd(&stateDir))
	return root
}

func startCmd(stateDir *string) *cobra.Command {
	var o virtual.Options
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Boot a virtual device that keeps running after this command exits",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			o.StateDir = *stateDir
			ctx, cancel := context.WithTimeout(cmd.Context(), 90*time.Second)
			defer cancel()
			in, err := virtual.StartDetached(ctx, &o)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s running at %s (keeper pid %d); connect with: adb connect %s\n",
				in.Name, in.Serial, in.PID, in.Serial)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "device name, [a-z0-9-]{1,32} (default vdev-<n>)")
	f.IntVar(&o.Port, "port", 0, "adb port on 127.0.0.1 (default: a free port outside 5555-5585)")
	f.IntVar(&o.SDK, "sdk", 35, "API level (ro.build.version.sdk)")
	f.StringVar(&o.RootMethod, "root-method", "magisk", "magisk, kernelsu, adb-root or none")
	f.StringToStringVar(&o.Props, "prop", nil, "extra property NAME=VALUE (repeatable)")
	f.StringVar(&o.TimeZone, "timezone", virtual.DefaultTimeZone, "the device's zone (persist.sys.timezone), an IANA name")
	return cmd
}

func stopCmd(stateDir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "stop NAME|SERIAL",
		Short: "Stop a virtual device started with vdevice start (by name, or the serial it printed)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 30*time.Second)
			defer cancel()
			name, err := virtual.Resolve(*stateDir, args[0])
			if err != nil {
				return err
			}
			if err := virtual.StopDetached(ctx, *stateDir, name); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s stopped\n", name)
			return nil
		},
	}
}

func listCmd(stateDir *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List virtual devices: name, serial, state, owner pid",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			infos, err := virtual.List(*stateDir)
			if err != nil {
				return err
			}
			return printList(cmd.OutOrStdout(), infos, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printList(w io.Writer, infos []virtual.Info, asJSON bool) error {
	if asJSON {
		if infos == nil {
			infos = []virtual.Info{}
		}
		b, err := json.MarshalIndent(infos, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(w, string(b))
		return err
	}
	var rows [][]string
	for _, in := range infos {
		serial, pid := in.Serial, "-"
		if serial == "" {
			serial = "-"
		}
		if in.PID > 0 {
			pid = fmt.Sprint(in.PID)
		}
		rows = append(rows, []string{in.Name, serial, string(in.State), pid})
	}
	return table.Write(w, []string{"name", "serial", "state", "pid"}, rows)
}

func resetCmd(stateDir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "reset NAME",
		Short: "Wipe a stopped virtual device's /data and /sdcard",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := virtual.Reset(cmd.Context(), *stateDir, args[0]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s reset\n", args[0])
			return nil
		},
	}
}
