package callerchan_test

import (
	"bufio"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/runtime/callerchan"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// TestFloodIsBounded: one app that opens channels without end gets
// not_open past its share, and another app is still served.
func TestFloodIsBounded(t *testing.T) {
	testenv.NeedRoot(t)
	t.Parallel()
	rt, _ := benchRuntime(t) // this process's uid is an allowed app
	var lines []string
	for i := 0; i < callerchan.DefaultMaxConnsPerUID+1; i++ {
		c, err := transport.Dial(context.Background(), rt.names.Caller())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, _ := bufio.NewReader(c).ReadString('\n')
		lines = append(lines, line)
	}
	for i, l := range lines[:callerchan.DefaultMaxConnsPerUID] {
		if !strings.Contains(l, callerchan.OpenMethod) {
			t.Fatalf("channel %d: %q", i, l)
		}
	}
	last := lines[len(lines)-1]
	if !strings.Contains(last, `"reason":"not_open"`) || !strings.Contains(last, "agentos.acp.not_open: too many connections") {
		t.Fatalf("over the share: %q", last)
	}
	other := notesApp()
	rt.install(other, "")
	rt.preAllow(other)
	if r := rt.startApp(other.UID).do(map[string]any{"op": "connect"}); r.Err != nil {
		t.Fatalf("another app during the flood: %+v", r.Err)
	}
}
