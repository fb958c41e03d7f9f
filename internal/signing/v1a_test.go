package signing

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A fixed ed25519 key: the 32-byte seed "TESTSIGNINGKEYDONOTUSETHISFORANY", the test key of the
// asymmetric support proposed for the reference Go library (standard-webhooks/standard-webhooks
// pull request 253, libraries/go/webhook_asymmetric_test.go), and its 64-byte and public forms.
// testMinSecretBytes is the root package's minSecretBytes.
const testMinSecretBytes = 24

const (
	v1aSeedKey   = "whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk="
	v1aSecretKey = "whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTllmU3h6Dt1JKqLSahf2FBSTeius6i4rdBVBKUlrbjxz+A=="
	v1aPublicKey = "whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g="
	// That library's expected signature of the specification's example message under the key.
	v1aReferenceSignature = "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag=="
)

func mustNewEd25519Key(t testing.TB) (secret, public string) {
	t.Helper()
	secret, public, err := NewEd25519Key()
	require.NoError(t, err)
	return secret, public
}

func mustSigningKey(t testing.TB, secret string) Key {
	t.Helper()
	k, err := ParseKey(secret)
	require.NoError(t, err)
	return k
}

func b64(t testing.TB, s string) []byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	return raw
}

func TestNewEd25519Key(t *testing.T) {
	secret, public := mustNewEd25519Key(t)
	secret2, public2 := mustNewEd25519Key(t)
	assert.NotEqual(t, secret, secret2)
	assert.NotEqual(t, public, public2)

	require.True(t, strings.HasPrefix(secret, "whsk_"), secret)
	require.True(t, strings.HasPrefix(public, "whpk_"), public)
	priv := b64(t, strings.TrimPrefix(secret, "whsk_"))
	pub := b64(t, strings.TrimPrefix(public, "whpk_"))
	require.Len(t, priv, ed25519.PrivateKeySize, "whsk_ holds the 64-byte private key, seed || public key")
	require.Len(t, pub, ed25519.PublicKeySize)
	assert.Equal(t, pub, priv[ed25519.SeedSize:])
	assert.Equal(t, ed25519.NewKeyFromSeed(priv[:ed25519.SeedSize]), ed25519.PrivateKey(priv))

	got, err := PublicKey(secret)
	require.NoError(t, err)
	assert.Equal(t, public, got)
}

func TestPublicKeyFixedKey(t *testing.T) {
	for _, secret := range []string{v1aSecretKey, v1aSeedKey} {
		got, err := PublicKey(secret)
		require.NoError(t, err, secret)
		assert.Equal(t, v1aPublicKey, got, "seed and 64-byte forms are the same key")
	}
	assert.Equal(t, mustSigningKey(t, v1aSecretKey), mustSigningKey(t, v1aSeedKey))
}

func TestEd25519SecretKeyMalformed(t *testing.T) {
	seed := b64(t, strings.TrimPrefix(v1aSeedKey, "whsk_"))
	full := b64(t, strings.TrimPrefix(v1aSecretKey, "whsk_"))
	otherSecret, _ := mustNewEd25519Key(t)
	mismatched := append(bytes.Clone(full[:32]), b64(t, strings.TrimPrefix(otherSecret, "whsk_"))[32:]...)
	enc := base64.StdEncoding.EncodeToString

	for name, secret := range map[string]string{
		"empty":                    "",
		"prefix only":              "whsk_",
		"no prefix":                strings.TrimPrefix(v1aSecretKey, "whsk_"),
		"whsec_ prefix":            "whsec_" + enc(seed),
		"whpk_ prefix":             v1aPublicKey,
		"bad base64":               "whsk_***secret***",
		"url-safe base64":          "whsk_" + base64.URLEncoding.EncodeToString(full),
		"embedded space":           "whsk_" + enc(seed)[:8] + " " + enc(seed)[8:],
		"31 bytes":                 "whsk_" + enc(seed[:31]),
		"33 bytes":                 "whsk_" + enc(append(bytes.Clone(seed), 0)),
		"63 bytes":                 "whsk_" + enc(full[:63]),
		"65 bytes":                 "whsk_" + enc(append(bytes.Clone(full), 0)),
		"public half of other key": "whsk_" + enc(mismatched),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := PublicKey(secret)
			require.Error(t, err)
			_, err = decodePrivateKey(secret)
			require.Error(t, err)
			if rest := strings.TrimPrefix(secret, "whsk_"); len(rest) > 8 {
				assert.NotContains(t, err.Error(), rest)
			}
			if strings.HasPrefix(secret, "whsk_") {
				_, err := ParseKey(secret)
				require.Error(t, err, "a malformed whsk_ key is never read as an HMAC secret")
				require.Error(t, CheckSecret(secret, testMinSecretBytes))
			}
		})
	}
}

