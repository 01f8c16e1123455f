package steps

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/lab/consoleui"
	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/runtime/apps/launcher"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// maxOutput bounds the text a step saves from one command stream.
const maxOutput = 256 << 10

// exec runs one step and returns its output.
func (a *attempt) exec(ctx context.Context, n int, t *Target, st *scenario.Step) (any, error) {
	look := a.lookup(t)
	expand := func(s string) (string, error) { return scenario.ExpandString(s, look) }
	switch st.Kind() {
	case scenario.KindReset, scenario.KindSeed:
		list, cmd := st.Reset, "reset"
		if st.Kind() == scenario.KindSeed {
			list, cmd = st.Seed, "seed"
		}
		out := map[string]any{}
		for _, app := range list {
			v, err := a.appRun(ctx, t, app, 0, cmd)
			if err != nil {
				return nil, err
			}
			out[scenario.AppName(pkgOf(app))] = v
		}
		return out, nil
	case scenario.KindApp:
		args, err := appArgs(st.App.Args, look)
		if err != nil {
			return nil, err
		}
		return a.appRun(ctx, t, st.App.Name, a.commandTimeout(st), args...)
	case scenario.KindInstall:
		return a.install(ctx, t, st.Install)
	case scenario.KindCaller:
		return a.caller(ctx, t, st)
	case scenario.KindACPClient:
		return a.acpClient(ctx, t, st.ACPClient)
	case scenario.KindCallers:
		return a.callers(ctx, t, st.Callers, expand)
	case scenario.KindAsk:
		return a.ask(ctx, t, st, look)
	case scenario.KindPrompt:
		return a.prompt(ctx, t, st, expand)
	case scenario.KindBridge:
		return a.bridgeStep(ctx, t, st, expand)
	case scenario.KindConsent:
		return nil, a.consentStep(ctx, t, st.Consent)
	case scenario.KindTap:
		return a.recorderOf(ctx, t).tap(ctx, st.Tap.Card, st.Tap.Choice)
	case scenario.KindApproval:
		return a.approval(ctx, t, st.Approval, expand)
	case scenario.KindPlugins, scenario.KindTools:
		return a.toggle(ctx, t, st, expand)
	case scenario.KindKill:
		return nil, a.kill(ctx, t, st.Kill, false)
	case scenario.KindRestart:
		return nil, a.kill(ctx, t, st.Restart, true)
	case scenario.KindReboot:
		return nil, a.reboot(ctx, t)
	case scenario.KindWait:
		if st.Wait.For > 0 {
			return a.timedWait(ctx, n, t, st.Wait.For.D())
		}
		return a.wait(ctx, st.Wait)
	case scenario.KindSleep:
		return nil, sleep(ctx, st.Sleep.D())
	case scenario.KindRun:
		return a.run1(ctx, t, st.Run, expand)
	case scenario.KindCheck:
		c, err := a.namedCheck(ctx, st.Check, map[string]any{})
		if err != nil {
			return nil, err
		}
		a.record(c)
		return nil, nil
	case scenario.KindAwait:
		return nil, a.await(ctx, st.Await)
	}
	return nil, fmt.Errorf("step kind %q has no executor", st.Kind())
}

// appArgs expands an app command's arguments: text as it is, mappings
// and lists as compact JSON.
func appArgs(in []scenario.Arg, look scenario.Lookup) ([]string, error) {
	out := make([]string, len(in))
	for i, x := range in {
		if x.JSON == nil {
			s, err := scenario.ExpandString(x.Text, look)
			if err != nil {
				return nil, err
			}
			out[i] = s
			continue
		}
		v, err := scenario.ExpandText(x.JSON.V, look)
		if err != nil {
			return nil, err
		}
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
		out[i] = strings.TrimSuffix(b.String(), "\n")
	}
	return out, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func pkgOf(app string) string {
	p, _ := scenario.PackageOf(app)
	return p
}

// decodeJSON returns b as a JSON value, or false when it is not JSON.
func decodeJSON(b []byte) (any, bool) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || !json.Valid(b) {
		return nil, false
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil, false
	}
	return v, true
}

