package verify

// The keys a Verifier checks signatures with, as the Standard Webhooks specification writes them.

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Key prefixes: an HMAC secret (v1), an ed25519 public key (v1a), and the ed25519 secret key a
// sender signs v1a with, which a receiver is never given.
const (
	secretPrefix     = "whsec_"
	publicKeyPrefix  = "whpk_"
	privateKeyPrefix = "whsk_"
)

// key is one decoded key of a Verifier: hmac for a "whsec_" secret, pub for a "whpk_" public key.
type key struct {
	hmac []byte            // v1
	pub  ed25519.PublicKey // v1a
}

// parseKey decodes a key given to New: "whpk_" + base64 of a 32-byte ed25519 public key, or an HMAC
// secret, "whsec_" + base64 (the prefix is optional). A "whsk_" secret key is refused. Its error never
// contains the key.
func parseKey(s string) (key, error) {
	switch {
	case strings.HasPrefix(s, publicKeyPrefix):
		pub, err := decodePublicKey(s)
		return key{pub: pub}, err
	case strings.HasPrefix(s, privateKeyPrefix):
		return key{}, errors.New("verify with the " + publicKeyPrefix + " public key, not the " + privateKeyPrefix + " secret key")
	default:
		secret, err := decodeSecret(s)
		return key{hmac: secret}, err
	}
}

// decodeSecret returns the HMAC key of a secret, with or without its "whsec_" prefix.
func decodeSecret(secret string) ([]byte, error) {
	if secret == "" {
		return nil, errors.New("the key is empty: pass only the keys you were given (a " + secretPrefix + "… secret or a " +
			publicKeyPrefix + "… public key), e.g. leave out an environment variable that is not set")
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, secretPrefix))
	switch {
	case err != nil && strings.HasPrefix(secret, secretPrefix):
		return nil, errors.New("secret is not valid base64: a secret is " + secretPrefix + " then the base64 of its bytes; copy it whole as the sender gave it")
	case err != nil:
		return nil, errors.New("the key is neither a " + secretPrefix + "… secret nor a " + publicKeyPrefix +
			"… public key (nor the base64 of a secret's bytes); copy it whole as the sender gave it")
	}
	if len(raw) == 0 {
		return nil, errors.New("secret is empty: a secret is " + secretPrefix + " then the base64 of its bytes")
	}
	return raw, nil
}

// decodePublicKey returns the ed25519 public key of a "whpk_" key.
func decodePublicKey(public string) (ed25519.PublicKey, error) {
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(public, publicKeyPrefix))
	if err != nil {
		return nil, errors.New("ed25519 public key is not valid base64: a public key is " + publicKeyPrefix + " then the base64 of its 32 bytes")
	}
	if len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("ed25519 public key must decode to %d bytes, not %d", ed25519.PublicKeySize, len(raw))
	}
	return ed25519.PublicKey(raw), nil
}
