//go:build linux

package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentoslab/agentlab/devices/virtual/internal/boot"
	"github.com/agentoslab/agentlab/devices/virtual/internal/modules"
	"github.com/agentoslab/agentlab/devices/virtual/internal/proc"
	"github.com/agentoslab/agentlab/devices/virtual/internal/props"
	"github.com/agentoslab/agentlab/devices/virtual/internal/su"
	"github.com/agentoslab/agentlab/internal/peercred"
)

// InDevice reports whether this process is the multi-call binary inside a
// device (its executable is the one bound to /system/bin/vdevtool).
func InDevice() bool {
	exe, err := os.Readlink("/proc/self/exe")
	return err == nil && exe == boot.ToolPath
}

// Main runs the tool named by args[0] and returns its exit status.
func Main(args []string) int {
	name := filepath.Base(args[0])
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	t := &tool{ctx: ctx, stdout: os.Stdout, stderr: os.Stderr}
	switch name {
	case "getprop":
		return t.getprop(args[1:])
	case "setprop":
		return t.setprop(args[1:])
	case "resetprop":
		return t.resetprop(args[1:])
	case "reboot":
		return t.reboot(args[1:])
	case "su":
		return t.su(args[1:])
	case "magisk":
		return t.magisk(args[1:])
	case "ksud":
		return t.ksud(args[1:])
	case "vdevtool":
		return t.vdevtool(args[1:])
	}
	fmt.Fprintf(os.Stderr, "%s: unknown tool\n", name)
	return 127
}

type tool struct {
	ctx            context.Context
	stdout, stderr io.Writer
}

func (t *tool) errorf(format string, a ...any) int {
	fmt.Fprintf(t.stderr, format+"\n", a...)
	return 1
}

func (t *tool) call(req *props.Request) (*props.Response, error) {
	ctx, cancel := context.WithTimeout(t.ctx, 15*time.Second)
	if req.Op == "wait" {
		cancel()
		ctx, cancel = context.WithCancel(t.ctx)
	}
	defer cancel()
	return props.Call(ctx, req)
}

func (t *tool) prop(name string) string {
	r, err := t.call(&props.Request{Op: "get", Name: name})
	if err != nil {
		return ""
	}
	return r.Value
}

func (t *tool) rootMethod() string { return t.prop("ro.vdevice.root_method") }

// getprop [NAME [DEFAULT]]: all properties as "[name]: [value]" lines.
func (t *tool) getprop(args []string) int {
	if len(args) == 0 {
		r, err := t.call(&props.Request{Op: "list"})
		if err != nil {
			return t.errorf("getprop: %v", err)
		}
		for _, p := range r.Props {
			fmt.Fprintf(t.stdout, "[%s]: [%s]\n", p[0], p[1])
		}
		return 0
	}
	r, err := t.call(&props.Request{Op: "get", Name: args[0]})
	if err != nil {
		return t.errorf("getprop: %v", err)
	}
	v := r.Value
	if !r.Found && len(args) > 1 {
		v = args[1]
	}
	fmt.Fprintln(t.stdout, v)
	return 0
}

func (t *tool) setprop(args []string) int {
	if len(args) != 2 {
		return t.errorf("usage: setprop NAME VALUE")
	}
	r, err := t.call(&props.Request{Op: "set", Name: args[0], Value: args[1]})
	if err != nil {
		return t.errorf("setprop: %v", err)
	}
	if r.Err != "" {
		return t.errorf("Failed to set property '%s' to '%s' (%s).", args[0], args[1], r.Err)
	}
	return 0
}

