package webhooks

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// VerifyTolerance is how far the webhook-timestamp header may be from the
// receiver's clock, in either direction, for Verify to accept a request.
const VerifyTolerance = 5 * time.Minute

const secretPrefix = "whsec_"

// Standard Webhooks header names.
const (
	headerID        = "webhook-id"
	headerTimestamp = "webhook-timestamp"
	headerSignature = "webhook-signature"

	// The same in the canonical form http.Header keeps them in.
	canonicalID        = "Webhook-Id"
	canonicalTimestamp = "Webhook-Timestamp"
	canonicalSignature = "Webhook-Signature"
)

// newSecret returns a fresh random signing secret in the "whsec_<base64>" form.
func newSecret() (string, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("webhooks: generate secret: %w", err)
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// decodeSecret returns the HMAC key of a secret, with or without its "whsec_" prefix.
func decodeSecret(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	if err != nil {
		return nil, errors.New("webhooks: secret is not valid base64")
	}
	if len(key) == 0 {
		return nil, errors.New("webhooks: secret is empty")
	}
	return key, nil
}

// signHMAC returns the base64 HMAC-SHA256 of "msgID.ts.body" under key: a v1 signature.
func signHMAC(key []byte, msgID string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, ts, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// signedContent returns "msgID.ts.body", the content every Standard Webhooks signature covers.
func signedContent(msgID string, ts int64, body []byte) []byte {
	b := make([]byte, 0, len(msgID)+22+len(body))
	b = append(b, msgID...)
	b = append(b, '.')
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, '.')
	return append(b, body...)
}

// signingKey is a decoded webhook secret (see parseSigningKey): an HMAC-SHA256 key, which makes
// "v1" signatures, or an ed25519 private key, which makes "v1a" ones. The zero value is not a key.
type signingKey struct {
	hmac []byte             // set for a whsec_ secret
	ed   ed25519.PrivateKey // set for a whsk_ key
}

// sign returns the webhook-signature entry of key for "msgID.ts.body": "v1,<base64 HMAC-SHA256>"
// or "v1a,<base64 ed25519 signature>".
func (k signingKey) sign(msgID string, ts int64, body []byte) string {
	if k.ed != nil {
		return "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(k.ed, signedContent(msgID, ts, body)))
	}
	return "v1," + signHMAC(k.hmac, msgID, ts, body)
}

// keyMaterial is what requests are signed with: signingKeys (v1 or v1a), or bare HMAC keys as
// decodeSecret returns them (v1).
type keyMaterial interface{ []byte | signingKey }

// signatures returns the webhook-signature header value: one entry per key, in order, space
// separated; "v1,<base64>" for an HMAC key, "v1a,<base64>" for an ed25519 one. During a rotation
// the two kinds may be mixed.
func signatures[K keyMaterial](msgID string, ts time.Time, body []byte, keys ...K) string {
	entries := make([]string, len(keys))
	for i, key := range keys {
		switch key := any(key).(type) {
		case []byte:
			entries[i] = "v1," + signHMAC(key, msgID, ts.Unix(), body)
		case signingKey:
			entries[i] = key.sign(msgID, ts.Unix(), body)
		}
	}
	return strings.Join(entries, " ")
}

// setSignedHeaders sets webhook-id, webhook-timestamp and webhook-signature on h.
func setSignedHeaders[K keyMaterial](h http.Header, msgID string, ts time.Time, body []byte, keys ...K) {
	// Keys in canonical form, set directly: Set would canonicalise them again on every request.
	h[canonicalID] = []string{msgID}
	h[canonicalTimestamp] = []string{strconv.FormatInt(ts.Unix(), 10)}
	h[canonicalSignature] = []string{signatures(msgID, ts, body, keys...)}
}

// maxV1aChecks bounds the ed25519 verifications one Verify makes: each costs tens of microseconds,
// and a header of thousands of well-formed but false v1a entries must not make a receiver spend
// seconds on one request. A producer sends one entry per key it signs with (two during a rotation).
const maxV1aChecks = 16

// Verify checks that a received webhook is fresh and was signed by secret, one of:
//
//   - an HMAC signing secret, "whsec_" + base64 (the prefix is optional): some "v1" entry of the
//     webhook-signature header must match;
//   - an ed25519 public key, "whpk_" + base64 of 32 bytes: some "v1a" entry must be its valid
//     signature.
//
// Entries of other versions are ignored, so a header signed both ways (as during a rotation from
// one kind of key to the other) verifies with either key. A "whsk_" secret key is refused: receivers
// verify with its public key (see PublicKey). It returns nil if the request verifies; otherwise the
// error wraps ErrMissingHeaders, ErrInvalidTimestamp or ErrInvalidSignature, or, for a malformed
// key, none of them. Errors never contain the key.
func Verify(secret string, h http.Header, body []byte) error {
	return verifyAt(secret, h, body, time.Now())
}

// verifyKey is a key Verify checks signatures with.
type verifyKey struct {
	hmac []byte            // v1
	pub  ed25519.PublicKey // v1a
}

func parseVerifyKey(secret string) (verifyKey, error) {
	switch {
	case strings.HasPrefix(secret, publicKeyPrefix):
		pub, err := decodePublicKey(secret)
		return verifyKey{pub: pub}, err
	case isPrivateKey(secret):
		return verifyKey{}, errors.New("webhooks: verify with the " + publicKeyPrefix + " public key, not the " + privateKeyPrefix + " secret key")
	default:
		key, err := decodeSecret(secret)
		return verifyKey{hmac: key}, err
	}
}

// verifyAt is Verify with the current time given as now.
func verifyAt(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := parseVerifyKey(secret)
	if err != nil {
		return err
	}
	msgID, tsHeader, sigHeader := h.Get(headerID), h.Get(headerTimestamp), h.Get(headerSignature)
	if msgID == "" || tsHeader == "" || sigHeader == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil {
		return fmt.Errorf("%w: malformed timestamp", ErrInvalidTimestamp)
	}
	// Compare in seconds so that absurd timestamps cannot overflow.
	tolerance := int64(VerifyTolerance / time.Second)
	switch nowSec := now.Unix(); {
	case ts < nowSec-tolerance:
		return fmt.Errorf("%w: too old", ErrInvalidTimestamp)
	case ts > nowSec+tolerance:
		return fmt.Errorf("%w: too new", ErrInvalidTimestamp)
	}
	if key.pub != nil {
		return verifyV1a(key.pub, sigHeader, msgID, ts, body)
	}
	want := []byte(signHMAC(key.hmac, msgID, ts, body))
	for entry := range strings.FieldsSeq(sigHeader) {
		version, sig, _ := strings.Cut(entry, ",")
		if version == "v1" && hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrInvalidSignature
}

// verifyV1a returns nil if some "v1a" entry of sigHeader is pub's ed25519 signature of
// "msgID.ts.body", else ErrInvalidSignature. It checks at most maxV1aChecks well-formed entries.
func verifyV1a(pub ed25519.PublicKey, sigHeader, msgID string, ts int64, body []byte) error {
	var content []byte // built at the first well-formed entry
	var sig [ed25519.SignatureSize + 3]byte
	checks := 0
	for entry := range strings.FieldsSeq(sigHeader) {
		version, enc, _ := strings.Cut(entry, ",")
		if version != "v1a" || len(enc) != base64.StdEncoding.EncodedLen(ed25519.SignatureSize) {
			continue
		}
		n, err := base64.StdEncoding.Strict().Decode(sig[:], []byte(enc))
		if err != nil || n != ed25519.SignatureSize {
			continue
		}
		if checks++; checks > maxV1aChecks {
			break
		}
		if content == nil {
			content = signedContent(msgID, ts, body)
		}
		if ed25519.Verify(pub, content, sig[:n]) {
			return nil
		}
	}
	return ErrInvalidSignature
}
