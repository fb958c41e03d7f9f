package verify

// The signed parts of a request that a Verifier reads from its headers before it looks at the body.

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// Standard Webhooks header names.
const (
	headerID        = "webhook-id"
	headerTimestamp = "webhook-timestamp"
	headerSignature = "webhook-signature"
)

// signedHeaders are a request's webhook-id, webhook-timestamp (checked: the canonical spelling of a
// fresh time) and webhook-signature headers.
type signedHeaders struct {
	msgID      string
	timestamp  string
	signatures string
}

// content returns "webhook-id.webhook-timestamp.body", what every Standard Webhooks signature of the
// request covers. The timestamp is the header as received: readSignedHeaders let through only the
// canonical spelling, the one the sender signed.
func (sh signedHeaders) content(body []byte) []byte {
	b := make([]byte, 0, len(sh.msgID)+len(sh.timestamp)+2+len(body))
	b = append(append(append(append(b, sh.msgID...), '.'), sh.timestamp...), '.')
	return append(b, body...)
}

// readSignedHeaders returns h's signed headers if all three are present and the timestamp, a canonical
// decimal count of seconds, is within tolerance of now; otherwise the error is ErrMissingHeaders or
// wraps ErrInvalidTimestamp.
func readSignedHeaders(h http.Header, now time.Time, tolerance time.Duration) (signedHeaders, error) {
	msgID, tsHeader, sigHeader := h.Get(headerID), h.Get(headerTimestamp), h.Get(headerSignature)
	if msgID == "" || tsHeader == "" || sigHeader == "" {
		return signedHeaders{}, ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil || strconv.FormatInt(ts, 10) != tsHeader { // no sign, no leading zero: one spelling per time
		return signedHeaders{}, fmt.Errorf("%w: malformed timestamp", ErrInvalidTimestamp)
	}
	// Compare in seconds so that absurd timestamps cannot overflow.
	tol := int64(tolerance / time.Second)
	switch nowSec := now.Unix(); {
	case ts < nowSec-tol:
		return signedHeaders{}, fmt.Errorf("%w: too old", ErrInvalidTimestamp)
	case ts > nowSec+tol:
		return signedHeaders{}, fmt.Errorf("%w: too new", ErrInvalidTimestamp)
	}
	return signedHeaders{msgID: msgID, timestamp: tsHeader, signatures: sigHeader}, nil
}
