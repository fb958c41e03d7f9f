package rdb

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/smartdrop/webhooks/internal/types"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleRecord() *Record {
	r := &Record{Delivery: types.Delivery{ID: "dlv_x", WebhookID: "wh_1", EventID: "ev ünï {x}", EventType: "a.b",
		Status: types.StatusFailed, Attempts: 12, LastStatusCode: 500, LastError: "HTTP 500",
		CreatedAt: time.UnixMilli(1), UpdatedAt: time.UnixMilli(2), ExpiresAt: time.UnixMilli(3)}, Step: 3}
	for k := 3; k <= 12; k++ { // the oldest were dropped
		r.History = append(r.History, types.Attempt{At: time.UnixMilli(int64(k)), Duration: time.Millisecond, StatusCode: 500,
			Error: "HTTP 500", Response: fmt.Sprint("body\x00", k)})
	}
	return r
}

// sampleRecordWith is sampleRecord with the lease head token and state.
func sampleRecordWith(state byte) *Record {
	r := sampleRecord()
	r.Token, r.LeaseState = "0123456789abcdef", state
	return r
}

func TestRecordRoundTrip(t *testing.T) {
	t.Parallel()
	want := sampleRecordWith(LeaseSettled)
	raw := want.Encode()
	got, err := ParseRecord("dlv_x", raw)
	require.NoError(t, err)
	want.Raw = raw
	assert.Equal(t, want, got)
	assert.Empty(t, got.HeldToken(), "a settled lease is no lease")

	want.Status, want.NextAttemptAt, want.LeaseState = types.StatusPending, time.UnixMilli(1700000000000), LeaseHeld
	got, err = ParseRecord("dlv_x", want.Encode())
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdef", got.HeldToken())
	assert.Equal(t, want.NextAttemptAt, got.NextAttemptAt)
	assert.Less(t, len(raw), 300, "compact: %d bytes with 10 attempts", len(raw))
}

func TestParseRecordRefusesCorruption(t *testing.T) {
	t.Parallel()
	good := sampleRecordWith(LeaseNone).Encode()
	noWebhook := sampleRecordWith(LeaseNone)
	noWebhook.WebhookID = ""
	cases := map[string]string{
		"empty":          "",
		"short head":     good[:RecordHeadLen-1],
		"lease state":    good[:TokenLen] + "?" + good[TokenLen+1:],
		"status":         good[:TokenLen+1] + "?" + good[TokenLen+2:],
		"version":        good[:RecordHeadLen-1] + "9" + good[RecordHeadLen:],
		"truncated":      good[:len(good)-1],
		"trailing bytes": good + "x",
		"no webhook":     noWebhook.Encode(),
	}
	for name, raw := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseRecord("dlv_x", raw)
			require.ErrorIs(t, err, types.ErrCorruptRecord)
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
	f.Add(sampleRecordWith(LeaseHeld).Encode())
	f.Add(sampleRecordWith(LeaseNone).Encode()[:40])
	f.Fuzz(func(t *testing.T, raw string) {
		r, err := ParseRecord("dlv_x", raw)
		if err != nil {
			return
		}
		again, err := ParseRecord("dlv_x", r.Encode())
		if err != nil {
			t.Fatalf("record %q re-encoded does not decode: %v", raw, err)
		}
		r.Raw, again.Raw = "", ""
		if !reflect.DeepEqual(r, again) {
			t.Fatalf("record %q decodes as %+v, re-encoded as %+v", raw, r, again)
		}
	})
}

// v1Record is a record as the format before traceparents (version '1') wrote it.
const v1Record = "0123456789abcdef+p1\x02\x02\xc0\x99\x8e\xc2\xeee\xe8\a\x80\xf0\x86\xc2\xeee\x80\xf0\x86\xc2\xeee\x80\xaa\xbe\xc5\xeee\x04wh_1\x05evt_1\norder.paid\bHTTP 500\x01\x80\xf0\x86\xc2\xeee\xb8\x17\xe8\a\bHTTP 500\x02no"

func TestRecordOfVersion1StillDecodes(t *testing.T) {
	got, err := ParseRecord("dlv_x", v1Record)
	require.NoError(t, err)
	at := time.UnixMilli(1750000000000)
	assert.Equal(t, "wh_1", got.WebhookID)
	assert.Equal(t, "evt_1", got.EventID)
	assert.Equal(t, "order.paid", got.EventType)
	assert.Equal(t, types.StatusPending, got.Status)
	assert.Equal(t, at.Add(time.Minute), got.NextAttemptAt)
	assert.Equal(t, 1, got.Step)
	require.Len(t, got.History, 1)
	assert.Equal(t, "no", got.History[0].Response)
	assert.Empty(t, got.Traceparent)
	assert.Equal(t, v1Record, got.Encode(), "a record with no traceparent is still written in version '1'")
}

func TestRecordTraceparentRoundTrip(t *testing.T) {
	want := sampleRecordWith(LeaseSettled)
	want.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	raw := want.Encode()
	assert.Equal(t, byte(RecordVersionTraced), raw[RecordHeadLen-1])
	got, err := ParseRecord("dlv_x", raw)
	require.NoError(t, err)
	want.Raw = raw
	assert.Equal(t, want, got)

	// A version-2 record without its traceparent, or with bytes after it, is corrupt.
	plain := sampleRecordWith(LeaseSettled).Encode()
	_, err = ParseRecord("dlv_x", plain[:RecordHeadLen-1]+"2"+plain[RecordHeadLen:])
	assert.ErrorIs(t, err, types.ErrCorruptRecord)
	_, err = ParseRecord("dlv_x", raw+"x")
	assert.ErrorIs(t, err, types.ErrCorruptRecord)
	_, err = ParseRecord("dlv_x", plain[:RecordHeadLen-1]+"3"+plain[RecordHeadLen:])
	assert.ErrorIs(t, err, types.ErrCorruptRecord)
}
