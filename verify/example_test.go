package verify_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/verify"
)

// A receiver puts the Verifier's Middleware in front of its handler: the handler sees only requests
// that verify, with their body intact. The request here is Svix's published example, so the
// Verifier's clock is set to its time; a receiver leaves Now alone.
func Example() {
	v, err := verify.New("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw") // the webhook's secret, or "whpk_…" public key
	if err != nil {
		fmt.Println(err)
		return
	}
	v.Now = func() time.Time { return time.Unix(1614265330, 0) }

	handler := v.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		// Every attempt of one delivery carries the same webhook-id: deduplicate on it if a rare
		// repeat matters.
		fmt.Printf("handled %s: %s\n", r.Header.Get("webhook-id"), body)
		w.WriteHeader(http.StatusNoContent)
	}))

	request := func(body string, signed bool) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(body))
		if signed {
			r.Header.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
			r.Header.Set("webhook-timestamp", "1614265330")
			r.Header.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")
		}
		return r
	}
	for _, r := range []*http.Request{
		request(`{"test": 2432232314}`, true),  // as signed
		request(`{"test": 2432232315}`, true),  // the body changed after signing
		request(`{"test": 2432232314}`, false), // no signature
	} {
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, r)
		fmt.Println(strings.TrimSpace(fmt.Sprint(rec.Code, " ", rec.Body.String()))) // the status and the reason of a refusal
	}
	// Output:
	// handled msg_p5jXN8AQM9LWM0D4loKWxJek: {"test": 2432232314}
	// 204
	// 401 invalid webhook signature
	// 401 missing webhook headers
}

// While a sender moves from its HMAC secret to an ed25519 key, it signs with both and the receiver
// holds both; Verify accepts a request that either key signed, and its errors say why it refused one.
func ExampleVerifier_Verify() {
	v, err := verify.New(
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZTInDBbOir4=",
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	v.Now = func() time.Time { return time.Unix(1614265330, 0) } // Svix's example's time; leave unset

	h := http.Header{}
	h.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", "v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg==")
	fmt.Println(v.Verify(h, []byte(`{"test": 2432232314}`)))

	v.Now = time.Now // a day, or years, later
	fmt.Println(v.Verify(h, []byte(`{"test": 2432232314}`)))
	// Output:
	// <nil>
	// verify: timestamp out of tolerance: too old
}
