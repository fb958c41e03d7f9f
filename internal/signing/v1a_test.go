package signing

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
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
// computed by another implementation (see v1aSeedKey), from either form of the key. (The verify
// package's tests check it verifies with v1aPublicKey.)
func TestSignV1aReferenceVector(t *testing.T) {
	for _, secret := range []string{v1aSeedKey, v1aSecretKey} {
		got := signatures(specMsgID, time.Unix(specTimestamp, 0), []byte(specBody), mustSigningKey(t, secret))
		assert.Equal(t, v1aReferenceSignature, got)
	}
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
	assert.Equal(t, "v1,"+base64.StdEncoding.EncodeToString(signHMAC(hmac.New(sha256.New, mustDecode(t, specSecret)), specMsgID, specTimestamp, []byte(specBody))),
		signatures(specMsgID, ts, []byte(specBody), mustSigningKey(t, specSecret)))
}
