package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
)

// The test binary doubles as a client process: with TRANSPORT_TEST_DIAL
// set it dials that socket, writes one line and exits. Run under another
// uid, it proves SO_PEERCRED reports the kernel's view, whatever the
// client says.
func TestMain(m *testing.M) {
	if name := os.Getenv("TRANSPORT_TEST_DIAL"); name != "" {
		c, err := Dial(context.Background(), name)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		// A lie about identity: must change nothing.
		io.WriteString(c, `{"clientInfo":{"name":"uid 0, package org.agentos.app"}}`+"\n")
		io.Copy(io.Discard, c)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func uniqueName(t *testing.T) string {
	return "@agentlab-test-" + strconv.Itoa(os.Getpid()) + "-" + t.Name()
}

func TestPeerCredIsTheKernelsUID(t *testing.T) {
	testenv.NeedRoot(t)
	ln, err := Listen(uniqueName(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	exe := worldExecutableCopy(t)
	for _, uid := range []int{10123, 2000, 0} {
		cmd := exec.Command(exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), "TRANSPORT_TEST_DIAL="+ln.Name())
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		if got := c.Cred(); got.UID != uid || got.PID != cmd.Process.Pid {
			t.Errorf("cred = %+v, want uid %d pid %d", got, uid, cmd.Process.Pid)
		}
		again, err := PeerCred(c.UnixConn)
		if err != nil || again != c.Cred() {
			t.Errorf("PeerCred = %+v, %v", again, err)
		}
		c.Close()
		if err := cmd.Wait(); err != nil {
			t.Fatalf("client under uid %d: %v", uid, err)
		}
	}
}

// worldExecutableCopy copies the test binary where any uid may run it:
// go test builds it inside a directory only root can enter.
func worldExecutableCopy(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "transport-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	exe := filepath.Join(dir, "client")
	dst, err := os.OpenFile(exe, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return exe
}

func TestAbstractNameCannotBeTakenTwice(t *testing.T) {
	name := uniqueName(t)
	ln, err := Listen(name)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if _, err := Listen(name); !errors.Is(err, ErrInUse) {
		t.Fatalf("second Listen: %v, want ErrInUse", err)
	}
}

func TestSocketFileStaleIsReplacedLiveIsNot(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path); !errors.Is(err, ErrInUse) {
		t.Fatalf("live socket taken over: %v", err)
	}
	// Leave a stale file behind, as a crashed runtime would.
	ln.ln.SetUnlinkOnClose(false)
	ln.Close()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("stale file missing: %v", err)
	}
	ln2, err := Listen(path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln2.Close()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("socket file left after Close")
	}
	if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path); err == nil {
		t.Fatal("a regular file was replaced by a socket")
	}
}

func TestDialAndServeOverAbstractSocket(t *testing.T) {
	ln, err := Listen(uniqueName(t))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		s := NewRPCStream(c, nil)
		defer s.Close()
		io.Copy(s.Writer(), s.Reader()) // echo valid lines
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := Dial(ctx, ln.Name())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "oops\n"+`{"jsonrpc":"2.0","method":"ping"}`+"\n")
	buf := make([]byte, 0, 256)
	tmp := make([]byte, 256)
	for len(buf) == 0 || countNL(buf) < 2 {
		n, err := c.Read(tmp)
		if err != nil {
			t.Fatalf("read: %v (have %q)", err, buf)
		}
		buf = append(buf, tmp[:n]...)
	}
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}` + "\n" + `{"jsonrpc":"2.0","method":"ping"}` + "\n"
	if string(buf) != want {
		t.Fatalf("got %q", buf)
	}
}

func countNL(b []byte) int {
	n := 0
	for _, c := range b {
		if c == '\n' {
			n++
		}
	}
	return n
}

func TestNames(t *testing.T) {
	n := Names{Prefix: "t1-"}
	if AbstractSupported() {
		if n.ACP() != "@t1-agentos-acp" || n.App("org.x", "main") != "@t1-agentos-app.org.x.main" {
			t.Fatalf("names %s %s", n.ACP(), n.App("org.x", "main"))
		}
		// ACI services keep the upstream-style name after the prefix.
		if got := n.ACI("org.x", "browser"); got != "@t1-aci.org.x.browser" {
			t.Fatalf("aci name %s", got)
		}
	}
	d := Names{Dir: "sockets"}
	if d.Admin() != filepath.Join("sockets", "agentos-admin.sock") {
		t.Fatalf("dir name %s", d.Admin())
	}
	var _ net.Conn = (*Conn)(nil)
}
