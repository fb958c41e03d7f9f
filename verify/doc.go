// Package verify checks Standard Webhooks signatures on the receiving side: the "v1" entries
// (HMAC-SHA256 under a "whsec_" secret) and "v1a" entries (ed25519, checked with the sender's "whpk_"
// public key) of the webhook-signature header, and the freshness of webhook-timestamp. It verifies the
// requests of github.com/smartdrop/webhooks and of any other Standard Webhooks sender, and it imports
// the standard library only, so a receiving service takes on no other dependency (a test holds it to
// that).
//
// A receiver makes one Verifier with its keys (several while the sender rotates them) and puts its
// Middleware in front of the handler:
//
//	v, err := verify.New(os.Getenv("WEBHOOK_SECRET")) // "whsec_…" or "whpk_…"
//	if err != nil {
//		log.Fatal(err)
//	}
//	http.Handle("POST /hooks", v.Middleware(handler)) // 401 for a request that does not verify
//
// or calls Verify with the body as received:
//
//	if err := v.Verify(r.Header, body); err != nil { // errors.Is(err, verify.ErrInvalidSignature), …
//		http.Error(w, "invalid webhook", http.StatusUnauthorized)
//		return
//	}
//
// # Conformance vectors
//
// The file testdata/signatures.json, in this package's directory, holds requests signed by this
// library's own signer and what a receiver must decide about each: for every case, the keys that
// signed it ("whsec_" secrets and "whsk_" ed25519 secret keys, 64 bytes: seed then public key), its id,
// timestamp and body and the webhook-signature header they sign to, then the request a receiver gets
// (headers, body), the receiver's keys and clock, and the verdict: valid, or which of missing headers,
// invalid timestamp or invalid signature. Other implementations, senders and receivers alike, can test
// themselves against it. The package's tests regenerate it with the signer and verify every case.
package verify
