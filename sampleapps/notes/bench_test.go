package notes

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

func BenchmarkBuildSchedulePrompt(b *testing.B) {
	text := strings.Repeat("明天下午3点</note>开会；", 700) // ~14,000 chars, many escapes
	var n int
	b.ReportAllocs()
	for b.Loop() {
		p, err := BuildSchedulePrompt(fixedNow, time.UTC, "zh-CN", text)
		if err != nil {
			b.Fatal(err)
		}
		n = UTF16Len(p)
	}
	b.ReportMetric(float64(n), "prompt_chars")
}

func BenchmarkNoteSearch(b *testing.B) {
	a, _ := newApp(b, time.UTC, nil)
	for i := range 1000 {
		sampletest.OK(b, a, "note_create", fmt.Sprintf(`{"title":"note %d","content":"%s item %d"}`, i, strings.Repeat("会议记录 ", 50), i))
	}
	tl := sampletest.Tool(b, a, "note_search")
	for b.Loop() {
		if res := apptool.Run(context.Background(), tl, json.RawMessage(`{"query":"item 99","limit":20}`)); res.IsError {
			b.Fatal(res.Text)
		}
	}
	b.ReportMetric(1000, "notes/search")
}

func BenchmarkRecorder(b *testing.B) {
	events := []Event{{Kind: EventRunning}}
	for i := range 20 {
		id := fmt.Sprint(i)
		events = append(events, tcRef(id, "calendar", "event_create", StatusPendingApproval), tcRef(id, "calendar", "event_create", StatusCompleted),
			Event{Kind: EventText, Text: "好的"})
	}
	b.ReportAllocs()
	for b.Loop() {
		r := NewRecorder("fake")
		for _, ev := range events {
			r.Handle(ev)
		}
		if rep := r.Finish("end_turn", nil, nil); rep.Created.Events != 20 {
			b.Fatal(rep.Created)
		}
	}
	b.ReportMetric(float64(len(events)), "events/round")
}

// BenchmarkTrackedRound is one ask_agent round as the binary runs it:
// 20 tool calls (each a card, then created) between 500 streamed text
// chunks, every event recorded and the round's state file kept up to
// date for ask_agent_status (text chunks throttled, everything else
// written at once).
func BenchmarkTrackedRound(b *testing.B) {
	events := []Event{{Kind: EventWaiting}, {Kind: EventRunning}}
	for i := range 500 {
		events = append(events, Event{Kind: EventText, Text: "好的，我来安排。"})
		if i%25 == 0 {
			id := fmt.Sprint(i)
			events = append(events, tcRef(id, "calendar", "event_create", StatusPendingApproval), tcRef(id, "calendar", "event_create", StatusCompleted))
		}
	}
	events = append(events, Event{Kind: EventDone, StopReason: "end_turn"})
	agent := &scriptedAgent{events: events, stop: "end_turn"}
	a, _ := newApp(b, time.UTC, agent)
	b.ReportAllocs()
	for b.Loop() {
		out, err := a.Debug(context.Background(), "ask_agent", []string{`{"text":"明天下午3点开会"}`})
		if err != nil || out.(*AskReport).Created.Events != 20 {
			b.Fatalf("%+v %v", out, err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(events)), "ns/event")
}
