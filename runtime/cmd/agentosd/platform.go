package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"github.com/agentoslab/agentlab/runtime/platform"
	"github.com/agentoslab/agentlab/runtime/supervise"
)

// platformCmd prints what the platform layer found (runtime/platform)
// as JSON, with a lookup and an HTTPS request when asked; --as-runtime
// (root) runs it as the runtime's uid and groups, with the runtime's
// environment, so the lab's doctor sees what the runtime sees.
func platformCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := platformRun(ctx, args, stdout, stderr)
	var ee exitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return int(ee)
	}
	fmt.Fprintf(stderr, "agentosd: %v\n", err)
	return 1
}

// exitError carries the exit code of the runtime-uid copy.
type exitError int

func (e exitError) Error() string { return fmt.Sprintf("exit code %d", int(e)) }

func platformRun(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("platform", flag.ContinueOnError)
	fs.SetOutput(stderr)
	lookup := fs.String("lookup", "", "resolve this host name")
	fetch := fs.String("fetch", "", "GET this URL")
	asRuntime := fs.Bool("as-runtime", false, "run as the runtime's uid and groups (root only)")
	root := fs.String("root", supervise.DefaultRoot, "the supervisor's root (with --as-runtime)")
	if err := fs.Parse(args); err != nil || fs.NArg() > 0 {
		return exitError(2)
	}
	if !*asRuntime {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(platform.Current().Probe(ctx, *lookup, *fetch))
	}
	if os.Geteuid() != 0 {
		return errors.New("platform --as-runtime: must run as root")
	}
	// The copy the supervisor runs the runtime from: the module's own is
	// under /data/adb, which only root may enter.
	paths := supervise.Paths{Root: *root}
	self := paths.Agentosd()
	if _, err := os.Stat(self); err != nil {
		return fmt.Errorf("platform --as-runtime: %w (has the supervisor started the runtime once?)", err)
	}
	cmd := exec.CommandContext(ctx, self, "platform", "--lookup", *lookup, "--fetch", *fetch)
	// The environment the supervisor gives the runtime (no TMPDIR).
	cmd.Env = []string{"PATH=/system/bin:/system/xbin:/vendor/bin:/usr/local/bin:/usr/bin:/bin",
		"HOME=" + paths.RuntimeData(), "AGENTOS_ROOT=" + *root}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TZ=") || strings.HasPrefix(kv, "ANDROID_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Dir = "/"
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: supervise.RuntimeIdentity(*root)}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return exitError(ee.ExitCode())
		}
		return err
	}
	return nil
}
