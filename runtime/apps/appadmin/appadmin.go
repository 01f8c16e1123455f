// Package appadmin is the owner's app commands: the app.* admin methods
// and their `agentosd ctl app …` verbs (install, uninstall, list, ps,
// run, stop), over the runtime's package table (runtime/apps) and the
// supervisor's launcher (runtime/apps/launcher), and the "apps" and
// "supervisor" sections of `agentosd ctl status`.
//
// Installs and uninstalls are done by the supervisor (root) through the
// launcher; those methods admit root only, and the table's files are
// root's, so the runtime itself can read but never change them.
package appadmin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/internal/table"

	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/supervise"
)

// Methods are the app.* admin methods over the package table t and the
// launcher client l (both required).
func Methods(t *apps.Table, l *launcher.Client) []admin.Method {
	b := backend{t, l}
	return []admin.Method{
		{Name: "app.install", Perm: admin.Root, Summary: "verify and install (or upgrade) an app bundle", Timeout: 5 * time.Minute, Handle: b.install},
		{Name: "app.list", Perm: admin.Owner, Summary: "list installed apps", Handle: b.list},
		{Name: "app.ps", Perm: admin.Owner, Summary: "list running app processes", Handle: b.ps},
		{Name: "app.run", Perm: admin.Root | admin.Shell, Summary: "run an app's debug command as its uid", Timeout: launcher.MaxRunTimeout + 30*time.Second, Handle: b.run},
		{Name: "app.stop", Perm: admin.Root | admin.Shell, Summary: "stop an app's processes", Handle: b.stop},
		{Name: "app.uninstall", Perm: admin.Root, Summary: "uninstall an app (code and data)", Timeout: 2 * time.Minute, Handle: b.uninstall},
	}
}

// Verbs are the `agentosd ctl app …` verbs.
func Verbs() []admin.Verb {
	return []admin.Verb{
		{Group: "app", Name: "install", Method: "app.install", Args: "FILE.agentapp", Summary: "install or upgrade an app bundle (root)",
			Params: installParams, Text: printInstall, Timeout: 5 * time.Minute},
		{Group: "app", Name: "list", Method: "app.list", Summary: "list installed apps", Text: printApps},
		{Group: "app", Name: "ps", Method: "app.ps", Summary: "list running app processes", Text: printProcs},
		{Group: "app", Name: "run", Method: "app.run", Args: "PACKAGE [--timeout D] -- COMMAND [ARGS…]",
			Summary: "run an app's debug command; prints its stdout, exits with its code", Params: runParams, Finish: finishRun},
		{Group: "app", Name: "stop", Method: "app.stop", Args: "PACKAGE [SERVER]", Summary: "stop an app's processes", Params: stopParams, Text: printStop},
		{Group: "app", Name: "uninstall", Method: "app.uninstall", Args: "PACKAGE", Summary: "uninstall an app (root)",
			Params: packageParam, Text: printUninstall, Timeout: 2 * time.Minute},
	}
}

// Status are the "apps" and "supervisor" sections of status.
func Status(t *apps.Table, env supervise.RuntimeEnv) []admin.StatusSection {
	return []admin.StatusSection{AppsSection(t), SupervisorSection(env.StatusPath())}
}

type backend struct {
	table    *apps.Table
	launcher *launcher.Client
}

// launcherErr turns a launcher failure into the owner's error: its own
// refusals pass through; an absent supervisor is said so.
func launcherErr(err error) error {
	var e *errcode.Error
	switch {
	case errors.As(err, &e):
		return e
	case errors.Is(err, launcher.ErrUnreachable):
		return errcode.Wrap(errcode.InvalidState, "the supervisor is not running (start agentosd supervise as root); apps cannot be installed or started", err).
			WithDetails(map[string]any{"reason": "no_supervisor"})
	case errors.Is(err, launcher.ErrRefused):
		return errcode.Wrap(errcode.InvalidState, "the supervisor refused this runtime's uid (started with another --runtime-uid?)", err).
			WithDetails(map[string]any{"reason": "supervisor_refused"})
	}
	return err
}

type installReq struct {
	Path string `json:"path"`
}

func (b backend) install(ctx context.Context, c *admin.Call) (any, error) {
	var p installReq
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	if !filepath.IsAbs(p.Path) {
		return nil, errcode.New(errcode.InvalidParams, "path must be absolute")
	}
	res, err := b.launcher.Install(ctx, p.Path)
	if err != nil {
		return nil, launcherErr(err)
	}
	b.table.Reload()
	return res, nil
}

type packageReq struct {
	Package string `json:"package"`
}

