package cli

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentoslab/agentlab/devices/virtual"
	vcli "github.com/agentoslab/agentlab/devices/virtual/cli"
	"github.com/spf13/cobra"
)

// newVdeviceCmd mounts the devices layer's vdevice command tree, adding
// the examples agentlab's help promises for every command.
func newVdeviceCmd(a *app) *cobra.Command {
	c := vcli.NewCommand()
	c.Long += `

Devices started here outlive the command (a detached keeper owns each one),
so they can be inspected with adb and provisioned with agentlab provision.
agentlab run starts and stops its own virtual devices as lab.yaml says.`
	c.Example = `  agentlab vdevice start --name dev1 --root-method magisk
  adb connect 127.0.0.1:<port>     # the port start printed
  agentlab vdevice list
  agentlab vdevice stop dev1`
	examples := map[string]string{
		"start": "  agentlab vdevice start\n  agentlab vdevice start --name ksu1 --root-method kernelsu --sdk 36",
		"stop":  "  agentlab vdevice stop vdev-1\n  agentlab vdevice stop 127.0.0.1:37513   # the serial start printed",
		"list":  "  agentlab vdevice list\n  agentlab vdevice list --json",
		"reset": "  agentlab vdevice reset vdev-1   # wipes the stopped device's /data",
	}
	for _, sub := range c.Commands() {
		if sub.Example == "" {
			sub.Example = examples[sub.Name()]
		}
		if sub.Long == "" {
			sub.Long = sub.Short + "."
		}
		if sub.Name() == "start" {
			// With --json, the started device as vdevice list --json shows it.
			start := sub.RunE
			sub.RunE = func(cmd *cobra.Command, args []string) error {
				if !a.asJSON {
					return start(cmd, args)
				}
				var said strings.Builder
				cmd.SetOut(&said)
				if err := start(cmd, args); err != nil {
					return err
				}
				name, _, _ := strings.Cut(said.String(), " ")
				infos, err := virtual.List(cmd.Flag("state-dir").Value.String())
				if err != nil {
					return err
				}
				for _, in := range infos {
					if in.Name == name {
						return writeJSON(a, in)
					}
				}
				return fmt.Errorf("started %s but vdevice list does not show it", name)
			}
		}
		if sub.Name() == "list" {
			// agentlab's look and its global --json.
			sub.RunE = func(cmd *cobra.Command, args []string) error {
				infos, err := virtual.List(cmd.Flag("state-dir").Value.String())
				if err != nil {
					return err
				}
				if asJSON, _ := cmd.Flags().GetBool("json"); asJSON || a.asJSON {
					return writeJSON(a, nonNilInfos(infos))
				}
				rows := make([][]string, len(infos))
				for i, in := range infos {
					pid := "-"
					if in.PID > 0 {
						pid = strconv.Itoa(in.PID)
					}
					rows[i] = []string{in.Name, dash(in.Serial), in.State, pid}
				}
				return printTable(a, []string{"name", "serial", "state", "pid"}, rows)
			}
		}
	}
	return c
}

func nonNilInfos(infos []virtual.Info) []virtual.Info {
	if infos == nil {
		return []virtual.Info{}
	}
	return infos
}
