package steps

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/lab/modelstub"
	"github.com/agentoslab/agentlab/lab/scenario"
	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model/script"
)

// fakeDevice is a device whose shell answers from a function. Methods the
// steps package does not use are the embedded nil interface's (they
// panic: a test that reaches one is wrong).
type fakeDevice struct {
	devices.Device
	serial string
	shell  func(cmd string, su bool) (devices.Result, error)
	gone   bool
	// forwardTo is the local TCP port Forward answers (a fake phone's
	// desktop socket); removed records RemoveForward calls.
	forwardTo int
	removed   []string
}

func (d *fakeDevice) Forward(_ context.Context, local, remote string) (int, error) {
	if d.forwardTo == 0 {
		return 0, errors.New("no forward in this test")
	}
	return d.forwardTo, nil
}

func (d *fakeDevice) RemoveForward(_ context.Context, local string) error {
	d.removed = append(d.removed, local)
	return nil
}

func (d *fakeDevice) Serial() string { return d.serial }

func (d *fakeDevice) State(context.Context) (string, error) {
	if d.gone {
		return "", devices.ErrDeviceGone
	}
	return "device", nil
}

func (d *fakeDevice) Shell(_ context.Context, cmd string) (devices.Result, error) {
	return d.run(cmd, false)
}
func (d *fakeDevice) Su(_ context.Context, cmd string) (devices.Result, error) {
	return d.run(cmd, true)
}

func (d *fakeDevice) run(cmd string, su bool) (devices.Result, error) {
	if d.gone {
		return devices.Result{}, fmt.Errorf("shell: %w", devices.ErrDeviceGone)
	}
	if d.shell != nil {
		return d.shell(cmd, su)
	}
	return devices.Result{}, nil
}

func (d *fakeDevice) Logs(context.Context, time.Time) ([]byte, error) {
	return nil, fmt.Errorf("logcat: %w", devices.ErrUnsupported)
}

func (d *fakeDevice) Screenshot(context.Context) ([]byte, error) {
	return nil, fmt.Errorf("screencap: %w", devices.ErrUnsupported)
}

// fakeRuntime is a runtime's control API over in-memory state: apps with
// dumps, a caller registry, consent cards. It records every call.
type fakeRuntime struct {
	mu    sync.Mutex
	calls []string
	// apps maps package → items (their ids) for dump; missing apps fail.
	apps map[string][]string
	// pending cards, answered by consent respond.
	pending []map[string]any
	answers map[string]string
	recent  []map[string]any
	mode    string
	// callers is callers list's answer.
	callers map[string]any
	// fail maps a verb ("callers revoke") to the error it returns.
	fail map[string]error
	// delay makes calls of a verb slow.
	delay map[string]time.Duration
	// clockKind is clock show's kind ("virtual", "real"); "" answers as a
	// runtime that does not know the verb would not (a result without a
	// kind). advanced sums the clock advances.
	clockKind string
	advanced  time.Duration
}

func newRuntime() *fakeRuntime {
	return &fakeRuntime{apps: map[string][]string{}, answers: map[string]string{}, fail: map[string]error{}, delay: map[string]time.Duration{},
		callers: map[string]any{"callers": []any{}, "channels": map[string]any{"thirdParty": 0.0}}}
}

