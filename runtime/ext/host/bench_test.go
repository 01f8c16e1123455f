package host

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/consent"
	"github.com/agentoslab/agentlab/runtime/sdk/plugin"
)

// benchHost is a host with n plugins of 10 tools each, every plugin
// enabled and its tools known. Tools come in colliding pairs ("t.N" and
// "t_N" both sanitize to t_N), so every name is renamed with a hash
// suffix: the naming's worst case.
func benchHost(b testing.TB, plugins int) *Host {
	e := &env{t: nil, data: b.TempDir(), table: newTable(), files: &memFiles{}}
	for i := range plugins {
		name := fmt.Sprintf("bench-p%d", i)
		pkg := fmt.Sprintf("org.bench.p%03d", i)
		e.files.set(pkg, map[string][]byte{"plugin.json": pluginJSON(name)})
		e.table.put(testPackage(pkg, digestA, 1))
	}
	h, err := New(Options{DataDir: e.data, Table: e.table, Files: e.files})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(h.Close)
	h.mu.Lock()
	defer h.mu.Unlock()
	schema := json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`)
	for id, p := range h.plugins {
		h.pol.policy.SetEnabled(consent.Target{Plugin: p.Name}, true)
		var tools []plugin.ToolInfo
		for t := range 5 {
			for _, sep := range []string{".", "_"} {
				tools = append(tools, plugin.ToolInfo{Name: fmt.Sprintf("t%s%d", sep, t), Description: "A benchmark tool.", InputSchema: schema})
			}
		}
		h.mem.Plugins[id].Known = map[string][]plugin.ToolInfo{"test": tools}
	}
	h.publishLocked()
	if n := h.cat.Len(); n != min(plugins*10, MaxCatalogTools) {
		b.Fatalf("catalog of %d tools", n)
	}
	if e := h.cat.All()[0]; len(e.Name) < 7 || e.Name[len(e.Name)-7] != '_' {
		b.Fatalf("names were not renamed: %s", e.Name)
	}
	return h
}

// BenchmarkCatalogRebuild500 is the extension host's whole rebuild after
// a change (policy resolution, risk, naming with collisions, the pushed
// document and its change check) for 500 tools; the target is < 10 ms.
func BenchmarkCatalogRebuild500(b *testing.B) {
	h := benchHost(b, 50)
	b.ReportAllocs()
	start, cpu0 := time.Now(), cpuTime(b)
	for b.Loop() {
		h.mu.Lock()
		h.pushed = nil // force a new version
		h.publishLocked()
		h.mu.Unlock()
	}
	n := float64(b.N)
	b.ReportMetric(float64(time.Since(start).Microseconds())/1000/n, "ms/rebuild")
	b.ReportMetric(float64((cpuTime(b)-cpu0).Microseconds())/1000/n, "cpu-ms/rebuild")
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// One push never carries more than MaxCatalogTools tools; the rest are
// counted, not silently lost.
func TestCatalogBounds(t *testing.T) {
	t.Parallel()
	h := benchHost(t, 210)
	if n := len(h.Catalog().Tools); n != MaxCatalogTools {
		t.Fatalf("%d tools pushed", n)
	}
	if d := h.diag(); d.Stats["catalogDropped"] != 2100-MaxCatalogTools {
		t.Fatalf("dropped %d", d.Stats["catalogDropped"])
	}
}
