package verify

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/signing"
)

// TestSvixVectors: Svix's published HMAC and ed25519 vectors verify, at their timestamp, with the
// secret and with the ed25519 key's public half; the library's signer makes the same signatures; and
// at today's time (the default Now) they are stale.
func TestSvixVectors(t *testing.T) {
	t.Parallel()
	signedAt := time.Unix(svixTimestamp, 0)
	tests := []struct {
		name      string
		signWith  string
		verifyKey string
		signature string
	}{
		{name: "v1, HMAC-SHA256", signWith: svixSecret, verifyKey: svixSecret, signature: svixV1Signature},
		{name: "v1a, ed25519", signWith: svixSecretKey, verifyKey: svixPublicKey, signature: svixV1aSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			h.Set("webhook-id", svixMsgID)
			h.Set("webhook-timestamp", strconv.Itoa(svixTimestamp))
			h.Set("webhook-signature", tt.signature)
			require.NoError(t, verifierAt(t, signedAt, tt.verifyKey).Verify(h, []byte(svixBody)))

			assert.Equal(t, h, signedHeader(t, svixMsgID, signedAt, []byte(svixBody), tt.signWith), "the library's signer")

			v, err := New(tt.verifyKey)
			require.NoError(t, err)
			require.ErrorIs(t, v.Verify(h, []byte(svixBody)), ErrInvalidTimestamp, "signed in 2021, verified now")
		})
	}
}

func TestSvixPublicKeyIsTheKeysPublicHalf(t *testing.T) {
	t.Parallel()
	full, err := base64.StdEncoding.DecodeString(svixEd25519Key)
	require.NoError(t, err)
	require.Len(t, full, ed25519.PrivateKeySize)
	assert.Equal(t, "whpk_"+base64.StdEncoding.EncodeToString(full[ed25519.SeedSize:]), svixPublicKey)
	public, err := signing.PublicKey(svixSecretKey)
	require.NoError(t, err)
	assert.Equal(t, svixPublicKey, public)
}

// TestNew: New takes whsec_ secrets (prefix optional) and whpk_ public keys, several at once, and
// refuses no key, an empty key, a whsk_ secret key and every malformed key, with an error that starts
// with "verify: ", says what a key looks like, contains no key and wraps none of Verify's sentinels.
func TestNew(t *testing.T) {
	t.Parallel()
	pub := bytes.Repeat([]byte{7}, ed25519.PublicKeySize) // any 32 bytes
	enc := base64.StdEncoding.EncodeToString
	tests := []struct {
		name    string
		keys    []string
		wantErr string // "" means accepted
	}{
		{name: "HMAC secret", keys: []string{svixSecret}},
		{name: "HMAC secret without prefix", keys: []string{secretWithoutTag}},
		{name: "public key", keys: []string{svixPublicKey}},
		{name: "several, mixed", keys: []string{svixSecret, secondSecret, svixPublicKey, testPublicKey}},

		{name: "no key", keys: nil, wantErr: "at least one key"},
		{name: "secret key", keys: []string{testSecretKey}, wantErr: "not the whsk_ secret key"},
		{name: "secret key among others", keys: []string{svixSecret, svixSecretKey}, wantErr: "key 2 of 2: verify with the whpk_ public key"},
		{name: "empty", keys: []string{""}, wantErr: "verify: the key is empty: pass only the keys you were given (a whsec_… secret or a whpk_… public key)"},
		{name: "empty second key (an unset WEBHOOK_PUBLIC_KEY)", keys: []string{svixSecret, ""}, wantErr: "verify: key 2 of 2: the key is empty: pass only the keys you were given"},
		{name: "not a key", keys: []string{"not-a-secret"}, wantErr: "verify: the key is neither a whsec_… secret nor a whpk_… public key"},
		{name: "whsec_ only", keys: []string{"whsec_"}, wantErr: "secret is empty"},
		{name: "secret not base64", keys: []string{"whsec_***secret***"}, wantErr: "secret is not valid base64: a secret is whsec_ then the base64 of its bytes"},
		{name: "secret with a space", keys: []string{"whsec_YWJj ZA=="}, wantErr: "secret is not valid base64"},
		{name: "whpk_ only", keys: []string{"whpk_"}, wantErr: "must decode to 32 bytes, not 0"},
		{name: "public key not base64", keys: []string{"whpk_***public***"}, wantErr: "public key is not valid base64"},
		{name: "public key, url-safe base64", keys: []string{"whpk_" + base64.URLEncoding.EncodeToString(bytes.Repeat([]byte{0xfb}, 32))}, wantErr: "public key is not valid base64"},
		{name: "public key, 31 bytes", keys: []string{"whpk_" + enc(pub[:31])}, wantErr: "not 31"},
		{name: "public key, 33 bytes", keys: []string{"whpk_" + enc(append(bytes.Clone(pub), 0))}, wantErr: "not 33"},
		{name: "public key, 64 bytes", keys: []string{"whpk_" + svixEd25519Key}, wantErr: "not 64"},
		{name: "public key, truncated", keys: []string{testPublicKey[:len(testPublicKey)-4]}, wantErr: "public key"},
		{name: "bad second key", keys: []string{svixPublicKey, "whpk_" + enc(pub[:31])}, wantErr: "key 2 of 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v, err := New(tt.keys...)
			if tt.wantErr == "" {
				require.NoError(t, err)
				require.Len(t, v.keys, len(tt.keys))
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
			assert.Nil(t, v)
			assert.True(t, strings.HasPrefix(err.Error(), "verify: "), "the package a receiver calls names itself: %v", err)
			assert.NotContains(t, err.Error(), "webhooks:", "no other package's prefix")
			for _, k := range tt.keys {
				if rest := k[strings.Index(k, "_")+1:]; len(rest) > 8 {
					assert.NotContains(t, err.Error(), rest, "the error shows a key")
				}
			}
			for _, sentinel := range []error{ErrMissingHeaders, ErrInvalidTimestamp, ErrInvalidSignature} {
				assert.False(t, errors.Is(err, sentinel), "%v is %v", err, sentinel)
			}
		})
	}
}

