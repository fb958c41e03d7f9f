package webhooks_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"time"

	"github.com/smartdrop/webhooks"
)

// A receiver checks each request's signature with the webhook's secret before trusting its body. The
// request here is signed by hand, as Standard Webhooks v1 specifies and as the library signs its own:
// the signature is base64(HMAC-SHA256(key, id + "." + timestamp + "." + body)), where key is the
// secret's base64 part after "whsec_".
func ExampleVerify() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // the webhook's Secret, shared with the receiver

	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "unreadable body", http.StatusBadRequest)
			return
		}
		if err := webhooks.Verify(secret, r.Header, body); err != nil {
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		// Every attempt of one delivery carries the same webhook-id: deduplicate on it if a rare
		// repeat matters.
		w.WriteHeader(http.StatusNoContent)
	})

	body := []byte(`{"id":"pool-42","type":"pool.created","timestamp":"2026-12-03T10:00:00Z","data":{"size":8}}`)
	signed := func(body []byte) *http.Request {
		id, ts := "dlv_0123456789abcdef0123456789", strconv.FormatInt(time.Now().Unix(), 10)
		key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(id + "." + ts + "."))
		mac.Write(body)
		r := httptest.NewRequest(http.MethodPost, "/hooks", bytes.NewReader(body))
		r.Header.Set("webhook-id", id)
		r.Header.Set("webhook-timestamp", ts)
		r.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
		return r
	}

	for _, req := range []*http.Request{
		signed(body), // as sent
		func() *http.Request { // the body changed after signing
			r := signed(body)
			r.Body = io.NopCloser(strings.NewReader(strings.Replace(string(body), "8", "9", 1)))
			return r
		}(),
		httptest.NewRequest(http.MethodPost, "/hooks", bytes.NewReader(body)), // no signature headers
	} {
		rec := httptest.NewRecorder()
		receiver.ServeHTTP(rec, req)
		fmt.Println(rec.Code)
	}
	// Output:
	// 204
	// 401
	// 401
}
