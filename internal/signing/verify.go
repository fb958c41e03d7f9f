package signing

// Verify: the receiver's check of a signed request.

import (
	"crypto/ed25519"
	"crypto/hmac"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Errors of Verify; the root package's ErrMissingHeaders, ErrInvalidTimestamp and
// ErrInvalidSignature are these.
var (
	ErrMissingHeaders   = errors.New("webhooks: missing webhook headers")
	ErrInvalidTimestamp = errors.New("webhooks: timestamp out of tolerance")
	ErrInvalidSignature = errors.New("webhooks: invalid signature")
)

// Standard Webhooks header names, as Verify reads them.
const (
	headerID        = "webhook-id"
	headerTimestamp = "webhook-timestamp"
	headerSignature = "webhook-signature"
)

// maxV1aChecks bounds the ed25519 verifications one Verify makes: each costs tens of microseconds,
// and a header of thousands of well-formed but false v1a entries must not make a receiver spend
// seconds on one request. A producer sends one entry per key it signs with (two during a rotation).
const maxV1aChecks = 16

// Verify checks that a received webhook is fresh (its webhook-timestamp, a canonical decimal count
// of seconds, within tolerance of now) and was signed by secret, one of:
//
//   - an HMAC signing secret, "whsec_" + base64 (the prefix is optional): some "v1" entry of the
//     webhook-signature header must match;
//   - an ed25519 public key, "whpk_" + base64 of 32 bytes: some "v1a" entry must be its valid
//     signature (at most maxV1aChecks well-formed entries are checked).
//
// Entries of other versions are ignored. A "whsk_" secret key is refused: receivers verify with its
// public key. It returns nil if the request verifies; otherwise the error wraps ErrMissingHeaders,
// ErrInvalidTimestamp or ErrInvalidSignature, or, for a malformed key, none of them. Errors never
// contain the key.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := parseVerifyKey(secret)
	if err != nil {
		return err
	}
	msgID, tsHeader, sigHeader := h.Get(headerID), h.Get(headerTimestamp), h.Get(headerSignature)
	if msgID == "" || tsHeader == "" || sigHeader == "" {
		return ErrMissingHeaders
	}
	ts, err := strconv.ParseInt(tsHeader, 10, 64)
	if err != nil || strconv.FormatInt(ts, 10) != tsHeader { // no sign, no leading zero: one spelling per time
		return fmt.Errorf("%w: malformed timestamp", ErrInvalidTimestamp)
	}
	// Compare in seconds so that absurd timestamps cannot overflow.
	tol := int64(tolerance / time.Second)
	switch nowSec := now.Unix(); {
	case ts < nowSec-tol:
		return fmt.Errorf("%w: too old", ErrInvalidTimestamp)
	case ts > nowSec+tol:
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
	case SchemeOf(secret) == V1a:
		return verifyKey{}, errors.New("webhooks: verify with the " + publicKeyPrefix + " public key, not the " + privateKeyPrefix + " secret key")
	default:
		key, err := decodeSecret(secret)
		return verifyKey{hmac: key}, err
	}
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
