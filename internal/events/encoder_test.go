package events

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/types"
)

// TestEncode: an event with no Time is stamped with Now, in UTC; a body beyond MaxPayloadBytes is
// refused with ErrInvalidEvent.
func TestEncode(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("X", 3600))
	e := &Encoder{Now: func() time.Time { return now }, MaxPayloadBytes: 100}
	body, err := e.Encode(types.Event{ID: "e1", Type: "a.b", Data: map[string]int{"n": 1}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"e1","type":"a.b","timestamp":"2030-01-02T02:04:05Z","data":{"n":1}}`
	if string(body) != want {
		t.Fatalf("Encode = %s, want %s", body, want)
	}
	_, err = e.Encode(types.Event{ID: "e2", Type: "a.b", Data: strings.Repeat("x", 100)})
	if !errors.Is(err, types.ErrInvalidEvent) {
		t.Fatalf("an oversized body: %v, want ErrInvalidEvent", err)
	}
}