func TestEd25519PublicKeyMalformed(t *testing.T) {
	pub := b64(t, strings.TrimPrefix(v1aPublicKey, "whpk_"))
	enc := base64.StdEncoding.EncodeToString
	for name, public := range map[string]string{
		"empty":         "",
		"prefix only":   "whpk_",
		"no prefix":     strings.TrimPrefix(v1aPublicKey, "whpk_"),
		"bad base64":    "whpk_***public***",
		"31 bytes":      "whpk_" + enc(pub[:31]),
		"33 bytes":      "whpk_" + enc(append(bytes.Clone(pub), 0)),
		"64 bytes":      "whpk_" + enc(b64(t, strings.TrimPrefix(v1aSecretKey, "whsk_"))),
		"secret prefix": "whsk_" + enc(pub),
	} {
		t.Run(name, func(t *testing.T) {
			_, err := decodePublicKey(public)
			require.Error(t, err)
		})
	}
}

func TestParseKey(t *testing.T) {
	k := mustSigningKey(t, specSecret)
	assert.Equal(t, mustDecode(t, specSecret), k.hmac)
	assert.Nil(t, k.ed)
	assert.Equal(t, mustDecode(t, specSecret), mustSigningKey(t, strings.TrimPrefix(specSecret, "whsec_")).hmac)

	k = mustSigningKey(t, v1aSecretKey)
	assert.Nil(t, k.hmac)
	assert.Equal(t, ed25519.PrivateKey(b64(t, strings.TrimPrefix(v1aSecretKey, "whsk_"))), k.ed)

	_, err := ParseKey(v1aPublicKey)
	require.Error(t, err, "a public key cannot sign")
	for _, bad := range []string{"", "whsec_", "whsec_***"} {
		_, err := ParseKey(bad)
		require.Error(t, err, bad)
	}
}

func TestCheckSecret(t *testing.T) {
	secret, public := mustNewEd25519Key(t)
	assert.NoError(t, CheckSecret(secret, testMinSecretBytes))
	assert.NoError(t, CheckSecret(v1aSeedKey, testMinSecretBytes))
	assert.NoError(t, CheckSecret(mustNewSecret(t), testMinSecretBytes))
	assert.NoError(t, CheckSecret(specSecret, testMinSecretBytes), "24 bytes is the minimum")
	for _, bad := range []string{"", public, "whsec_" + base64.StdEncoding.EncodeToString(make([]byte, testMinSecretBytes-1)), "whsk_", "whsk_AAAA"} {
		require.Error(t, CheckSecret(bad, testMinSecretBytes), "%q", bad)
	}
}

func TestNewSecretSchemes(t *testing.T) {
	s, err := NewSecret(V1a)
	require.NoError(t, err)
	assert.Equal(t, V1a, SchemeOf(s))
	assert.NotNil(t, mustSigningKey(t, s).ed)
	s, err = NewSecret(V1)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(s, "whsec_"))
	assert.Len(t, mustSigningKey(t, s).hmac, 32)
}