// TestVerifySignerRequests: every request the library's signer makes (v1, v1a, both during a rotation)
// verifies with the right key or keys, and each way of being wrong fails with its sentinel.
func TestVerifySignerRequests(t *testing.T) {
	t.Parallel()
	body := []byte(`{"type":"order.created","data":{"id":42}}`)
	now := time.Unix(1_700_000_000, 0)
	hmacSecret, otherSecret := newSecret(t), newSecret(t)
	edSecret, edPublic := newEd25519Key(t)
	// The "url-safe signature" case needs a signature whose URL-safe base64 differs from the standard one
	// (about 1 in 16 random signatures has neither '+' nor '/').
	for !strings.ContainsAny(signingKeys(t, edSecret)[0].Sign("msg_1", now.Unix(), body), "+/") {
		edSecret, edPublic = newEd25519Key(t)
	}
	otherEdSecret, otherEdPublic := newEd25519Key(t)

	signed := func(ts time.Time, secrets ...string) http.Header {
		return signedHeader(t, "msg_1", ts, body, secrets...)
	}
	with := func(h http.Header, name, value string) http.Header {
		h.Set(name, value)
		return h
	}
	without := func(name string) http.Header {
		h := signed(now, hmacSecret)
		h.Del(name)
		return h
	}
	v1Entry := signed(now, hmacSecret).Get(headerSignature)
	v1aEntry := signed(now, edSecret).Get(headerSignature)
	v1Sig, v1aSig := strings.TrimPrefix(v1Entry, "v1,"), strings.TrimPrefix(v1aEntry, "v1a,")
	// A whsec_ secret (even one made of the public key's bytes) never accepts a v1a signature, and a
	// whpk_ key never a v1 one, however an entry is relabelled.
	pubAsHMAC := "whsec_" + strings.TrimPrefix(edPublic, "whpk_")
	flipped := []byte(v1aSig)
	flipped[10] ^= 1
	ts := func(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }
	hm, ed := []string{hmacSecret}, []string{edPublic}

	tests := []struct {
		name    string
		keys    []string // the Verifier's
		header  http.Header
		body    []byte
		wantErr error // nil means accepted
	}{
		{name: "v1", keys: hm, header: signed(now, hmacSecret), body: body},
		{name: "v1, secret without prefix", keys: []string{strings.TrimPrefix(hmacSecret, "whsec_")}, header: signed(now, hmacSecret), body: body},
		{name: "v1, canonical header names", keys: hm, header: http.Header{
			"Webhook-Id": {"msg_1"}, "Webhook-Timestamp": {ts(now)}, "Webhook-Signature": {v1Entry},
		}, body: body},
		{name: "v1a", keys: ed, header: signed(now, edSecret), body: body},
		{name: "v1a, seed and 64-byte forms sign alike", keys: []string{testPublicKey},
			header: signed(now, "whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk="), body: body},
		{name: "v1 rotation, old secret", keys: hm, header: signed(now, hmacSecret, otherSecret), body: body},
		{name: "v1 rotation, new secret", keys: hm, header: signed(now, otherSecret, hmacSecret), body: body},
		{name: "v1a rotation, old key", keys: []string{otherEdPublic}, header: signed(now, edSecret, otherEdSecret), body: body},
		{name: "v1a rotation, new key", keys: ed, header: signed(now, edSecret, otherEdSecret), body: body},
		{name: "v1 then v1a, HMAC secret", keys: hm, header: signed(now, hmacSecret, edSecret), body: body},
		{name: "v1 then v1a, public key", keys: ed, header: signed(now, hmacSecret, edSecret), body: body},
		{name: "v1a then v1, HMAC secret", keys: hm, header: signed(now, edSecret, hmacSecret), body: body},
		{name: "v1a then v1, public key", keys: ed, header: signed(now, edSecret, hmacSecret), body: body},
		{name: "receiver with both keys, v1 only", keys: []string{edPublic, hmacSecret}, header: signed(now, hmacSecret), body: body},
		{name: "receiver with both keys, v1a only", keys: []string{hmacSecret, edPublic}, header: signed(now, edSecret), body: body},
		{name: "receiver with old and new secrets, new only", keys: []string{otherSecret, hmacSecret}, header: signed(now, hmacSecret), body: body},
		{name: "receiver with old and new public keys, new only", keys: []string{otherEdPublic, edPublic}, header: signed(now, edSecret), body: body},
		{name: "unknown versions are skipped", keys: []string{hmacSecret, edPublic},
			header: with(signed(now, edSecret), headerSignature, "v2,abc v1a v1a, v1a,"+v1Sig+" v1b,"+v1aSig+" "+v1aEntry), body: body},
		{name: "extra spaces between entries", keys: hm,
			header: with(signed(now, hmacSecret), headerSignature, "  v1,AAAA   "+v1Entry+"  "), body: body},
		{name: "4m59s old", keys: hm, header: signed(now.Add(-299*time.Second), hmacSecret), body: body},
		{name: "4m59s ahead", keys: ed, header: signed(now.Add(299*time.Second), edSecret), body: body},
		{name: "5m old", keys: ed, header: signed(now.Add(-5*time.Minute), edSecret), body: body},

		{name: "v1, other secret", keys: []string{otherSecret}, header: signed(now, hmacSecret), body: body, wantErr: ErrInvalidSignature},
		{name: "v1a, other public key", keys: []string{otherEdPublic}, header: signed(now, edSecret), body: body, wantErr: ErrInvalidSignature},
		{name: "v1 only, public key", keys: ed, header: signed(now, hmacSecret), body: body, wantErr: ErrInvalidSignature},
		{name: "v1a only, HMAC secret", keys: hm, header: signed(now, edSecret), body: body, wantErr: ErrInvalidSignature},
		{name: "receiver with two wrong keys", keys: []string{otherSecret, otherEdPublic}, header: signed(now, hmacSecret, edSecret), body: body, wantErr: ErrInvalidSignature},
		{name: "v1a relabelled v1, public key", keys: ed, header: with(signed(now, edSecret), headerSignature, "v1,"+v1aSig), body: body, wantErr: ErrInvalidSignature},
		{name: "v1a relabelled v1, public key bytes as HMAC secret", keys: []string{pubAsHMAC}, header: with(signed(now, edSecret), headerSignature, "v1,"+v1aSig+" "+v1aEntry), body: body, wantErr: ErrInvalidSignature},
		{name: "v1 relabelled v1a, HMAC secret", keys: hm, header: with(signed(now, hmacSecret), headerSignature, "v1a,"+v1Sig), body: body, wantErr: ErrInvalidSignature},
		{name: "v1, tampered body", keys: hm, header: signed(now, hmacSecret), body: []byte(`{"type":"order.created","data":{"id":43}}`), wantErr: ErrInvalidSignature},
		{name: "v1a, tampered body", keys: ed, header: signed(now, edSecret), body: []byte(`{"type":"order.created","data":{"id":43}}`), wantErr: ErrInvalidSignature},
		{name: "v1, trailing newline", keys: hm, header: signed(now, hmacSecret), body: append(bytes.Clone(body), '\n'), wantErr: ErrInvalidSignature},
		{name: "v1a, trailing newline", keys: ed, header: signed(now, edSecret), body: append(bytes.Clone(body), '\n'), wantErr: ErrInvalidSignature},
		{name: "v1, tampered id", keys: hm, header: with(signed(now, hmacSecret), headerID, "msg_2"), body: body, wantErr: ErrInvalidSignature},
		{name: "v1a, tampered id", keys: ed, header: with(signed(now, edSecret), headerID, "msg_2"), body: body, wantErr: ErrInvalidSignature},
		{name: "v1, tampered timestamp", keys: hm, header: with(signed(now, hmacSecret), headerTimestamp, ts(now.Add(time.Second))), body: body, wantErr: ErrInvalidSignature},
		{name: "v1a, tampered timestamp", keys: ed, header: with(signed(now, edSecret), headerTimestamp, ts(now.Add(time.Second))), body: body, wantErr: ErrInvalidSignature},
		{name: "v1 entry labelled v2", keys: hm, header: with(signed(now, hmacSecret), headerSignature, "v2,"+v1Sig), body: body, wantErr: ErrInvalidSignature},
		{name: "v1 signature without version", keys: hm, header: with(signed(now, hmacSecret), headerSignature, v1Sig), body: body, wantErr: ErrInvalidSignature},
		{name: "v1, truncated signature", keys: hm, header: with(signed(now, hmacSecret), headerSignature, strings.TrimSuffix(v1Entry, "=")), body: body, wantErr: ErrInvalidSignature},
		{name: "v1a, truncated signature", keys: ed, header: with(signed(now, edSecret), headerSignature, strings.TrimSuffix(v1aEntry, "==")), body: body, wantErr: ErrInvalidSignature},
		{name: "v1a, flipped signature bit", keys: ed, header: with(signed(now, edSecret), headerSignature, "v1a,"+string(flipped)), body: body, wantErr: ErrInvalidSignature},
		{name: "v1a, padding replaced", keys: ed, header: with(signed(now, edSecret), headerSignature, v1aEntry[:len(v1aEntry)-2]+"AA"), body: body, wantErr: ErrInvalidSignature},
		{name: "v1a, url-safe signature", keys: ed, header: with(signed(now, edSecret), headerSignature, "v1a,"+strings.NewReplacer("+", "-", "/", "_").Replace(v1aSig)), body: body, wantErr: ErrInvalidSignature},
		{name: "garbage signatures", keys: []string{hmacSecret, edPublic}, header: with(signed(now, hmacSecret), headerSignature, "v1,%%%not-base64%%% v1a,%%%"), body: body, wantErr: ErrInvalidSignature},
		{name: "huge v1 signature header", keys: hm, header: with(signed(now, hmacSecret), headerSignature, strings.Repeat("v1,AAAA ", 100_000)), body: body, wantErr: ErrInvalidSignature},
		{name: "huge v1a signature header", keys: ed, header: with(signed(now, edSecret), headerSignature, strings.Repeat("v1a,AAAA ", 100_000)), body: body, wantErr: ErrInvalidSignature},

		{name: "v1, 5m01s old", keys: hm, header: signed(now.Add(-301*time.Second), hmacSecret), body: body, wantErr: ErrInvalidTimestamp},
		{name: "v1a, 6 minutes old", keys: ed, header: signed(now.Add(-6*time.Minute), edSecret), body: body, wantErr: ErrInvalidTimestamp},
		{name: "v1, 6 minutes ahead", keys: hm, header: signed(now.Add(6*time.Minute), hmacSecret), body: body, wantErr: ErrInvalidTimestamp},
		{name: "stale and tampered: the timestamp is checked first", keys: hm, header: signed(now.Add(-time.Hour), otherSecret), body: nil, wantErr: ErrInvalidTimestamp},
		{name: "timestamp in milliseconds", keys: hm, header: with(signed(now, hmacSecret), headerTimestamp, strconv.FormatInt(now.UnixMilli(), 10)), body: body, wantErr: ErrInvalidTimestamp},
		{name: "malformed timestamp", keys: hm, header: with(signed(now, hmacSecret), headerTimestamp, "yesterday"), body: body, wantErr: ErrInvalidTimestamp},
		// One spelling per time: the signature covers the parsed number, so another spelling would verify.
		{name: "timestamp with plus sign", keys: hm, header: with(signed(now, hmacSecret), headerTimestamp, "+"+ts(now)), body: body, wantErr: ErrInvalidTimestamp},
		{name: "timestamp with leading zero", keys: ed, header: with(signed(now, edSecret), headerTimestamp, "0"+ts(now)), body: body, wantErr: ErrInvalidTimestamp},
		{name: "timestamp with leading zeros", keys: hm, header: with(signed(now, hmacSecret), headerTimestamp, "000"+ts(now)), body: body, wantErr: ErrInvalidTimestamp},
		{name: "timestamp with spaces", keys: hm, header: with(signed(now, hmacSecret), headerTimestamp, " "+ts(now)+" "), body: body, wantErr: ErrInvalidTimestamp},
		{name: "RFC 3339 timestamp", keys: hm, header: with(signed(now, hmacSecret), headerTimestamp, now.Format(time.RFC3339)), body: body, wantErr: ErrInvalidTimestamp},
		{name: "min int64 timestamp", keys: hm, header: with(signed(now, hmacSecret), headerTimestamp, "-9223372036854775808"), body: body, wantErr: ErrInvalidTimestamp},
		{name: "max int64 timestamp", keys: hm, header: with(signed(now, hmacSecret), headerTimestamp, "9223372036854775807"), body: body, wantErr: ErrInvalidTimestamp},
		{name: "overflowing timestamp", keys: hm, header: with(signed(now, hmacSecret), headerTimestamp, "99999999999999999999"), body: body, wantErr: ErrInvalidTimestamp},

		{name: "no headers", keys: hm, header: http.Header{}, body: body, wantErr: ErrMissingHeaders},
		{name: "nil header", keys: ed, header: nil, body: body, wantErr: ErrMissingHeaders},
		{name: "missing id", keys: hm, header: without(headerID), body: body, wantErr: ErrMissingHeaders},
		{name: "missing timestamp", keys: hm, header: without(headerTimestamp), body: body, wantErr: ErrMissingHeaders},
		{name: "missing signature", keys: hm, header: without(headerSignature), body: body, wantErr: ErrMissingHeaders},
		{name: "empty signature", keys: hm, header: with(signed(now, hmacSecret), headerSignature, ""), body: body, wantErr: ErrMissingHeaders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := verifierAt(t, now, tt.keys...).Verify(tt.header, tt.body)
			requireVerdict(t, err, tt.wantErr)
			for _, k := range tt.keys {
				assert.NotContains(t, fmt.Sprint(err), k[strings.Index(k, "_")+1:])
			}
		})
	}
}

