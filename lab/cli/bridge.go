package cli

import (
	"time"

	"github.com/agentoslab/agentlab/lab/bridge"
	"github.com/spf13/cobra"
)

// bridgeFlags are the options of spec §8.4 shared by bridge, pair and
// unpair.
type bridgeFlags struct {
	o         bridge.Options
	timeoutMs int
}

func (f *bridgeFlags) add(cmd *cobra.Command) {
	pf := cmd.PersistentFlags()
	pf.StringVarP(&f.o.Serial, "serial", "s", "", "device serial (default $ANDROID_SERIAL, else the only device adb lists)")
	pf.IntVar(&f.o.Port, "port", 0, "local TCP port of the adb forward (0: adb picks)")
	pf.StringVar(&f.o.Code, "code", "", "pairing code shown by the phone (default $AGENTOS_PAIRING_CODE)")
	pf.StringVar(&f.o.Connect, "connect", "", "skip adb and connect to host:port or unix:<path>")
	pf.StringVar(&f.o.StatePath, "state", "", "state file (default $AGENTOS_BRIDGE_STATE, else ~/.config/agentos/acp-bridge.json)")
	pf.StringVar(&f.o.ADB, "adb", "", "adb binary (default $ADB, $ANDROID_HOME/platform-tools/adb, adb)")
	pf.StringVar(&f.o.Label, "label", "", "name of this computer on the phone (default agentlab-bridge@<hostname>)")
	pf.IntVar(&f.timeoutMs, "timeout", int(bridge.DefaultTimeout/time.Millisecond), "handshake timeout in milliseconds")
	pf.BoolVarP(&f.o.Quiet, "quiet", "q", false, "print only errors on stderr")
}

func (f *bridgeFlags) options(a *app) bridge.Options {
	o := f.o
	o.Timeout = time.Duration(f.timeoutMs) * time.Millisecond
	o.Stdin, o.Stdout, o.Stderr = a.stdin, a.stdout, a.stderr
	o.Getenv = func(k string) string { v, _ := a.lookupEnv(k); return v }
	return o
}

// bridgeExit prints a bridge error the bridge's way and exits with its
// code (0–6, spec §8.4).
func bridgeExit(a *app, err error) error {
	if err == nil {
		return nil
	}
	return exitWith(bridge.Report(a.stderr, err), nil)
}

func newBridgeCmd(a *app) *cobra.Command {
	f := &bridgeFlags{}
	cmd := &cobra.Command{
		Use:   "bridge",
		Short: "ACP agent on stdio for editors, forwarding to a device's AgentOS runtime",
		Long: `Run an ACP agent on stdin/stdout that forwards to the AgentOS runtime on a device,
for editors such as Zed. It pairs with the phone's desktop access (turn it on on the
phone; it shows a 6-digit code), stores the token it gets, and from then on connects
with the token.

The connection goes through "adb forward tcp:P localabstract:agentos-acp" (removed on
exit), or straight to --connect host:port or unix:<path>. stdout carries only ACP;
messages go to stderr prefixed "agentlab bridge: ".

Exit codes: 0 ok (stdin ended), 1 failure, 2 usage, 3 not paired or refused,
4 adb or device problem, 5 the phone is not listening (desktop access off, runtime
not running), 6 the phone closed the connection.

Zed (settings.json):
  "agent_servers": {"AgentOS (phone)": {"command": "agentlab", "args": ["bridge", "--quiet"]}}`,
		Example: `  agentlab bridge pair 482913           # once, with the code the phone shows
  agentlab bridge -s R5CT12345 --quiet   # what the editor runs
  AGENTOS_PAIRING_CODE=482913 agentlab bridge
  agentlab bridge --connect 127.0.0.1:5600 pair 482913
  agentlab bridge unpair`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return bridgeExit(a, bridge.Run(cmd.Context(), f.options(a)))
		},
	}
	f.add(cmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "pair CODE",
		Short: "Pair with the phone using the code it shows, store the token, exit",
		Long: `Pair with the phone's desktop access using the 6-digit code it shows (valid 5
minutes, one use), store the token in the state file (folder 0700, file 0600) and
exit. Spaces and dashes in the code are ignored.`,
		Example: "  agentlab bridge pair 482913\n  agentlab bridge -s emulator-5554 pair '482 913'",
		Args:    exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return bridgeExit(a, bridge.Pair(cmd.Context(), f.options(a), args[0]))
		},
	}, newBridgeCodeCmd(a, f), &cobra.Command{
		Use:   "unpair",
		Short: "Forget this computer's token for the device",
		Long: `Forget the token stored for the device. The phone keeps the pairing until it is
revoked there (agentosd ctl desktop list, desktop revoke ID).`,
		Example: "  agentlab bridge unpair\n  agentlab bridge --connect 127.0.0.1:5600 unpair",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return bridgeExit(a, bridge.Unpair(cmd.Context(), f.options(a)))
		},
	})
	return cmd
}

func newBridgeCodeCmd(a *app, f *bridgeFlags) *cobra.Command {
	var co bridge.CodeOptions
	cmd := &cobra.Command{
		Use:   "code",
		Short: "Take a fresh pairing code from the device over adb (as root); print it or pair",
		Long: `Take a fresh pairing code from the device over adb, as root: the AgentOS module's
"agentosd ctl desktop code", through su (Magisk, KernelSU) or a root adbd (adb root on
userdebug emulators). The code alone goes to stdout (valid 5 minutes, one use; the
previous code stops working); with --pair the bridge pairs with it at once and prints
nothing. Codes are never logged.

When it cannot, it says why: no such device, no root or su denied the shell, the
module is not installed, the runtime is not running, desktop access is off (--enable
turns it on).`,
		Example: `  agentlab bridge code -s emulator-5554 --pair    # pair this computer in one step
  agentlab bridge code -s R5CT12345 --enable      # turn desktop access on, print a code
  CODE=$(agentlab bridge code -q) && agentlab bridge pair "$CODE"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return bridgeExit(a, bridge.Code(cmd.Context(), f.options(a), co))
		},
	}
	cmd.Flags().BoolVar(&co.Enable, "enable", false, "turn desktop access on first (it is off by default)")
	cmd.Flags().BoolVar(&co.Pair, "pair", false, "pair with the code at once and store the token (the code is not printed)")
	return cmd
}
