package provision

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
)

// StepNames are the steps in order (desktop runs only when asked).
var StepNames = []string{"probe", "module", "runtime", "apps", "model", "plugins", "desktop"}

// LineReporter writes one timestamped line per finished step, for logs
// and terminals that are not interactive:
//
//	15:04:05.000 127.0.0.1:40123 module    installed agentos 183400000 (1.204s)
type LineReporter struct {
	mu  sync.Mutex
	w   io.Writer
	now func() time.Time
}

// NewLineReporter reports to w.
func NewLineReporter(w io.Writer) *LineReporter { return &LineReporter{w: w, now: time.Now} }

// Begin does nothing: a line is written when the step ends.
func (r *LineReporter) Begin(serial, step string) {}

// End writes the step's line.
func (r *LineReporter) End(serial string, s Step) {
	r.mu.Lock()
	defer r.mu.Unlock()
	what := s.Detail
	if s.Err != "" {
		what = "FAILED: " + s.Err
	}
	fmt.Fprintf(r.w, "%s %s %-8s %s (%s)\n", r.now().Format("15:04:05.000"), serial, s.Name, what, s.Duration.Round(time.Millisecond))
}

// BarReporter shows one progress bar per device on a terminal.
type BarReporter struct {
	p *mpb.Progress

	mu   sync.Mutex
	bars map[string]*deviceBar
}

type deviceBar struct {
	bar   *mpb.Bar
	step  string
	err   bool
	steps int
}

// NewBarReporter draws bars on w for the devices with these serials;
// steps is the number of steps each runs. Call Wait once every device is
// done.
func NewBarReporter(w io.Writer, serials []string, steps int) *BarReporter {
	r := &BarReporter{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(24), mpb.WithRefreshRate(100*time.Millisecond)), bars: map[string]*deviceBar{}}
	for _, s := range serials {
		db := &deviceBar{step: "waiting", steps: steps}
		db.bar = r.p.AddBar(int64(steps),
			mpb.PrependDecorators(decor.Name(s, decor.WCSyncSpaceR), decor.Any(func(decor.Statistics) string {
				r.mu.Lock()
				defer r.mu.Unlock()
				return db.step
			}, decor.WCSyncSpaceR)),
			mpb.AppendDecorators(decor.Elapsed(decor.ET_STYLE_GO, decor.WCSyncSpace)),
			mpb.BarFillerOnComplete("ready"),
		)
		r.bars[s] = db
	}
	return r
}

// Begin shows the step running.
func (r *BarReporter) Begin(serial, step string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b := r.bars[serial]; b != nil {
		b.step = step + "…"
	}
}

// End advances the bar; a failed step aborts it.
func (r *BarReporter) End(serial string, s Step) {
	r.mu.Lock()
	b := r.bars[serial]
	if b == nil {
		r.mu.Unlock()
		return
	}
	if s.Err != "" {
		b.step, b.err = s.Name+" failed", true
		r.mu.Unlock()
		b.bar.Abort(false)
		return
	}
	b.step = s.Name + " done"
	r.mu.Unlock()
	b.bar.Increment()
}

// Done marks a device finished (its bar completes even when optional
// steps were skipped).
func (r *BarReporter) Done(serial string) {
	r.mu.Lock()
	b := r.bars[serial]
	r.mu.Unlock()
	if b != nil && !b.err {
		b.bar.SetTotal(-1, true)
	}
}

// Wait waits for the bars to finish drawing.
func (r *BarReporter) Wait() { r.p.Wait() }
