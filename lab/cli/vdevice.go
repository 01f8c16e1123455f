package cli

import (
	vcli "github.com/agentoslab/agentlab/devices/virtual/cli"
	"github.com/spf13/cobra"
)

func init() { register(newVdeviceCmd) }

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
	}
	return c
}
