package signing

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// Standard Webhooks asymmetric keys (signature version "v1a", ed25519).
//
// The specification's "Signature scheme" table says asymmetric keys are a "standard ed25519 key
// pair", "base64 encoded, prefixed with whsk_ for the secret key, and whpk_ for the public key".
// It does not say which serialisation of the private key whsk_ holds, so:
//
//   - whpk_<base64>: the 32-byte ed25519 public key (RFC 8032).
//   - whsk_<base64>: written as the 64-byte private key, seed || public key: the layout of
//     crypto/ed25519.PrivateKey, libsodium and RFC 8032 implementations generally, and what the
//     Svix server (written by the specification's authors) reads and writes. Also read: the bare
//     32-byte seed, the form the reference Go library's asymmetric support uses. A 64-byte key whose
//     public half is not the one its seed derives is refused: it would sign with one key and
//     publish another.
//
// Base64 is the standard, padded alphabet (RFC 4648 section 4), as for whsec_ secrets. The prefixes
// are required: without one a string is read as an HMAC secret, as before.
const (
	privateKeyPrefix = "whsk_"
	publicKeyPrefix  = "whpk_"
)

// NewEd25519Key returns a fresh ed25519 key pair in the Standard Webhooks forms: secret is
// "whsk_" + base64 of the 64-byte private key (seed || public key), to give a webhook as its Secret;
// public is "whpk_" + base64 of the 32-byte public key, for receivers to Verify with. Requests
// signed with secret carry "v1a," signatures.
func NewEd25519Key() (secret, public string, err error) {
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", "", fmt.Errorf("webhooks: generate ed25519 key: %w", err)
	}
	return encodePrivateKey(priv), encodePublicKey(pub), nil
}

// PublicKey returns the "whpk_" public key of a "whsk_" secret key: what receivers Verify with.
// Its error never contains the key.
func PublicKey(secret string) (string, error) {
	priv, err := decodePrivateKey(secret)
	if err != nil {
		return "", err
	}
	return encodePublicKey(priv.Public().(ed25519.PublicKey)), nil
}

func encodePrivateKey(priv ed25519.PrivateKey) string {
	return privateKeyPrefix + base64.StdEncoding.EncodeToString(priv)
}

func encodePublicKey(pub ed25519.PublicKey) string {
	return publicKeyPrefix + base64.StdEncoding.EncodeToString(pub)
}

// decodePrivateKey returns the ed25519 private key of a "whsk_" key holding either the 32-byte
// seed or the 64-byte private key.
func decodePrivateKey(secret string) (ed25519.PrivateKey, error) {
	rest, ok := strings.CutPrefix(secret, privateKeyPrefix)
	if !ok {
		return nil, errors.New("webhooks: an ed25519 secret key must start with " + privateKeyPrefix)
	}
	raw, err := base64.StdEncoding.DecodeString(rest)
	if err != nil {
		return nil, errors.New("webhooks: ed25519 secret key is not valid base64")
	}
	switch len(raw) {
	case ed25519.SeedSize:
		return ed25519.NewKeyFromSeed(raw), nil
	case ed25519.PrivateKeySize:
		priv := ed25519.NewKeyFromSeed(raw[:ed25519.SeedSize])
		if !bytes.Equal(priv[ed25519.SeedSize:], raw[ed25519.SeedSize:]) {
			return nil, errors.New("webhooks: ed25519 secret key's public half does not match its seed")
		}
		return priv, nil
	default:
		return nil, fmt.Errorf("webhooks: ed25519 secret key must decode to %d or %d bytes, not %d",
			ed25519.SeedSize, ed25519.PrivateKeySize, len(raw))
	}
}
