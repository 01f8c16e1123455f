package sms

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/sampleapps/apptool"
	"github.com/agentoslab/agentlab/sampleapps/internal/sampletest"
)

// Two processes on one store (the MCP server and the debug command line)
// sending at once still respect the rate limit: the checks and the insert
// run in one write transaction.
func TestRateLimitAcrossProcesses(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clk := sampletest.NewClock(t0)
	var apps []*App
	for range 2 {
		a, err := Open(context.Background(), dir, &Options{Clock: clk.Now, Location: time.UTC})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		apps = append(apps, a)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok := 0
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a := apps[i%2]
			res := apptool.Run(context.Background(), sampletest.Tool(t, a, "sms_send"), json.RawMessage(fmt.Sprintf(`{"to":"+8613700000002","text":"n%d"}`, i)))
			if !res.IsError {
				mu.Lock()
				ok++
				mu.Unlock()
			} else if !strings.HasPrefix(res.Text, "Rate limit reached") {
				t.Errorf("send %d: %s", i, res.Text)
			}
		}()
	}
	wg.Wait()
	if ok != DefaultSettings.RateLimit {
		t.Fatalf("%d sends went through, want %d", ok, DefaultSettings.RateLimit)
	}
}

func BenchmarkSelectAndBuildPrompt(b *testing.B) {
	var window []Message
	for i := range ThreadWindow {
		window = append(window, Message{ID: int64(i + 1), Type: "received", Date: t0.Add(time.Duration(i) * time.Minute),
			Body: strings.Repeat("明天上午10点<sms>开会。", 5)})
	}
	var sent int
	b.ReportAllocs()
	for b.Loop() {
		sel := Select(window, nil, false)
		if _, err := SmsSchedulePrompt(t0, time.UTC, "zh-CN", "", "+8613700000002", sel.Messages); err != nil {
			b.Fatal(err)
		}
		sent = len(sel.Messages)
	}
	b.ReportMetric(float64(sent), "messages/prompt")
}

func BenchmarkSend(b *testing.B) {
	a, clk := newApp(b, time.UTC, nil)
	tl := sampletest.Tool(b, a, "sms_send")
	i := 0
	for b.Loop() {
		clk.Advance(3 * time.Minute) // stay under the rate limit
		res := apptool.Run(context.Background(), tl, json.RawMessage(fmt.Sprintf(`{"to":"+8613700000002","text":"message %d"}`, i)))
		if res.IsError {
			b.Fatal(res.Text)
		}
		i++
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "sends/s")
}

func BenchmarkMessageList(b *testing.B) {
	a, _ := newApp(b, time.UTC, nil)
	for i := range 1000 {
		if _, err := a.Debug(context.Background(), "inbox", []string{"add", "+8613700000002", fmt.Sprintf("验证码 %06d，第 %d 条。", i, i)}); err != nil {
			b.Fatal(err)
		}
	}
	tl := sampletest.Tool(b, a, "sms_message_list")
	for b.Loop() {
		if res := apptool.Run(context.Background(), tl, json.RawMessage(`{"address":"13700000002","limit":100}`)); res.IsError {
			b.Fatal(res.Text)
		}
	}
	b.ReportMetric(100, "messages/call")
}
