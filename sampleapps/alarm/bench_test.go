package alarm

import (
	"context"
	"testing"
	"time"
)

// A call over a full store (MaxAlarms alarms, half repeating): every call
// loads and advances every alarm and registers them in the system clock.
func BenchmarkAlarmList(b *testing.B) {
	f := newFixture(b, "America/New_York", "2026-03-08T01:30")
	if err := f.App.do(context.Background(), func(s *state) error {
		for i := 0; i < MaxAlarms; i++ {
			if err := s.add(&alarm{Minute: i * 7 % 1440, Days: uint8(i % 128), Enabled: i%3 != 0, SnoozeMinutes: 10}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for b.Loop() {
		if r := f.Call("alarm_list", `{}`); r.IsError {
			b.Fatal(r.Text)
		}
	}
	b.ReportMetric(float64(MaxAlarms), "alarms")
	b.ReportMetric(float64(time.Since(start).Microseconds())/float64(b.N)/MaxAlarms, "µs/alarm")
}
