package todo

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
)

// Filtered list and summary over a full store (MaxTodos to-dos).
func BenchmarkTodoList(b *testing.B) {
	f := newFixture(b, "Asia/Shanghai", "2026-10-12T09:00")
	if err := f.App.do(context.Background(), func(s *state) error {
		for i := 0; i < MaxTodos; i++ {
			t := &todo{Title: fmt.Sprintf("task %d", i), Status: statuses[i%4], Priority: priorities[i%3], Tags: []string{"t" + fmt.Sprint(i%20)}}
			if i%2 == 0 {
				t.Due = due{Set: true, AllDay: i%4 == 0, Date: s.today.AddDays(i%30 - 10), At: s.now.Add(time.Duration(i%500) * time.Hour)}
			}
			if err := s.add(t); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"todo_list", `{"limit":200,"tag":"t3"}`},
		{"todo_list", `{"overdue_only":true,"limit":200}`},
		{"todo_summary", `{}`},
		{"todo_search", `{"query":"task 42"}`},
	} {
		b.Run(c.tool+c.args, func(b *testing.B) {
			tl := f.Tool(c.tool)
			for b.Loop() {
				if r := apptool.Run(context.Background(), tl, []byte(c.args)); r.IsError {
					b.Fatal(r.Text)
				}
			}
			b.ReportMetric(MaxTodos, "todos")
		})
	}
}
