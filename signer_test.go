package webhooks

// Tests of the root's signing API: Verify on the current time, its sentinels, and the fuzz targets
// (.ci/run fuzzes the root). The schemes themselves are tested in internal/signing.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/signing"
	"github.com/smartdrop/webhooks/verify"
)

// The example published by the Standard Webhooks specification and used by its reference
// libraries, and a fixed ed25519 key with its signature of that example (see internal/signing).
const (
	specSecret            = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specMsgID             = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specTimestamp         = 1614265330
	specBody              = `{"test": 2432232314}`
	specSignature         = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	v1aSeedKey            = "whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTlk="
	v1aSecretKey          = "whsk_VEVTVFNJR05JTkdLRVlET05PVFVTRVRISVNGT1JBTllmU3h6Dt1JKqLSahf2FBSTeius6i4rdBVBKUlrbjxz+A=="
	v1aPublicKey          = "whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g="
	v1aReferenceSignature = "v1a,tQ9V2XOqn7jL/DQenEFpqIugdBVtiMmER5mhSkXBNwM0mkATuDe6KYYUuxqtaiHeYGb7KaaBRdM5WqyeFiL8Ag=="
)

func mustSigningKey(t testing.TB, secret string) signing.Key {
	t.Helper()
	k, err := signing.ParseKey(secret)
	require.NoError(t, err)
	return k
}

func mustNewSecret(t testing.TB) string {
	t.Helper()
	s, err := signing.NewSecret(signing.V1)
	require.NoError(t, err)
	return s
}

func mustNewEd25519Key(t testing.TB) (secret, public string) {
	t.Helper()
	secret, public, err := NewEd25519Key()
	require.NoError(t, err)
	return secret, public
}

func b64(t testing.TB, s string) []byte {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(s)
	require.NoError(t, err)
	return raw
}

// TestVerifyCanonicalTimestamp (issue 21): Verify accepts only the canonical decimal spelling of the
// timestamp, though the signature (over the parsed number) matches every spelling.
func TestVerifyCanonicalTimestamp(t *testing.T) {
	t.Parallel()
	body := []byte(specBody)
	for _, secret := range []string{specSecret, v1aSecretKey} {
		public := secret
		if secret == v1aSecretKey {
			public = v1aPublicKey
		}
		now := time.Now()
		h := http.Header{}
		signing.SetHeaders(h, specMsgID, now, body, mustSigningKey(t, secret))
		require.NoError(t, Verify(public, h, body))
		ts := strconv.FormatInt(now.Unix(), 10)
		for _, spelling := range []string{"+" + ts, "0" + ts, "000" + ts, " " + ts, ts + " ", "+0" + ts} {
			h.Set("webhook-timestamp", spelling)
			assert.ErrorIs(t, Verify(public, h, body), ErrInvalidTimestamp, "%s: timestamp %q", public, spelling)
		}
	}
}

// TestVerifySentinelsAreVerifyPackages: the root's Verify errors are the verify package's values, so
// errors.Is matches a receiver's error against either name.
func TestVerifySentinelsAreVerifyPackages(t *testing.T) {
	t.Parallel()
	for root, pkg := range map[error]error{
		ErrMissingHeaders:   verify.ErrMissingHeaders,
		ErrInvalidTimestamp: verify.ErrInvalidTimestamp,
		ErrInvalidSignature: verify.ErrInvalidSignature,
	} {
		assert.Same(t, pkg, root)
	}
	v, err := verify.New(specSecret)
	require.NoError(t, err)
	assert.ErrorIs(t, v.Verify(http.Header{}, nil), ErrMissingHeaders)
}

func TestVerifyInvalidSecret(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	signing.SetHeaders(h, "msg_1", time.Now(), []byte("{}"), mustSigningKey(t, specSecret))
	for _, secret := range []string{"", "whsec_", "whsec_***secret***"} {
		err := Verify(secret, h, []byte("{}"))
		require.Error(t, err, "secret %q", secret)
		assert.NotContains(t, err.Error(), "***secret***")
		for _, sentinel := range []error{ErrInvalidSignature, ErrInvalidTimestamp, ErrMissingHeaders} {
			assert.False(t, errors.Is(err, sentinel), "secret %q: %v", secret, err)
		}
	}
}

