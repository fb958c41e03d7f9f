package webhooks

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleRecord() *record {
	r := &record{Delivery: Delivery{ID: "dlv_x", WebhookID: "wh_1", EventID: "ev ünï {x}", EventType: "a.b",
		Status: StatusFailed, Attempts: 12, LastStatusCode: 500, LastError: "HTTP 500",
		CreatedAt: time.UnixMilli(1), UpdatedAt: time.UnixMilli(2), ExpiresAt: time.UnixMilli(3)}, step: 3}
	for k := 3; k <= 12; k++ { // the oldest were dropped
		r.History = append(r.History, Attempt{At: time.UnixMilli(int64(k)), Duration: time.Millisecond, StatusCode: 500,
			Error: "HTTP 500", Response: fmt.Sprint("body\x00", k)})
	}
	return r
}

func TestRecordRoundTrip(t *testing.T) {
	want := sampleRecord()
	raw := want.encode("0123456789abcdef", leaseSettled)
	got, err := parseRecord("dlv_x", raw)
	require.NoError(t, err)
	want.token, want.leaseState, want.raw = "0123456789abcdef", leaseSettled, raw
	assert.Equal(t, want, got)
	assert.Empty(t, got.lease, "a settled lease is no lease")

	want.Status, want.NextAttemptAt = StatusPending, time.UnixMilli(1700000000000)
	got, err = parseRecord("dlv_x", want.encode("0123456789abcdef", leaseHeld))
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdef", got.lease)
	assert.Equal(t, want.NextAttemptAt, got.NextAttemptAt)
	assert.Less(t, len(raw), 300, "compact: %d bytes with 10 attempts", len(raw))
}

func TestParseRecordRefusesCorruption(t *testing.T) {
	good := sampleRecord().encode("0123456789abcdef", leaseNone)
	noWebhook := sampleRecord()
	noWebhook.WebhookID = ""
	cases := map[string]string{
		"empty":          "",
		"short head":     good[:recordHeadLen-1],
		"lease state":    good[:tokenLen] + "?" + good[tokenLen+1:],
		"status":         good[:tokenLen+1] + "?" + good[tokenLen+2:],
		"version":        good[:recordHeadLen-1] + "9" + good[recordHeadLen:],
		"truncated":      good[:len(good)-1],
		"trailing bytes": good + "x",
		"no webhook":     noWebhook.encode("0123456789abcdef", leaseNone),
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parseRecord("dlv_x", raw)
			require.ErrorIs(t, err, ErrCorruptRecord)
		})
	}
}

// FuzzParseRecord: decoding never panics, and what decodes encodes to a value that decodes the same.
func FuzzParseRecord(f *testing.F) {
	f.Add(sampleRecord().encode("0123456789abcdef", leaseHeld))
	f.Add(sampleRecord().encode("0123456789abcdef", leaseNone)[:40])
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := parseRecord("dlv_x", raw)
		if err != nil {
			return
		}
		again, err := parseRecord("dlv_x", r.encode(r.token, r.leaseState))
		if err != nil {
			t.Fatalf("record %q re-encoded does not decode: %v", raw, err)
		}
		r.raw, again.raw = "", ""
		if !reflect.DeepEqual(r, again) {
			t.Fatalf("record %q decodes as %+v, re-encoded as %+v", raw, r, again)
		}
	})
}
