package main

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/transport"
)

// BenchmarkServeStartup measures the real release binary: the time from
// exec to the ACP socket accepting a connection (target < 30 ms) and the
// resident memory of the idle runtime a second later (target < 30 MB).
// Each run starts on a fresh data directory with a scripted model.
func BenchmarkServeStartup(b *testing.B) {
	bin := release(b)
	var starts []time.Duration
	var rss []float64
	for range b.N {
		data, prefix := dataDir(b), uniquePrefix()
		name := transport.Names{Prefix: prefix}.ACP()
		cmd := exec.Command(bin, "serve", "--data", data, "--socket-prefix", prefix, "--allow-own-uid", "--log-level", "warn")
		begin := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		for {
			if c, err := transport.Dial(context.Background(), name); err == nil {
				c.Close()
				break
			}
			if time.Since(begin) > 20*time.Second {
				cmd.Process.Kill()
				b.Fatal("serve did not listen")
			}
			time.Sleep(200 * time.Microsecond)
		}
		starts = append(starts, time.Since(begin))
		time.Sleep(time.Second) // idle
		rss = append(rss, vmRSSMB(b, cmd.Process.Pid))
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	slices.Sort(starts)
	slices.Sort(rss)
	b.ReportMetric(float64(starts[len(starts)/2].Microseconds())/1000, "start-p50-ms")
	b.ReportMetric(float64(starts[len(starts)-1].Microseconds())/1000, "start-max-ms")
	b.ReportMetric(rss[len(rss)/2], "idle-rss-MB")
}

// vmRSSMB reads a process's resident set size from /proc.
func vmRSSMB(tb testing.TB, pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	tb.Fatal("no VmRSS")
	return 0
}
