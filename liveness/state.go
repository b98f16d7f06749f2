package liveness

import (
	"fmt"
	"time"
)

// State is a peer's liveness as memberlist sees it.
type State int

// The states a peer can be in. Unknown is a peer that never joined.
const (
	Unknown State = iota
	Alive
	Suspect
	Dead
)

var stateNames = [...]string{"unknown", "alive", "suspect", "dead"}

// String returns "alive", "suspect", "dead" or "unknown".
func (s State) String() string {
	if s < 0 || int(s) >= len(stateNames) {
		return fmt.Sprintf("state(%d)", int(s))
	}
	return stateNames[s]
}

// Status is one peer's liveness and when it last changed.
type Status struct {
	Peer  string    // the peer's mesh name, e.g. "aa:00:00:00:00:01"
	State State     // its current state
	Since time.Time // when we saw it enter State
}

// Change is one transition of one peer.
type Change struct {
	Peer     string
	From, To State
	At       time.Time
}
