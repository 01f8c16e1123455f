package runner

import (
	"sync"
	"time"

	"github.com/agentoslab/agentlab/devices/pool"
	"github.com/agentoslab/agentlab/reports"
)

// deviceLocked returns the run's record of a device, adding it from the
// inventory the first time. Called with r.mu held.
func (r *runner) deviceLocked(serial string) *reports.Device {
	if d, ok := r.devices[serial]; ok {
		return d
	}
	d := &reports.Device{Serial: serial, Name: serial, Kind: reports.DevicePhone, Health: []reports.HealthRecord{}, Timeline: []reports.Event{}}
	for _, st := range r.o.Leaser.Devices() {
		if st.Serial == serial {
			d.Kind = KindOf(st.Info, serial)
			d.Model, d.APILevel, d.ABI, d.RootMethod = st.Info.Model, st.Info.APILevel, st.Info.ABI, string(st.Info.Root)
			if d.Kind == reports.DeviceVirtual {
				d.RootMethod = "virtual"
			}
		}
	}
	r.devices[serial] = d
	r.order = append(r.order, serial)
	return d
}

// noteLease adds a lease span to the devices' timelines.
func (r *runner) noteLease(serials []string, start, end time.Time, scenario string, attempt int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range serials {
		d := r.deviceLocked(s)
		d.Timeline = append(d.Timeline, reports.Event{Kind: reports.EventLease, Label: "lease", Start: start, End: end, Scenario: scenario, Attempt: attempt})
	}
}

// watchPool follows the pool's state changes into the devices' health
// records and timelines; the returned function stops it and waits.
func (r *runner) watchPool() func() {
	ev, ok := r.o.Leaser.(Events)
	if !ok {
		return func() {}
	}
	ch, cancel := ev.Subscribe(256)
	var wg sync.WaitGroup
	wg.Go(func() {
		for e := range ch {
			r.poolEvent(e)
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}

// healthState maps pool states to the health record's words.
var healthState = map[pool.State]string{
	pool.StateAvailable:   "healthy",
	pool.StateUnhealthy:   "unhealthy",
	pool.StateRecovering:  "recovering",
	pool.StateQuarantined: "quarantined",
	pool.StateGone:        "offline",
}

func (r *runner) poolEvent(e pool.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.deviceLocked(e.Serial)
	switch {
	case e.Step != "":
		d.Timeline = append(d.Timeline, reports.Event{Kind: reports.EventRecovery, Label: "recovery: " + e.Step, Start: e.Time, Detail: clip(e.Reason, 200)})
		return
	case e.To == pool.StateQuarantined:
		d.QuarantineReason = e.Reason
		if d.QuarantineReason == "" {
			d.QuarantineReason = "quarantined by the pool"
		}
		d.Timeline = append(d.Timeline, reports.Event{Kind: reports.EventQuarantine, Label: "quarantined", Start: e.Time, Detail: clip(e.Reason, 200)})
	case e.To == pool.StateRecovering:
		d.Timeline = append(d.Timeline, reports.Event{Kind: reports.EventRecovery, Label: "recovery", Start: e.Time, Detail: clip(e.Reason, 200)})
	}
	if h, ok := healthState[e.To]; ok {
		if e.To == pool.StateAvailable && e.From == pool.StateLeased {
			return // a lease ending says nothing new about health
		}
		d.Health = append(d.Health, reports.HealthRecord{At: e.Time, State: h, Detail: clip(e.Reason, 200)})
	}
}
