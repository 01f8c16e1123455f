package steps

import (
	"context"
	"fmt"
	"strings"

	"github.com/agentoslab/agentlab/lab/runtimectl"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/sampleapps/acptestclient"
)

// Where the runtime keeps installed apps on the device, and where the
// lab stages what it builds there.
const (
	appsCodeDir = "/data/agentos/apps/code"
	stageDir    = runtimectl.DefaultTempDir
)

// installScript is the device shell script of an install step: copy the
// installed test caller's bundle contents, rename the package (and give
// it a shared user id), sign it with a fresh or a kept key and install
// it; unless the step updates, the package and its authorization are
// removed first.
func installScript(in *scenario.InstallStep) string {
	q := shQuote
	work := stageDir + "/agentlab-" + in.Caller
	var b strings.Builder
	fmt.Fprintf(&b, "set -e; A=%s; W=%s\n", q(runtimectl.DefaultAgentosd), q(work))
	if !in.Update {
		fmt.Fprintf(&b, "$A ctl callers remove %[1]s >/dev/null 2>&1 || true; $A ctl app uninstall %[1]s >/dev/null 2>&1 || true\n", q(in.Caller))
	}
	fmt.Fprintf(&b, "rm -rf \"$W\"; mkdir -p \"$W\"; cp -r \"$(ls -d %s/%s-* | head -n1)\" \"$W/app\"\n", appsCodeDir, acptestclient.Package)
	repl := fmt.Sprintf(`"package": "%s"`, in.Caller)
	if in.SharedUserID != "" {
		repl += fmt.Sprintf(`, "sharedUserId": "%s"`, in.SharedUserID)
	}
	if len(in.Permissions) > 0 {
		repl += fmt.Sprintf(`, "permissions": ["%s"]`, strings.Join(in.Permissions, `", "`))
	}
	// Package names hold only letters, digits, _ and . (the validator
	// checks), so they are safe inside the sed expression.
	fmt.Fprintf(&b, "sed -i %s \"$W/app/app.json\"\n", q(fmt.Sprintf(`s/"package": *"%s"/%s/`, strings.ReplaceAll(acptestclient.Package, ".", `\.`), repl)))
	if in.Key != "" {
		fmt.Fprintf(&b, "K=%s; test -f \"$K\" || $A app keygen --out \"$K\" >/dev/null\n", q(stageDir+"/agentlab-key-"+in.Key+".pem"))
	} else {
		b.WriteString("K=\"$W/key.pem\"; $A app keygen --out \"$K\" >/dev/null\n")
	}
	b.WriteString("$A app pack --dir \"$W/app\" --key \"$K\" --out \"$W/app.agentapp\" >/dev/null\n")
	b.WriteString("$A ctl app install \"$W/app.agentapp\"; rm -rf \"$W\"\n")
	return b.String()
}

// install runs an install step; its output is the install's
// {exitCode, stdout, stderr, json}.
func (a *attempt) install(ctx context.Context, t *Target, in *scenario.InstallStep) (any, error) {
	out, err := shellOutput(ctx, t, installScript(in), true)
	if err != nil {
		return nil, err
	}
	if code := int(out["exitCode"].(float64)); code != 0 {
		return out, fmt.Errorf("install %s: exit %d: %s", in.Caller, code, clip(strings.TrimSpace(out["stderr"].(string)), 300))
	}
	return out, nil
}

// caller runs a caller step: the plan encoded to the client's arguments,
// run as the app through the launcher, or as root from a device shell.
// The output is the client's result document.
func (a *attempt) caller(ctx context.Context, t *Target, st *scenario.Step) (any, error) {
	c := st.Caller
	args, err := c.EncodePlan(a.sc.LookupExpander(a.lookup(t)))
	if err != nil {
		return nil, err
	}
	if !c.Root {
		app := c.App
		if app == "" {
			app = acptestclient.Package
		}
		return a.appRun(ctx, t, app, a.commandTimeout(st), append([]string{acptestclient.CommandRun}, args...)...)
	}
	var cmd strings.Builder
	fmt.Fprintf(&cmd, "B=$(ls -d %s/%s-*/bin/*/%s | head -n1); \"$B\" %s", appsCodeDir, acptestclient.Package, acptestclient.Binary, acptestclient.CommandRun)
	for _, arg := range args {
		cmd.WriteString(" " + shQuote(arg))
	}
	res, err := shellOutput(ctx, t, cmd.String(), true)
	if err != nil {
		return nil, err
	}
	v, ok := res["json"]
	if code := int(res["exitCode"].(float64)); code != 0 || !ok {
		return res, fmt.Errorf("%s as root: exit %d: %s", acptestclient.Binary, code, clip(strings.TrimSpace(res["stderr"].(string)), 300))
	}
	return v, nil
}

// shQuote quotes s for sh as one word.
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
