package calendar

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

// Expansion-heavy calls: 500 series (daily, weekly, monthly, one-off) with
// reminders, in a DST zone.
func BenchmarkCalendar(b *testing.B) {
	const series = 500
	f := newFixture(b, "Europe/Berlin", "2026-03-20T08:00")
	recs := []string{"daily", "weekly", "monthly", "none"}
	if err := f.App.do(context.Background(), func(w *world) error {
		for i := 0; i < series; i++ {
			start := f.Now.Add(time.Duration(i*37) * time.Minute)
			e := &event{st: local, CalendarID: 1, Title: fmt.Sprintf("e%d", i), TZ: "Europe/Berlin", Recurrence: recs[i%4],
				Reminders: []int{10}, Start: start, End: start.Add(45 * time.Minute), CreatedAt: f.Now, UpdatedAt: f.Now}
			if err := insertEvent(w.ctx, w.lq, e); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"event_list", `{"from":"2026-03-20","to":"2026-04-19","limit":200}`},
		{"agenda_today", `{}`},
		{"free_slots", `{"date":"2026-03-29","duration_minutes":30,"day_start":"00:00","day_end":"24:00"}`},
		{"event_search", `{"query":"e4"}`},
	} {
		b.Run(c.tool, func(b *testing.B) {
			tl, _ := sampletest.Find(f.App.Tools(), c.tool)
			for b.Loop() {
				if r := apptool.Run(context.Background(), tl, []byte(c.args)); r.IsError {
					b.Fatal(r.Text)
				}
			}
			b.ReportMetric(series, "series")
		})
	}
}