// ctlJSON runs a ctl verb and returns its result as a JSON value.
func ctlJSON(ctx context.Context, t *Target, args ...string) (any, error) {
	var raw json.RawMessage
	if err := t.Ctl.Call(ctx, &raw, args...); err != nil {
		return nil, err
	}
	v, _ := decodeJSON(raw)
	return v, nil
}

// commandTimeout is how long an app command of step st may run: a little
// less than the step, so the launcher kills it and says so before the step
// gives up, and never more than the launcher allows.
func (a *attempt) commandTimeout(st *scenario.Step) time.Duration {
	return max(min(a.stepTimeout(st)-5*time.Second, launcher.MaxRunTimeout), time.Second)
}

// appRun runs an app's debug command. Its output is the command's JSON,
// or {exitCode, stdout, stderr} when it printed none; a non-zero exit
// without JSON is an error.
func (a *attempt) appRun(ctx context.Context, t *Target, app string, timeout time.Duration, args ...string) (any, error) {
	pkg := pkgOf(app)
	a.mu.Lock()
	if len(args) > 0 && args[0] == "dump" {
		a.dumps[scenario.AppName(pkg)] = true
	}
	a.mu.Unlock()
	ca := []string{"app", "run", pkg}
	if timeout > 0 {
		ca = append(ca, "--timeout", timeout.String())
	}
	ca = append(append(ca, "--"), args...)
	var rr launcher.RunResult
	if err := t.Ctl.Call(ctx, &rr, ca...); err != nil {
		return nil, fmt.Errorf("%s %s: %w", scenario.AppName(pkg), firstWord(args), err)
	}
	if rr.TimedOut {
		return nil, fmt.Errorf("%s %s: timed out after %dms", scenario.AppName(pkg), firstWord(args), rr.DurationMs)
	}
	if v, ok := decodeJSON(rr.Stdout); ok {
		if rr.ExitCode != 0 {
			return v, &appError{app: scenario.AppName(pkg), cmd: firstWord(args), code: rr.ExitCode, out: v, stderr: clip(string(rr.Stderr), 300)}
		}
		return v, nil
	}
	out := map[string]any{"exitCode": float64(rr.ExitCode), "stdout": clip(string(rr.Stdout), maxOutput), "stderr": clip(string(rr.Stderr), maxOutput)}
	if rr.ExitCode != 0 {
		return out, &appError{app: scenario.AppName(pkg), cmd: firstWord(args), code: rr.ExitCode, out: out, stderr: clip(string(rr.Stderr), 300)}
	}
	return out, nil
}

func firstWord(args []string) string {
	if len(args) == 0 {
		return ""
	}
	return args[0]
}

// appError is an app command that exited non-zero; out is what it
// printed, saved when the step allows errors.
type appError struct {
	app, cmd string
	code     int
	out      any
	stderr   string
}

func (e *appError) Error() string {
	msg := fmt.Sprintf("%s %s exited %d", e.app, e.cmd, e.code)
	if e.stderr != "" {
		msg += ": " + e.stderr
	}
	return msg
}

// errorOutput is what a step that allows errors saves for err.
func errorOutput(err error) any {
	var ae *appError
	if errors.As(err, &ae) {
		return map[string]any{"error": map[string]any{"code": "exit_" + strconv.Itoa(ae.code), "message": ae.Error()}, "output": ae.out}
	}
	var ee *errcode.Error
	if errors.As(err, &ee) {
		e := map[string]any{"code": string(ee.Code), "message": ee.Text}
		if ee.Details != nil {
			e["details"] = ee.Details
		}
		return map[string]any{"error": e}
	}
	var ce *runtimectl.CtlError
	if errors.As(err, &ce) {
		return map[string]any{"error": map[string]any{"code": "ctl_exit_" + strconv.Itoa(ce.ExitCode), "message": ce.Stderr}}
	}
	return map[string]any{"error": map[string]any{"code": "failed", "message": err.Error()}}
}

