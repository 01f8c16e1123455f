package hostproto

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/adb/adbtest"
)

func newServer(t *testing.T) (*adbtest.Server, *adbtest.Device) {
	t.Helper()
	srv, err := adbtest.NewServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	d := &adbtest.Device{
		Serial: "127.0.0.1:15555", Product: "vd", Model: "Virtual", Name: "vd",
		Features: []string{"shell_v2", "cmd"},
		Shell: func(cmd string) (string, string, int) {
			switch cmd {
			case "exit 3":
				return "", "", 3
			case "both":
				return "out\n", "err\n", 0
			}
			return cmd + "\n", "", 0
		},
		Service: func(svc string, c net.Conn) bool {
			if svc != "localabstract:echo" {
				return false
			}
			io.Copy(c, c)
			return true
		},
	}
	srv.AddDevice(d)
	return srv, d
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func TestHostQueries(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t)
	c := New(srv.Addr())
	ctx := ctxT(t)

	v, err := c.Version(ctx)
	if err != nil || v != 41 {
		t.Fatalf("Version = %d, %v; want 41 (hex 0029)", v, err)
	}
	st, err := c.State(ctx, "127.0.0.1:15555")
	if err != nil || st != "device" {
		t.Fatalf("State = %q, %v", st, err)
	}
	_, err = c.State(ctx, "nope")
	var fe *FailError
	if !errors.As(err, &fe) || fe.Stage != StageHost {
		t.Fatalf("State(absent) err = %v, want FailError at host stage", err)
	}
	f, err := c.Features(ctx, "127.0.0.1:15555")
	if err != nil || strings.Join(f, ",") != "shell_v2,cmd" {
		t.Fatalf("Features = %v, %v", f, err)
	}
	devs, err := c.Devices(ctx)
	if err != nil || len(devs) != 1 || devs[0].Model != "Virtual" || devs[0].TransportID != 1 {
		t.Fatalf("Devices = %+v, %v", devs, err)
	}
	if _, err := c.Connect(ctx, "127.0.0.1:15555"); err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if err := c.Disconnect(ctx, "127.0.0.1:15555"); err != nil {
		t.Fatalf("Disconnect: %v", err)
	}
	if err := c.Reconnect(ctx, "127.0.0.1:15555"); err != nil {
		t.Fatalf("Reconnect: %v", err)
	}
}

func TestConnectFailureText(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t)
	srv.OnConnect = func(addr string) string { return "failed to connect to " + addr }
	_, err := New(srv.Addr()).Connect(ctxT(t), "127.0.0.1:1")
	var fe *FailError
	if !errors.As(err, &fe) || !strings.Contains(fe.Message, "failed to connect") {
		t.Fatalf("Connect err = %v; the server's OKAY must not hide the failure text", err)
	}
}

func TestShellV2(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t)
	c := New(srv.Addr())
	tests := []struct {
		cmd            string
		stdout, stderr string
		code           int
	}{
		{"exit 3", "", "", 3},
		{"both", "out\n", "err\n", 0},
		{"getprop ro.x", "getprop ro.x\n", "", 0},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code, err := c.ShellV2(ctxT(t), "127.0.0.1:15555", tt.cmd, &out, &errb)
		if err != nil || code != tt.code || out.String() != tt.stdout || errb.String() != tt.stderr {
			t.Errorf("ShellV2(%q) = %d %q %q %v; want %d %q %q", tt.cmd, code, out.String(), errb.String(), err, tt.code, tt.stdout, tt.stderr)
		}
	}
	var fe *FailError
	if _, err := c.ShellV2(ctxT(t), "gone", "true", io.Discard, io.Discard); !errors.As(err, &fe) || fe.Stage != StageTransport {
		t.Errorf("ShellV2(absent) err = %v; want transport-stage FailError", err)
	}
}

func TestForwardAndDial(t *testing.T) {
	t.Parallel()
	srv, _ := newServer(t)
	c := New(srv.Addr())
	ctx := ctxT(t)
	port, err := c.Forward(ctx, "127.0.0.1:15555", "tcp:0", "localabstract:echo", false)
	if err != nil || port == 0 {
		t.Fatalf("Forward = %d, %v", port, err)
	}
	echo := func(conn net.Conn) {
		t.Helper()
		defer conn.Close()
		if _, err := conn.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4)
		if _, err := io.ReadFull(conn, buf); err != nil || string(buf) != "ping" {
			t.Fatalf("echo = %q, %v", buf, err)
		}
	}
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	echo(conn)
	if err := c.KillForward(ctx, "127.0.0.1:15555", "tcp:"+itoa(port)); err != nil {
		t.Fatalf("KillForward: %v", err)
	}
	var fe *FailError
	if err := c.KillForward(ctx, "127.0.0.1:15555", "tcp:"+itoa(port)); !errors.As(err, &fe) {
		t.Fatalf("second KillForward err = %v, want FAIL", err)
	}

	dc, err := c.Dial(ctx, "127.0.0.1:15555", "localabstract:echo")
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	echo(dc)
	if _, err := c.Dial(ctx, "127.0.0.1:15555", "localabstract:nobody"); !errors.As(err, &fe) || fe.Stage != StageService {
		t.Fatalf("Dial(refused) err = %v, want service-stage FailError", err)
	}
}

