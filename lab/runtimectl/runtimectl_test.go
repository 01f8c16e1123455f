package runtimectl

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/runtime/clock/labclock"
	"github.com/agentoslab/agentlab/runtime/errcode"
)

// fakeDevice records root commands and pushes; answer decides results.
type fakeDevice struct {
	devices.Device // unused methods panic
	mu             sync.Mutex
	cmds           []string
	pushed         map[string][]byte
	modes          map[string]fs.FileMode
	answer         func(cmd string) (devices.Result, error)
}

func (f *fakeDevice) Serial() string { return "fake-1" }

func (f *fakeDevice) Su(ctx context.Context, cmd string) (devices.Result, error) {
	f.mu.Lock()
	f.cmds = append(f.cmds, cmd)
	f.mu.Unlock()
	return f.answer(cmd)
}

func (f *fakeDevice) Push(ctx context.Context, r io.Reader, remote string, mode fs.FileMode) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.pushed == nil {
		f.pushed, f.modes = map[string][]byte{}, map[string]fs.FileMode{}
	}
	f.pushed[remote], f.modes[remote] = b, mode
	return nil
}

func (f *fakeDevice) Dial(ctx context.Context, addr string) (net.Conn, error) {
	return nil, errors.New("no dial")
}

func ok(stdout string) func(string) (devices.Result, error) {
	return func(string) (devices.Result, error) { return devices.Result{Stdout: []byte(stdout)}, nil }
}

func TestCommandLine(t *testing.T) {
	f := &fakeDevice{answer: ok(`{"version":"1.0","pid":42,"uid":19999,"safeMode":false,"tasks":{"running":1,"queued":2},"apps":{"installed":3,"tableVersion":9},"supervisor":{"state":"ok","runtimePid":42,"moduleVersionCode":"7"},"process":{"goroutines":31,"rssBytes":4096,"fds":12,"storeBytes":8192},"broken":1,"extra":{"x":1}}`)}
	c := New(f, &Options{SocketPrefix: "t1."})
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := f.cmds[0], `'/data/adb/modules/agentos/bin/agentosd' ctl --json --socket-prefix 't1.' 'status'`; got != want {
		t.Errorf("command\n %s\nwant\n %s", got, want)
	}
	if st.Version != "1.0" || st.PID != 42 || st.Tasks.Queued != 2 || st.Apps.Installed != 3 || st.Supervisor.State != "ok" ||
		st.Process == nil || st.Process.Goroutines != 31 || st.Process.FDs != 12 || st.Process.StoreBytes != 8192 || !strings.Contains(string(st.Raw), `"extra"`) {
		t.Errorf("status = %+v", st)
	}

	f.cmds = nil
	f.answer = ok(`{"exitCode":0,"stdout":"eyJhIjoxfQ==","stderr":"","durationMs":5}`)
	if _, err := c.AppRun(context.Background(), "org.x.y", 3*time.Second, "tool", "note_get", `{"id": "it's"}`); err != nil {
		t.Fatal(err)
	}
	if want := `'app' 'run' 'org.x.y' '--timeout' '3s' '--' 'tool' 'note_get' '{"id": "it'\''s"}'`; !strings.HasSuffix(f.cmds[0], want) {
		t.Errorf("app run command %s, want suffix %s", f.cmds[0], want)
	}
}

func TestOutcomes(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name string
		res  devices.Result
		err  error
		test func(t *testing.T, err error)
	}{
		{"refusal", devices.Result{ExitCode: 1, Stdout: []byte(`{"error":{"code":-32602,"message":"invalid_state: no package org.x","data":{"agentosCode":"invalid_state","retryable":false}}}` + "\n")}, nil,
			func(t *testing.T, err error) {
				var e *errcode.Error
				if !errors.As(err, &e) || !errors.Is(err, errcode.InvalidState) || e.Text != "no package org.x" {
					t.Errorf("err = %#v", err)
				}
			}},
		{"unreachable", devices.Result{ExitCode: 3, Stderr: []byte("agentosd ctl: the runtime is not reachable on @agentos-admin (is agentosd running?)\n")}, nil,
			func(t *testing.T, err error) {
				if !errors.Is(err, ErrUnreachable) {
					t.Errorf("err = %v", err)
				}
			}},
		{"not installed", devices.Result{ExitCode: 127, Stderr: []byte("sh: /data/adb/modules/agentos/bin/agentosd: not found\n")}, nil,
			func(t *testing.T, err error) {
				if !errors.Is(err, ErrNotInstalled) {
					t.Errorf("err = %v", err)
				}
			}},
		{"usage", devices.Result{ExitCode: 2, Stdout: []byte("agentosd ctl: unknown command \"app\"\nusage: …\n")}, nil,
			func(t *testing.T, err error) {
				var ce *CtlError
				if !errors.As(err, &ce) || ce.ExitCode != 2 || ce.Verb != "app list" || !strings.Contains(ce.Stderr, "unknown command") {
					t.Errorf("err = %#v", err)
				}
			}},
		{"no root", devices.Result{}, devices.ErrNoRoot,
			func(t *testing.T, err error) {
				if !errors.Is(err, devices.ErrNoRoot) {
					t.Errorf("err = %v", err)
				}
			}},
		{"garbage", devices.Result{Stdout: []byte("not json")}, nil,
			func(t *testing.T, err error) {
				if err == nil || !strings.Contains(err.Error(), "no JSON result") {
					t.Errorf("err = %v", err)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeDevice{answer: func(string) (devices.Result, error) { return tc.res, tc.err }}
			_, err := New(f, nil).AppList(ctx)
			tc.test(t, err)
		})
	}
}