// TestVerifyBoundsV1aChecks: Verify checks at most maxV1aChecks well-formed v1a entries, each with
// every public key, so a flood of well-formed false entries ahead of the real one is refused rather
// than checked one by one; malformed entries do not count, and v1 entries after the bound still do.
func TestVerifyBoundsV1aChecks(t *testing.T) {
	t.Parallel()
	edSecret, edPublic := newEd25519Key(t)
	_, otherPublic := newEd25519Key(t)
	hmacSecret := newSecret(t)
	body := []byte("{}")
	now := time.Unix(1_700_000_000, 0)
	real := signedHeader(t, "msg_1", now, body, edSecret).Get(headerSignature)
	realV1 := signedHeader(t, "msg_1", now, body, hmacSecret).Get(headerSignature)
	forged := "v1a," + base64.StdEncoding.EncodeToString(make([]byte, ed25519.SignatureSize))

	tests := []struct {
		name       string
		keys       []string
		signatures string
		wantErr    error
	}{
		{name: "real entry last of the bound", keys: []string{edPublic}, signatures: strings.Repeat(forged+" ", maxV1aChecks-1) + real},
		{name: "real entry past the bound", keys: []string{edPublic}, signatures: strings.Repeat(forged+" ", maxV1aChecks) + real, wantErr: ErrInvalidSignature},
		{name: "two public keys: the bound counts entries", keys: []string{otherPublic, edPublic}, signatures: strings.Repeat(forged+" ", maxV1aChecks-1) + real},
		{name: "two public keys, real entry past the bound", keys: []string{otherPublic, edPublic}, signatures: strings.Repeat(forged+" ", maxV1aChecks) + real, wantErr: ErrInvalidSignature},
		{name: "malformed entries do not count", keys: []string{edPublic}, signatures: strings.Repeat("v1a,AAAA v1,"+forged[4:]+" ", 1000) + real},
		{name: "a v1 entry past the bound still counts", keys: []string{edPublic, hmacSecret}, signatures: strings.Repeat(forged+" ", 1000) + realV1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := signedHeader(t, "msg_1", now, body, edSecret)
			h.Set(headerSignature, tt.signatures)
			requireVerdict(t, verifierAt(t, now, tt.keys...).Verify(h, body), tt.wantErr)
		})
	}
}

