package pool

import "time"

// Event reports a state change, or a recovery rung starting (From = To =
// recovering, Step set), so that the lab can show progress.
type Event struct {
	// Seq increases by one per event; a gap means this subscriber's
	// buffer was full and events were dropped.
	Seq    uint64
	Time   time.Time
	Serial string
	From   State
	To     State
	Reason string
	// Step names the recovery rung: reread, reconnect, connect, reboot.
	Step string
}

type subscriber struct {
	ch chan Event
}

// Subscribe returns a channel of events with room for buf of them
// (minimum 1) and a function that ends the subscription. A subscriber
// that falls behind loses events (visible as gaps in Seq) rather than
// stalling the pool. The channel is closed by cancel or Close.
func (p *Pool) Subscribe(buf int) (<-chan Event, func()) {
	s := &subscriber{ch: make(chan Event, max(buf, 1))}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		close(s.ch)
		return s.ch, func() {}
	}
	p.subs[s] = struct{}{}
	return s.ch, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if _, ok := p.subs[s]; ok {
			delete(p.subs, s)
			close(s.ch)
		}
	}
}

func (p *Pool) publishLocked(e Event) {
	p.seq++
	e.Seq = p.seq
	e.Time = time.Now()
	for s := range p.subs {
		select {
		case s.ch <- e:
		default:
		}
	}
}
