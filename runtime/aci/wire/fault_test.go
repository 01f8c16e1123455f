package wire

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentoslab/agentlab/runtime/internal/faultinject"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// In the fault-injection build, aci_peer_uid_unchecked lets the
// controller talk to a socket another uid holds, and only while it is
// selected; aci/socket-squat shows it on a device.
func TestFaultPeerUIDUnchecked(t *testing.T) {
	if !faultinject.Enabled {
		t.Skip("needs the fault-injection build")
	}
	socket := fmt.Sprintf("@aci.fault.%d.%d", os.Getpid(), sockSeq.Add(1))
	ln, err := transport.Listen(socket)
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	for _, tc := range []struct {
		fault string
		sent  bool
	}{{"", false}, {faultinject.ACIPeerUIDUnchecked, true}} {
		t.Setenv(faultinject.Env, tc.fault)
		c := &Client{Socket: socket, UID: os.Getuid() + 4242}
		conn, err := c.Dial(context.Background())
		if tc.sent {
			require.NoError(t, err, "the fault dials the squatter")
			conn.Close()
			continue
		}
		assert.ErrorIs(t, err, ErrPeerUID)
	}
}
