package script

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/runtime/errcode"
	"github.com/agentoslab/agentlab/runtime/model"
	"github.com/agentoslab/agentlab/runtime/model/internal/httpfail"
)

func provider(t testing.TB, doc string) *Provider {
	t.Helper()
	return NewProvider(&Options{Script: mustParse(t, doc)})
}

func drain(t testing.TB, s model.Stream) ([]model.Event, error) {
	t.Helper()
	var evs []model.Event
	for {
		ev, err := s.Next()
		if err != nil {
			return evs, err
		}
		evs = append(evs, ev)
	}
}

func TestProviderStreams(t *testing.T) {
	t.Parallel()
	p := provider(t, "steps: [{thinking: hm, text: [a, b], toolCalls: [{name: t, arguments: {x: 1}}]}]")
	s, err := p.Stream(context.Background(), request([]string{"t"}, user("u")))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	evs, err := drain(t, s)
	if !errors.Is(err, io.EOF) {
		t.Fatalf("end = %v, want io.EOF", err)
	}
	want := []model.Event{{Kind: model.ThinkingDelta, Text: "hm"}, {Kind: model.TextDelta, Text: "a"}, {Kind: model.TextDelta, Text: "b"},
		call("call_1_0_0", "t", `{"x":1}`), {Kind: model.Done, StopReason: model.StopToolUse}}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events\n got %+v\nwant %+v", evs, want)
	}
	if _, err := s.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next after EOF = %v", err)
	}
}

// TestProviderStatusErrors: a scripted status fails exactly as an HTTP
// provider does, through the same mapping.
func TestProviderStatusErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		doc     string
		want    errcode.Code
		details map[string]any
	}{
		{"{status: 401}", errcode.ModelAuthFailed, map[string]any{"status": 401}},
		{"{status: 402}", errcode.ModelQuotaExhausted, map[string]any{"status": 402}},
		{"{status: 403}", errcode.ModelAuthFailed, map[string]any{"status": 403}},
		{"{status: 408}", errcode.ModelTimeout, map[string]any{"status": 408}},
		{"{status: 413}", errcode.ModelRequestTooLarge, map[string]any{"status": 413}},
		{"{status: 425}", errcode.ModelRateLimited, map[string]any{"status": 425}},
		{"{status: 429, retryAfter: 20}", errcode.ModelRateLimited, map[string]any{"status": 429, "retryAfterSeconds": 20}},
		{"{status: 500}", errcode.ModelUnavailable, map[string]any{"status": 500}},
		{"{status: 529}", errcode.ModelUnavailable, map[string]any{"status": 529}},
		{"{status: 404}", errcode.ModelBadRequest, map[string]any{"status": 404}},
		{"{status: 302}", errcode.ModelProtocol, map[string]any{"status": 302}},
	} {
		_, err := provider(t, "steps: [{fail: "+tc.doc+"}]").Stream(context.Background(), request(nil, user("u")))
		var e *errcode.Error
		if !errors.As(err, &e) || e.Code != tc.want || !reflect.DeepEqual(e.Details, tc.details) {
			t.Errorf("%s: err = %#v, want %s %v", tc.doc, err, tc.want, tc.details)
		}
		if want := httpfail.StatusError(e.Details["status"].(int), ""); e.Text != want.Text {
			t.Errorf("%s: text %q, want the HTTP providers' %q", tc.doc, e.Text, want.Text)
		}
	}
}

