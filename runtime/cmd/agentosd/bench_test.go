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
// Most of VmRSS is the binary's mapped pages (RssFile), which vary by
// several MB with the page cache (a freshly built binary maps more);
// idle-rss-anon-MB is the runtime's own memory and what code changes move.
// Each run starts on a fresh data directory with a scripted model.
func BenchmarkServeStartup(b *testing.B) {
	bin := release(b)
	var starts []time.Duration
	var rss, anon []float64
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
		rss = append(rss, statusMB(b, cmd.Process.Pid, "VmRSS"))
		anon = append(anon, statusMB(b, cmd.Process.Pid, "RssAnon"))
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	slices.Sort(starts)
	slices.Sort(rss)
	slices.Sort(anon)
	b.ReportMetric(float64(starts[len(starts)/2].Microseconds())/1000, "start-p50-ms")
	b.ReportMetric(float64(starts[len(starts)-1].Microseconds())/1000, "start-max-ms")
	b.ReportMetric(rss[len(rss)/2], "idle-rss-MB")
	b.ReportMetric(anon[len(anon)/2], "idle-rss-anon-MB")
}

// statusMB reads a memory figure (VmRSS, RssAnon, …) of a process from
// /proc, in MB.
func statusMB(tb testing.TB, pid int, key string) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == key+":" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	tb.Fatal("no " + key)
	return 0
}