func (a *attempt) callers(ctx context.Context, t *Target, c *scenario.CallersStep, expand func(string) (string, error)) (any, error) {
	switch {
	case c.Allow != "":
		return ctlJSON(ctx, t, "callers", "allow", pkgOf(c.Allow))
	case c.Deny != "":
		return ctlJSON(ctx, t, "callers", "deny", pkgOf(c.Deny))
	case c.Revoke != "":
		return ctlJSON(ctx, t, "callers", "revoke", pkgOf(c.Revoke))
	case c.Remove != "":
		return ctlJSON(ctx, t, "callers", "remove", pkgOf(c.Remove))
	case c.Config != nil:
		args := []string{"callers", "config"}
		for _, f := range []struct {
			flag string
			d    scenario.Duration
		}{{"--cooldown", c.Config.Cooldown}, {"--ttl", c.Config.TTL}, {"--abandon", c.Config.Abandon}} {
			if f.d > 0 {
				args = append(args, f.flag, f.d.String())
			}
		}
		return ctlJSON(ctx, t, args...)
	case c.Answer != nil:
		id, err := expand(c.Answer.Request)
		if err != nil {
			return nil, err
		}
		if id == "" {
			if id, err = a.pendingRequest(ctx, t, pkgOf(c.Answer.App), c.Answer.Wait.D()); err != nil {
				return nil, err
			}
		}
		verdict := "deny"
		if c.Answer.Allow {
			verdict = "allow"
		}
		if a.consentDriver() == scenario.DriverUI {
			choice := "DENY"
			if c.Answer.Allow {
				choice = "ALLOW"
			}
			accepted, err := a.tapUI(ctx, t, consoleui.KindAuth, id, choice)
			if err != nil {
				return nil, err
			}
			// The shape of ctl's answer, so that checks read either.
			return map[string]any{"accepted": accepted}, nil
		}
		return ctlJSON(ctx, t, "callers", "answer", id, verdict)
	}
	return nil, errors.New("callers: nothing to do")
}