func TestVerifyUsesCurrentTime(t *testing.T) {
	t.Parallel()
	key := mustSigningKey(t, specSecret)
	body := []byte(specBody)

	h := http.Header{}
	signing.SetHeaders(h, specMsgID, time.Now(), body, key)
	require.NoError(t, Verify(specSecret, h, body))

	// The spec vector was signed in 2021: far out of tolerance today.
	h = http.Header{}
	signing.SetHeaders(h, specMsgID, time.Unix(specTimestamp, 0), body, key)
	require.ErrorIs(t, Verify(specSecret, h, body), ErrInvalidTimestamp)
}

// Fixed secrets for FuzzVerify: the signing one and an unrelated one.
const (
	fuzzSecret      = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	fuzzOtherSecret = "whsec_c2Vjb25kIHNlY3JldCBmb3IgZnV6eiB0ZXN0cw=="
)

// FuzzVerify checks that verification never panics, accepts exactly the
// fresh requests signed with its secret, and never accepts another body,
// another secret or an arbitrary signature header.
func FuzzVerify(f *testing.F) {
	f.Add("msg_1", int64(0), []byte(`{"a":1}`), []byte(`{"a":2}`), "v1,AAAA")
	f.Add(specMsgID, int64(-300), []byte(specBody), []byte(specBody+" "), specSignature)
	f.Add("msg_x", int64(301), []byte{}, []byte{0}, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE= v2,x")
	f.Add("", int64(-1<<62), []byte("\xff\xfe"), []byte(""), "")

	now := time.Unix(1_700_000_000, 0)
	key, otherKey := mustSigningKey(f, fuzzSecret), mustSigningKey(f, fuzzOtherSecret)

	f.Fuzz(func(t *testing.T, msgID string, skew int64, body, other []byte, sigHeader string) {
		skew %= 1 << 40 // keep now+skew far from int64 overflow
		ts := time.Unix(now.Unix()+skew, 0)
		fresh := skew >= -300 && skew <= 300

		h := http.Header{}
		signing.SetHeaders(h, msgID, ts, body, key)
		err := verifyAt(fuzzSecret, h, body, now)
		switch {
		case msgID == "":
			require.ErrorIs(t, err, ErrMissingHeaders)
		case !fresh:
			require.ErrorIs(t, err, ErrInvalidTimestamp)
		default:
			require.NoError(t, err)
		}

		if !bytes.Equal(body, other) {
			require.Error(t, verifyAt(fuzzSecret, h, other, now), "accepted a different body")
		}
		require.Error(t, verifyAt(fuzzOtherSecret, h, body, now), "accepted another secret")

		otherSigned := http.Header{}
		signing.SetHeaders(otherSigned, msgID, ts, body, otherKey)
		require.Error(t, verifyAt(fuzzSecret, otherSigned, body, now), "accepted a signature made with another secret")

		// An arbitrary signature header is only accepted if it carries the real signature.
		h.Set("webhook-signature", sigHeader)
		if verifyAt(fuzzSecret, h, body, now) == nil {
			require.Contains(t, sigHeader, key.Sign(msgID, ts.Unix(), body))
		}

		// Arbitrary header values must not panic.
		h.Set("webhook-timestamp", string(other))
		_ = verifyAt(fuzzSecret, h, body, now)
	})
}

func TestVerifyRefusesSecretKeyAndMalformedPublicKeys(t *testing.T) {
	secret, public := mustNewEd25519Key(t)
	h := http.Header{}
	signing.SetHeaders(h, "msg_1", time.Now(), []byte("{}"), mustSigningKey(t, secret))
	require.NoError(t, Verify(public, h, []byte("{}")))

	for _, key := range []string{
		secret, // receivers verify with the public key
		v1aSeedKey,
		"whpk_",
		"whpk_***public***",
		public[:len(public)-4],
		public + "AAAA",
		"whpk_" + base64.StdEncoding.EncodeToString(make([]byte, 31)),
	} {
		err := Verify(key, h, []byte("{}"))
		require.Error(t, err, "key %q", key)
		assert.NotContains(t, err.Error(), strings.TrimPrefix(secret, "whsk_"))
		assert.NotContains(t, err.Error(), "***public***")
		for _, sentinel := range []error{ErrInvalidSignature, ErrInvalidTimestamp, ErrMissingHeaders} {
			assert.False(t, errors.Is(err, sentinel), "key %q: %v", key, err)
		}
	}
}

func TestVerifyV1aUsesCurrentTime(t *testing.T) {
	h := http.Header{}
	h.Set("webhook-id", specMsgID)
	h.Set("webhook-timestamp", strconv.Itoa(specTimestamp))
	h.Set("webhook-signature", v1aReferenceSignature)
	require.ErrorIs(t, Verify(v1aPublicKey, h, []byte(specBody)), ErrInvalidTimestamp, "signed in 2021")

	h = http.Header{}
	signing.SetHeaders(h, specMsgID, time.Now(), []byte(specBody), mustSigningKey(t, v1aSecretKey))
	require.NoError(t, Verify(v1aPublicKey, h, []byte(specBody)))
}

// FuzzVerifyKey feeds arbitrary strings to Verify as the key, and to the key parsers: none panics,
// and a request signed both ways (v1 by fuzzSecret, v1a by v1aSecretKey) verifies only with a key
// that decodes to one of those two.
func FuzzVerifyKey(f *testing.F) {
	for _, s := range []string{
		"", "whpk_", "whsk_", "whsec_", v1aPublicKey, v1aSecretKey, v1aSeedKey, fuzzSecret, fuzzOtherSecret,
		strings.TrimPrefix(v1aPublicKey, "whpk_"), "whpk_" + strings.TrimPrefix(fuzzSecret, "whsec_"),
		"whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g", "whpk_ZlN4eg7dSSqi0moX9hQUk3orrOouK3QVQSlJa248c/g=\n",
		"whsk_AAAA", "whpk_" + strings.Repeat("A", 10_000), "whsk_\xff\xfe",
	} {
		f.Add(s)
	}
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"a":1}`)
	h := http.Header{}
	signing.SetHeaders(h, "msg_1", now, body, mustSigningKey(f, fuzzSecret), mustSigningKey(f, v1aSecretKey))
	hmacKey := b64(f, strings.TrimPrefix(fuzzSecret, "whsec_"))
	pub := b64(f, strings.TrimPrefix(v1aPublicKey, "whpk_"))

	f.Fuzz(func(t *testing.T, key string) {
		if err := verifyAt(key, h, body, now); err == nil {
			// An independent decoding of the key: it must be one of the two that signed.
			if rest, ok := strings.CutPrefix(key, "whpk_"); ok {
				p, err := base64.StdEncoding.DecodeString(rest)
				require.NoError(t, err)
				require.Equal(t, pub, p, "accepted v1a with another public key")
			} else {
				k, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(key, "whsec_"))
				require.NoError(t, err)
				require.Equal(t, hmacKey, k, "accepted v1 with another secret")
			}
		}
		if sk, err := signing.ParseKey(key); err == nil {
			require.Contains(t, []signing.Scheme{signing.V1, signing.V1a}, sk.Scheme())
			require.Equal(t, signing.SchemeOf(key), sk.Scheme())
			if sk.Scheme() == signing.V1a {
				public, err := PublicKey(key)
				require.NoError(t, err)
				signed := http.Header{}
				signing.SetHeaders(signed, "msg_2", now, body, sk)
				require.NoError(t, verifyAt(public, signed, body, now), "PublicKey is the signing key's")
				require.NoError(t, validateSigningSecret(key))
			}
		} else {
			_, err := PublicKey(key)
			if signing.SchemeOf(key) == signing.V1a {
				require.Error(t, err)
			}
		}
	})
}
