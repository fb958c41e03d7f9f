package webhooks

// ValidateEvent runs the checks Dispatch and Enqueue make on evt before any I/O, and returns the
// error they would return for it (wrapping ErrInvalidEvent), or nil: the type, id, tenant and order
// key are well formed, the type is not an operational event type while Options.OperationalEvents is
// on, and the event encodes within Options.MaxPayloadBytes (a zero Time is encoded as now). It does
// no I/O, so it cannot tell whether an id was accepted before as another event (ErrEventConflict) or
// with another order key (ErrOrderKeyConflict): those are known only to the claim. A producer that
// stores an event to dispatch it later (such as the pgxoutbox module) calls it to refuse, before
// anything is written, what Enqueue would refuse.
func (d *Dispatcher) ValidateEvent(evt Event) error {
	_, err := d.validateAndEncode(evt)
	return err
}

// validateAndEncode is ValidateEvent that also returns the event's encoded body, for accept.
func (d *Dispatcher) validateAndEncode(evt Event) ([]byte, error) {
	if err := validateEvent(evt); err != nil {
		return nil, err
	}
	if err := d.checkReserved(evt.Type); err != nil {
		return nil, err
	}
	return d.encode(evt)
}