// resetprop [-n] [-p] [NAME [VALUE]] | -d NAME | -w NAME [OLD] | -f FILE
func (t *tool) resetprop(args []string) int {
	var del, wait, file bool
	var rest []string
	for _, a := range args {
		switch a {
		case "-n", "-p", "--skip-svc":
		case "-d", "--delete":
			del = true
		case "-w":
			wait = true
		case "-f", "--file":
			file = true
		default:
			rest = append(rest, a)
		}
	}
	switch {
	case len(rest) == 0:
		return t.getprop(nil)
	case del:
		return t.propCall(&props.Request{Op: "delete", Name: rest[0]}, "resetprop")
	case wait:
		req := &props.Request{Op: "wait", Name: rest[0]}
		if len(rest) > 1 {
			req.Old = &rest[1]
		}
		return t.propCall(req, "resetprop")
	case file:
		b, err := os.ReadFile(rest[0])
		if err != nil {
			return t.errorf("resetprop: %v", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if k, v, ok := strings.Cut(line, "="); ok && line[0] != '#' {
				if c := t.propCall(&props.Request{Op: "reset", Name: strings.TrimSpace(k), Value: strings.TrimSpace(v)}, "resetprop"); c != 0 {
					return c
				}
			}
		}
		return 0
	case len(rest) == 1:
		return t.getprop(rest)
	}
	return t.propCall(&props.Request{Op: "reset", Name: rest[0], Value: rest[1]}, "resetprop")
}

func (t *tool) propCall(req *props.Request, name string) int {
	r, err := t.call(req)
	if err != nil {
		return t.errorf("%s: %v", name, err)
	}
	if r.Err != "" {
		return t.errorf("%s: %s", name, r.Err)
	}
	return 0
}

// reboot [-p] [REASON]: ask init through sys.powerctl, as Android does.
func (t *tool) reboot(args []string) int {
	value := "reboot"
	for _, a := range args {
		switch {
		case a == "-p":
			value = "shutdown"
		case !strings.HasPrefix(a, "-"):
			value += "," + a
		}
	}
	r, err := t.call(&props.Request{Op: "set", Name: "sys.powerctl", Value: value})
	if err != nil {
		return t.errorf("reboot: %v", err)
	}
	if r.Err != "" {
		return t.errorf("reboot: %s", r.Err)
	}
	// Like Android's reboot, wait to be killed by the going-down device.
	<-t.ctx.Done()
	return 0
}

func userUID(s string) (int, bool) {
	switch s {
	case "root":
		return 0, true
	case "system":
		return 1000, true
	case "shell":
		return 2000, true
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// su: Magisk's command line for magisk and kernelsu; AOSP's debug su
// ("su [WHO [COMMAND...]]") for adb-root.
func (t *tool) su(args []string) int {
	method := t.rootMethod()
	req, print, err := parseSu(method, args)
	if err != nil {
		return t.errorf("%v", err)
	}
	if print != "" {
		fmt.Fprint(t.stdout, print)
		return 0
	}
	req.Env = os.Environ()
	req.Dir, _ = os.Getwd()
	return t.suCall(req)
}

const suUsage = `usage: su [options] [-] [user [argument...]]
  -c, --command COMMAND  pass COMMAND to the invoked shell
  -s, --shell SHELL      use SHELL instead of /system/bin/sh
  -v, --version          display version number and exit
  -V                     display version code and exit
`

// parseSu parses su's command line: a request, or text to print (version,
// help). Options may follow the user, as with Magisk's getopt_long; -c
// takes every remaining argument, joined by spaces.
func parseSu(method string, args []string) (*su.Request, string, error) {
	req := &su.Request{}
	if method == "adb-root" {
		if len(args) > 0 {
			uid, ok := userUID(args[0])
			if !ok {
				return nil, "", fmt.Errorf("su: unknown id: %s", args[0])
			}
			req.UID = uid
			req.Argv = args[1:]
		}
		return req, "", nil
	}
	var command []string
	haveCommand, userSet, options := false, false, true
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case !options && userSet:
			command, haveCommand = append(command, a), true
		case !options:
			uid, ok := userUID(a)
			if !ok {
				return nil, "", fmt.Errorf("su: unknown user %s", a)
			}
			req.UID, userSet = uid, true
		case a == "-v" || a == "--version":
			if method == modules.KernelSU {
				return nil, modules.KSUVersion + ":KernelSU\n", nil
			}
			return nil, modules.MagiskVersion + ":MAGISKSU\n", nil
		case a == "-V":
			if method == modules.KernelSU {
				return nil, fmt.Sprintln(modules.KSUVersionCode), nil
			}
			return nil, fmt.Sprintln(modules.MagiskVersionCode), nil
		case a == "-h" || a == "--help":
			return nil, suUsage, nil
		case a == "-c" || a == "--command":
			command, haveCommand = append(command, args[i+1:]...), true
			i = len(args)
		case strings.HasPrefix(a, "--command="):
			command, haveCommand = append(command, strings.TrimPrefix(a, "--command=")), true
		case a == "-s" || a == "--shell":
			if i+1 < len(args) {
				i++
				req.Shell = args[i]
			}
		case a == "-" || a == "-l" || a == "--login", a == "-m" || a == "-p" || a == "--preserve-environment",
			a == "-mm" || a == "-M" || a == "--mount-master", a == "-i" || a == "--interactive":
		case a == "-t" || a == "--target" || a == "-g" || a == "--group" || a == "-G" || a == "--supp-group":
			i++
		case a == "--":
			options = false
		case strings.HasPrefix(a, "-") && len(a) > 1:
			return nil, "", fmt.Errorf("su: invalid option -- %s", strings.TrimLeft(a, "-"))
		case !userSet:
			uid, ok := userUID(a)
			if !ok {
				return nil, "", fmt.Errorf("su: unknown user %s", a)
			}
			req.UID, userSet = uid, true
		default:
			// Arguments after the user are appended to the command.
			command, haveCommand = append(command, a), true
		}
	}
	if haveCommand {
		c := strings.Join(command, " ")
		req.Command = &c
	}
	return req, "", nil
}

func (t *tool) suCall(req *su.Request) int {
	code, err := su.Call(t.ctx, req, [3]*os.File{os.Stdin, os.Stdout, os.Stderr})
	if err != nil {
		fmt.Fprintln(t.stderr, err)
	}
	return code
}

func (t *tool) modules(method string) *modules.Manager {
	shell := []string{"/system/bin/sh"}
	if _, err := os.Stat("/bin/busybox"); err == nil {
		shell = []string{"/bin/busybox", "sh"}
	}
	sdk, _ := strconv.Atoi(t.prop("ro.build.version.sdk"))
	return &modules.Manager{Base: "/data/adb", Method: method, Reaper: proc.NewReaper(false),
		Shell: shell, Env: boot.Env(0, ""), API: sdk, ABI: t.prop("ro.product.cpu.abi"),
		Log: nil}
}

// magisk -c|-v|-V|--install-module ZIP|--remove-modules [-n]
func (t *tool) magisk(args []string) int {
	if len(args) == 0 {
		return t.errorf("usage: magisk [-c|-v|-V|--install-module ZIP|--remove-modules [-n]]")
	}
	switch args[0] {
	case "-c":
		fmt.Fprintf(t.stdout, "%s:MAGISK:R (%d)\n", modules.MagiskVersion, modules.MagiskVersionCode)
	case "-v":
		fmt.Fprintf(t.stdout, "%s:MAGISK:R\n", modules.MagiskVersion)
	case "-V":
		fmt.Fprintln(t.stdout, modules.MagiskVersionCode)
	case "--path":
		fmt.Fprintln(t.stdout, "/debug_ramdisk")
	case "--install-module":
		if os.Getuid() != 0 {
			return t.errorf("Run this command with root")
		}
		if len(args) < 2 {
			return t.errorf("usage: magisk --install-module ZIP")
		}
		if err := t.modules(modules.Magisk).Install(t.ctx, args[1], t.stdout); err != nil {
			fmt.Fprintf(t.stdout, "! %v\n", err)
			return 1
		}
	case "--sqlite":
		if os.Getuid() != 0 {
			return t.errorf("Run this command with root")
		}
		if len(args) < 2 {
			return t.errorf("usage: magisk --sqlite SQL")
		}
		if err := applyPolicySQL(su.PolicyFile, args[1]); err != nil {
			return t.errorf("Error: %v", err)
		}
	case "--remove-modules":
		uid := os.Getuid()
		if uid != 0 && uid != 2000 {
			return t.errorf("Permission denied")
		}
		// Init (root) removes them, so that the shell user can too.
		if c := t.propCall(&props.Request{Op: "set", Name: boot.RemoveModulesProp, Value: "1"}, "magisk"); c != 0 {
			return c
		}
		if len(args) < 2 || args[1] != "-n" {
			return t.reboot(nil)
		}
	default:
		return t.errorf("magisk: unsupported option %s", args[0])
	}
	return 0
}

// ksud module install ZIP|list|enable ID|disable ID|uninstall ID, ksud -V
func (t *tool) ksud(args []string) int {
	if len(args) == 1 && (args[0] == "-V" || args[0] == "--version") {
		fmt.Fprintf(t.stdout, "ksud %s\n", modules.KSUVersion)
		return 0
	}
	if os.Getuid() != 0 {
		return t.errorf("Permission denied")
	}
	if len(args) < 2 || args[0] != "module" {
		return t.errorf("usage: ksud module <install ZIP|list|enable ID|disable ID|uninstall ID>")
	}
	m := t.modules(modules.KernelSU)
	switch args[1] {
	case "install":
		if len(args) < 3 {
			return t.errorf("usage: ksud module install ZIP")
		}
		if err := m.Install(t.ctx, args[2], t.stdout); err != nil {
			return t.errorf("Error: %v", err)
		}
	case "list":
		type entry map[string]string
		out := []entry{}
		for _, mod := range m.List() {
			e := entry{}
			for _, k := range []string{"name", "version", "versionCode", "author", "description"} {
				e[k] = mod.Prop[k]
			}
			e["id"] = mod.ID
			e["enabled"] = strconv.FormatBool(!mod.Disable)
			e["update"] = strconv.FormatBool(mod.Update)
			e["remove"] = strconv.FormatBool(mod.Remove)
			e["web"] = "false"
			e["action"] = "false"
			out = append(out, e)
		}
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintln(t.stdout, string(b))
	case "enable", "disable", "uninstall":
		if len(args) < 3 {
			return t.errorf("usage: ksud module %s ID", args[1])
		}
		var err error
		switch args[1] {
		case "enable":
			err = m.SetFlag(args[2], "disable", false)
		case "disable":
			err = m.SetFlag(args[2], "disable", true)
		case "uninstall":
			err = m.SetFlag(args[2], "remove", true)
		}
		if err != nil {
			return t.errorf("Error: %v", err)
		}
	default:
		return t.errorf("ksud: unknown module command %s", args[1])
	}
	return 0
}

// vdevtool serve SPEC: a test helper server inside the device. For every
// connection it writes "uid=<peer uid>\n" (unix sockets; the kernel's
// SO_PEERCRED, e.g. 2000 for adbd) and then echoes what it reads.
//
// vdevtool connect SPEC: copies stdin to the socket and the socket to
// stdout until the socket closes (unlike nc, stdin's end does not end it).
func (t *tool) vdevtool(args []string) int {
	if len(args) != 2 || (args[0] != "serve" && args[0] != "connect") {
		return t.errorf("usage: vdevtool serve|connect tcp:PORT|localabstract:NAME")
	}
	network, addr := "", ""
	switch kind, rest, _ := strings.Cut(args[1], ":"); kind {
	case "tcp":
		network, addr = "tcp", "127.0.0.1:"+rest
	case "localabstract":
		network, addr = "unix", "@"+rest
	default:
		return t.errorf("vdevtool: unsupported spec %s", args[1])
	}
	if args[0] == "connect" {
		c, err := net.DialTimeout(network, addr, 10*time.Second)
		if err != nil {
			return t.errorf("vdevtool: %v", err)
		}
		defer c.Close()
		// A signal (timeout, Ctrl-C) ends the copy.
		go func() {
			<-t.ctx.Done()
			c.Close()
		}()
		go io.Copy(c, os.Stdin)
		if _, err := io.Copy(t.stdout, c); err != nil && t.ctx.Err() == nil {
			return t.errorf("vdevtool: %v", err)
		}
		if t.ctx.Err() != nil {
			return 128 + int(syscall.SIGTERM)
		}
		return 0
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		return t.errorf("vdevtool: %v", err)
	}
	go func() {
		<-t.ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return 0
			}
			return t.errorf("vdevtool: %v", err)
		}
		go func() {
			defer c.Close()
			if cred, err := peercred.Of(c); err == nil {
				fmt.Fprintf(c, "uid=%d\n", cred.UID)
			}
			io.Copy(c, c)
		}()
	}
}
