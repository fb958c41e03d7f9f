package signing

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The example published by the Standard Webhooks specification and used by
// its reference libraries.
const (
	specSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specMsgID     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp = 1614265330
	specBody      = `{"test": 2432232314}`
	specSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

// verifyAt is Verify with the root package's tolerance.
func verifyAt(secret string, h http.Header, body []byte, now time.Time) error {
	return Verify(secret, h, body, now, 5*time.Minute)
}

func mustDecode(t testing.TB, secret string) []byte {
	t.Helper()
	key, err := decodeSecret(secret)
	require.NoError(t, err)
	return key
}

func TestSignaturesSpecVector(t *testing.T) {
	t.Parallel()
	got := signatures(specMsgID, time.Unix(specTimestamp, 0), []byte(specBody), mustSigningKey(t, specSecret))
	assert.Equal(t, specSignature, got)

	h := http.Header{}
	SetHeaders(h, specMsgID, time.Unix(specTimestamp, 0), []byte(specBody), mustSigningKey(t, specSecret))
	assert.NoError(t, verifyAt(specSecret, h, []byte(specBody), time.Unix(specTimestamp, 0)))
}

func TestSignaturesMultipleSecrets(t *testing.T) {
	t.Parallel()
	a, b := mustSigningKey(t, specSecret), mustSigningKey(t, mustNewSecret(t))
	ts := time.Unix(specTimestamp, 0)
	got := signatures(specMsgID, ts, []byte(specBody), a, b)
	assert.Equal(t, specSignature+" "+signatures(specMsgID, ts, []byte(specBody), b), got)
	assert.Empty(t, signatures(specMsgID, ts, []byte(specBody)))
}

func mustNewSecret(t testing.TB) string {
	t.Helper()
	s, err := NewSecret(V1)
	require.NoError(t, err)
	return s
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	s1, s2 := mustNewSecret(t), mustNewSecret(t)
	assert.NotEqual(t, s1, s2)
	require.True(t, strings.HasPrefix(s1, secretPrefix))
	assert.Len(t, mustDecode(t, s1), 32)
}

func TestDecodeSecret(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		secret  string
		wantLen int
		wantErr bool
	}{
		{name: "with prefix", secret: specSecret, wantLen: 24},
		{name: "without prefix", secret: strings.TrimPrefix(specSecret, secretPrefix), wantLen: 24},
		{name: "empty", secret: "", wantErr: true},
		{name: "prefix only", secret: secretPrefix, wantErr: true},
		{name: "bad base64", secret: "whsec_not*base64!", wantErr: true},
		{name: "embedded space", secret: "whsec_YWJj ZA==", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key, err := decodeSecret(tt.secret)
			if tt.wantErr {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.Len(t, key, tt.wantLen)
		})
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	secret, other := mustNewSecret(t), mustNewSecret(t)
	key, otherKey := mustSigningKey(t, secret), mustSigningKey(t, other)
	body := []byte(`{"type":"order.created","data":{"id":42}}`)
	now := time.Unix(1_700_000_000, 0)

	signed := func(ts time.Time, keys ...Key) http.Header {
		h := http.Header{}
		SetHeaders(h, "msg_1", ts, body, keys...)
		return h
	}
	with := func(h http.Header, name, value string) http.Header {
		h.Set(name, value)
		return h
	}
	without := func(name string) http.Header {
		h := signed(now, key)
		h.Del(name)
		return h
	}

	tests := []struct {
		name    string
		secret  string
		header  http.Header
		body    []byte
		wantErr error // nil means accepted
	}{
		{name: "own signature", secret: secret, header: signed(now, key), body: body},
		{name: "own signature without prefix", secret: strings.TrimPrefix(secret, secretPrefix), header: signed(now, key), body: body},
		{name: "canonical header names", secret: secret, header: http.Header{
			"Webhook-Id":        {"msg_1"},
			"Webhook-Timestamp": {strconv.FormatInt(now.Unix(), 10)},
			"Webhook-Signature": {signatures("msg_1", now, body, key)},
		}, body: body},
		{name: "rotation: second entry matches", secret: secret, header: signed(now, otherKey, key), body: body},
		{name: "unknown versions are skipped", secret: secret,
			header: with(signed(now, key), headerSignature, "v2,abc v1a,x "+signatures("msg_1", now, body, key)), body: body},
		{name: "extra spaces between entries", secret: secret,
			header: with(signed(now, key), headerSignature, "  v1,AAAA   "+signatures("msg_1", now, body, key)+"  "), body: body},
		{name: "4m59s old", secret: secret, header: signed(now.Add(-299*time.Second), key), body: body},
		{name: "4m59s ahead", secret: secret, header: signed(now.Add(299*time.Second), key), body: body},

		{name: "modified body", secret: secret, header: signed(now, key), body: []byte(`{"type":"order.created","data":{"id":43}}`), wantErr: ErrInvalidSignature},
		{name: "trailing newline", secret: secret, header: signed(now, key), body: append(bytes.Clone(body), '\n'), wantErr: ErrInvalidSignature},
		{name: "other secret", secret: other, header: signed(now, key), body: body, wantErr: ErrInvalidSignature},
		{name: "modified id", secret: secret, header: with(signed(now, key), headerID, "msg_2"), body: body, wantErr: ErrInvalidSignature},
		{name: "modified timestamp", secret: secret, header: with(signed(now, key), headerTimestamp, strconv.FormatInt(now.Unix()+1, 10)), body: body, wantErr: ErrInvalidSignature},
		{name: "non-v1 version", secret: secret,
			header: with(signed(now, key), headerSignature, strings.Replace(signatures("msg_1", now, body, key), "v1,", "v2,", 1)), body: body, wantErr: ErrInvalidSignature},
		{name: "signature without version", secret: secret,
			header: with(signed(now, key), headerSignature, strings.TrimPrefix(signatures("msg_1", now, body, key), "v1,")), body: body, wantErr: ErrInvalidSignature},
		{name: "truncated signature", secret: secret,
			header: with(signed(now, key), headerSignature, strings.TrimSuffix(signatures("msg_1", now, body, key), "=")), body: body, wantErr: ErrInvalidSignature},
		{name: "garbage signature", secret: secret, header: with(signed(now, key), headerSignature, "v1,%%%not-base64%%%"), body: body, wantErr: ErrInvalidSignature},
		{name: "huge signature header", secret: secret,
			header: with(signed(now, key), headerSignature, strings.Repeat("v1,AAAA ", 100_000)), body: body, wantErr: ErrInvalidSignature},

		{name: "6 minutes old", secret: secret, header: signed(now.Add(-6*time.Minute), key), body: body, wantErr: ErrInvalidTimestamp},
		{name: "6 minutes ahead", secret: secret, header: signed(now.Add(6*time.Minute), key), body: body, wantErr: ErrInvalidTimestamp},
		{name: "timestamp in milliseconds", secret: secret, header: with(signed(now, key), headerTimestamp, strconv.FormatInt(now.UnixMilli(), 10)), body: body, wantErr: ErrInvalidTimestamp},
		{name: "malformed timestamp", secret: secret, header: with(signed(now, key), headerTimestamp, "yesterday"), body: body, wantErr: ErrInvalidTimestamp},
		// One spelling per time: the signature covers the parsed number, so another spelling would verify.
		{name: "timestamp with plus sign", secret: secret, header: with(signed(now, key), headerTimestamp, "+"+strconv.FormatInt(now.Unix(), 10)), body: body, wantErr: ErrInvalidTimestamp},
		{name: "timestamp with leading zero", secret: secret, header: with(signed(now, key), headerTimestamp, "0"+strconv.FormatInt(now.Unix(), 10)), body: body, wantErr: ErrInvalidTimestamp},
		{name: "timestamp with leading zeros", secret: secret, header: with(signed(now, key), headerTimestamp, "000"+strconv.FormatInt(now.Unix(), 10)), body: body, wantErr: ErrInvalidTimestamp},
		{name: "timestamp with spaces", secret: secret, header: with(signed(now, key), headerTimestamp, " "+strconv.FormatInt(now.Unix(), 10)+" "), body: body, wantErr: ErrInvalidTimestamp},
		{name: "RFC 3339 timestamp", secret: secret, header: with(signed(now, key), headerTimestamp, now.Format(time.RFC3339)), body: body, wantErr: ErrInvalidTimestamp},
		{name: "min int64 timestamp", secret: secret, header: with(signed(now, key), headerTimestamp, "-9223372036854775808"), body: body, wantErr: ErrInvalidTimestamp},
		{name: "max int64 timestamp", secret: secret, header: with(signed(now, key), headerTimestamp, "9223372036854775807"), body: body, wantErr: ErrInvalidTimestamp},
		{name: "overflowing timestamp", secret: secret, header: with(signed(now, key), headerTimestamp, "99999999999999999999"), body: body, wantErr: ErrInvalidTimestamp},

		{name: "no headers", secret: secret, header: http.Header{}, body: body, wantErr: ErrMissingHeaders},
		{name: "nil header", secret: secret, header: nil, body: body, wantErr: ErrMissingHeaders},
		{name: "missing id", secret: secret, header: without(headerID), body: body, wantErr: ErrMissingHeaders},
		{name: "missing timestamp", secret: secret, header: without(headerTimestamp), body: body, wantErr: ErrMissingHeaders},
		{name: "missing signature", secret: secret, header: without(headerSignature), body: body, wantErr: ErrMissingHeaders},
		{name: "empty signature", secret: secret, header: with(signed(now, key), headerSignature, ""), body: body, wantErr: ErrMissingHeaders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verifyAt(tt.secret, tt.header, tt.body, now)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			assert.NotContains(t, err.Error(), strings.TrimPrefix(tt.secret, secretPrefix))
		})
	}
}

func TestCanonicalHeaderNames(t *testing.T) {
	t.Parallel()
	for name, canonical := range map[string]string{headerID: canonicalID, headerTimestamp: canonicalTimestamp, headerSignature: canonicalSignature} {
		assert.Equal(t, http.CanonicalHeaderKey(name), canonical)
	}
}
