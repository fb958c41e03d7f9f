package webhooks

import (
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

// sign returns the base64 HMAC-SHA256 of "msgID.ts.body" under key.
func sign(key []byte, msgID string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write(strconv.AppendInt(nil, ts, 10))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// signatures returns the webhook-signature header value: one "v1,<base64>"
// entry per secret, space separated.
func signatures(msgID string, ts time.Time, body []byte, secrets ...[]byte) string {
	entries := make([]string, len(secrets))
	for i, key := range secrets {
		entries[i] = "v1," + sign(key, msgID, ts.Unix(), body)
	}
	return strings.Join(entries, " ")
}

// setSignedHeaders sets webhook-id, webhook-timestamp and webhook-signature on h.
func setSignedHeaders(h http.Header, msgID string, ts time.Time, body []byte, secrets ...[]byte) {
	// Keys in canonical form, set directly: Set would canonicalise them again on every request.
	h[canonicalID] = []string{msgID}
	h[canonicalTimestamp] = []string{strconv.FormatInt(ts.Unix(), 10)}
	h[canonicalSignature] = []string{signatures(msgID, ts, body, secrets...)}
}

// Verify checks that a received webhook was signed with secret (a "whsec_..."
// string) and is fresh. It returns nil if any v1 entry of the
// webhook-signature header matches body; otherwise the error wraps
// ErrMissingHeaders, ErrInvalidTimestamp or ErrInvalidSignature.
func Verify(secret string, h http.Header, body []byte) error {
	return verifyAt(secret, h, body, time.Now())
}

// verifyAt is Verify with the current time given as now.
func verifyAt(secret string, h http.Header, body []byte, now time.Time) error {
	key, err := decodeSecret(secret)
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
	want := []byte(sign(key, msgID, ts, body))
	for entry := range strings.FieldsSeq(sigHeader) {
		version, sig, _ := strings.Cut(entry, ",")
		if version == "v1" && hmac.Equal([]byte(sig), want) {
			return nil
		}
	}
	return ErrInvalidSignature
}
