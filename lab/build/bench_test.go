package build

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkBuildWarm builds the real tree (agentosd and every sample app,
// this host's ABI) with a warm cache: what `agentlab build` costs when
// nothing changed. The cache lives under the temporary directory and is
// kept between runs (lab/provision's tests share it); a cold first build
// happens before the timer.
func BenchmarkBuildWarm(b *testing.B) {
	root, err := FindRoot(".")
	if err != nil {
		b.Fatal(err)
	}
	dir := filepath.Join(os.TempDir(), "agentlab-test-build")
	o := &Options{Root: root, OutDir: filepath.Join(dir, "out"), CacheDir: filepath.Join(dir, "cache"),
		SigningKey: filepath.Join(dir, "keys", "signing.key"), Version: "labtest-1"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if _, err := Build(ctx, o); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		a, err := Build(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		if a.Compiled != 0 || a.Packed != 0 {
			b.Fatalf("a warm build did work: %d compiled, %d packed", a.Compiled, a.Packed)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/build")
}
