// Package sealed encrypts short secrets (signing keys, endpoint credentials) for storage with
// AES-256-GCM, under a ring of keys: the first key seals, every key opens, so keys can be rotated.
//
// A sealed value is the envelope "enc:v1:<key id>:<base64url nonce|ciphertext>", where the key id is
// 8 hex digits of SHA-256 of the key: a value sealed under a key the ring does not hold is refused by
// name (ErrKey), never opened into a wrong secret. The caller's associated data (e.g. a webhook id and
// a field name) is bound into the tag, so a sealed value copied to another record or field does not
// open.
package sealed

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// KeySize is the size of every key: AES-256.
const KeySize = 32

// prefix starts every sealed value; a value without it is in clear.
const prefix = "enc:v1:"

// ErrKey is returned (wrapped) by Open for a value it cannot open: sealed under a key the ring does not
// hold, sealed while the ring is empty, tampered with, or bound to other associated data.
var ErrKey = errors.New("cannot open sealed value")

// Ring is a set of keys; the zero Ring (or nil) has none and seals nothing.
type Ring struct {
	keys []key
}

type key struct {
	id   string
	aead cipher.AEAD
}

// NewRing returns a ring of keys, the first the one that seals. Each must be KeySize bytes.
func NewRing(keys [][]byte) (*Ring, error) {
	r := &Ring{}
	for i, k := range keys {
		if len(k) != KeySize {
			return nil, fmt.Errorf("key %d is %d bytes, not %d", i, len(k), KeySize)
		}
		block, err := aes.NewCipher(k)
		if err != nil {
			return nil, err
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		r.keys = append(r.keys, key{id: KeyID(k), aead: aead})
	}
	return r, nil
}

// KeyID names a key in envelopes: 8 hex digits of its SHA-256.
func KeyID(k []byte) string {
	sum := sha256.Sum256(k)
	return hex.EncodeToString(sum[:4])
}

// Enabled reports whether the ring has a key to seal with.
func (r *Ring) Enabled() bool { return r != nil && len(r.keys) > 0 }

// IsSealed reports whether v is a sealed value (of any key).
func IsSealed(v string) bool { return strings.HasPrefix(v, prefix) }

// Current reports whether v needs no re-sealing: "" or sealed under the ring's first key, or, with an
// empty ring, anything.
func (r *Ring) Current(v string) bool {
	if v == "" || !r.Enabled() {
		return true
	}
	id, _, ok := split(v)
	return ok && id == r.keys[0].id
}

// Seal returns v sealed under the first key and bound to aad; v itself when the ring is empty or v is
// "".
func (r *Ring) Seal(v, aad string) (string, error) {
	if v == "" || !r.Enabled() {
		return v, nil
	}
	k := r.keys[0]
	nonce := make([]byte, k.aead.NonceSize(), k.aead.NonceSize()+len(v)+k.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	out := k.aead.Seal(nonce, nonce, []byte(v), []byte(aad))
	return prefix + k.id + ":" + base64.RawURLEncoding.EncodeToString(out), nil
}

// Open returns the clear value of v: v itself when it is not sealed (stored before keys were set),
// else v opened with the key its envelope names, checked against aad. It fails with ErrKey for a key
// the ring does not hold or a value that does not authenticate.
func (r *Ring) Open(v, aad string) (string, error) {
	if !IsSealed(v) {
		return v, nil
	}
	id, body, ok := split(v)
	if !ok {
		return "", fmt.Errorf("%w: malformed sealed value", ErrKey)
	}
	if r != nil {
		for _, k := range r.keys {
			if k.id != id {
				continue
			}
			raw, err := base64.RawURLEncoding.DecodeString(body)
			if err != nil || len(raw) < k.aead.NonceSize() {
				return "", fmt.Errorf("%w: malformed sealed value", ErrKey)
			}
			n := k.aead.NonceSize()
			plain, err := k.aead.Open(nil, raw[:n], raw[n:], []byte(aad))
			if err != nil {
				return "", fmt.Errorf("%w: value sealed under key %s does not authenticate (tampered, or moved from another record)", ErrKey, id)
			}
			return string(plain), nil
		}
	}
	return "", fmt.Errorf("%w: value sealed under key %s, which is not among the configured keys", ErrKey, id)
}

// split parses an envelope into its key id and body.
func split(v string) (id, body string, ok bool) {
	rest, ok := strings.CutPrefix(v, prefix)
	if !ok {
		return "", "", false
	}
	id, body, ok = strings.Cut(rest, ":")
	return id, body, ok && len(id) == 8
}