func TestReverse(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t)
	c := New(srv.Addr())
	ctx := ctxT(t)
	p, err := c.Reverse(ctx, "127.0.0.1:15555", "tcp:0", "tcp:8080", false)
	if err != nil || p == 0 {
		t.Fatalf("Reverse(tcp:0) = %d, %v", p, err)
	}
	p2, err := c.Reverse(ctx, "127.0.0.1:15555", "localabstract:model", "tcp:8080", false)
	if err != nil || p2 != 0 {
		t.Fatalf("Reverse(localabstract) = %d, %v", p2, err)
	}
	if got := d.Reverses(); got["localabstract:model"] != "tcp:8080" || got["tcp:"+itoa(p)] != "tcp:8080" {
		t.Fatalf("device reverses = %v", got)
	}
	if err := c.KillReverse(ctx, "127.0.0.1:15555", "localabstract:model"); err != nil {
		t.Fatalf("KillReverse: %v", err)
	}
	if _, ok := d.Reverses()["localabstract:model"]; ok {
		t.Fatal("reverse still present after KillReverse")
	}
}

func TestStat(t *testing.T) {
	t.Parallel()
	srv, d := newServer(t)
	d.WriteFile("/data/local/tmp/f", adbtest.File{Data: []byte("hello"), Mode: 0100755, MTime: time.Unix(1700000000, 0)})
	c := New(srv.Addr())
	st, err := c.StatPath(ctxT(t), "127.0.0.1:15555", "/data/local/tmp/f")
	if err != nil || st.Mode != 0100755 || st.Size != 5 || st.MTime != 1700000000 {
		t.Fatalf("StatPath = %+v, %v", st, err)
	}
	st, err = c.StatPath(ctxT(t), "127.0.0.1:15555", "/missing")
	if err != nil || st.Mode != 0 {
		t.Fatalf("StatPath(missing) = %+v, %v; want mode 0", st, err)
	}
}

func TestContextInterruptsBlockedRead(t *testing.T) {
	t.Parallel()
	// A server that accepts and never answers.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := New(ln.Addr().String()).Version(ctx); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Version succeeded against a silent server")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Version did not return after its context expired")
	}
}

func TestParseDevicesL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want []Entry
	}{
		{"full", "emulator-5554          device product:sdk_gphone64_x86_64 model:sdk_gphone64_x86_64 device:emu64xa transport_id:1\n",
			[]Entry{{Serial: "emulator-5554", State: "device", Product: "sdk_gphone64_x86_64", Model: "sdk_gphone64_x86_64", Device: "emu64xa", TransportID: 1}}},
		{"short offline tcp line kept (gadb drops it)", "127.0.0.1:15555        offline transport_id:7\n",
			[]Entry{{Serial: "127.0.0.1:15555", State: "offline", TransportID: 7}}},
		{"usb and crlf", "0123456789ABCDEF       unauthorized usb:1-1 transport_id:2\r\n",
			[]Entry{{Serial: "0123456789ABCDEF", State: "unauthorized", USB: "1-1", TransportID: 2}}},
		{"multi-word state", "0123 no permissions (user in plugdev group); see [http://x] usb:1-2 transport_id:3\n",
			[]Entry{{Serial: "0123", State: "no permissions (user in plugdev group); see [http://x]", USB: "1-2", TransportID: 3}}},
		{"empty and junk", "\n\njunk\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseDevicesL(tt.in)
			if len(got) != len(tt.want) {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("entry %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestReadStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in    string
		fail  string
		proto bool
	}{
		{"OKAY", "", false},
		{"FAIL0005nope!", "nope!", false},
		{"FAIL000", "", true},
		{"FAILzzzz", "", true},
		{"OKA", "", true},
		{"WHAT", "", true},
	}
	for _, tt := range tests {
		err := ReadStatus(strings.NewReader(tt.in), StageHost, "x")
		var fe *FailError
		switch {
		case tt.proto:
			if !errors.Is(err, ErrProtocol) {
				t.Errorf("ReadStatus(%q) = %v, want ErrProtocol", tt.in, err)
			}
		case tt.fail != "":
			if !errors.As(err, &fe) || fe.Message != tt.fail {
				t.Errorf("ReadStatus(%q) = %v, want FAIL %q", tt.in, err, tt.fail)
			}
		default:
			if err != nil {
				t.Errorf("ReadStatus(%q) = %v", tt.in, err)
			}
		}
	}
}

func TestDemuxShellV2(t *testing.T) {
	t.Parallel()
	stream := func(ps ...[]byte) []byte { return bytes.Join(ps, nil) }
	tests := []struct {
		name           string
		in             []byte
		stdout, stderr string
		code           int
		err            error
	}{
		{"exit only", ShellPacket(3, []byte{3}), "", "", 3, nil},
		{"interleaved", stream(ShellPacket(1, []byte("a")), ShellPacket(2, []byte("b")), ShellPacket(1, []byte("c")), ShellPacket(3, []byte{0})), "ac", "b", 0, nil},
		{"unknown id skipped", stream(ShellPacket(9, []byte("zz")), ShellPacket(3, []byte{1})), "", "", 1, nil},
		{"no exit", ShellPacket(1, []byte("x")), "x", "", 0, ErrNoExitStatus},
		{"truncated", ShellPacket(1, []byte("xyz"))[:6], "", "", 0, ErrProtocol},
		{"bad exit length", ShellPacket(3, []byte{1, 2}), "", "", 0, ErrProtocol},
		{"oversized", []byte{1, 0xff, 0xff, 0xff, 0xff}, "", "", 0, ErrProtocol},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var o, e bytes.Buffer
			code, err := DemuxShellV2(bytes.NewReader(tt.in), &o, &e)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil || code != tt.code || o.String() != tt.stdout || e.String() != tt.stderr {
				t.Fatalf("= %d %q %q %v", code, o.String(), e.String(), err)
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
