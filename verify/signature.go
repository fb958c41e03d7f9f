package verify

// The webhook-signature header's entries, checked against a Verifier's keys: "v1" (HMAC-SHA256) and
// "v1a" (ed25519); entries of other versions are ignored.

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"strings"
)

// maxV1aChecks bounds the well-formed "v1a" entries one Verify checks: each ed25519 verification costs
// tens of microseconds, and a header of thousands of well-formed but false v1a entries must not make a
// receiver spend seconds on one request. A sender writes one entry per key it signs with (two during a
// rotation). Each entry checked is tried with every public key of the Verifier, whose count the
// receiver chooses.
const maxV1aChecks = 16

// signedBy reports whether some entry of sh's webhook-signature header is a valid signature of the
// request under one of keys.
func signedBy(keys []key, sh signedHeaders, body []byte) bool {
	content := sh.content(body)
	wantV1, hasPublicKey := expectedV1(keys, content), false
	for _, k := range keys {
		hasPublicKey = hasPublicKey || k.pub != nil
	}
	v1aChecks := 0
	for entry := range strings.FieldsSeq(sh.signatures) {
		version, enc, _ := strings.Cut(entry, ",")
		switch version {
		case "v1":
			for _, want := range wantV1 {
				if hmac.Equal([]byte(enc), want) {
					return true
				}
			}
		case "v1a":
			if !hasPublicKey || v1aChecks == maxV1aChecks {
				continue
			}
			sig, ok := decodeEd25519Signature(enc)
			if !ok {
				continue // a malformed entry costs no check
			}
			v1aChecks++
			for _, k := range keys {
				if k.pub != nil && ed25519.Verify(k.pub, content, sig) {
					return true
				}
			}
		}
	}
	return false
}

// expectedV1 returns, for each HMAC secret among keys, the base64 of its HMAC-SHA256 of content: the
// text of the "v1" entry it signs.
func expectedV1(keys []key, content []byte) [][]byte {
	var want [][]byte
	for _, k := range keys {
		if k.hmac == nil {
			continue
		}
		mac := hmac.New(sha256.New, k.hmac)
		mac.Write(content)
		want = append(want, base64.StdEncoding.AppendEncode(nil, mac.Sum(nil)))
	}
	return want
}

// decodeEd25519Signature decodes the base64 of a "v1a" entry: exactly the strict, padded encoding of
// 64 bytes.
func decodeEd25519Signature(enc string) ([]byte, bool) {
	if len(enc) != base64.StdEncoding.EncodedLen(ed25519.SignatureSize) {
		return nil, false
	}
	sig, err := base64.StdEncoding.Strict().DecodeString(enc)
	if err != nil || len(sig) != ed25519.SignatureSize {
		return nil, false
	}
	return sig, true
}