func (b backend) uninstall(ctx context.Context, c *admin.Call) (any, error) {
	var p packageReq
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	pkg, err := b.launcher.Uninstall(ctx, p.Package)
	if err != nil {
		return nil, launcherErr(err)
	}
	b.table.Reload()
	return pkg, nil
}

func (b backend) list(ctx context.Context, c *admin.Call) (any, error) {
	if err := c.Decode(&struct{}{}); err != nil {
		return nil, err
	}
	if err := b.table.Reload(); err != nil {
		return nil, errcode.Wrap(errcode.StoreFailed, err.Error(), err)
	}
	return b.table.All(), nil
}

func (b backend) ps(ctx context.Context, c *admin.Call) (any, error) {
	if err := c.Decode(&struct{}{}); err != nil {
		return nil, err
	}
	ps, err := b.launcher.List(ctx)
	if err != nil {
		return nil, launcherErr(err)
	}
	return ps, nil
}

type runReq struct {
	Package   string   `json:"package"`
	Args      []string `json:"args"`
	TimeoutMs int64    `json:"timeoutMs,omitempty"`
}

func (b backend) run(ctx context.Context, c *admin.Call) (any, error) {
	var p runReq
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	res, err := b.launcher.Run(ctx, p.Package, p.Args, time.Duration(p.TimeoutMs)*time.Millisecond)
	if err != nil {
		return nil, launcherErr(err)
	}
	return res, nil
}

type stopReq struct {
	Package string `json:"package"`
	Server  string `json:"server,omitempty"`
}

func (b backend) stop(ctx context.Context, c *admin.Call) (any, error) {
	var p stopReq
	if err := c.Decode(&p); err != nil {
		return nil, err
	}
	n, err := b.launcher.Stop(ctx, p.Package, p.Server)
	if err != nil {
		return nil, launcherErr(err)
	}
	return launcher.StopResult{Stopped: n}, nil
}

// AppsSection is the "apps" section of status: how many are installed
// and the table's version.
func AppsSection(t *apps.Table) admin.StatusSection {
	return admin.StatusSection{Name: "apps", Read: func(context.Context) (any, error) {
		return map[string]any{"installed": len(t.All()), "tableVersion": t.Version()}, nil
	}}
}

// SupervisorSection is the "supervisor" section of status, read from the
// supervisor's status file.
func SupervisorSection(statusPath string) admin.StatusSection {
	return admin.StatusSection{Name: "supervisor", Read: func(context.Context) (any, error) {
		st, err := supervise.ReadStatus(statusPath)
		if err != nil {
			return nil, errors.New("no supervisor status (not started by agentosd supervise?)")
		}
		return map[string]any{
			"state": st.State, "reason": st.Reason, "since": st.Since, "deaths": st.Deaths,
			"runtimePid": st.RuntimePID, "safeMode": st.SafeMode,
			"moduleVersion": st.ModuleVersion, "moduleVersionCode": st.ModuleVersionCode, "bootCount": st.BootCount,
		}, nil
	}}
}

// ctl side.

func installParams(args []string, _ io.Reader) (any, error) {
	if len(args) != 1 {
		return nil, admin.Usagef("want one bundle file")
	}
	p, err := filepath.Abs(args[0])
	if err != nil {
		return nil, err
	}
	return installReq{Path: p}, nil
}

func packageParam(args []string, _ io.Reader) (any, error) {
	if len(args) != 1 || args[0] == "" {
		return nil, admin.Usagef("want one package name")
	}
	return packageReq{Package: args[0]}, nil
}

func stopParams(args []string, _ io.Reader) (any, error) {
	if len(args) < 1 || len(args) > 2 {
		return nil, admin.Usagef("want a package and optionally a server")
	}
	p := stopReq{Package: args[0]}
	if len(args) == 2 {
		p.Server = args[1]
	}
	return p, nil
}

