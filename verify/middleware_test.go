package verify

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// errorReader fails every read: a body the middleware cannot read.
type errorReader struct{}

func (errorReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

// TestMiddleware: a request that verifies reaches next with its whole body; one that does not is
// answered 401 with a short reason, a body over the bound 413, an unreadable one 400, a Verifier
// without keys 500, and next never sees them. Headers are checked before the body is read.
func TestMiddleware(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	body := []byte(`{"id":"pool-42","type":"pool.created","data":{"size":8}}`)
	signed := func(ts time.Time, body []byte, secrets ...string) http.Header {
		return signedHeader(t, "msg_1", ts, body, secrets...)
	}
	edSecret, edPublic := newEd25519Key(t)
	atBound := bytes.Repeat([]byte("x"), 100)
	big := bytes.Repeat([]byte("y"), int(DefaultMaxBodyBytes))
	verifier := func(maxBodyBytes int64, keys ...string) *Verifier {
		v := verifierAt(t, now, keys...)
		v.MaxBodyBytes = maxBodyBytes
		return v
	}

	tests := []struct {
		name       string
		verifier   *Verifier
		header     http.Header
		body       io.Reader
		wantStatus int
		wantReason string // the response body, for a refusal
		wantBody   []byte // what next reads, when it is called
	}{
		{name: "v1", verifier: verifier(0, svixSecret), header: signed(now, body, svixSecret), body: bytes.NewReader(body), wantStatus: http.StatusOK, wantBody: body},
		{name: "v1a during a rotation", verifier: verifier(0, svixSecret, edPublic), header: signed(now, body, edSecret), body: bytes.NewReader(body), wantStatus: http.StatusOK, wantBody: body},
		{name: "empty body", verifier: verifier(0, svixSecret), header: signed(now, nil, svixSecret), body: http.NoBody, wantStatus: http.StatusOK, wantBody: []byte{}},
		{name: "body at the bound", verifier: verifier(100, svixSecret), header: signed(now, atBound, svixSecret), body: bytes.NewReader(atBound), wantStatus: http.StatusOK, wantBody: atBound},
		{name: "1 MiB by default", verifier: verifier(0, svixSecret), header: signed(now, big, svixSecret), body: bytes.NewReader(big), wantStatus: http.StatusOK, wantBody: big},

		{name: "tampered body", verifier: verifier(0, svixSecret), header: signed(now, body, svixSecret), body: strings.NewReader(strings.Replace(string(body), "8", "9", 1)),
			wantStatus: http.StatusUnauthorized, wantReason: "invalid webhook signature"},
		{name: "other key", verifier: verifier(0, secondSecret), header: signed(now, body, svixSecret), body: bytes.NewReader(body),
			wantStatus: http.StatusUnauthorized, wantReason: "invalid webhook signature"},
		{name: "stale", verifier: verifier(0, svixSecret), header: signed(now.Add(-time.Hour), body, svixSecret), body: bytes.NewReader(body),
			wantStatus: http.StatusUnauthorized, wantReason: "webhook timestamp out of tolerance"},
		{name: "no headers", verifier: verifier(0, svixSecret), header: http.Header{}, body: bytes.NewReader(body),
			wantStatus: http.StatusUnauthorized, wantReason: "missing webhook headers"},
		{name: "headers are checked before the body is read", verifier: verifier(0, svixSecret), header: http.Header{}, body: errorReader{},
			wantStatus: http.StatusUnauthorized, wantReason: "missing webhook headers"},
		{name: "one byte over the bound", verifier: verifier(100, svixSecret), header: signed(now, append(bytes.Clone(atBound), 'x'), svixSecret), body: bytes.NewReader(append(bytes.Clone(atBound), 'x')),
			wantStatus: http.StatusRequestEntityTooLarge, wantReason: "request body too large"},
		{name: "one byte over 1 MiB by default", verifier: verifier(0, svixSecret), header: signed(now, append(bytes.Clone(big), 'y'), svixSecret), body: bytes.NewReader(append(bytes.Clone(big), 'y')),
			wantStatus: http.StatusRequestEntityTooLarge, wantReason: "request body too large"},
		{name: "unreadable body", verifier: verifier(0, svixSecret), header: signed(now, body, svixSecret), body: errorReader{},
			wantStatus: http.StatusBadRequest, wantReason: "unreadable request body"},
		{name: "verifier without keys", verifier: &Verifier{}, header: signed(now, body, svixSecret), body: bytes.NewReader(body),
			wantStatus: http.StatusInternalServerError, wantReason: "webhook verifier not configured"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var got []byte
			called := false
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				called = true
				var err error
				got, err = io.ReadAll(r.Body)
				require.NoError(t, err)
				assert.Equal(t, int64(len(got)), r.ContentLength)
			})
			req := httptest.NewRequest(http.MethodPost, "/hooks", tt.body)
			for name, values := range tt.header {
				req.Header[name] = values
			}
			rec := httptest.NewRecorder()
			tt.verifier.Middleware(next).ServeHTTP(rec, req)

			require.Equal(t, tt.wantStatus, rec.Code, rec.Body.String())
			if tt.wantBody != nil {
				require.True(t, called)
				assert.Equal(t, tt.wantBody, got)
				return
			}
			assert.False(t, called, "next saw a request that did not verify")
			assert.Equal(t, tt.wantReason+"\n", rec.Body.String())
			assert.Equal(t, "text/plain; charset=utf-8", rec.Header().Get("Content-Type"))
		})
	}
}

// TestMiddlewareNilBody: a request built without a body (a nil Body, as a client-side request may
// have) is read as empty, not a panic.
func TestMiddlewareNilBody(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_700_000_000, 0)
	req := &http.Request{Method: http.MethodPost, Header: signedHeader(t, "msg_1", now, nil, svixSecret)}
	rec := httptest.NewRecorder()
	verifierAt(t, now, svixSecret).Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})).ServeHTTP(rec, req)
	assert.Equal(t, http.StatusNoContent, rec.Code)
}
