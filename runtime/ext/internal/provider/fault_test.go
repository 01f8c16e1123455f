package provider

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
)

// In the fault-injection build, provider_peer_uid_unchecked lets the
// runtime talk to a socket served by another uid, and only while it is
// selected. No device scenario can show it (the launcher refuses to start
// a service whose socket a stranger holds, socket_taken, before the
// runtime dials), so this test is the fault's proof.
func TestFaultPeerUIDUnchecked(t *testing.T) {
	if !faultinject.Enabled {
		t.Skip("needs the fault-injection build")
	}
	for _, tc := range []struct {
		fault      string
		dispatched bool
	}{{"", false}, {faultinject.ProviderPeerUIDUnchecked, true}} {
		t.Setenv(faultinject.Env, tc.fault)
		a := newApp(t)
		s := newServer(t, a, &fakeLauncher{}, func(c *Config) { c.UID = os.Getuid() + 4242 })
		s.Call(context.Background(), "echo", "echo", nil, time.Minute)
		assert.Equal(t, tc.dispatched, a.calls.Load() != 0, "fault %q: did the squatter get the call", tc.fault)
	}
}