func runParams(args []string, _ io.Reader) (any, error) {
	sep := -1
	for i, a := range args {
		if a == "--" {
			sep = i
			break
		}
	}
	if sep < 0 || sep == len(args)-1 {
		return nil, admin.Usagef("want the command after --")
	}
	// PACKAGE and --timeout D in either order before "--".
	var pkgs []string
	timeout := launcher.DefaultRunTimeout
	head := args[:sep]
	for i := 0; i < len(head); i++ {
		a := head[i]
		val, isTimeout := "", false
		switch {
		case a == "--timeout" || a == "-timeout":
			if i+1 == len(head) {
				return nil, admin.Usagef("--timeout needs a duration")
			}
			val, isTimeout = head[i+1], true
			i++
		case strings.HasPrefix(a, "--timeout=") || strings.HasPrefix(a, "-timeout="):
			_, val, _ = strings.Cut(a, "=")
			isTimeout = true
		case strings.HasPrefix(a, "-"):
			return nil, admin.Usagef("unknown flag %s", a)
		default:
			pkgs = append(pkgs, a)
		}
		if isTimeout {
			d, err := time.ParseDuration(val)
			if err != nil {
				return nil, admin.Usagef("--timeout %q: %v", val, err)
			}
			timeout = d
		}
	}
	if len(pkgs) != 1 {
		return nil, admin.Usagef("want one package before --")
	}
	if timeout <= 0 || timeout > launcher.MaxRunTimeout {
		return nil, admin.Usagef("--timeout must be within (0, %s]", launcher.MaxRunTimeout)
	}
	return admin.TimeoutParams{
		Params:  runReq{Package: pkgs[0], Args: args[sep+1:], TimeoutMs: timeout.Milliseconds()},
		Timeout: timeout + 30*time.Second,
	}, nil
}

func finishRun(raw json.RawMessage, asJSON bool, stdout, stderr io.Writer) int {
	var r launcher.RunResult
	if err := json.Unmarshal(raw, &r); err != nil {
		fmt.Fprintf(stderr, "agentosd ctl app run: malformed result: %v\n", err)
		return admin.ExitFailed
	}
	if asJSON {
		fmt.Fprintf(stdout, "%s\n", raw)
	} else {
		stdout.Write(r.Stdout)
		stderr.Write(r.Stderr)
		if r.StdoutDropped > 0 || r.StderrDropped > 0 {
			fmt.Fprintf(stderr, "agentosd ctl app run: output cut: %d bytes of stdout and %d of stderr dropped\n", r.StdoutDropped, r.StderrDropped)
		}
		if r.TimedOut {
			fmt.Fprintf(stderr, "agentosd ctl app run: killed at the timeout after %d ms\n", r.DurationMs)
		}
	}
	if r.ExitCode < 0 || r.ExitCode > 255 {
		return admin.ExitFailed
	}
	return r.ExitCode
}

func printInstall(w io.Writer, raw json.RawMessage) error {
	var r apps.InstallResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	p := r.Package
	what := "already installed"
	if r.Event != nil {
		what = map[apps.EventKind]string{apps.Installed: "installed", apps.Updated: "updated",
			apps.SignatureChanged: "updated, SIGNATURE CHANGED from " + short(r.Event.PreviousSigningDigest) + " —"}[r.Event.Kind]
	}
	fmt.Fprintf(w, "%s %s %s (versionCode %d, uid %d, signer %s)\n", what, p.Name, p.VersionName, p.VersionCode, p.UID, short(p.SigningDigest))
	return nil
}

func printUninstall(w io.Writer, raw json.RawMessage) error {
	var p apps.Package
	if err := json.Unmarshal(raw, &p); err != nil {
		return err
	}
	fmt.Fprintf(w, "uninstalled %s (uid %d stays reserved for it)\n", p.Name, p.UID)
	return nil
}

func printApps(w io.Writer, raw json.RawMessage) error {
	var ps []apps.Package
	if err := json.Unmarshal(raw, &ps); err != nil {
		return err
	}
	if len(ps) == 0 {
		fmt.Fprintln(w, "no apps installed")
		return nil
	}
	var rows [][]string
	for _, p := range ps {
		var servers []string
		for _, s := range p.Services {
			servers = append(servers, s.Server)
		}
		rows = append(rows, []string{p.Name, fmt.Sprint(p.UID), fmt.Sprintf("%d (%s)", p.VersionCode, p.VersionName),
			short(p.SigningDigest), fmt.Sprint(p.Caller), strings.Join(servers, ","), p.Label})
	}
	return table.Write(w, []string{"package", "uid", "version", "signer", "caller", "servers", "label"}, rows)
}

func printProcs(w io.Writer, raw json.RawMessage) error {
	var ps []launcher.Proc
	if err := json.Unmarshal(raw, &ps); err != nil {
		return err
	}
	if len(ps) == 0 {
		fmt.Fprintln(w, "no app processes running")
		return nil
	}
	var rows [][]string
	for _, p := range ps {
		up := time.Since(time.UnixMilli(p.StartedAt)).Round(time.Second)
		rows = append(rows, []string{p.Package, p.Server, fmt.Sprint(p.PID), fmt.Sprint(p.UID), up.String()})
	}
	return table.Write(w, []string{"package", "server", "pid", "uid", "up"}, rows)
}

func printStop(w io.Writer, raw json.RawMessage) error {
	var r launcher.StopResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	fmt.Fprintf(w, "stopped %d process(es)\n", r.Stopped)
	return nil
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12] + "…"
	}
	return digest
}