// TestAppRunExitCode: app run exits with the app's own code; the JSON
// result wins over the exit code.
func TestAppRunExitCode(t *testing.T) {
	f := &fakeDevice{answer: func(string) (devices.Result, error) {
		return devices.Result{ExitCode: 3, Stdout: []byte(`{"exitCode":3,"stdout":"","stderr":"Ym9vbQ==","durationMs":1}`)}, nil
	}}
	r, err := New(f, nil).AppRun(context.Background(), "org.x.y", 0, "dump")
	if err != nil || r.ExitCode != 3 || string(r.Stderr) != "boom" {
		t.Fatalf("AppRun = %+v, %v", r, err)
	}
}

// TestSecretNeverOnCommandLine: the key travels by sync push into a 0600
// file, is fed to stdin by the root shell and removed in the same command.
func TestSecretNeverOnCommandLine(t *testing.T) {
	const key = "sk-test-9f8e7d6c5b4a"
	for _, fail := range []bool{false, true} {
		f := &fakeDevice{answer: func(cmd string) (devices.Result, error) {
			if fail && strings.Contains(cmd, "ctl") {
				return devices.Result{}, devices.ErrDeviceGone
			}
			return devices.Result{Stdout: []byte(`{"keySet":true}`)}, nil
		}}
		c := New(f, nil)
		var out map[string]any
		err := c.callWithSecret(context.Background(), []byte(key), &out, "model", "set", "--provider", "openai", "--key-stdin")
		if fail != (err != nil) {
			t.Fatalf("fail=%v: err %v", fail, err)
		}
		if len(f.pushed) != 1 {
			t.Fatalf("pushed %v", f.pushed)
		}
		var file string
		for name, b := range f.pushed {
			file = name
			if string(b) != key || f.modes[name] != 0o600 || !strings.HasPrefix(name, DefaultTempDir+"/.agentlab-secret-") {
				t.Errorf("pushed %q mode %v", name, f.modes[name])
			}
		}
		for _, cmd := range f.cmds {
			if strings.Contains(cmd, key) {
				t.Fatalf("the key is on a command line: %s", cmd)
			}
		}
		if !strings.Contains(f.cmds[0], "'--key-stdin' < '"+file+"'; rc=$?; rm -f '"+file+"'; exit $rc") {
			t.Errorf("command %s", f.cmds[0])
		}
		if fail && (len(f.cmds) != 2 || f.cmds[1] != "rm -f '"+file+"'") {
			t.Errorf("after a failure the file must be removed: %v", f.cmds)
		}
		if bytes.Contains([]byte(strings.Join(f.cmds, "")), []byte("sk-")) {
			t.Error("key prefix leaked")
		}
	}
}

// The clock verbs: advance sends the duration as ctl parses it and
// returns the new time; a release build's refusal is errcode.Unsupported;
// show reports the kind.
func TestClock(t *testing.T) {
	ctx := context.Background()
	var cmds []string
	f := &fakeDevice{answer: func(cmd string) (devices.Result, error) {
		cmds = append(cmds, cmd)
		if strings.Contains(cmd, "'advance'") {
			return devices.Result{Stdout: []byte(`{"kind":"virtual","nowMs":1700000300000,"offsetMs":300000}` + "\n")}, nil
		}
		return devices.Result{Stdout: []byte(`{"kind":"virtual","nowMs":1700000000000,"offsetMs":0}` + "\n")}, nil
	}}
	c := New(f, nil)
	in, err := c.AdvanceClock(ctx, 5*time.Minute)
	if err != nil || in.OffsetMs != 300000 || in.Kind != labclock.KindVirtual {
		t.Fatalf("AdvanceClock = %+v, %v", in, err)
	}
	if want := "'" + DefaultAgentosd + "' ctl --json 'clock' 'advance' '5m0s'"; !strings.Contains(cmds[0], want) {
		t.Errorf("command %q, want %q", cmds[0], want)
	}
	if in, err := c.Clock(ctx); err != nil || in.Kind != labclock.KindVirtual || in.NowMs != 1700000000000 {
		t.Fatalf("Clock = %+v, %v", in, err)
	}
	for _, d := range []time.Duration{0, -time.Second, 1500 * time.Microsecond} {
		if _, err := c.AdvanceClock(ctx, d); err == nil {
			t.Errorf("AdvanceClock(%s) accepted", d)
		}
	}
	if len(cmds) != 2 {
		t.Errorf("a bad duration reached the device: %q", cmds)
	}

	release := &fakeDevice{answer: func(string) (devices.Result, error) {
		return devices.Result{ExitCode: 1, Stdout: []byte(`{"error":{"code":-32601,"message":"unsupported: this build has the real clock only","data":{"agentosCode":"unsupported","retryable":false}}}` + "\n")}, nil
	}}
	if _, err := New(release, nil).AdvanceClock(ctx, time.Minute); !errors.Is(err, errcode.Unsupported) {
		t.Errorf("release build: err = %v, want unsupported", err)
	}
}
