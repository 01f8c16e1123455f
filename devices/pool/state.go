package pool

import (
	"errors"
	"fmt"
)

// State is a device's allocation state in the pool (after Tradefed's
// allocation states, lab-reference A.1 and A.11).
type State string

const (
	// StateAvailable: healthy at the last look and not leased.
	StateAvailable State = "available"
	// StateChecking: picked by an Acquire and running the health gate
	// (Tradefed's Checking_Availability); nobody else may take it.
	StateChecking State = "checking"
	// StateLeased: held by exactly one Lease.
	StateLeased State = "leased"
	// StateUnhealthy: failed a check. A fault (offline, no boot, shell
	// silent, root broken) sends it on to recovering at once; a condition
	// (battery, storage) keeps it here until a later re-check passes.
	StateUnhealthy State = "unhealthy"
	// StateRecovering: the recovery ladder is running.
	StateRecovering State = "recovering"
	// StateQuarantined: the ladder failed; an operator must look. Only
	// Unquarantine brings it back.
	StateQuarantined State = "quarantined"
	// StateGone: no source lists it any more and nothing can reconnect it.
	StateGone State = "gone"
)

// stateNew is the state of a member before its first transition.
const stateNew State = ""

// allowed is the whole state machine: allowed[from][to].
var allowed = map[State]map[State]bool{
	stateNew:         {StateAvailable: true, StateUnhealthy: true},
	StateAvailable:   {StateChecking: true, StateUnhealthy: true, StateGone: true, StateQuarantined: true},
	StateChecking:    {StateLeased: true, StateAvailable: true, StateUnhealthy: true},
	StateLeased:      {StateAvailable: true, StateUnhealthy: true},
	StateUnhealthy:   {StateRecovering: true, StateChecking: true, StateAvailable: true, StateGone: true, StateQuarantined: true},
	StateRecovering:  {StateAvailable: true, StateQuarantined: true},
	StateQuarantined: {StateAvailable: true},
	StateGone:        {StateAvailable: true, StateUnhealthy: true},
}

// ErrTransition: a state change the machine does not allow. It means a
// bug in the pool, and is reported rather than applied.
var ErrTransition = errors.New("state transition not allowed")

func checkTransition(from, to State) error {
	if !allowed[from][to] {
		return fmt.Errorf("%q -> %q: %w", from, to, ErrTransition)
	}
	return nil
}
