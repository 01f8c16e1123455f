package cli

import (
	"fmt"
	"os/exec"
	"strings"

	"github.com/agentoslab/agentlab/devices/adb"
	"github.com/agentoslab/agentlab/lab/consoleui"
	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/spf13/cobra"
)

func newConsoleCmd(a *app) *cobra.Command {
	var serial string
	var open bool
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Print (or open) the URL of a device's owner console, forwarded over adb",
		Long: `Print the URL of the owner's web console of the AgentOS runtime on a device:
pending consent and authorization cards, authorized apps, plugins, sessions,
desktop access, the model, status and ACI consoles.

It asks the runtime (agentosd ctl console url, as root) for the console's socket and
this start's token, and forwards a local port to it with
"adb forward tcp:0 localabstract:agentos-console". The URL carries the token once;
the console turns it into a cookie. The forward stays until the adb server stops or
"adb -s SERIAL forward --remove tcp:PORT". A runtime restart draws a new token: run
the command again.`,
		Example: "  agentlab console -s emulator-5554\n  agentlab console -s 127.0.0.1:40001 --open",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if serial == "" {
				serial, _ = a.lookupEnv("ANDROID_SERIAL")
			}
			if serial == "" {
				return usagef(cmd, "-s SERIAL is required (agentlab devices lists them)")
			}
			dev := adb.NewServer(adbServer(a), nil).Device(serial)
			link, err := consoleui.Open(cmd.Context(), dev, runtimectl.New(dev, nil))
			if err != nil {
				return fmt.Errorf("console of %s: %w", serial, err)
			}
			fmt.Fprintln(a.stdout, link.URL)
			fmt.Fprintf(a.stderr, "agentlab console: forwarded tcp:%d; remove it with: adb -s %s forward --remove tcp:%d\n", link.Port, serial, link.Port)
			if open {
				if err := exec.CommandContext(cmd.Context(), "xdg-open", link.URL).Run(); err != nil {
					return fmt.Errorf("xdg-open: %w (open the URL above by hand)", err)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&serial, "serial", "s", "", "device serial (default $ANDROID_SERIAL)")
	cmd.Flags().BoolVar(&open, "open", false, "open the URL in the desktop's browser (xdg-open)")
	return cmd
}

// adbServer is the adb server the adb command line uses.
func adbServer(a *app) string {
	if s, ok := a.lookupEnv("ADB_SERVER_SOCKET"); ok {
		if s, ok := strings.CutPrefix(s, "tcp:"); ok && s != "" {
			return s
		}
	}
	if p, ok := a.lookupEnv("ANDROID_ADB_SERVER_PORT"); ok && p != "" {
		return "127.0.0.1:" + p
	}
	return "127.0.0.1:5037"
}
