package pool

import (
	"context"
	"fmt"

	"github.com/agentoslab/agentlab/devices/adb"
)

// ADB makes an adb server a Source. It can kick transports (reconnect)
// and connect TCP devices again.
func ADB(s *adb.Server) Source { return adbSource{s} }

type adbSource struct{ s *adb.Server }

var (
	_ Reconnecter = adbSource{}
	_ Connecter   = adbSource{}
)

func (a adbSource) Name() string { return a.s.Name() }

func (a adbSource) Devices(ctx context.Context) ([]Found, error) {
	es, err := a.s.Devices(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Found, len(es))
	for i, e := range es {
		out[i] = Found{Serial: e.Serial, State: e.State, Device: a.s.Device(e.Serial)}
	}
	return out, nil
}

func (a adbSource) Reconnect(ctx context.Context, serial string) error {
	return a.s.Reconnect(ctx, serial)
}

func (a adbSource) CanConnect(serial string) bool { return adb.IsTCP(serial) }

// Connect drops the TCP transport (a stale one would answer "already
// connected") and connects again.
func (a adbSource) Connect(ctx context.Context, serial string) error {
	_ = a.s.Disconnect(ctx, serial)
	if err := a.s.Connect(ctx, serial); err != nil {
		return fmt.Errorf("connect %s: %w", serial, err)
	}
	return nil
}
