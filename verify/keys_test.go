package verify

// Fixed keys and test vectors shared by the package's tests, and helpers that sign with the library's
// own signer (internal/signing).

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/signing"
)

// Svix's published test vectors: one message signed with an HMAC secret (v1) and with an ed25519 key
// (v1a) given as its 64 bytes, seed then public key. svixPublicKey is "whpk_" + base64 of that key's
// last 32 bytes (TestSvixPublicKeyIsTheKeysPublicHalf).
const (
	svixSecret       = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	svixMsgID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	svixTimestamp    = 1614265330
	svixBody         = `{"test": 2432232314}`
	svixV1Signature  = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	svixEd25519Key   = "6Xb/dCcHpPea21PS1N9VY/NZW723CEc77N4rJCubMbfVKIDij2HKpMKkioLlX0dRqSKJp4AJ6p9lMicMFs6Kvg=="
	svixSecretKey    = "whsk_" + svixEd25519Key
	svixPublicKey    = "whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZTInDBbOir4="
	svixV1aSignature = "v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg=="
)

// More fixed keys: a second HMAC secret (32 bytes: "a second secret, for rotations!!"), and the ed25519
// key of seed "TESTSIGNINGKEYDONOTUSETHISFORANY" (internal/signing's fixed key) in both forms.
const (
	secondSecret     = "whsec_YSBzZWNvbmQgc2VjcmV0LCBmb3Igcm90YXRpb25zISE="
	testSecretKey    = "whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTllmU3h6Dt1JKqLSahf2FBSTeius6i4rdBVBKUlrbjxz+A=="
	testPublicKey    = "whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g="
	unrelatedSecret  = "whsec_YW4gdW5yZWxhdGVkIHNlY3JldCwgbmV2ZXIgc2VuZHM="
	secretWithoutTag = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // svixSecret without "whsec_"
)

// signingKeys parses secrets ("whsec_" or "whsk_") into the library signer's keys.
func signingKeys(t testing.TB, secrets ...string) []signing.Key {
	t.Helper()
	keys := make([]signing.Key, len(secrets))
	for i, s := range secrets {
		k, err := signing.ParseKey(s)
		require.NoError(t, err, "secret %d", i)
		keys[i] = k
	}
	return keys
}

// signedHeader returns the headers the library's signer sets on the request msgID sent at ts with body,
// signed by every secret in order.
func signedHeader(t testing.TB, msgID string, ts time.Time, body []byte, secrets ...string) http.Header {
	t.Helper()
	h := http.Header{}
	signing.SetHeaders(h, msgID, ts, body, signingKeys(t, secrets...)...)
	return h
}

// newEd25519Key returns a fresh "whsk_" secret key and its "whpk_" public key.
func newEd25519Key(t testing.TB) (secret, public string) {
	t.Helper()
	secret, public, err := signing.NewEd25519Key()
	require.NoError(t, err)
	return secret, public
}

// newSecret returns a fresh "whsec_" secret.
func newSecret(t testing.TB) string {
	t.Helper()
	s, err := signing.NewSecret(signing.V1)
	require.NoError(t, err)
	return s
}

// verifierAt returns a Verifier of keys whose clock says now.
func verifierAt(t testing.TB, now time.Time, keys ...string) *Verifier {
	t.Helper()
	v, err := New(keys...)
	require.NoError(t, err)
	v.Now = func() time.Time { return now }
	return v
}

// requireVerdict requires err to be want: nil for a request that verifies, otherwise an error that is
// (or wraps) the sentinel want.
func requireVerdict(t testing.TB, err, want error) {
	t.Helper()
	if want == nil {
		require.NoError(t, err)
		return
	}
	require.ErrorIs(t, err, want)
}