func TestProviderHangAndStall(t *testing.T) {
	t.Parallel()
	t.Run("hang until the deadline", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		defer cancel()
		_, err := provider(t, "steps: [{fail: {hang: true}}]").Stream(ctx, request(nil, user("u")))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("stall ends on Close", func(t *testing.T) {
		t.Parallel()
		s, err := provider(t, "steps: [{text: [a, b], hangAfter: 1}]").Stream(context.Background(), request(nil, user("u")))
		if err != nil {
			t.Fatal(err)
		}
		if ev, err := s.Next(); err != nil || ev.Text != "a" {
			t.Fatalf("first = %+v, %v", ev, err)
		}
		errc := make(chan error, 1)
		go func() {
			_, err := s.Next()
			errc <- err
		}()
		s.Close()
		if err := <-errc; !errors.Is(err, httpfail.ErrClosed) {
			t.Errorf("err = %v, want ErrClosed", err)
		}
	})
	t.Run("stall ends on cancel", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		s, err := provider(t, "steps: [{text: [a], hangAfter: 0}]").Stream(ctx, request(nil, user("u")))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		errc := make(chan error, 1)
		go func() {
			_, err := s.Next()
			errc <- err
		}()
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("cut", func(t *testing.T) {
		t.Parallel()
		s, err := provider(t, "steps: [{text: [a, b, c], cutAfter: 2}]").Stream(context.Background(), request(nil, user("u")))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		evs, err := drain(t, s)
		if len(evs) != 2 || !errors.Is(err, errcode.ModelStreamInterrupted) {
			t.Errorf("events %+v, err %v", evs, err)
		}
	})
}

// TestProviderDelays: delays really wait, and a cancelled ctx or a Close
// ends them at once (a broken version would hang for ten minutes).
func TestProviderDelays(t *testing.T) {
	t.Parallel()
	t.Run("delay waits", func(t *testing.T) {
		t.Parallel()
		start := time.Now()
		s, err := provider(t, "steps: [{text: [a, b], delayMs: 30, intervalMs: 20}]").Stream(context.Background(), request(nil, user("u")))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := drain(t, s); !errors.Is(err, io.EOF) {
			t.Fatal(err)
		}
		if d := time.Since(start); d < 50*time.Millisecond {
			t.Errorf("stream took %v, want at least the 30+20 ms scripted", d)
		}
	})
	for _, how := range []string{"cancel", "close"} {
		t.Run(how+" during a delay", func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			s, err := provider(t, "steps: [{text: [a, b], delayMs: 600000}]").Stream(ctx, request(nil, user("u")))
			if err != nil {
				t.Fatal(err)
			}
			errc := make(chan error, 1)
			go func() {
				_, err := s.Next()
				errc <- err
			}()
			if how == "cancel" {
				cancel()
			} else {
				s.Close()
			}
			err = <-errc
			if how == "cancel" && !errors.Is(err, context.Canceled) || how == "close" && !errors.Is(err, httpfail.ErrClosed) {
				t.Errorf("err = %v", err)
			}
		})
	}
	t.Run("cancel during a status delay", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := provider(t, "steps: [{fail: {status: 500}, delayMs: 600000}]").Stream(ctx, request(nil, user("u")))
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v", err)
		}
	})
}

// TestProviderInlineAndErrors: with no configured script a prompt may
// carry one; a script error is served as text and logged without the
// prompt.
func TestProviderInlineAndErrors(t *testing.T) {
	t.Parallel()
	var logs strings.Builder
	p := NewProvider(&Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	collect := func(prompt string) []model.Event {
		s, err := p.Stream(context.Background(), request(nil, user(prompt)))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		evs, _ := drain(t, s)
		return evs
	}
	if evs := collect("just echo me"); len(evs) != 2 || evs[0].Text != "just echo me" {
		t.Errorf("echo: %+v", evs)
	}
	if evs := collect("#!agentos-script\nsteps: [{text: from the prompt}]"); evs[0].Text != "from the prompt" {
		t.Errorf("inline: %+v", evs)
	}
	evs := collect("#!agentos-script\nsteps: [{text: secret-prompt-words, bogus: 1}]")
	if !strings.HasPrefix(evs[0].Text, ErrorPrefix) || evs[1].StopReason != model.StopEndTurn {
		t.Errorf("script error: %+v", evs)
	}
	if !strings.Contains(logs.String(), "model script error") || strings.Contains(logs.String(), "secret-prompt-words") || strings.Contains(logs.String(), "bogus") {
		t.Errorf("logs %q", logs.String())
	}
}

// BenchmarkFirstEvent is the scripted provider's latency from Stream to
// the first event with no delays scripted: the floor the runtime's own
// latency benchmark measures against.
func BenchmarkFirstEvent(b *testing.B) {
	p := provider(b, "steps: [{text: hello, toolCalls: [{mcp: [notes, notes, note_create], arguments: {text: hi}}]}]")
	req := request([]string{"mcp__notes__notes__note_create", "mcp__notes__notes__note_delete", "read_skill"},
		user("earlier"), asst("earlier answer"), user("make a note"))
	ctx := context.Background()
	b.ReportAllocs()
	start, cpu0 := time.Now(), cpuTime()
	for b.Loop() {
		s, err := p.Stream(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Next(); err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N), "ns/first-event")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/first-event")
}

// cpuTime is the user and system CPU time of the process so far; unlike
// wall time it does not grow while the benchmark waits for a busy CPU.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
