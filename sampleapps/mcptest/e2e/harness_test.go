package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"

	"github.com/agentoslab/agentlab/internal/syncbuf"
	"github.com/agentoslab/agentlab/runtime/admin"
	"github.com/agentoslab/agentlab/runtime/apps"
	"github.com/agentoslab/agentlab/runtime/apps/apptest"
	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
	"github.com/agentoslab/agentlab/runtime/transport"
	"github.com/agentoslab/agentlab/sampleapps/mcptest"
	"github.com/stretchr/testify/assert"
)

var (
	binDir    string // agentosd, mcptest and a copy of this test binary, 0755
	agentosd  string
	mcptestBn string
	selfBin   string
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case "acp-helper":
			os.Exit(acpHelper(os.Args[2:]))
		case "squat":
			os.Exit(squat(os.Args[2:]))
		case "intrude":
			os.Exit(intrude(os.Args[2:]))
		}
	}
	if os.Getuid() != 0 {
		// Every test skips (apptest.NeedRoot); nothing to build.
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "mcptest-e2e-")
	if err != nil {
		panic(err)
	}
	os.Chmod(dir, 0o755)
	binDir = dir
	agentosd = filepath.Join(dir, "agentosd")
	mcptestBn = filepath.Join(dir, "mcptest")
	selfBin = filepath.Join(dir, "e2e.test")
	for _, b := range []struct{ out, pkg string }{
		{agentosd, "github.com/agentoslab/agentlab/runtime/cmd/agentosd"},
		{mcptestBn, "github.com/agentoslab/agentlab/sampleapps/mcptest/cmd/mcptest"},
	} {
		cmd := exec.Command("go", "build", "-o", b.out, b.pkg)
		if out, err := cmd.CombinedOutput(); err != nil {
			os.Stderr.Write(out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	self, _ := os.Executable()
	if err := copyFile(self, selfBin); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o755)
}

// stack is one device: supervisor (root) → serve (runtime uid) → ext,
// with the launcher starting apps under their uids.
type stack struct {
	t          testing.TB
	root       string
	names      transport.Names
	runtimeUID int
	sup        *exec.Cmd
	supDone    chan struct{}
	log        *syncbuf.Buffer
	keys       []ed25519.PrivateKey
}

var stackSeq atomic.Int64

// extFlags are the extension host's test timings: a short idle period.
const extFlags = "--idle-timeout 3s"

func newStack(t testing.TB) *stack {
	t.Helper()
	testenv.NeedRoot(t)
	n := int(stackSeq.Add(1))
	s := &stack{
		t:          t,
		root:       apptest.OpenDir(t),
		names:      transport.Names{Prefix: fmt.Sprintf("e2e%d-%d-", os.Getpid(), n)},
		runtimeUID: 21000 + (os.Getpid()%40)*20 + n,
		supDone:    make(chan struct{}),
		log:        &syncbuf.Buffer{},
	}
	first := 23000 + ((os.Getpid()%40)*20+n)*20
	env, err := exec.LookPath("env")
	if err != nil {
		t.Skip("needs env(1) to pass the extension host's test timings through the supervisor")
	}
	runtimeArgv := []string{env, "AGENTOS_EXT_FLAGS=" + extFlags,
		agentosd, "serve", "--data", filepath.Join(s.root, "runtime"),
		"--socket-prefix", s.names.Prefix, "--log-level", "debug"}
	args := append([]string{"supervise", "--root", s.root, "--runtime-uid", strconv.Itoa(s.runtimeUID),
		"--socket-prefix", s.names.Prefix, "--getprop", "-", "--uid-range", fmt.Sprintf("%d-%d", first, first+19),
		"--log-stderr", "--poll-idle", "500ms", "--"}, runtimeArgv...)
	s.sup = exec.Command(agentosd, args...)
	s.sup.Stdout, s.sup.Stderr = s.log, s.log
	s.sup.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := s.sup.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.sup.Wait(); close(s.supDone) }()
	t.Cleanup(s.stop)
	if !assert.Eventually(t, func() bool {
		var st struct {
			Connected bool `json:"connected"`
		}
		return s.call("ext.status", nil, &st) == nil && st.Connected
	}, 90*time.Second, 100*time.Millisecond) {
		t.Fatalf("the runtime and its extension host did not come up; log:\n%s%s", s.log.String(), s.runtimeLog())
	}
	s.mustCall("model.set", map[string]string{"provider": "scripted"}, nil)
	return s
}

func (s *stack) runtimeLog() string {
	b, _ := os.ReadFile(filepath.Join(s.root, "supervisor", "runtime.log"))
	return string(b)
}

func (s *stack) stop() {
	if s.t.Failed() {
		s.t.Logf("supervisor log:\n%s\nruntime log (tail):\n%s", s.log.String(), tail(s.runtimeLog(), 200))
	}
	s.sup.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.supDone:
	case <-time.After(40 * time.Second):
		syscall.Kill(-s.sup.Process.Pid, syscall.SIGKILL)
		<-s.supDone
	}
}

