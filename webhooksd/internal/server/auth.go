package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/smartdrop/webhooks/webhooksd/internal/ingest"
)

// keys are the keys requests authenticate with, as "Authorization: Bearer <key>": the operator's
// open everything behind them, the producers' only ingest. Kept as SHA-256 digests, compared in
// constant time.
type keys struct {
	operator, ingest [][sha256.Size]byte
}

func newKeys(operator, ingest []string) keys {
	var k keys
	for _, key := range operator {
		k.operator = append(k.operator, sha256.Sum256([]byte(key)))
	}
	for _, key := range ingest {
		k.ingest = append(k.ingest, sha256.Sum256([]byte(key)))
	}
	return k
}

// bearer is the token of r's Authorization header, or "".
func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) < 7 || !strings.EqualFold(h[:7], "bearer ") {
		return ""
	}
	return strings.TrimSpace(h[7:])
}

// matches reports whether token is one of the digests (every one compared, in constant time).
func matches(token string, digests [][sha256.Size]byte) bool {
	sum := sha256.Sum256([]byte(token))
	found := 0
	for _, d := range digests {
		found |= subtle.ConstantTimeCompare(sum[:], d[:])
	}
	return found == 1
}

// operatorOnly serves next to requests with an operator key, and answers 401 to the others.
func (k keys) operatorOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t := bearer(r); t == "" || !matches(t, k.operator) {
			unauthorized(w, "send an operator key as Authorization: Bearer <key> (one of the server's -api-key)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// producer serves next to requests with an ingest or an operator key, and answers 401 to the others.
func (k keys) producer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if t := bearer(r); t == "" || !(matches(t, k.ingest) || matches(t, k.operator)) {
			unauthorized(w, "send a key as Authorization: Bearer <key> (one of the server's -ingest-key or -api-key)")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func unauthorized(w http.ResponseWriter, message string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="webhooksd"`)
	ingest.WriteError(w, http.StatusUnauthorized, "unauthorized", message, "")
}
