package callerchan_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentoslab/agentlab/internal/testenv"
	"github.com/agentoslab/agentlab/runtime/consent/callers"
	"github.com/agentoslab/agentlab/runtime/quota"
	"github.com/agentoslab/agentlab/runtime/sdk/acpclient"
	"github.com/stretchr/testify/require"
)

// promptErr runs a prompt to its end and returns its error.
func promptErr(ctx context.Context, s *acpclient.Session, text string) error {
	for _, err := range s.Prompt(ctx, text, acpclient.PromptOptions{}) {
		if err != nil {
			return err
		}
	}
	return nil
}

// TestQuotasThroughTheChannel: the caller quotas reach the SDK as its
// typed errors, and "in progress" lasts until the task ends, not until
// the app disconnects.
func TestQuotasThroughTheChannel(t *testing.T) {
	t.Parallel()
	rt, a := benchRuntime(t)
	rt.quota.SetConfig(quota.Config{MaxPerHour: 3})
	ctx := context.Background()
	owner := "uid:" + strconv.Itoa(a.UID)
	c1, err := acpclient.Connect(ctx, &acpclient.Options{SocketName: rt.names.Caller()})
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	s1, _ := c1.NewSession(ctx, acpclient.SessionOptions{})
	if err := promptErr(ctx, s1, strings.Repeat("x", 16001)); !errors.Is(err, acpclient.ErrTooLarge) {
		t.Fatalf("long prompt: %v", err)
	}
	held := make(chan error, 1)
	go func() { held <- promptErr(ctx, s1, holdPrompt) }()
	require.Eventually(t, func() bool { return rt.eng.Usage(owner).Running == 1 }, 5*time.Second, 5*time.Millisecond)
	c1.Close() // the task goes on; so does its quota slot
	if err := <-held; !errors.Is(err, acpclient.ErrDisconnected) {
		t.Fatalf("held prompt after close: %v", err)
	}

	c2, err := acpclient.Connect(ctx, &acpclient.Options{SocketName: rt.names.Caller()})
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	s2, _ := c2.NewSession(ctx, acpclient.SessionOptions{})
	var e *acpclient.Error
	if err := promptErr(ctx, s2, "hi"); !errors.Is(err, acpclient.ErrBusy) || !errors.As(err, &e) || e.Reason != "busy" {
		t.Fatalf("second prompt while one runs: %v", err)
	}
	if _, err := rt.eng.CancelOwner(ctx, owner, "test"); err != nil {
		t.Fatal(err)
	}
	require.Eventually(t, func() bool { return rt.quota.Usage(owner).Active == 0 }, 5*time.Second, 5*time.Millisecond)
	if err := promptErr(ctx, s2, "one"); err != nil {
		t.Fatal(err)
	}
	if err := promptErr(ctx, s2, "two"); err != nil {
		t.Fatal(err)
	}
	err = promptErr(ctx, s2, "three")
	if !errors.Is(err, acpclient.ErrRateLimited) || !errors.As(err, &e) || e.RetryAfterSeconds <= 0 {
		t.Fatalf("fourth prompt in the hour: %v", err)
	}
}

// TestIdentityIsolation: two apps under their own uids see only their
// own sessions.
func TestIdentityIsolation(t *testing.T) {
	testenv.NeedRoot(t)
	t.Parallel()
	rt := newRuntime(t, callers.Config{})
	a, b := notesApp(), notesApp()
	b.Package = "org.example.other"
	rt.install(a, "")
	rt.install(b, "")
	rt.preAllow(a)
	rt.preAllow(b)
	ha, hb := rt.startApp(a.UID), rt.startApp(b.UID)
	ha.do(map[string]any{"op": "connect"})
	hb.do(map[string]any{"op": "connect"})
	sa := ha.do(map[string]any{"op": "new"})
	if l := hb.do(map[string]any{"op": "list"}); len(l.Sessions) != 0 {
		t.Fatalf("b sees %v", l.Sessions)
	}
	if r := hb.do(map[string]any{"op": "load", "session": sa.Session}); r.Err == nil || r.Err.Code != "SESSION_NOT_FOUND" {
		t.Fatalf("b loads a's session: %+v", r.Err)
	}
	if l := ha.do(map[string]any{"op": "list"}); len(l.Sessions) != 1 {
		t.Fatalf("a sees %v", l.Sessions)
	}
}