func tail(s string, lines int) string {
	l := strings.Split(s, "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

// call calls an admin method as root (the owner).
func (s *stack) call(method string, params any, out any) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := admin.Dial(ctx, s.names.Admin())
	if err != nil {
		return err
	}
	defer c.Close()
	raw, err := c.CallRaw(ctx, method, params)
	if err != nil {
		return err
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

func (s *stack) mustCall(method string, params any, out any) {
	s.t.Helper()
	if err := s.call(method, params, out); err != nil {
		s.t.Fatalf("%s: %v", method, err)
	}
}

// ctl runs the real `agentosd ctl … --json` as root.
func (s *stack) ctl(args ...string) (int, string) {
	full := append([]string{"ctl", "--socket-prefix", s.names.Prefix}, args...)
	full = append(full, "--json")
	out, err := exec.Command(agentosd, full...).Output()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	}
	return code, string(out)
}

// bundle packs mcptest with key index k and options.
func (s *stack) bundle(k int, o mcptest.BundleOptions) string {
	s.t.Helper()
	for len(s.keys) <= k {
		key, err := apps.GenerateKey()
		if err != nil {
			s.t.Fatal(err)
		}
		s.keys = append(s.keys, key)
	}
	path := filepath.Join(apptest.OpenDir(s.t), "mcptest.agentapp")
	f, err := os.Create(path)
	if err != nil {
		s.t.Fatal(err)
	}
	if _, err := mcptest.WriteBundle(context.Background(), f, s.keys[k], mcptestBn, o); err != nil {
		s.t.Fatal(err)
	}
	f.Close()
	os.Chmod(path, 0o644)
	return path
}

// install installs a bundle through the supervisor and makes the
// extension host read it.
func (s *stack) install(path string) {
	s.t.Helper()
	s.mustCall("app.install", map[string]string{"path": path}, nil)
	s.mustCall("plugins.rescan", nil, nil)
}

// appInfo is the installed mcptest package.
func (s *stack) appInfo() apps.Package {
	s.t.Helper()
	var list []apps.Package
	s.mustCall("app.list", nil, &list)
	for _, p := range list {
		if p.Name == mcptest.Package {
			return p
		}
	}
	s.t.Fatal("mcptest is not installed")
	return apps.Package{}
}

// event is one line of the ACP helper's output.
type event struct {
	Kind   string `json:"kind"`
	Tool   string `json:"tool,omitempty"`
	Status string `json:"status,omitempty"`
	Result string `json:"result,omitempty"`
	Stop   string `json:"stop,omitempty"`
	Text   string `json:"text,omitempty"`
	Error  string `json:"error,omitempty"`
}

// prompt runs a scripted prompt as the owner's UI (the runtime's uid on
// the caller channel) and returns its events.
func (s *stack) prompt(script string) []event {
	s.t.Helper()
	cmd := apptest.Command(s.runtimeUID, selfBin, []string{"acp-helper", s.names.Caller()})
	cmd.Stdin = strings.NewReader(script)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		s.t.Fatalf("acp helper: %v\n%s", err, errb.String())
	}
	var evs []event
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var e event
		if json.Unmarshal([]byte(line), &e) == nil {
			evs = append(evs, e)
		}
	}
	return evs
}

// acpHelper runs one prompt on a new session: stdin is the model script.
func acpHelper(args []string) int {
	script, _ := io.ReadAll(os.Stdin)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out := json.NewEncoder(os.Stdout)
	c, err := acpclient.Connect(ctx, &acpclient.Options{SocketName: args[0], ClientName: "e2e"})
	if err != nil {
		out.Encode(event{Kind: "error", Error: err.Error()})
		return 1
	}
	defer c.Close()
	sess, err := c.NewSession(ctx, acpclient.SessionOptions{})
	if err != nil {
		out.Encode(event{Kind: "error", Error: err.Error()})
		return 1
	}
	for ev, err := range sess.Prompt(ctx, "#!agentos-script\n"+string(script), acpclient.PromptOptions{}) {
		if err != nil {
			out.Encode(event{Kind: "error", Error: err.Error()})
			return 1
		}
		switch e := ev.(type) {
		case acpclient.ToolCall:
			out.Encode(event{Kind: "tool", Tool: e.Tool, Status: string(e.Status), Result: e.ResultJSON})
		case acpclient.Text:
			out.Encode(event{Kind: "text", Text: e.Text})
		case acpclient.Done:
			out.Encode(event{Kind: "done", Stop: e.StopReason})
		}
	}
	return 0
}

// squat listens on a socket name as whatever uid it runs under and
// counts the bytes peers send it, until SIGTERM; then it prints the count.
func squat(args []string) int {
	ln, err := transport.Listen(args[0])
	if err != nil {
		fmt.Println("listen failed")
		return 1
	}
	fmt.Println("listening")
	var got atomic.Int64
	var conns atomic.Int64
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			go func() {
				n, _ := io.Copy(io.Discard, c)
				got.Add(n)
			}()
		}
	}()
	sig := make(chan os.Signal, 1)
	signalNotify(sig)
	<-sig
	fmt.Printf("bytes=%d conns=%d\n", got.Load(), conns.Load())
	return 0
}

// intrude dials a socket as whatever uid it runs under, sends each
// argument after the first as one line, and prints what came back, one
// line each: "closed" when the peer closed without a byte, "dial failed"
// when nothing listens.
func intrude(args []string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := transport.Dial(ctx, args[0])
	if err != nil {
		fmt.Println("dial failed")
		return 0
	}
	defer c.Close()
	for _, l := range args[1:] {
		c.SetWriteDeadline(time.Now().Add(3 * time.Second))
		if _, err := c.Write([]byte(l + "\n")); err != nil {
			break
		}
	}
	r := bufio.NewReader(c)
	got := 0
	for {
		c.SetReadDeadline(time.Now().Add(2 * time.Second))
		line, err := r.ReadString('\n')
		if line != "" {
			got++
			fmt.Println(strings.TrimSpace(line))
		}
		if err != nil {
			if got == 0 && (errors.Is(err, io.EOF) || isReset(err)) {
				fmt.Println("closed")
			} else if got == 0 {
				fmt.Println("no answer")
			}
			return 0
		}
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && errors.Is(err, syscall.ECONNRESET)
}

func signalNotify(c chan os.Signal) { signal.Notify(c, syscall.SIGTERM) }
