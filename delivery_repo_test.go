package webhooks

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"

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

// sampleRecordWith is sampleRecord with the lease head token and state.
func sampleRecordWith(state byte) *record {
	r := sampleRecord()
	r.token, r.leaseState = "0123456789abcdef", state
	return r
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	want := sampleRecordWith(rdb.LeaseSettled)
	raw := want.encode()
	got, err := parseRecord("dlv_x", raw)
	require.NoError(t, err)
	want.raw = raw
	assert.Equal(t, want, got)
	assert.Empty(t, got.heldToken(), "a settled lease is no lease")

	want.Status, want.NextAttemptAt, want.leaseState = StatusPending, time.UnixMilli(1700000000000), rdb.LeaseHeld
	got, err = parseRecord("dlv_x", want.encode())
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdef", got.heldToken())
	assert.Equal(t, want.NextAttemptAt, got.NextAttemptAt)
	assert.Less(t, len(raw), 300, "compact: %d bytes with 10 attempts", len(raw))
}

func TestParseRecordRefusesCorruption(t *testing.T) {
	t.Parallel()
	good := sampleRecordWith(rdb.LeaseNone).encode()
	noWebhook := sampleRecordWith(rdb.LeaseNone)
	noWebhook.WebhookID = ""
	cases := map[string]string{
		"empty":          "",
		"short head":     good[:rdb.RecordHeadLen-1],
		"lease state":    good[:rdb.TokenLen] + "?" + good[rdb.TokenLen+1:],
		"status":         good[:rdb.TokenLen+1] + "?" + good[rdb.TokenLen+2:],
		"version":        good[:rdb.RecordHeadLen-1] + "9" + good[rdb.RecordHeadLen:],
		"truncated":      good[:len(good)-1],
		"trailing bytes": good + "x",
		"no webhook":     noWebhook.encode(),
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := parseRecord("dlv_x", raw)
			require.ErrorIs(t, err, ErrCorruptRecord)
		})
	}
}

// FuzzRecordReaderVarints: the record reader decodes varints exactly as encoding/binary does, on
// any input: the same value, the same length, and a failure where binary reports one.
func FuzzRecordReaderVarints(f *testing.F) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, 1 << 40, math.MaxInt64, math.MinInt64} {
		f.Add(string(binary.AppendVarint(nil, v)))
	}
	f.Add(string(binary.AppendUvarint(nil, math.MaxUint64)))
	f.Add("\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02") // overflows 64 bits
	f.Add("\x80\x80")                                 // truncated
	f.Fuzz(func(t *testing.T, in string) {
		u, n := binary.Uvarint([]byte(in))
		rd := recordReader{s: in}
		got := rd.uint()
		if n <= 0 {
			require.True(t, rd.bad, "%q: binary.Uvarint fails (%d), the reader does not", in, n)
		} else {
			require.False(t, rd.bad, "%q", in)
			require.Equal(t, u, got, "%q", in)
			require.Len(t, rd.s, len(in)-n, "%q: bytes consumed", in)
		}
		v, n := binary.Varint([]byte(in))
		rd = recordReader{s: in}
		if gotV := rd.int(); n > 0 {
			require.Equal(t, v, gotV, "%q", in)
		}
	})
}

// FuzzParseRecord: decoding never panics, and what decodes encodes to a value that decodes the same.
func FuzzParseRecord(f *testing.F) {
	f.Add(sampleRecordWith(rdb.LeaseHeld).encode())
	f.Add(sampleRecordWith(rdb.LeaseNone).encode()[:40])
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := parseRecord("dlv_x", raw)
		if err != nil {
			return
		}
		again, err := parseRecord("dlv_x", r.encode())
		if err != nil {
			t.Fatalf("record %q re-encoded does not decode: %v", raw, err)
		}
		r.raw, again.raw = "", ""
		if !reflect.DeepEqual(r, again) {
			t.Fatalf("record %q decodes as %+v, re-encoded as %+v", raw, r, again)
		}
	})
}
