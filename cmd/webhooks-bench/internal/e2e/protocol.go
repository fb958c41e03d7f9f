package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// The line protocol between the benchmark and a child program. The child writes one JSON Message a
// line on its stdout; when a Message has Ready set, it then waits for one line ("go") on its stdin
// before it runs that phase, so that the parent can take the Redis server's counters right before and
// after. The order is: Ready "fresh", Report (fresh), Ready "duplicates", Report (duplicates), Done.

// Phase names.
const (
	PhaseFresh      = "fresh"
	PhaseDuplicates = "duplicates"
)

// PhaseReport is what a child measured over one phase.
type PhaseReport struct {
	ElapsedNS int64  `json:"elapsed_ns"` // first Dispatch to the last pair delivered
	OK        int    `json:"ok"`         // pairs delivered with success (fresh) or rejected as duplicates
	Failed    int    `json:"failed"`
	Deferred  int    `json:"deferred"` // fresh pairs Dispatch left to the worker (delivered by it, counted in OK)
	Received  int64  `json:"received"` // requests the child's receiver answered
	CPUNS     int64  `json:"cpu_ns"`   // the child's CPU time over the phase: library, driver and receiver
	Cmds      int64  `json:"cmds"`     // client commands (hook) of the dispatching client
	Trips     int64  `json:"trips"`    // its round trips
	Err       string `json:"err,omitempty"`
}

// Done is the child's last message.
type Done struct {
	// LoneTrips are the round trips of one Dispatch made alone: fresh, then duplicate.
	LoneTrips [2]float64 `json:"lone_trips"`
	Sampled   int64      `json:"sampled"` // signatures the receiver checked
	BadSig    int64      `json:"bad_sig"` // of those, failed
}

// Message is one line a child writes.
type Message struct {
	Ready  string       `json:"ready,omitempty"`
	Report *PhaseReport `json:"report,omitempty"`
	Done   *Done        `json:"done,omitempty"`
	Error  string       `json:"error,omitempty"` // the child gives up
}

// Send writes m as one line.
func Send(w io.Writer, m Message) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// Next reads the next Message.
func Next(r *bufio.Scanner) (Message, error) {
	var m Message
	if !r.Scan() {
		if err := r.Err(); err != nil {
			return m, err
		}
		return m, io.ErrUnexpectedEOF
	}
	if err := json.Unmarshal(r.Bytes(), &m); err != nil {
		return m, fmt.Errorf("child wrote %q: %w", r.Text(), err)
	}
	if m.Error != "" {
		return m, fmt.Errorf("child: %s", m.Error)
	}
	return m, nil
}
