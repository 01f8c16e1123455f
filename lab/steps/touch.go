package steps

import (
	"bufio"
	"bytes"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/agentoslab/agentlab/lab/scenario"
)

// Touch detection (spec §10.4): a person who touches a real device
// during a scenario makes its failures prove nothing. Android logs every
// input interaction under the tag input_interaction; a line naming the
// runtime or one of its apps since the attempt began counts.
const (
	touchCommand = "logcat -b all -d -v epoch -s input_interaction:I"
	// TouchMarker is what a line must name to count.
	TouchMarker = "agentos"
)

// CountTouches counts the input_interaction lines in a logcat dump
// (-v epoch) at or after since that name the runtime.
func CountTouches(logcat []byte, since time.Time) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(logcat))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.Contains(line, "input_interaction") || !strings.Contains(strings.ToLower(line), TouchMarker) {
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		sec, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		at := time.Unix(0, int64(sec*float64(time.Second)))
		if !at.Before(since) {
			n++
		}
	}
	return n
}

// touches counts a person's touches on the attempt's real devices since
// it began. Virtual devices have no screen and are never asked.
func (a *attempt) touches(ctx context.Context) (int, error) {
	total := 0
	var first error
	for _, t := range a.env.Targets {
		if t.Kind == scenario.KindVirtual {
			continue
		}
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		res, err := t.Device.Shell(cctx, touchCommand)
		cancel()
		if err != nil {
			if first == nil {
				first = err
			}
			continue
		}
		total += CountTouches(res.Stdout, a.start)
	}
	return total, first
}
