package runner

import (
	"context"

	"github.com/agentoslab/agentlab/devices"
	"github.com/agentoslab/agentlab/devices/pool"
)

// Pool makes a devices/pool.Pool a Leaser (with Events).
func Pool(p *pool.Pool) Leaser { return poolLeaser{p} }

type poolLeaser struct{ p *pool.Pool }

func (l poolLeaser) Acquire(ctx context.Context, sel pool.Selector) (Lease, error) {
	ls, err := l.p.Acquire(ctx, sel)
	if err != nil {
		return nil, err
	}
	return poolLease{ls}, nil
}

func (l poolLeaser) Devices() []pool.Status { return l.p.Devices() }

func (l poolLeaser) Subscribe(buf int) (<-chan pool.Event, func()) { return l.p.Subscribe(buf) }

type poolLease struct{ l *pool.Lease }

func (l poolLease) Device() devices.Device       { return l.l.Device }
func (l poolLease) Serial() string               { return l.l.Serial() }
func (l poolLease) Lost() <-chan struct{}        { return l.l.Lost() }
func (l poolLease) Release(o pool.Outcome) error { return l.l.Release(o) }

var (
	_ Leaser = poolLeaser{}
	_ Events = poolLeaser{}
)
