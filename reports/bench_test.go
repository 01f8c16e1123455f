package reports

import (
	"fmt"
	"io"
	"testing"
	"time"
)

// bigRun is a nightly-sized run: n scenarios over 20 devices, each with 12
// named checks and 3 artifacts; one in ten failed once (flaky), one in fifty
// fails, one in a hundred is lost to the lab.
func bigRun(n int) *Run {
	r := sampleRun()
	r.Scenarios = nil
	base := r.Devices[0]
	r.Devices = nil
	for d := 0; d < 20; d++ {
		dev := base
		dev.Serial = fmt.Sprintf("vd-%02d", d)
		dev.Timeline = nil
		r.Devices = append(r.Devices, dev)
	}
	for i := 0; i < n; i++ {
		dev := &r.Devices[i%len(r.Devices)]
		name := fmt.Sprintf("suite-%03d/scenario-%05d", i%97, i)
		start := t0.Add(time.Duration(i) * 3 * time.Second)
		checks := make([]Check, 12)
		for c := range checks {
			checks[c] = Check{Name: fmt.Sprintf("check%02d", c), OK: true, Detail: "value within bounds (12 ms)",
				Upstream: "third_party.py/" + name + fmt.Sprintf("/check%02d", c)}
		}
		arts := []Artifact{
			art("artifacts/"+name+"/attempt-1/logcat.txt", ArtifactLogcat, 120000),
			art("artifacts/"+name+"/attempt-1/events.jsonl", ArtifactEvents, 8000),
			art("artifacts/"+name+"/attempt-1/consent-audit.json", ArtifactConsentAudit, 900),
		}
		s := Scenario{Name: name, File: name + ".yaml", Tags: []string{"nightly"}, Devices: []string{dev.Serial},
			Verdict: VerdictPass, DurationMs: 3000, Checks: checks, Artifacts: arts}
		attempt := Attempt{Number: 1, Device: dev.Serial, Verdict: VerdictPass, StartedAt: start, FinishedAt: start.Add(3 * time.Second), Checks: checks, Artifacts: arts}
		switch {
		case i%100 == 7:
			attempt.Verdict, attempt.LabFault, attempt.Error, attempt.Checks = VerdictError, true, "device went offline", nil
			s.Verdict, s.Checks = VerdictError, nil
		case i%50 == 3:
			failed := append([]Check(nil), checks...)
			failed[5].OK, failed[5].Detail, failed[5].Evidence = false, "value out of bounds (9000 ms)", "artifact:"+arts[0].Path
			attempt.Verdict, attempt.Checks = VerdictFail, failed
			s.Verdict, s.Checks = VerdictFail, failed
		case i%10 == 1:
			failed := append([]Check(nil), checks...)
			failed[2].OK = false
			first := attempt
			first.Verdict, first.Checks = VerdictFail, failed
			attempt.Number = 2
			s.Attempts = append(s.Attempts, first)
			s.Verdict = VerdictFlaky
		}
		s.Attempts = append(s.Attempts, attempt)
		dev.Timeline = append(dev.Timeline, scenarioEvent(name, attempt.Number, attempt.Verdict, i*3, i*3+3))
		r.Scenarios = append(r.Scenarios, s)
	}
	r.FinishedAt = t0.Add(time.Duration(n) * 3 * time.Second)
	return r
}

// BenchmarkRenderAll renders every format of a 5,000-scenario run one after
// the other, the target being under a second for all of them together. It
// reports the bytes rendered and the CPU time used, which on a busy machine
// is the fairer measure.
func BenchmarkRenderAll(b *testing.B) {
	r := bigRun(5000)
	if err := r.Validate(); err != nil {
		b.Fatal(err)
	}
	var written int64
	cpu := processCPU()
	for b.Loop() {
		cw := &countingWriter{}
		for _, f := range allFormats {
			if err := Render(cw, r, f); err != nil {
				b.Fatal(err)
			}
		}
		written = cw.n
	}
	b.ReportMetric(float64(written), "bytes/op")
	b.ReportMetric(float64((processCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkWrite is what the lab pays at the end of a nightly run: every
// format of a 5,000-scenario run rendered (side by side) and written to
// files.
func BenchmarkWrite(b *testing.B) {
	r := bigRun(5000)
	dir := b.TempDir()
	cpu := processCPU()
	for b.Loop() {
		if err := Write(dir, r); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64((processCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkRender breaks the total down per format.
func BenchmarkRender(b *testing.B) {
	r := bigRun(5000)
	for _, f := range allFormats {
		b.Run(string(f), func(b *testing.B) {
			cpu := processCPU()
			for b.Loop() {
				if err := Render(io.Discard, r, f); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU()-cpu).Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// BenchmarkScanForSecrets measures the leak scan's throughput over
// in-memory data with three secrets.
func BenchmarkScanForSecrets(b *testing.B) {
	data := make([]byte, 8<<20)
	for i := range data {
		data[i] = byte('a' + i%23)
	}
	secrets := []Secret{{"k1", []byte("sk-ant-api03-XXXXXXXXXXXX")}, {"k2", []byte("SECRET-DEVICE-TOKEN")}, {"k3", []byte("-----BEGIN PRIVATE KEY-----")}}
	sc := newScanner(secrets)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := sc.scan(&sliceReader{data: data}, "mem"); err != nil {
			b.Fatal(err)
		}
	}
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

type sliceReader struct {
	data []byte
	off  int
}

func (s *sliceReader) Read(p []byte) (int, error) {
	if s.off >= len(s.data) {
		return 0, io.EOF
	}
	n := copy(p, s.data[s.off:])
	s.off += n
	return n, nil
}
