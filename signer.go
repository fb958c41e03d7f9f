package webhooks

// Signing, as the root uses the schemes of internal/signing: the receiver's Verify (the verify
// package's, with one key), the ed25519 key helpers, and the secrets of Create, Update and
// RotateSecret.

import (
	"fmt"
	"net/http"
	"time"

	"github.com/smartdrop/webhooks/internal/signing"
	"github.com/smartdrop/webhooks/verify"
)

// VerifyTolerance is how far the webhook-timestamp header may be from the
// receiver's clock, in either direction, for Verify to accept a request.
const VerifyTolerance = 5 * time.Minute

// Verify checks that a received webhook is fresh and was signed by secret, one of:
//
//   - an HMAC signing secret, "whsec_" + base64 (the prefix is optional): some "v1" entry of the
//     webhook-signature header must match;
//   - an ed25519 public key, "whpk_" + base64 of 32 bytes: some "v1a" entry must be its valid
//     signature.
//
// The webhook-timestamp header must be a canonical decimal number of seconds (no sign, no leading
// zero, no space) within VerifyTolerance of the current time. Entries of other versions are
// ignored, so a header signed both ways (as during a rotation from one kind of key to the other)
// verifies with either key. A "whsk_" secret key is refused: receivers verify with its public key
// (see PublicKey). It returns nil if the request verifies; otherwise the error wraps
// ErrMissingHeaders, ErrInvalidTimestamp or ErrInvalidSignature, or, for a malformed key, none of
// them. Errors never contain the key.
//
// Verify is the check of package github.com/smartdrop/webhooks/verify with one key: a receiver that
// should not import this package (and its Redis client), or that holds several keys, uses that one.
func Verify(secret string, h http.Header, body []byte) error {
	return verifyAt(secret, h, body, time.Now())
}

// verifyAt is Verify with the current time given as now.
func verifyAt(secret string, h http.Header, body []byte, now time.Time) error {
	v, err := verify.New(secret)
	if err != nil {
		return err
	}
	v.Tolerance = VerifyTolerance
	v.Now = func() time.Time { return now }
	return v.Verify(h, body)
}

// NewEd25519Key returns a fresh ed25519 key pair in the Standard Webhooks forms: secret is
// "whsk_" + base64 of the 64-byte private key (seed || public key), to give a webhook as its Secret;
// public is "whpk_" + base64 of the 32-byte public key, for receivers to Verify with. Requests
// signed with secret carry "v1a," signatures.
func NewEd25519Key() (secret, public string, err error) { return signing.NewEd25519Key() }

// PublicKey returns the "whpk_" public key of a "whsk_" secret key: what receivers Verify with.
// Its error never contains the key.
func PublicKey(secret string) (string, error) { return signing.PublicKey(secret) }

// webhookScheme is the scheme of the secret Create generates for a webhook: Webhook.Asymmetric
// asks for v1a (ed25519), otherwise v1 (HMAC).
func webhookScheme(asymmetric bool) signing.Scheme {
	if asymmetric {
		return signing.V1a
	}
	return signing.V1
}

// validateSigningSecret checks a caller-supplied webhook secret (signing.CheckSecret, at least
// minSecretBytes for an HMAC secret); the error wraps ErrInvalidWebhook and never contains the
// secret.
func validateSigningSecret(secret string) error {
	if err := signing.CheckSecret(secret, minSecretBytes); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidWebhook, err)
	}
	return nil
}