// pendingRequest waits for pkg's pending authorization request.
func (a *attempt) pendingRequest(ctx context.Context, t *Target, pkg string, wait time.Duration) (string, error) {
	if wait <= 0 {
		wait = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var last string
	for {
		var list struct {
			Callers []struct {
				PackageName string `json:"packageName"`
				State       string `json:"state"`
				RequestID   string `json:"requestId"`
			} `json:"callers"`
		}
		if err := t.Ctl.Call(ctx, &list, "callers", "list"); err != nil {
			if ctx.Err() != nil {
				break
			}
			return "", err
		}
		for _, c := range list.Callers {
			if c.PackageName == pkg {
				last = c.State
				if c.RequestID != "" && c.State == "pending" {
					return c.RequestID, nil
				}
			}
		}
		if sleep(ctx, DefaultPollInterval/2) != nil {
			break
		}
	}
	if last == "" {
		last = "not listed"
	}
	return "", fmt.Errorf("no pending authorization request of %s within %s (state: %s)", pkg, wait, last)
}

// ask runs an app's ask_agent; the app's run report is the output. A
// report printed with a non-zero exit is still the output: the report says
// what went wrong.
func (a *attempt) ask(ctx context.Context, t *Target, st *scenario.Step, look scenario.Lookup) (any, error) {
	args := map[string]any{}
	for k, v := range st.Ask.Args {
		x, err := scenario.ExpandValue(v.V, look)
		if err != nil {
			return nil, err
		}
		args[k] = x
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	out, err := a.appRun(ctx, t, st.Ask.App, a.commandTimeout(st), "ask_agent", string(b))
	var ae *appError
	if errors.As(err, &ae) {
		if m, ok := ae.out.(map[string]any); ok && m["exitCode"] == nil {
			// The app printed its report: that is the outcome.
			return ae.out, nil
		}
	}
	return out, err
}

func (a *attempt) approval(ctx context.Context, t *Target, ap *scenario.ApprovalStep, expand func(string) (string, error)) (any, error) {
	tool, err := expand(ap.Tool)
	if err != nil {
		return nil, err
	}
	if ap.Plugin == "" {
		return ctlJSON(ctx, t, "plugins", "tool-approval", tool, ap.Mode)
	}
	args := []string{"plugins", "approval", ap.Plugin}
	if ap.Server != "" {
		args = append(args, ap.Server)
		if tool != "" {
			args = append(args, tool)
		}
	}
	return ctlJSON(ctx, t, append(args, ap.Mode)...)
}

func (a *attempt) toggle(ctx context.Context, t *Target, st *scenario.Step, expand func(string) (string, error)) (any, error) {
	tg, on, off := st.Plugins, "enable", "disable"
	group := "plugins"
	if st.Kind() == scenario.KindTools {
		tg, on, off = st.Tools, "tool-enable", "tool-disable"
	}
	out := map[string]any{}
	for _, x := range []struct {
		verb  string
		names []string
	}{{on, tg.Enable}, {off, tg.Disable}} {
		for _, name := range x.names {
			name, err := expand(name)
			if err != nil {
				return nil, err
			}
			id := name
			if st.Kind() == scenario.KindPlugins {
				if id, err = pluginID(ctx, t, name); err != nil {
					return nil, err
				}
			}
			v, err := ctlJSON(ctx, t, group, x.verb, id)
			if err != nil {
				return nil, err
			}
			out[name] = v
		}
	}
	return out, nil
}

// pluginID finds a plugin by id, name, package or sample app name, as
// provisioning does; the runtime's verbs take the id.
func pluginID(ctx context.Context, t *Target, name string) (string, error) {
	var list []struct {
		ID      string `json:"id"`
		Name    string `json:"name"`
		Package string `json:"package"`
	}
	if err := t.Ctl.Call(ctx, &list, "plugins", "list"); err != nil {
		return "", err
	}
	pkg, _ := scenario.PackageOf(name)
	for _, p := range list {
		if p.ID == name || p.Name == name || p.Package == name || (pkg != "" && p.Package == pkg) {
			return p.ID, nil
		}
	}
	return "", fmt.Errorf("no plugin %q is installed", name)
}

// supervisorPID is where the supervisor keeps its pid on the device.
const supervisorPID = "/data/agentos/supervisor/supervisor.pid"

// kill kills (or restarts) the extension host, the runtime or an app.
func (a *attempt) kill(ctx context.Context, t *Target, target string, restart bool) error {
	switch target {
	case scenario.TargetExt:
		verb := "kill"
		if restart {
			verb = "restart"
		}
		_, err := ctlJSON(ctx, t, "ext", verb)
		return err
	case scenario.TargetRuntime:
		var st runtimectl.Status
		if err := t.Ctl.Call(ctx, &st, "status"); err != nil {
			if restart && !IsLabFault(err) {
				// Not running (killed, and idle, so left dead): start it.
				return a.waitRuntime(ctx, t, 0)
			}
			return err
		}
		if st.PID <= 0 {
			return errors.New("the runtime reports no pid")
		}
		sig := "KILL"
		if restart {
			sig = "TERM"
		}
		if res, err := t.Device.Su(ctx, fmt.Sprintf("kill -%s %d", sig, st.PID)); err != nil {
			return err
		} else if res.ExitCode != 0 {
			return fmt.Errorf("kill -%s %d: exit %d: %s", sig, st.PID, res.ExitCode, bytes.TrimSpace(res.Stderr))
		}
		if !restart {
			return nil
		}
		return a.waitRuntime(ctx, t, st.PID)
	}
	_, err := ctlJSON(ctx, t, "app", "stop", pkgOf(target))
	return err
}

// waitRuntime waits until the runtime answers with a pid other than
// old (0: any), kicking the supervisor, which leaves an idle runtime that
// died alone until asked.
func (a *attempt) waitRuntime(ctx context.Context, t *Target, old int) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	kicked := time.Time{}
	var last error
	for {
		var st runtimectl.Status
		err := t.Ctl.Call(ctx, &st, "status")
		if err == nil && st.PID != old {
			return nil
		}
		if err != nil && IsLabFault(err) {
			return err
		}
		last = err
		if time.Since(kicked) > 2*time.Second {
			t.Device.Su(ctx, "kill -USR1 $(cat "+supervisorPID+") 2>/dev/null")
			kicked = time.Now()
		}
		if sleep(ctx, 200*time.Millisecond) != nil {
			if last == nil {
				last = errors.New("it still runs with the old pid")
			}
			return fmt.Errorf("the runtime did not come back within %s: %w", readyTimeout, last)
		}
	}
}

// reboot reboots the device and waits for it and its runtime.
func (a *attempt) reboot(ctx context.Context, t *Target) error {
	if err := t.Device.Reboot(ctx); err != nil {
		return labFault("reboot", err)
	}
	if err := t.Device.WaitBoot(ctx); err != nil {
		if errors.Is(err, devices.ErrBootTimeout) || ctx.Err() != nil {
			return fmt.Errorf("the device did not boot again: %w", err)
		}
		return labFault("wait for boot", err)
	}
	if t.AfterReboot != nil {
		if err := t.AfterReboot(ctx, t.Device); err != nil {
			return labFault("after reboot", err)
		}
	}
	// Desktop pairings do not survive a restart of the runtime's memory
	// (codes), and our connection is gone.
	a.mu.Lock()
	if c := a.acp[t.Role]; c != nil {
		c.close()
		delete(a.acp, t.Role)
	}
	a.mu.Unlock()
	return a.waitRuntime(ctx, t, 0)
}

// wait polls a condition until it holds.
func (a *attempt) wait(ctx context.Context, w *scenario.WaitStep) (any, error) {
	timeout := w.Timeout.D()
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	interval := w.Interval.D()
	if interval <= 0 {
		interval = DefaultPollInterval
	}
	start := time.Now()
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var detail, evidence string
	met := false
	for {
		ok, d, ev, err := a.eval(wctx, &w.Until, nil)
		if err != nil && IsLabFault(err) {
			return nil, err
		}
		detail, evidence = d, ev
		if ok && err == nil {
			met = true
			break
		}
		if sleep(wctx, interval) != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	elapsed := time.Since(start)
	out := map[string]any{"met": met, "elapsedMs": float64(elapsed.Milliseconds())}
	if w.Check != nil {
		c := checkResult(w.Check.Name, w.Check.Upstream, met, evidence)
		if met {
			c.Detail = fmt.Sprintf("held after %s", elapsed.Round(time.Millisecond))
		} else {
			c.Detail = fmt.Sprintf("did not hold within %s: %s", timeout, detail)
		}
		a.record(c)
		return out, nil
	}
	if !met {
		return out, fmt.Errorf("wait: did not hold within %s: %s", timeout, detail)
	}
	return out, nil
}

// run1 is the run step.
func (a *attempt) run1(ctx context.Context, t *Target, r *scenario.RunStep, expand func(string) (string, error)) (any, error) {
	want := 0
	if r.ExpectExit != nil {
		want = *r.ExpectExit
	}
	if len(r.Ctl) > 0 {
		args := make([]string, len(r.Ctl))
		for i, x := range r.Ctl {
			var err error
			if args[i], err = expand(x); err != nil {
				return nil, err
			}
		}
		v, err := ctlJSON(ctx, t, args...)
		if err != nil {
			return nil, err
		}
		return map[string]any{"exitCode": 0.0, "json": v}, nil
	}
	cmd, err := expand(r.Shell)
	if err != nil {
		return nil, err
	}
	out, err := shellOutput(ctx, t, cmd, r.Su)
	if err != nil {
		return nil, err
	}
	if code := int(out["exitCode"].(float64)); code != want {
		return out, fmt.Errorf("run: exit %d, want %d: %s", code, want, clip(strings.TrimSpace(out["stderr"].(string)), 300))
	}
	return out, nil
}

// shellOutput runs a device command: {exitCode, stdout, stderr, json}.
func shellOutput(ctx context.Context, t *Target, cmd string, su bool) (map[string]any, error) {
	var res devices.Result
	var err error
	if su {
		res, err = t.Device.Su(ctx, cmd)
	} else {
		res, err = t.Device.Shell(ctx, cmd)
	}
	if err != nil {
		if errors.Is(err, devices.ErrNoRoot) {
			return nil, labFault("su", err)
		}
		return nil, err
	}
	out := map[string]any{
		"exitCode": float64(res.ExitCode),
		"stdout":   strings.TrimRight(clip(string(res.Stdout), maxOutput), "\n"),
		"stderr":   clip(string(res.Stderr), maxOutput),
	}
	if v, ok := decodeJSON(res.Stdout); ok {
		out["json"] = v
	}
	return out, nil
}