func (f *fakeRuntime) verbs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeRuntime) Call(ctx context.Context, out any, args ...string) error {
	verb := strings.Join(args[:min(2, len(args))], " ")
	f.mu.Lock()
	f.calls = append(f.calls, strings.Join(args, " "))
	err, d := f.fail[verb], f.delay[verb]
	f.mu.Unlock()
	if d > 0 {
		select {
		case <-time.After(d):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err != nil {
		return err
	}
	var res any
	switch verb {
	case "app run":
		pkg := args[2]
		i := 3
		for args[i] != "--" {
			i++
		}
		cmdArgs := args[i+1:]
		res = f.appRun(pkg, cmdArgs)
	case "callers list":
		f.mu.Lock()
		res = f.callers
		f.mu.Unlock()
	case "callers revoke", "callers allow", "callers deny", "callers remove":
		res = map[string]any{"packageName": args[2], "state": map[string]string{"revoke": "denied", "allow": "allowed", "deny": "denied", "remove": "removed"}[args[1]]}
	case "callers answer":
		res = map[string]any{"accepted": true}
	case "consent pending":
		f.mu.Lock()
		res = append([]map[string]any(nil), f.pending...)
		f.mu.Unlock()
	case "consent respond":
		f.mu.Lock()
		f.answers[args[2]] = args[3]
		for i, c := range f.pending {
			if c["requestId"] == args[2] {
				f.pending = append(f.pending[:i], f.pending[i+1:]...)
				f.recent = append(f.recent, map[string]any{"requestId": args[2], "tool": c["toolName"], "answeredWith": args[3]})
				break
			}
		}
		f.mu.Unlock()
		res = map[string]any{"accepted": true}
	case "consent recent":
		f.mu.Lock()
		res = append([]map[string]any(nil), f.recent...)
		f.mu.Unlock()
	case "consent mode":
		f.mu.Lock()
		f.mode = args[2]
		f.mu.Unlock()
		res = map[string]any{"mode": args[2]}
	case "plugins list":
		res = []any{map[string]any{"id": "org.agentos.test.mcp.plugin/agent-plugin", "name": "mcptest", "package": "org.agentos.test.mcp.plugin"}}
	case "status":
		res = map[string]any{"version": "test", "pid": 42.0}
	case "desktop code":
		res = map[string]any{"code": "123456", "expiresInMs": 300000.0}
	case "clock show", "clock advance":
		f.mu.Lock()
		if verb == "clock advance" {
			d, err := time.ParseDuration(args[2])
			if err != nil {
				f.mu.Unlock()
				return err
			}
			f.advanced += d
		}
		res = map[string]any{"kind": f.clockKind, "nowMs": 1700000000000.0, "offsetMs": float64(f.advanced.Milliseconds())}
		f.mu.Unlock()
	default:
		res = map[string]any{"ok": true, "args": args}
	}
	if out == nil {
		return nil
	}
	b, _ := json.Marshal(res)
	return json.Unmarshal(b, out)
}

// appRun answers an app's debug command as the launcher would.
func (f *fakeRuntime) appRun(pkg string, args []string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	items, ok := f.apps[pkg]
	if !ok {
		return map[string]any{"exitCode": 1, "stderr": base64.StdEncoding.EncodeToString([]byte("not installed"))}
	}
	var doc any
	code := 0
	switch args[0] {
	case "dump":
		var list []any
		for _, id := range items {
			list = append(list, map[string]any{"id": id, "title": "t" + id})
		}
		key := map[string]string{"org.agentos.sample.notes": "notes", "org.agentos.sample.calendar": "events", "org.agentos.sample.sms": "messages"}[pkg]
		d := map[string]any{"total": len(items), key: list}
		if pkg == "org.agentos.sample.sms" {
			d["outbox"] = []any{}
		}
		doc = d
	case "reset":
		f.apps[pkg] = nil
		doc = map[string]any{"cleared": len(items)}
	case "seed":
		f.apps[pkg] = append(f.apps[pkg], "1", "2")
		doc = map[string]any{"seeded": 2}
	case "delete":
		f.apps[pkg] = items[1:]
		doc = map[string]any{"deleted": items[0]}
	case "ask_agent":
		doc = map[string]any{"state": "done", "args": args[1]}
	case "crash":
		return map[string]any{"exitCode": 2, "stdout": base64.StdEncoding.EncodeToString([]byte("not json")), "stderr": base64.StdEncoding.EncodeToString([]byte("boom"))}
	default:
		doc = map[string]any{"ran": args}
	}
	b, _ := json.Marshal(doc)
	return map[string]any{"exitCode": code, "stdout": base64.StdEncoding.EncodeToString(b)}
}

func (f *fakeRuntime) addCard(id, tool, display, risk, pkg string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pending = append(f.pending, map[string]any{"requestId": id, "toolName": tool, "toolDisplayName": display, "risk": risk,
		"callerKind": "app", "callerPackage": pkg, "initiatorLine": "Requested by " + pkg, "argumentsPreview": "{}",
		"options": []any{map[string]any{"choice": "ALLOW_ONCE"}, map[string]any{"choice": "DENY"}}})
}

// fakeStub records bindings and answers Requests.
type fakeStub struct {
	mu    sync.Mutex
	bound map[string]*script.Script
	chaos map[string]int64
	reqs  []modelstub.Recorded
}

func (s *fakeStub) BindChaos(token string, c *modelstub.Chaos) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chaos == nil {
		s.chaos = map[string]int64{}
	}
	s.chaos[token] = c.Seed
	return nil
}

func (s *fakeStub) Bind(token string, sc *script.Script) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.bound == nil {
		s.bound = map[string]*script.Script{}
	}
	s.bound[token] = sc
	return nil
}

func (s *fakeStub) Requests(string) ([]modelstub.Recorded, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reqs, 0
}

func parse(t testing.TB, doc string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Parse([]byte(doc), "test.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var _ = errcode.New
