package verify

// The sentinel errors of Verify. The root package's ErrMissingHeaders, ErrInvalidTimestamp and
// ErrInvalidSignature are these values, so errors.Is matches across both packages. Every error of
// this package starts with "verify: ", the package a receiver calls.

import "errors"

// ErrMissingHeaders is returned by Verify when webhook-id, webhook-timestamp or webhook-signature is
// absent or empty.
var ErrMissingHeaders = errors.New("verify: missing webhook headers")

// ErrInvalidTimestamp is returned (wrapped) by Verify when webhook-timestamp is not a canonical
// decimal number of seconds (no sign, no leading zero, no space) or is further than the Verifier's
// Tolerance from its Now.
var ErrInvalidTimestamp = errors.New("verify: timestamp out of tolerance")

// ErrInvalidSignature is returned by Verify when no entry of webhook-signature is a valid signature
// of the request under one of the Verifier's keys: a "v1" entry for a "whsec_" secret, a "v1a" entry
// for a "whpk_" public key.
var ErrInvalidSignature = errors.New("verify: invalid signature")
