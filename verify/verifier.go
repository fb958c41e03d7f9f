package verify

// The Verifier: a receiver's keys and clock, and its check of one request.

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// DefaultTolerance is how far a request's webhook-timestamp may be from the receiver's clock, in
// either direction, when Verifier.Tolerance is zero.
const DefaultTolerance = 5 * time.Minute

// errNoKeys is Verify's error for a Verifier that New did not make.
var errNoKeys = errors.New("verify: the Verifier has no keys; make it with verify.New")

// Verifier checks that requests are fresh and signed by one of its keys. Make it with New; set its
// fields before its first use. It is safe for concurrent use once its fields are set.
type Verifier struct {
	// Tolerance is how far webhook-timestamp may be from Now, in either direction, in whole seconds.
	// Zero or negative means DefaultTolerance (5 minutes).
	Tolerance time.Duration
	// Now returns the receiver's current time. Nil means time.Now.
	Now func() time.Time
	// MaxBodyBytes is the largest body Middleware reads: a longer one is refused with 413. Zero or
	// negative means DefaultMaxBodyBytes (1 MiB).
	MaxBodyBytes int64

	keys []key
}

// New returns a Verifier of requests signed by any of keys, each one of:
//
//   - an HMAC signing secret, "whsec_" + base64 (the prefix is optional): it accepts a matching "v1"
//     entry of the webhook-signature header;
//   - an ed25519 public key, "whpk_" + base64 of its 32 bytes: it accepts a "v1a" entry that is its
//     valid signature.
//
// Give several keys while the sender rotates from one to another; the schemes may be mixed. A "whsk_"
// ed25519 secret key is refused (a receiver verifies with its public key), as is a malformed key or no
// key at all. An empty key is an error too (pass only the keys you were given). Errors never contain
// a key, and say what a key looks like.
func New(keys ...string) (*Verifier, error) {
	if len(keys) == 0 {
		return nil, errors.New("verify: New needs at least one key: a whsec_… secret or a whpk_… public key")
	}
	v := &Verifier{keys: make([]key, len(keys))}
	for i, s := range keys {
		k, err := parseKey(s)
		switch {
		case err != nil && len(keys) == 1:
			return nil, fmt.Errorf("verify: %w", err)
		case err != nil:
			return nil, fmt.Errorf("verify: key %d of %d: %w", i+1, len(keys), err)
		}
		v.keys[i] = k
	}
	return v, nil
}

// Verify checks that a received request is fresh (its webhook-timestamp, a canonical decimal count of
// seconds, within Tolerance of Now) and signed by one of v's keys: some "v1" entry of webhook-signature
// matches an HMAC secret, or some "v1a" entry is a public key's valid signature (at most 16 well-formed
// v1a entries are checked). Entries of other versions are ignored. The signature covers the exact bytes
// of body: pass them as received, before any parsing.
//
// It returns nil if the request verifies; otherwise ErrMissingHeaders, an error wrapping
// ErrInvalidTimestamp, or ErrInvalidSignature (or, on a Verifier New did not make, an error that is
// none of them).
func (v *Verifier) Verify(h http.Header, body []byte) error {
	sh, err := v.readSignedHeaders(h)
	if err != nil {
		return err
	}
	return v.checkSignature(sh, body)
}

// readSignedHeaders is the part of Verify that needs no body.
func (v *Verifier) readSignedHeaders(h http.Header) (signedHeaders, error) {
	if v == nil || len(v.keys) == 0 {
		return signedHeaders{}, errNoKeys
	}
	now, tolerance := time.Now, v.Tolerance
	if v.Now != nil {
		now = v.Now
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	return readSignedHeaders(h, now(), tolerance)
}

// checkSignature is the part of Verify that needs the body.
func (v *Verifier) checkSignature(sh signedHeaders, body []byte) error {
	if !signedBy(v.keys, sh, body) {
		return ErrInvalidSignature
	}
	return nil
}
