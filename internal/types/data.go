package types

import (
	"encoding/json"
	"fmt"
)

// EventData is what an event's Data encodes as in its request body: Data itself, except a []byte,
// which is taken as JSON text (as json.RawMessage is) rather than encoded as a base64 string: a []byte
// that is not valid JSON is refused with an error wrapping ErrInvalidEvent.
func EventData(data any) (any, error) {
	b, ok := data.([]byte)
	if !ok {
		return data, nil
	}
	if !json.Valid(b) {
		return nil, fmt.Errorf("%w: Data is a []byte that is not JSON (give a string or a value to encode it)", ErrInvalidEvent)
	}
	return json.RawMessage(b), nil
}