// TestTolerance: Tolerance bounds the timestamp's distance from Now either way, in whole seconds; zero
// or negative means DefaultTolerance, 5 minutes.
func TestTolerance(t *testing.T) {
	t.Parallel()
	require.Equal(t, 5*time.Minute, DefaultTolerance)
	now := time.Unix(1_700_000_000, 0)
	tests := []struct {
		name      string
		tolerance time.Duration
		skew      time.Duration // the timestamp minus now
		wantErr   error
	}{
		{name: "default, 300 s old", skew: -300 * time.Second},
		{name: "default, 300 s ahead", skew: 300 * time.Second},
		{name: "default, 301 s old", skew: -301 * time.Second, wantErr: ErrInvalidTimestamp},
		{name: "default, 301 s ahead", skew: 301 * time.Second, wantErr: ErrInvalidTimestamp},
		{name: "negative is the default", tolerance: -time.Minute, skew: -300 * time.Second},
		{name: "1 minute, 60 s old", tolerance: time.Minute, skew: -60 * time.Second},
		{name: "1 minute, 61 s old", tolerance: time.Minute, skew: -61 * time.Second, wantErr: ErrInvalidTimestamp},
		{name: "1 minute, 61 s ahead", tolerance: time.Minute, skew: 61 * time.Second, wantErr: ErrInvalidTimestamp},
		{name: "1.9 s is 1 s", tolerance: 1900 * time.Millisecond, skew: 2 * time.Second, wantErr: ErrInvalidTimestamp},
		{name: "1 hour, 59 minutes old", tolerance: time.Hour, skew: -59 * time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := verifierAt(t, now, svixSecret)
			v.Tolerance = tt.tolerance
			requireVerdict(t, v.Verify(signedHeader(t, "msg_1", now.Add(tt.skew), []byte("{}"), svixSecret), []byte("{}")), tt.wantErr)
		})
	}
}

