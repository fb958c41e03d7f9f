package webhooks

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// An event id names one event. The claim stores each event's body once, under {P:s}:evt:<event_id>,
// behind its fingerprint: rdb.EventMark, then 32 hex digits of SHA-256(type, 0, data as encoded), then the
// body. A later Dispatch or Enqueue of the same (tenant, id) whose type or data differ is refused
// before anything is written (ErrEventConflict), so that no webhook ever receives a body of a type it
// did not subscribe to, nor data its filter did not see. The timestamp is not in the fingerprint: a
// replay of the same event at another time is the same event. A body stored by an earlier build has
// no fingerprint and conflicts with nothing.

// eventFingerprint is the fingerprint of an event of type typ whose encoded body is body (events.Encoder.Encode:
// its data is the last field, after the first `,"data":`, which no id, type or timestamp can hold).
func eventFingerprint(typ string, body []byte) string {
	data := body
	if i := bytes.Index(body, []byte(`,"data":`)); i >= 0 && len(body) > 0 {
		data = body[i+len(`,"data":`) : len(body)-1]
	}
	h := sha256.New()
	h.Write([]byte(typ))
	h.Write([]byte{0})
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil)[:rdb.FingerprintLen/2])
}
