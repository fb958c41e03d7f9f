package rdb

// StoredEvent is what the claim stores for an event (Keys.Event): EventMark, its fingerprint
// (FingerprintLen hex digits), then its body.
func StoredEvent(fingerprint string, body []byte) string {
	return EventMark + fingerprint + string(body)
}

// EventBody is the body of a stored event, with or without a fingerprint (an event stored by an
// earlier build has none).
func EventBody(stored string) []byte {
	if len(stored) > len(EventMark)+FingerprintLen && stored[:len(EventMark)] == EventMark {
		return []byte(stored[len(EventMark)+FingerprintLen:])
	}
	return []byte(stored)
}
