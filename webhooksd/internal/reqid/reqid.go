// Package reqid carries a request's id: taken from the request's X-Request-Id when it is a sane one
// (so a producer can follow its own id through the logs), else made; answered in X-Request-Id, kept
// in the request's context and put in every log line about the request.
package reqid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
)

// Header is the header a request id travels in, both ways.
const Header = "X-Request-Id"

// MaxLen bounds a request id taken from a request.
const MaxLen = 128

type key struct{}

// From is the request id of ctx, or "".
func From(ctx context.Context) string {
	id, _ := ctx.Value(key{}).(string)
	return id
}

// With returns ctx carrying id.
func With(ctx context.Context, id string) context.Context { return context.WithValue(ctx, key{}, id) }

// Of is the id to give r: its X-Request-Id when that is 1–MaxLen printable ASCII characters without
// spaces, else a new one.
func Of(r *http.Request) string {
	if id := r.Header.Get(Header); sane(id) {
		return id
	}
	return New()
}

// New makes a request id: 16 random bytes in hex.
func New() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

func sane(id string) bool {
	if id == "" || len(id) > MaxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}
