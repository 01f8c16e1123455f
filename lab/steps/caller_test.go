package steps

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/internal/golden"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/sampleapps/acptestclient"
)

const copyPkg = "org.agentos.test.acp.t.copy"

// planOf decodes the operations of an app run's arguments the way the
// client does.
func planOf(t *testing.T, call string) []acptestclient.Op {
	t.Helper()
	_, rest, ok := strings.Cut(call, " -- run ")
	require.True(t, ok, "not a run of the test caller: %s", call)
	var args []string
	for _, a := range strings.Split(rest, " [") {
		if !strings.HasPrefix(a, "[") {
			a = "[" + a
		}
		args = append(args, a)
	}
	ops, err := acptestclient.ParsePlan(args)
	require.NoError(t, err)
	return ops
}

// TestCallerStep: a caller step runs the copy made by install with the
// plan encoded to the client's operations: fields and durations as the
// client names them, the scenario's references expanded, the client's own
// left to it, a named script sent as the prompt.
func TestCallerStep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rt := newRuntime()
		rt.apps[copyPkg] = nil
		var shells []string
		dev := &fakeDevice{serial: "127.0.0.1:5000", shell: func(cmd string, su bool) (devices.Result, error) {
			shells = append(shells, cmd)
			if strings.Contains(cmd, `"$B" run`) {
				return devices.Result{Stdout: []byte(`{"ok":true,"r":{"root":{"result":"data"}},"steps":[]}`)}, nil
			}
			return devices.Result{}, nil
		}}
		e, _ := env(t, rt, dev)
		s := parse(t, `
name: t
vars: {who: Wang}
scripts:
  hang: {steps: [{text: "working for ${vars.who}", hangAfter: 1}]}
setup:
  - install: {caller: `+copyPkg+`}
steps:
  - caller:
      app: `+copyPkg+`
      plan:
        - connect: {max_wait: 30s, client_name: lab}
        - new: {as: s, scope: [], cwd: /lab}
        - prompt: {session: s, script: hang, background: true, cancel_after: 5s, as: p1}
        - wait_text: {prompt: p1, text: working, timeout: 1500ms}
        - raw_open: {as: raw}
        - raw: {conn: raw, as: rnew, send: {jsonrpc: "2.0", id: 2, method: session/new, params: {cwd: /}}}
        - raw: {conn: raw, as: rp, send: {id: 3, params: {sessionId: "${r:rnew.response.result.sessionId}", who: "${vars.who}"}}}
        - dial: {socket: acp, as: d, send: {id: 0}, read: 2s}
        - sleep: 100ms
    save: plan
  - caller:
      root: true
      plan: [{dial: {socket: acp, as: root, line: "{}"}}]
    save: asRoot
checks:
  - {name: planRan, saved: plan, path: '.ran[0]', eq: run}
  - {name: rootRan, saved: asRoot, path: .r.root.result, eq: data}
`)
		r := Run(context.Background(), s, e)
		require.NoError(t, r.Err)
		require.NoError(t, r.LabFault)
		assert.Equal(t, "planRan=true rootRan=true", checks(r))

		var run string
		for _, c := range rt.verbs() {
			if strings.HasPrefix(c, "app run "+copyPkg+" ") {
				run = c
			}
		}
		ops := planOf(t, run)
		require.Len(t, ops, 9)
		assert.Equal(t, acptestclient.Op{Op: "connect", As: "c", MaxWaitMs: 30000, ClientName: "lab"}, ops[0])
		require.NotNil(t, ops[1].Scope)
		assert.Empty(t, *ops[1].Scope, "scope: [] is no tools, not no scope")
		assert.Equal(t, "/lab", ops[1].Cwd)
		assert.Equal(t, 5000, ops[2].CancelAfterMs)
		assert.True(t, ops[2].Background)
		assert.Equal(t, "#!agentos-script\nsteps:\n    - hangAfter: 1\n      text: working for Wang\n", ops[2].Text, "the script is the prompt, references expanded")
		assert.Equal(t, 1500, ops[3].TimeoutMs)
		assert.JSONEq(t, `{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/"}}`, string(ops[5].Send))
		assert.JSONEq(t, `{"id":3,"params":{"sessionId":"${r:rnew.response.result.sessionId}","who":"Wang"}}`, string(ops[6].Send),
			"the client's ${r:…} reaches it as written; the scenario's is expanded")
		require.NotNil(t, ops[7].Line)
		assert.Equal(t, `{"id":0}`, *ops[7].Line, "dial's send is sent as its line")
		assert.Equal(t, 2000, ops[7].ReadMs)
		assert.Equal(t, 100, ops[8].Ms)

		require.Len(t, shells, 3, "install, then the root run")
		assert.Contains(t, shells[1], "ctl app install")
		assert.Contains(t, shells[2], `"$B" run '[{"op":"dial","as":"root","line":"{}","socket":"acp"}]'`)
	})
}

// TestEncodePlanSplits: a plan longer than one argument of an app command
// is split over several, each at most 4,096 bytes, in order.
func TestEncodePlanSplits(t *testing.T) {
	var plan strings.Builder
	for i := range 60 {
		plan.WriteString("        - prompt: {session: s, text: " + strings.Repeat("x", 100) + ", as: p" + string(rune('a'+i%26)) + strings.Repeat("z", i/26) + "}\n")
	}
	s := parse(t, "name: t\nsteps:\n  - caller:\n      plan:\n        - connect\n        - new: {as: s}\n"+plan.String())
	x := s.LookupExpander(func(string) (any, bool) { return nil, false })
	args, err := s.Steps[0].Caller.EncodePlan(x)
	require.NoError(t, err)
	require.Greater(t, len(args), 1)
	for _, a := range args {
		assert.LessOrEqual(t, len(a), scenario.MaxArg)
	}
	ops, err := acptestclient.ParsePlan(args)
	require.NoError(t, err)
	require.Len(t, ops, 62)
	assert.Equal(t, "pa", ops[2].As)
	assert.Equal(t, "phzz", ops[61].As)
}

// TestInstallScript: the install recipe, for each form of the step, is
// valid sh and is what the goldens say.
func TestInstallScript(t *testing.T) {
	var all strings.Builder
	for _, in := range []scenario.InstallStep{
		{Caller: copyPkg},
		{Caller: copyPkg, Update: true},
		{Caller: "org.agentos.test.acp.t.shared.a", SharedUserID: "org.agentos.test.acp.t.shared", Key: "shared"},
		{Caller: copyPkg, Permissions: []string{"aci", "contacts"}},
	} {
		sh := installScript(&in)
		b, _ := json.Marshal(in)
		all.WriteString("# " + string(b) + "\n" + sh + "\n")
		if out, err := exec.Command("sh", "-n", "-c", sh).CombinedOutput(); err != nil {
			t.Errorf("sh -n: %v: %s\n%s", err, out, sh)
		}
	}
	golden.Check(t, "testdata/install.golden", []byte(all.String()))
}
