//go:build linux

package adb_test

import (
	"context"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/electricbubble/gadb"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/devices/virtual"
)

// BenchmarkShell is one command's round trip on a virtual device: shell
// v2 through hostproto (exit code, split stderr), and gadb's shell v1 for
// comparison.
func BenchmarkShell(b *testing.B) {
	v := startVirtual(b, virtual.RootMagisk)
	ctx := context.Background()
	b.Run("v2-hostproto", func(b *testing.B) {
		for b.Loop() {
			res, err := v.d.Shell(ctx, "true")
			if err != nil || res.ExitCode != 0 {
				b.Fatal(res, err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/cmd")
	})
	b.Run("v1-gadb", func(b *testing.B) {
		host, port, _ := net.SplitHostPort(v.srv.Addr())
		p, _ := strconv.Atoi(port)
		c, err := gadb.NewClientWith(host, p)
		if err != nil {
			b.Fatal(err)
		}
		list, err := c.DeviceList()
		if err != nil || len(list) != 1 {
			b.Fatal(list, err)
		}
		for b.Loop() {
			if _, err := list[0].RunShellCommand("true"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/cmd")
	})
}

// BenchmarkDial is stream throughput through Dial("localabstract:...")
// to an echo server inside the device: bytes out and back per second.
func BenchmarkDial(b *testing.B) {
	v := startVirtual(b, virtual.RootMagisk)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	mustShell(b, v.d, "vdevtool serve localabstract:bench-echo >/dev/null 2>&1 &")
	var conn net.Conn
	require.Eventually(b, func() bool {
		c, err := v.d.Dial(ctx, "localabstract:bench-echo")
		if err != nil {
			return false
		}
		conn = c
		return true
	}, 10*time.Second, 50*time.Millisecond, "waiting for echo server")
	defer conn.Close()
	// The server first says who connected.
	line := make([]byte, 0, 32)
	for one := make([]byte, 1); ; {
		if _, err := conn.Read(one); err != nil {
			b.Fatal(err)
		}
		if one[0] == '\n' {
			break
		}
		line = append(line, one[0])
	}
	chunk := make([]byte, 256<<10)
	back := make([]byte, len(chunk))
	b.SetBytes(int64(len(chunk)))
	b.ResetTimer()
	for b.Loop() {
		errc := make(chan error, 1)
		go func() { _, err := conn.Write(chunk); errc <- err }()
		if _, err := io.ReadFull(conn, back); err != nil {
			b.Fatal(err)
		}
		if err := <-errc; err != nil {
			b.Fatal(err)
		}
	}
}
