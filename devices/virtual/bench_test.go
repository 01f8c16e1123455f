//go:build linux

package virtual_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
	"github.com/agentoslab/agentlab/devices/virtual"
)

// BenchmarkBoot measures boot to shell-ready: Start returns once the
// device has booted and serves adb (target < 500 ms).
func BenchmarkBoot(b *testing.B) {
	needDevices(b)
	dir := b.TempDir()
	var total time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		d, err := virtual.Start(context.Background(), &virtual.Options{StateDir: dir, Name: "bench-boot"})
		if err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		d.Stop(context.Background())
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/boot")
}

// BenchmarkPush measures "adb push" through a real adb server against
// raw loopback TCP moving the same file into the same folder in the same
// run; it reports both in MB/s and their ratio (target >= 0.5).
func BenchmarkPush(b *testing.B) {
	d := startDevice(b, nil)
	a := newADB(b)
	a.connect(d)
	const size = 64 << 20
	src := writeFile(b, b.TempDir(), "push.bin", make([]byte, size))
	rawDir := filepath.Join(d.Root(), "data", "local", "tmp")
	b.SetBytes(size)
	var adbTime, rawTime time.Duration
	for b.Loop() {
		t0 := time.Now()
		a.must("-s", d.Serial(), "push", src, "/data/local/tmp/push.bin")
		adbTime += time.Since(t0)
		b.StopTimer()
		t1 := time.Now()
		rawCopy(b, src, filepath.Join(rawDir, "raw.bin"))
		rawTime += time.Since(t1)
		b.StartTimer()
	}
	mb := float64(size) * float64(b.N) / 1e6
	adbRate, rawRate := mb/adbTime.Seconds(), mb/rawTime.Seconds()
	b.ReportMetric(adbRate, "adb-MB/s")
	b.ReportMetric(rawRate, "raw-MB/s")
	b.ReportMetric(adbRate/rawRate, "ratio")
}

// rawCopy moves a file through one loopback TCP connection into dst.
func rawCopy(b *testing.B, src, dst string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	done := make(chan error, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			done <- err
			return
		}
		defer c.Close()
		f, err := os.Create(dst)
		if err != nil {
			done <- err
			return
		}
		_, err = io.Copy(f, c)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		done <- err
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(c, f)
	f.Close()
	c.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// BenchmarkShellRoundTrip measures "adb shell true" through the adb
// server, as a smart-socket client does it (no adb CLI process): select
// the transport, open shell,v2, read to the exit packet.
func BenchmarkShellRoundTrip(b *testing.B) {
	d := startDevice(b, nil)
	a := newADB(b)
	a.connect(d)
	for b.Loop() {
		if code := smartShell(b, a.srv.Addr(), d.Serial(), "true"); code != 0 {
			b.Fatalf("exit %d", code)
		}
	}
}

func smartShell(b *testing.B, addr, serial, cmd string) int {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	request := func(s string) {
		fmt.Fprintf(c, "%04x%s", len(s), s)
		var st [4]byte
		if _, err := io.ReadFull(br, st[:]); err != nil || string(st[:]) != "OKAY" {
			b.Fatalf("%s: %q %v", s, st, err)
		}
	}
	request("host:transport:" + serial)
	request("shell,v2,raw:" + cmd)
	for {
		id, data, err := adbwire.ReadShellPacket(br, adbwire.MaxShellPacketLen)
		if err != nil {
			b.Fatal(err)
		}
		if id == adbwire.ShellExit && len(data) == 1 {
			return int(data[0])
		}
	}
}
