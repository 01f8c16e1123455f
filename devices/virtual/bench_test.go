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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/devices/internal/adbwire"
	"github.com/agentoslab/agentlab/devices/virtual"
	"github.com/agentoslab/agentlab/internal/testenv"
)

// BenchmarkBoot measures boot to shell-ready: Start returns once the
// device has booted and serves adb (target < 500 ms).
func BenchmarkBoot(b *testing.B) {
	testenv.NeedRoot(b)
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

// BenchmarkPush measures "adb push" of a 64 MiB file through a real adb
// server into a virtual device against raw loopback TCP moving the same
// file into the same folder in the same run; the target is
// ratio >= 0.5. See benchPush for what is reported.
func BenchmarkPush(b *testing.B) {
	d := startDevice(b, nil)
	a := newADB(b)
	a.connect(d)
	benchPush(b, a, d.Serial(), filepath.Join(d.Root(), "data", "local", "tmp"), func() time.Duration {
		return procCPU(b, d.InitPID())
	})
}

// BenchmarkPushCeiling is BenchmarkPush against a device that costs next
// to nothing (discardDevice): what it reaches is the most any device can
// get through this adb server and CLI, so its ratio is the ceiling of
// BenchmarkPush's.
func BenchmarkPushCeiling(b *testing.B) {
	testenv.NeedRoot(b)
	d := startDevice(b, nil) // only for a raw copy into the same folder
	dev := startDiscardDevice(b)
	a := newADB(b)
	if out := a.must("connect", dev.addr); !strings.HasPrefix(out, "connected to") {
		b.Fatalf("adb connect: %s", out)
	}
	a.must("-s", dev.addr, "wait-for-device")
	benchPush(b, a, dev.addr, filepath.Join(d.Root(), "data", "local", "tmp"), func() time.Duration {
		return selfCPU(b) // the discarding device is all this process does during a push
	})
	if got, want := dev.received(), int64(b.N)*pushSize; got != want {
		b.Fatalf("discarding device got %d bytes of file data, want %d", got, want)
	}
}

const pushSize = 64 << 20

// benchPush runs "adb push" of a pushSize file to serial through a's
// server b.N times and, after each push, moves the same file over raw
// loopback TCP into rawDir twice: once with the kernel's zero-copy paths
// (sendfile and splice, which io.Copy picks between a file and a TCP
// socket), once with user-space copies of 64 KiB, the size of the adb
// CLI's sync chunks, as any program that frames its data (adb's CLI,
// server and daemon among them) must do. Reported: the three rates in
// MB/s; ratio, adb against zero-copy raw TCP (the measure) and
// copy-ratio, adb against copying raw TCP; and, since wall time on a
// shared machine mostly measures waiting for a CPU, the CPU time per MB
// of the adb CLI, the adb server, the device (deviceCPU reads its total)
// and each raw copy (both of its ends).
func benchPush(b *testing.B, a *adbHarness, serial, rawDir string, deviceCPU func() time.Duration) {
	server := childPID(b, "-P", strconv.Itoa(a.srv.Port()), "server")
	src := writeFile(b, b.TempDir(), "push.bin", make([]byte, pushSize))
	dst := filepath.Join(rawDir, "raw.bin")
	b.SetBytes(pushSize)
	var adbTime, rawTime, copyTime time.Duration
	var cliCPU, serverCPU, devCPU, rawCPU, copyCPU time.Duration
	for b.Loop() {
		s0, d0 := procCPU(b, server), deviceCPU()
		t0 := time.Now()
		cmd := a.srv.Command(context.Background(), "-s", serial, "push", src, "/data/local/tmp/push.bin")
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("adb push: %v: %s", err, out)
		}
		adbTime += time.Since(t0)
		b.StopTimer()
		cliCPU += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		serverCPU += procCPU(b, server) - s0
		devCPU += deviceCPU() - d0
		for _, raw := range []struct {
			move      func(dst io.Writer, src io.Reader) error
			wall, cpu *time.Duration
		}{
			{zeroCopy, &rawTime, &rawCPU},
			{userCopy, &copyTime, &copyCPU},
		} {
			c0, t1 := selfCPU(b), time.Now()
			rawCopy(b, src, dst, raw.move)
			*raw.wall += time.Since(t1)
			*raw.cpu += selfCPU(b) - c0
		}
		b.StartTimer()
	}
	mb := float64(pushSize) * float64(b.N) / 1e6
	adbRate, rawRate, copyRate := mb/adbTime.Seconds(), mb/rawTime.Seconds(), mb/copyTime.Seconds()
	b.ReportMetric(adbRate, "adb-MB/s")
	b.ReportMetric(rawRate, "raw-MB/s")
	b.ReportMetric(copyRate, "rawcopy-MB/s")
	b.ReportMetric(adbRate/rawRate, "ratio")
	b.ReportMetric(adbRate/copyRate, "copy-ratio")
	perMB := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1e3 / mb }
	b.ReportMetric(perMB(cliCPU), "cli-cpu-ms/MB")
	b.ReportMetric(perMB(serverCPU), "server-cpu-ms/MB")
	b.ReportMetric(perMB(devCPU), "device-cpu-ms/MB")
	b.ReportMetric(perMB(rawCPU), "raw-cpu-ms/MB")
	b.ReportMetric(perMB(copyCPU), "rawcopy-cpu-ms/MB")
}

// zeroCopy is io.Copy between a file and a TCP socket: sendfile on the
// sending end, splice on the receiving end.
func zeroCopy(dst io.Writer, src io.Reader) error {
	_, err := io.Copy(dst, src)
	return err
}

// userCopy copies through a 64 KiB buffer in user space; the wrappers hide
// the file's and the socket's zero-copy paths from io.CopyBuffer.
func userCopy(dst io.Writer, src io.Reader) error {
	_, err := io.CopyBuffer(struct{ io.Writer }{dst}, struct{ io.Reader }{src}, make([]byte, 64<<10))
	return err
}

// rawCopy moves the file src through one loopback TCP connection into
// dst, with move at both ends.
func rawCopy(b *testing.B, src, dst string, move func(io.Writer, io.Reader) error) {
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
		err = move(f, c)
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
	if err := move(c, f); err != nil {
		b.Fatal(err)
	}
	f.Close()
	c.Close()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
}

// clockTick is USER_HZ, the unit of utime and stime in /proc/PID/stat
// (100 on every Linux ABI Go supports).
const clockTick = 10 * time.Millisecond

// procCPU returns the CPU time (user and system, all threads, dead ones
// included) the process pid has used so far.
func procCPU(b *testing.B, pid int) time.Duration {
	f := procStat(b, pid)
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: %q", pid, f)
	}
	return time.Duration(u+s) * clockTick
}

// procStat returns the fields of /proc/PID/stat from the third on (the
// command name may hold spaces and parentheses).
func procStat(b *testing.B, pid int) []string {
	st, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		b.Fatal(err)
	}
	s := string(st)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

// selfCPU is the CPU time this process has used so far.
func selfCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childPID returns the pid of this process's child whose command line
// holds every one of args.
func childPID(b *testing.B, args ...string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		b.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		words := strings.Split(string(cmd), "\x00")
		if !slices.ContainsFunc(args, func(a string) bool { return !slices.Contains(words, a) }) &&
			procStat(b, pid)[1] == strconv.Itoa(os.Getpid()) {
			return pid
		}
	}
	b.Fatalf("no child process with %q", args)
	return 0
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