// TestSignV1aReferenceVector: the signature of the specification's example message matches the one
// computed by another implementation (see v1aSeedKey), from either form of the key.
func TestSignV1aReferenceVector(t *testing.T) {
	for _, secret := range []string{v1aSeedKey, v1aSecretKey} {
		got := signatures(specMsgID, time.Unix(specTimestamp, 0), []byte(specBody), mustSigningKey(t, secret))
		assert.Equal(t, v1aReferenceSignature, got)
	}
	h := http.Header{}
	h.Set(headerID, specMsgID)
	h.Set(headerTimestamp, strconv.Itoa(specTimestamp))
	h.Set(headerSignature, v1aReferenceSignature)
	assert.NoError(t, verifyAt(v1aPublicKey, h, []byte(specBody), time.Unix(specTimestamp, 0)))
}

// TestSignV1aMatchesSpec builds the signed content "{msg_id}.{timestamp}.{payload}" by hand, as the
// specification describes it, and checks the v1a entry with crypto/ed25519 directly.
func TestSignV1aMatchesSpec(t *testing.T) {
	secret, public := mustNewEd25519Key(t)
	pub := ed25519.PublicKey(b64(t, strings.TrimPrefix(public, "whpk_")))
	ts := time.Unix(1674087231, 0)
	body := []byte(`{"type":"contact.created","timestamp":"2022-11-03T20:26:10.344522Z","data":{"id":"1f81eb52-5198-4599-803e-771906343485"}}`)

	h := http.Header{}
	SetHeaders(h, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", ts, body, mustSigningKey(t, secret))
	assert.Equal(t, "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", h.Get("webhook-id"))
	assert.Equal(t, "1674087231", h.Get("webhook-timestamp"))
	entry := h.Get("webhook-signature")
	enc, ok := strings.CutPrefix(entry, "v1a,")
	require.True(t, ok, entry)
	sig, err := base64.StdEncoding.Strict().DecodeString(enc)
	require.NoError(t, err)
	require.Len(t, sig, ed25519.SignatureSize)

	content := "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W.1674087231." + string(body)
	assert.True(t, ed25519.Verify(pub, []byte(content), sig))
	assert.False(t, ed25519.Verify(pub, []byte(content+" "), sig))
	assert.Equal(t, []byte(content), signedContent("msg_2KWPBgLlAfxdpx2AI54pPJ85f4W", 1674087231, body))
}

// TestSignaturesMixedV1V1a: during a rotation one header carries v1 and v1a entries, in key order,
// and the v1 entry is byte-identical to the bare HMAC of the secret.
func TestSignaturesMixedV1V1a(t *testing.T) {
	ts := time.Unix(specTimestamp, 0)
	got := signatures(specMsgID, ts, []byte(specBody), mustSigningKey(t, specSecret), mustSigningKey(t, v1aSeedKey))
	assert.Equal(t, specSignature+" "+v1aReferenceSignature, got)
	got = signatures(specMsgID, ts, []byte(specBody), mustSigningKey(t, v1aSecretKey), mustSigningKey(t, specSecret))
	assert.Equal(t, v1aReferenceSignature+" "+specSignature, got)
	assert.Equal(t, "v1,"+signHMAC(mustDecode(t, specSecret), specMsgID, specTimestamp, []byte(specBody)),
		signatures(specMsgID, ts, []byte(specBody), mustSigningKey(t, specSecret)))
}

func TestVerifyV1a(t *testing.T) {
	body := []byte(`{"type":"order.created","data":{"id":42}}`)
	now := time.Unix(1_700_000_000, 0)
	edSecret, edPublic := mustNewEd25519Key(t)
	// The "url-safe signature" case needs a signature whose URL-safe base64 differs from the standard one
	// (about 1 in 16 random signatures has neither '+' nor '/').
	for !strings.ContainsAny(mustSigningKey(t, edSecret).Sign("msg_1", now.Unix(), body), "+/") {
		edSecret, edPublic = mustNewEd25519Key(t)
	}
	otherEdSecret, otherEdPublic := mustNewEd25519Key(t)
	hmacSecret := mustNewSecret(t)
	ed, otherEd, hm := mustSigningKey(t, edSecret), mustSigningKey(t, otherEdSecret), mustSigningKey(t, hmacSecret)

	signed := func(ts time.Time, keys ...Key) http.Header {
		h := http.Header{}
		SetHeaders(h, "msg_1", ts, body, keys...)
		return h
	}
	with := func(h http.Header, name, value string) http.Header {
		h.Set(name, value)
		return h
	}
	v1aEntry := ed.Sign("msg_1", now.Unix(), body)
	v1Entry := hm.Sign("msg_1", now.Unix(), body)
	v1aSig, v1Sig := strings.TrimPrefix(v1aEntry, "v1a,"), strings.TrimPrefix(v1Entry, "v1,")
	// A whsec_ secret (even one made of the public key's bytes) never accepts a v1a signature, and a
	// whpk_ key never a v1 one, however an entry is relabelled.
	pubAsHMAC := "whsec_" + strings.TrimPrefix(edPublic, "whpk_")
	flipped := []byte(v1aSig)
	flipped[10] ^= 1

	tests := []struct {
		name    string
		key     string
		header  http.Header
		body    []byte
		wantErr error // nil means accepted
	}{
		{name: "round trip", key: edPublic, header: signed(now, ed), body: body},
		{name: "64-byte and seed forms sign alike", key: v1aPublicKey, header: signed(now, mustSigningKey(t, v1aSeedKey)), body: body},
		{name: "mixed v1 v1a, public key", key: edPublic, header: signed(now, hm, ed), body: body},
		{name: "mixed v1 v1a, HMAC secret", key: hmacSecret, header: signed(now, hm, ed), body: body},
		{name: "mixed v1a v1, public key", key: edPublic, header: signed(now, ed, hm), body: body},
		{name: "mixed v1a v1, HMAC secret", key: hmacSecret, header: signed(now, ed, hm), body: body},
		{name: "v1a rotation, old key", key: otherEdPublic, header: signed(now, ed, otherEd), body: body},
		{name: "v1a rotation, new key", key: edPublic, header: signed(now, ed, otherEd), body: body},
		{name: "unknown versions are skipped", key: edPublic, header: with(signed(now, ed), headerSignature, "v2,abc v1a v1a, v1a,"+v1Sig+" v1b,"+v1aSig+" "+v1aEntry), body: body},
		{name: "4m59s old", key: edPublic, header: signed(now.Add(-299*time.Second), ed), body: body},
		{name: "4m59s ahead", key: edPublic, header: signed(now.Add(299*time.Second), ed), body: body},

		{name: "v1a only, HMAC secret", key: hmacSecret, header: signed(now, ed), body: body, wantErr: ErrInvalidSignature},
		{name: "v1 only, public key", key: edPublic, header: signed(now, hm), body: body, wantErr: ErrInvalidSignature},
		{name: "v1a relabelled v1, public key", key: edPublic, header: with(signed(now, ed), headerSignature, "v1,"+v1aSig), body: body, wantErr: ErrInvalidSignature},
		{name: "v1a relabelled v1, public key bytes as HMAC secret", key: pubAsHMAC, header: with(signed(now, ed), headerSignature, "v1,"+v1aSig+" "+v1aEntry), body: body, wantErr: ErrInvalidSignature},
		{name: "v1 relabelled v1a, HMAC secret", key: hmacSecret, header: with(signed(now, hm), headerSignature, "v1a,"+v1Sig), body: body, wantErr: ErrInvalidSignature},
		{name: "other key", key: otherEdPublic, header: signed(now, ed), body: body, wantErr: ErrInvalidSignature},
		{name: "tampered body", key: edPublic, header: signed(now, ed), body: []byte(`{"type":"order.created","data":{"id":43}}`), wantErr: ErrInvalidSignature},
		{name: "trailing newline", key: edPublic, header: signed(now, ed), body: append(bytes.Clone(body), '\n'), wantErr: ErrInvalidSignature},
		{name: "tampered id", key: edPublic, header: with(signed(now, ed), headerID, "msg_2"), body: body, wantErr: ErrInvalidSignature},
		{name: "tampered timestamp", key: edPublic, header: with(signed(now, ed), headerTimestamp, strconv.FormatInt(now.Unix()+1, 10)), body: body, wantErr: ErrInvalidSignature},
		{name: "flipped signature bit", key: edPublic, header: with(signed(now, ed), headerSignature, "v1a,"+string(flipped)), body: body, wantErr: ErrInvalidSignature},
		{name: "truncated signature", key: edPublic, header: with(signed(now, ed), headerSignature, strings.TrimSuffix(v1aEntry, "==")), body: body, wantErr: ErrInvalidSignature},
		{name: "padding replaced", key: edPublic, header: with(signed(now, ed), headerSignature, v1aEntry[:len(v1aEntry)-2]+"AA"), body: body, wantErr: ErrInvalidSignature},
		{name: "url-safe signature", key: edPublic, header: with(signed(now, ed), headerSignature,
			"v1a,"+base64.URLEncoding.EncodeToString(b64(t, v1aSig))), body: body, wantErr: ErrInvalidSignature},
		{name: "garbage signature", key: edPublic, header: with(signed(now, ed), headerSignature, "v1a,%%%not-base64%%%"), body: body, wantErr: ErrInvalidSignature},
		{name: "huge signature header", key: edPublic,
			header: with(signed(now, ed), headerSignature, strings.Repeat("v1a,AAAA ", 100_000)), body: body, wantErr: ErrInvalidSignature},
		{name: "6 minutes old", key: edPublic, header: signed(now.Add(-6*time.Minute), ed), body: body, wantErr: ErrInvalidTimestamp},
		{name: "6 minutes ahead", key: edPublic, header: signed(now.Add(6*time.Minute), ed), body: body, wantErr: ErrInvalidTimestamp},
		{name: "malformed timestamp", key: edPublic, header: with(signed(now, ed), headerTimestamp, "yesterday"), body: body, wantErr: ErrInvalidTimestamp},
		{name: "no headers", key: edPublic, header: http.Header{}, body: body, wantErr: ErrMissingHeaders},
		{name: "nil header", key: edPublic, header: nil, body: body, wantErr: ErrMissingHeaders},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := verifyAt(tt.key, tt.header, tt.body, now)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
		})
	}
}

// TestVerifyV1aBoundsChecks: Verify makes at most maxV1aChecks ed25519 verifications, so a flood of
// well-formed false entries ahead of the real one is refused rather than checked one by one.
func TestVerifyV1aBoundsChecks(t *testing.T) {
	secret, public := mustNewEd25519Key(t)
	k := mustSigningKey(t, secret)
	body := []byte("{}")
	now := time.Unix(1_700_000_000, 0)
	real := k.Sign("msg_1", now.Unix(), body)
	forged := "v1a," + base64.StdEncoding.EncodeToString(make([]byte, ed25519.SignatureSize))

	h := http.Header{}
	SetHeaders(h, "msg_1", now, body, k)
	h.Set(headerSignature, strings.Repeat(forged+" ", maxV1aChecks-1)+real)
	require.NoError(t, verifyAt(public, h, body, now))
	h.Set(headerSignature, strings.Repeat(forged+" ", maxV1aChecks)+real)
	require.ErrorIs(t, verifyAt(public, h, body, now), ErrInvalidSignature)
	// Entries that are not well formed do not count.
	h.Set(headerSignature, strings.Repeat("v1a,AAAA v1,"+forged[4:]+" ", 1000)+real)
	require.NoError(t, verifyAt(public, h, body, now))
}
