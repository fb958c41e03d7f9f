package verify

// Middleware: Verify in front of an http.Handler.

import (
	"bytes"
	"errors"
	"io"
	"net/http"
)

// DefaultMaxBodyBytes is the largest body Middleware reads when Verifier.MaxBodyBytes is zero: 1 MiB.
const DefaultMaxBodyBytes int64 = 1 << 20

// Middleware returns a handler that verifies each request before next sees it. It checks the headers
// first, then reads the body (at most MaxBodyBytes, 1 MiB by default) and checks its signature. A
// request that does not verify is answered 401 Unauthorized with a short plain-text reason (never a
// key), a longer body 413 Request Entity Too Large, an unreadable one 400 Bad Request (and every request
// 500 on a Verifier New did not make), and next is not called. Otherwise next is called with the
// request's body restored, the same bytes in full.
func (v *Verifier) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sh, err := v.readSignedHeaders(r.Header)
		if err != nil {
			refuse(w, err)
			return
		}
		body, err := readBody(w, r, v.maxBodyBytes())
		if err != nil {
			refuse(w, err)
			return
		}
		if err := v.checkSignature(sh, body); err != nil {
			refuse(w, err)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

func (v *Verifier) maxBodyBytes() int64 {
	if v.MaxBodyBytes <= 0 {
		return DefaultMaxBodyBytes
	}
	return v.MaxBodyBytes
}

// readBody reads r's whole body, refusing one longer than limit bytes (the error is then an
// *http.MaxBytesError).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// refuse answers a request Middleware does not pass on, with a status and a reason chosen by err.
func refuse(w http.ResponseWriter, err error) {
	var tooLarge *http.MaxBytesError
	switch {
	case errors.Is(err, ErrMissingHeaders):
		http.Error(w, "missing webhook headers", http.StatusUnauthorized)
	case errors.Is(err, ErrInvalidTimestamp):
		http.Error(w, "webhook timestamp out of tolerance", http.StatusUnauthorized)
	case errors.Is(err, ErrInvalidSignature):
		http.Error(w, "invalid webhook signature", http.StatusUnauthorized)
	case errors.As(err, &tooLarge):
		http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
	case errors.Is(err, errNoKeys):
		http.Error(w, "webhook verifier not configured", http.StatusInternalServerError)
	default:
		http.Error(w, "unreadable request body", http.StatusBadRequest)
	}
}
