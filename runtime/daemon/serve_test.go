package daemon_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"github.com/agentoslab/agentlab/internal/syncbuf"
	"github.com/agentoslab/agentlab/internal/testbin"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
	"github.com/agentoslab/agentlab/runtime/supervise"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/stretchr/testify/require"
)

// End to end against the real binary: agentosd serve under its own uid,
// an app installed as a signed bundle and run under its allocated uid,
// the owner's answers through agentosd ctl.

const appEnv = "DAEMON_TEST_APP"

var agentosd string // the built binary

func TestMain(m *testing.M) {
	if name := os.Getenv(appEnv); name != "" {
		os.Exit(appMain(name))
	}
	var err error
	agentosd, err = testbin.Build(context.Background(), "github.com/agentoslab/agentlab/runtime/cmd/agentosd")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(testbin.Main(m))
}

// appMain is the app: connect (waiting for the owner), one prompt, and
// the outcome as JSON on stdout.
func appMain(socket string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := map[string]any{}
	waits := 0
	conn, err := acpclient.Connect(ctx, &acpclient.Options{SocketName: socket, RetryInterval: 100 * time.Millisecond,
		OnWaiting: func(string, time.Duration) { waits++ }})
	res["waits"] = waits
	if err == nil {
		var s *acpclient.Session
		if s, err = conn.NewSession(ctx, acpclient.SessionOptions{}); err == nil {
			var text strings.Builder
			for ev, perr := range s.Prompt(ctx, "hello", acpclient.PromptOptions{}) {
				if perr != nil {
					err = perr
					break
				}
				switch ev := ev.(type) {
				case acpclient.Text:
					text.WriteString(ev.Text)
				case acpclient.Done:
					res["stop"] = ev.StopReason
				}
			}
			res["text"] = text.String()
		}
		conn.Close()
	}
	var e *acpclient.Error
	if errors.As(err, &e) {
		res["err"] = string(e.Code)
	} else if err != nil {
		res["err"] = err.Error()
	}
	json.NewEncoder(os.Stdout).Encode(res)
	return 0
}

const runtimeUID = 19950

func ctl(t *testing.T, prefix, stdin string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(agentosd, append([]string{"ctl", "--socket-prefix", prefix}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String()
}

func TestServeWithAccess(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root: the runtime and the app run under their own uids")
	}
	root, err := os.MkdirTemp("", "daemon-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	os.Chmod(root, 0o755)
	data := filepath.Join(root, "data")
	os.MkdirAll(data, 0o700)
	os.Chown(data, runtimeUID, runtimeUID)

	// Install the app (this test binary) as a signed bundle.
	in, err := apps.OpenInstaller(supervise.Paths{Root: root}.Apps(), &apps.InstallerOptions{FirstUID: 30200, LastUID: 30299,
		AndroidPackagesList: filepath.Join(root, "none"), PasswdFile: filepath.Join(root, "none")})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	self, _ := os.Executable()
	bin, _ := os.ReadFile(self)
	key, _ := apps.GenerateKey()
	src := fstest.MapFS{
		"app.json":                             {Data: []byte(`{"package":"org.example.e2e","label":"E2E","versionCode":1,"binary":"app","caller":true}`)},
		apps.BinaryPath(apps.HostABI(), "app"): {Data: bin, Mode: 0o755},
	}
	bundle := filepath.Join(root, "app.agentapp")
	f, _ := os.Create(bundle)
	if _, err := apps.Pack(context.Background(), src, key, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	res, err := in.Install(context.Background(), bundle)
	if err != nil {
		t.Fatal(err)
	}
	pkg := res.Package

	prefix := fmt.Sprintf("e2e%d-", os.Getpid())
	names := transport.Names{Prefix: prefix}
	serve := exec.Command(agentosd, "serve", "--data", data, "--socket-prefix", prefix)
	serve.Env = []string{"AGENTOS_ROOT=" + root, "PATH=/usr/bin:/bin"}
	serve.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: runtimeUID, Gid: runtimeUID}}
	serveLog := &syncbuf.Buffer{}
	serve.Stderr = serveLog
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Signal(syscall.SIGTERM)
		serve.Wait()
		if t.Failed() {
			t.Logf("serve log:\n%s", serveLog.String())
		}
	})
	require.Eventually(t, func() bool {
		c, err := transport.Dial(context.Background(), names.Admin())
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 10*time.Millisecond, "serve did not start")

	// Desktop access is off: no socket.
	if _, err := transport.Dial(context.Background(), names.ACP()); err == nil {
		t.Fatal("the desktop socket exists while desktop access is off")
	}
	if code, out := ctl(t, prefix, "", "model", "set", "--provider", "scripted"); code != 0 {
		t.Fatalf("model set: %d %s", code, out)
	}
	if code, out := ctl(t, prefix, "", "status", "--json"); code != 0 || !strings.Contains(out, `"callers"`) ||
		!strings.Contains(out, `"desktop"`) || !strings.Contains(out, `"provider":"scripted"`) {
		t.Fatalf("status: %d %s", code, out)
	}

	// The app asks; the owner answers through ctl.
	app := exec.Command(pkg.BinaryPath())
	app.Env = []string{appEnv + "=" + names.Caller()}
	app.Dir = "/"
	app.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(pkg.UID), Gid: uint32(pkg.UID)}}
	stdout, _ := app.StdoutPipe()
	if err := app.Start(); err != nil {
		t.Fatal(err)
	}
	var requestID string
	require.Eventually(t, func() bool {
		_, out := ctl(t, prefix, "", "callers", "list", "--json")
		var l struct {
			Cards []struct{ RequestID, PackageName string }
		}
		json.Unmarshal([]byte(out), &l)
		if len(l.Cards) == 1 && l.Cards[0].PackageName == pkg.Name {
			requestID = l.Cards[0].RequestID
		}
		return requestID != ""
	}, 20*time.Second, 20*time.Millisecond, "no authorization card")
	if code, out := ctl(t, prefix, "", "callers", "answer", requestID, "allow"); code != 0 || !strings.Contains(out, "accepted") {
		t.Fatalf("answer: %d %s", code, out)
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	app.Wait()
	var got map[string]any
	json.Unmarshal([]byte(line), &got)
	if got["stop"] != "end_turn" || got["err"] != nil || got["text"] == "" || got["waits"].(float64) < 1 {
		t.Fatalf("app: %s", line)
	}
	_, out := ctl(t, prefix, "", "callers", "list", "--json")
	if !strings.Contains(out, `"promptsTotal":1`) || !strings.Contains(out, `"state":"allowed"`) {
		t.Fatalf("usage not counted: %s", out)
	}

	// Desktop: enable, pair as root with the code, speak ACP.
	code, out := ctl(t, prefix, "", "desktop", "enable", "--json")
	var cr struct{ Code string }
	if code != 0 || json.Unmarshal([]byte(out), &cr) != nil {
		t.Fatalf("desktop enable: %d %s", code, out)
	}
	c, err := transport.Dial(context.Background(), names.ACP())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, `{"jsonrpc":"2.0","id":0,"method":"_org.agentos/pair","params":{"code":%q}}`+"\n"+
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}`+"\n", cr.Code)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	pair, _ := r.ReadString('\n')
	init, _ := r.ReadString('\n')
	if !strings.Contains(pair, `"token"`) || !strings.Contains(init, `"protocolVersion":1`) {
		t.Fatalf("pair %q init %q", pair, init)
	}
	if strings.Contains(serveLog.String(), cr.Code) {
		t.Fatal("pairing code in the runtime's log")
	}
}