// TestNowDefaultsToTheClock: a Verifier whose Now is nil reads time.Now.
func TestNowDefaultsToTheClock(t *testing.T) {
	t.Parallel()
	v, err := New(svixSecret)
	require.NoError(t, err)
	require.Nil(t, v.Now)
	require.NoError(t, v.Verify(signedHeader(t, "msg_1", time.Now(), []byte("{}"), svixSecret), []byte("{}")))
	require.ErrorIs(t, v.Verify(signedHeader(t, "msg_1", time.Now().Add(-time.Hour), []byte("{}"), svixSecret), []byte("{}")), ErrInvalidTimestamp)
}

// TestVerifierWithoutKeys: a Verifier New did not make refuses every request, with an error that is
// none of the sentinels, and does not panic.
func TestVerifierWithoutKeys(t *testing.T) {
	t.Parallel()
	h := signedHeader(t, "msg_1", time.Now(), []byte("{}"), svixSecret)
	for name, v := range map[string]*Verifier{"nil": nil, "zero": {}} {
		err := v.Verify(h, []byte("{}"))
		require.ErrorContains(t, err, "verify.New", name)
		for _, sentinel := range []error{ErrMissingHeaders, ErrInvalidTimestamp, ErrInvalidSignature} {
			assert.False(t, errors.Is(err, sentinel), "%s: %v", name, err)
		}
	}
}

// TestErrorsNameThePackage: every error a receiver reads from this package starts with "verify: ",
// the package it called, never "webhooks:" (the sender's library, which a receiver need not import).
func TestErrorsNameThePackage(t *testing.T) {
	t.Parallel()
	var zero Verifier
	for name, err := range map[string]error{
		"missing headers":   ErrMissingHeaders,
		"invalid timestamp": ErrInvalidTimestamp,
		"invalid signature": ErrInvalidSignature,
		"zero Verifier":     zero.Verify(http.Header{"Webhook-Id": {"m"}, "Webhook-Timestamp": {strconv.FormatInt(time.Now().Unix(), 10)}, "Webhook-Signature": {"v1,x"}}, nil),
	} {
		require.Error(t, err, name)
		assert.True(t, strings.HasPrefix(err.Error(), "verify: "), "%s: %v", name, err)
	}
}
