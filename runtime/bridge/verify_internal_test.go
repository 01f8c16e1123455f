package bridge

import (
	"context"
	"net"
	"testing"

	"github.com/agentoslab/agentlab/runtime/engine"
	"github.com/agentoslab/agentlab/runtime/transport"
)

// TestDisabledBetweenVerifyAndRegister: a handshake that reaches
// verification after access was switched off is refused "disabled".
func TestDisabledBetweenVerifyAndRegister(t *testing.T) {
	b, err := Open(&Options{Dir: t.TempDir(), Name: "@bridge-internal-test",
		Serve: func(context.Context, engine.Caller, *transport.RPCStream) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	_, _, _, perr := b.verify(PairRequest{ID: []byte("1"), HasCode: true, Code: "123456"}, c1)
	if perr == nil || perr.Reason != ReasonDisabled ||
		perr.Error() != "auth_required: desktop access is turned off on the phone" {
		t.Fatalf("perr = %+v", perr)
	}
}
