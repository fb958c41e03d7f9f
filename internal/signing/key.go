// Package signing is the Standard Webhooks signature schemes: v1 (HMAC-SHA256 with a "whsec_"
// secret) and v1a (ed25519 with a "whsk_" secret key, verified with its "whpk_" public key). ParseKey
// decodes a webhook's secret into the Key that signs its requests, SetHeaders signs one request with
// one or more keys (several during a rotation, the schemes possibly mixed). The receiver's check is
// the public package github.com/smartdrop/webhooks/verify.
package signing

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Scheme is a signature scheme: the version label of the webhook-signature entries a key makes.
type Scheme uint8

const (
	// V1 is HMAC-SHA256 under a "whsec_" secret: entries "v1,<base64>".
	V1 Scheme = iota + 1
	// V1a is ed25519 under a "whsk_" secret key: entries "v1a,<base64>", verified with the "whpk_"
	// public key.
	V1a
)

// String returns the scheme's version label, "v1" or "v1a".
func (s Scheme) String() string {
	switch s {
	case V1:
		return "v1"
	case V1a:
		return "v1a"
	}
	return "Scheme(" + strconv.Itoa(int(s)) + ")"
}

// SchemeOf returns the scheme a secret signs with: V1a for a "whsk_" key, otherwise V1.
func SchemeOf(secret string) Scheme {
	if strings.HasPrefix(secret, privateKeyPrefix) {
		return V1a
	}
	return V1
}

const secretPrefix = "whsec_"

// Standard Webhooks header names, in the canonical form http.Header keeps them in.
const (
	canonicalID        = "Webhook-Id"
	canonicalTimestamp = "Webhook-Timestamp"
	canonicalSignature = "Webhook-Signature"
)

// Key is a decoded webhook secret, which signs requests in its Scheme. The zero Key is not a key.
type Key struct {
	scheme Scheme
	hmac   []byte             // V1
	macs   *sync.Pool         // V1: HMAC-SHA256 states keyed with hmac, each reset before use
	ed     ed25519.PrivateKey // V1a
}

// Scheme returns the scheme k signs with.
func (k Key) Scheme() Scheme { return k.scheme }

// ParseKey decodes a webhook's stored secret into the key that signs its requests: a "whsk_"
// ed25519 key (V1a) or a "whsec_" HMAC secret, prefix optional (V1). A "whpk_" public key cannot
// sign and is refused. Its error never contains the secret.
func ParseKey(secret string) (Key, error) {
	switch {
	case SchemeOf(secret) == V1a:
		priv, err := decodePrivateKey(secret)
		if err != nil {
			return Key{}, err
		}
		return Key{scheme: V1a, ed: priv}, nil
	case strings.HasPrefix(secret, publicKeyPrefix):
		return Key{}, errors.New("webhooks: a " + publicKeyPrefix + " public key cannot sign; use its " + privateKeyPrefix + " secret key")
	default:
		key, err := decodeSecret(secret)
		if err != nil {
			return Key{}, err
		}
		return Key{scheme: V1, hmac: key, macs: &sync.Pool{New: func() any { return hmac.New(sha256.New, key) }}}, nil
	}
}

// Sign returns k's webhook-signature entry for "msgID.ts.body": "v1,<base64 HMAC-SHA256>" or
// "v1a,<base64 ed25519 signature>".
func (k Key) Sign(msgID string, ts int64, body []byte) string {
	if k.scheme == V1a {
		return entry("v1a,", ed25519.Sign(k.ed, signedContent(msgID, ts, body)))
	}
	if k.macs == nil { // not from ParseKey
		return entry("v1,", signHMAC(hmac.New(sha256.New, k.hmac), msgID, ts, body))
	}
	mac := k.macs.Get().(hash.Hash)
	defer k.macs.Put(mac)
	return entry("v1,", signHMAC(mac, msgID, ts, body))
}

// entry returns label followed by the base64 of sig, in one allocation (the signature is encoded on
// the stack: an ed25519 signature's base64 is 88 bytes, an HMAC-SHA256's 44).
func entry(label string, sig []byte) string {
	var enc [128]byte
	n := base64.StdEncoding.EncodedLen(len(sig))
	if n > len(enc) {
		return label + base64.StdEncoding.EncodeToString(sig)
	}
	base64.StdEncoding.Encode(enc[:n], sig)
	var b strings.Builder
	b.Grow(len(label) + n)
	b.WriteString(label)
	b.Write(enc[:n])
	return b.String()
}

// signatures returns the webhook-signature header value: one entry per key, in order, space
// separated.
func signatures(msgID string, ts time.Time, body []byte, keys ...Key) string {
	if len(keys) == 1 { // the usual case, outside a rotation: no list to join
		return keys[0].Sign(msgID, ts.Unix(), body)
	}
	entries := make([]string, len(keys))
	for i, key := range keys {
		entries[i] = key.Sign(msgID, ts.Unix(), body)
	}
	return strings.Join(entries, " ")
}

// SetHeaders sets webhook-id, webhook-timestamp and webhook-signature on h: the request msgID sent
// at ts with body, signed by every key, in order.
func SetHeaders(h http.Header, msgID string, ts time.Time, body []byte, keys ...Key) {
	// Keys in canonical form, set directly: Set would canonicalise them again on every request. The
	// three values share one array (each slice capped at its own element, so an append copies).
	v := make([]string, 3)
	v[0], v[1], v[2] = msgID, strconv.FormatInt(ts.Unix(), 10), signatures(msgID, ts, body, keys...)
	h[canonicalID], h[canonicalTimestamp], h[canonicalSignature] = v[0:1:1], v[1:2:2], v[2:3:3]
}

// NewSecret returns a fresh random secret of the scheme: "whsk_" + base64 of an ed25519 private
// key for V1a, "whsec_" + base64 of 32 random bytes otherwise.
func NewSecret(s Scheme) (string, error) {
	if s == V1a {
		secret, _, err := NewEd25519Key()
		return secret, err
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return "", fmt.Errorf("webhooks: generate secret: %w", err)
	}
	return secretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// CheckSecret checks a caller-supplied secret: "whsec_" + base64 of at least minBytes bytes, or a
// "whsk_" ed25519 secret key (seed or 64-byte form). Its error never contains the secret.
func CheckSecret(secret string, minBytes int) error {
	if SchemeOf(secret) == V1a {
		if _, err := decodePrivateKey(secret); err != nil {
			return errors.New(strings.TrimPrefix(err.Error(), "webhooks: "))
		}
		return nil
	}
	if raw, err := decodeSecret(secret); err != nil || len(raw) < minBytes {
		return fmt.Errorf("secret must be whsec_ followed by the base64 of at least %d bytes, or a %s ed25519 secret key",
			minBytes, privateKeyPrefix)
	}
	return nil
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

// signHMAC returns the HMAC-SHA256 of "msgID.ts.body" under mac's key (mac is reset first): a v1
// signature. One buffer holds the prefix "msgID.ts." and then the sum.
func signHMAC(mac hash.Hash, msgID string, ts int64, body []byte) []byte {
	mac.Reset()
	buf := make([]byte, 0, len(msgID)+22+sha256.Size)
	buf = append(buf, msgID...)
	buf = append(buf, '.')
	buf = strconv.AppendInt(buf, ts, 10)
	buf = append(buf, '.')
	mac.Write(buf)
	mac.Write(body)
	return mac.Sum(buf[len(buf):])
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
