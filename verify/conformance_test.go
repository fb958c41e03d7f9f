package verify

// The conformance file testdata/signatures.json: requests signed by the library's own signer and the
// verdict a receiver must reach on each (see the package doc). TestConformanceFileIsTheSigners
// regenerates it (go test ./verify -run TestConformanceFileIsTheSigners -update rewrites it), and
// TestConformanceFileVerifies checks every case with Verify.

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite testdata/signatures.json from the library's signer")

var conformancePath = filepath.Join("testdata", "signatures.json")

// conformanceFile is the JSON document of testdata/signatures.json.
type conformanceFile struct {
	Description      []string          `json:"description"`
	ToleranceSeconds int64             `json:"tolerance_seconds"`
	Errors           map[string]string `json:"errors"`
	Cases            []conformanceCase `json:"cases"`
}

// conformanceCase is one request: what the sender signed, and what the receiver got and must decide.
type conformanceCase struct {
	Name     string              `json:"name"`
	Signed   conformanceSigned   `json:"signed"`
	Received conformanceReceived `json:"received"`
}

// conformanceSigned is a request as the library's signer signed it.
type conformanceSigned struct {
	Secrets   []string `json:"secrets"` // in the order they signed
	ID        string   `json:"id"`
	Timestamp int64    `json:"timestamp"`
	Body      string   `json:"body"`
	Signature string   `json:"signature"` // the webhook-signature header
}

// conformanceReceived is the request a receiver got, its keys and clock, and the verdict.
type conformanceReceived struct {
	Keys    []string          `json:"keys"`
	Now     int64             `json:"now"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Valid   bool              `json:"valid"`
	Error   string            `json:"error,omitempty"` // a key of conformanceErrors
}

// conformanceErrors names the verdicts of invalid requests, with the sentinel each is.
var conformanceErrors = map[string]error{
	"missing_headers":   ErrMissingHeaders,
	"invalid_timestamp": ErrInvalidTimestamp,
	"invalid_signature": ErrInvalidSignature,
}

// conformanceScenario is one case as written here: who signed, who verifies, and what happened to the
// request on its way (change, nil for nothing); the verdict is stated, not computed.
type conformanceScenario struct {
	name    string
	secrets []string
	keys    []string
	body    string // svixBody when empty
	change  func(*conformanceReceived)
	err     string // "" for a valid request
}

func conformanceScenarios() []conformanceScenario {
	setHeader := func(name, value string) func(*conformanceReceived) {
		return func(r *conformanceReceived) { r.Headers[name] = value }
	}
	deleteHeader := func(name string) func(*conformanceReceived) {
		return func(r *conformanceReceived) { delete(r.Headers, name) }
	}
	clockAt := func(skew int64) func(*conformanceReceived) {
		return func(r *conformanceReceived) { r.Now += skew }
	}
	tamperBody := func(r *conformanceReceived) { r.Body = `{"test": 2432232315}` }
	ts := strconv.Itoa(svixTimestamp)
	return []conformanceScenario{
		{name: "v1", secrets: []string{svixSecret}, keys: []string{svixSecret}},
		{name: "v1, receiver's secret without whsec_", secrets: []string{svixSecret}, keys: []string{secretWithoutTag}},
		{name: "v1a", secrets: []string{svixSecretKey}, keys: []string{svixPublicKey}},
		{name: "v1a, other key and body", secrets: []string{testSecretKey}, keys: []string{testPublicKey}, body: `{"id":"pool-42","type":"pool.created","timestamp":"2021-02-26T03:02:10Z","data":{"size":8}}`},
		{name: "v1 rotation, old secret", secrets: []string{svixSecret, secondSecret}, keys: []string{svixSecret}},
		{name: "v1 rotation, new secret", secrets: []string{svixSecret, secondSecret}, keys: []string{secondSecret}},
		{name: "v1a rotation, new key", secrets: []string{svixSecretKey, testSecretKey}, keys: []string{testPublicKey}},
		{name: "v1 to v1a, HMAC secret", secrets: []string{svixSecret, svixSecretKey}, keys: []string{svixSecret}},
		{name: "v1 to v1a, public key", secrets: []string{svixSecret, svixSecretKey}, keys: []string{svixPublicKey}},
		{name: "receiver with several keys", secrets: []string{svixSecretKey}, keys: []string{secondSecret, testPublicKey, svixPublicKey}},
		{name: "300 s old", secrets: []string{svixSecret}, keys: []string{svixSecret}, change: clockAt(300)},
		{name: "300 s ahead", secrets: []string{svixSecretKey}, keys: []string{svixPublicKey}, change: clockAt(-300)},

		{name: "v1, wrong secret", secrets: []string{svixSecret}, keys: []string{unrelatedSecret}, err: "invalid_signature"},
		{name: "v1a, wrong public key", secrets: []string{svixSecretKey}, keys: []string{testPublicKey}, err: "invalid_signature"},
		{name: "v1 signature, public key", secrets: []string{svixSecret}, keys: []string{svixPublicKey}, err: "invalid_signature"},
		{name: "v1a signature, HMAC secret", secrets: []string{svixSecretKey}, keys: []string{svixSecret}, err: "invalid_signature"},
		{name: "v1, tampered body", secrets: []string{svixSecret}, keys: []string{svixSecret}, change: tamperBody, err: "invalid_signature"},
		{name: "v1a, tampered body", secrets: []string{svixSecretKey}, keys: []string{svixPublicKey}, change: tamperBody, err: "invalid_signature"},
		{name: "v1, body with a trailing newline", secrets: []string{svixSecret}, keys: []string{svixSecret},
			change: func(r *conformanceReceived) { r.Body += "\n" }, err: "invalid_signature"},
		{name: "v1, tampered id", secrets: []string{svixSecret}, keys: []string{svixSecret}, change: setHeader(headerID, "msg_p5jXN8AQM9LWM0D4loKWxJel"), err: "invalid_signature"},
		{name: "v1a, tampered timestamp", secrets: []string{svixSecretKey}, keys: []string{svixPublicKey},
			change: setHeader(headerTimestamp, strconv.Itoa(svixTimestamp+1)), err: "invalid_signature"},
		{name: "v1 entry labelled v2", secrets: []string{svixSecret}, keys: []string{svixSecret},
			change: setHeader(headerSignature, "v2,"+svixV1Signature[len("v1,"):]), err: "invalid_signature"},
		{name: "301 s old", secrets: []string{svixSecret}, keys: []string{svixSecret}, change: clockAt(301), err: "invalid_timestamp"},
		{name: "301 s ahead", secrets: []string{svixSecretKey}, keys: []string{svixPublicKey}, change: clockAt(-301), err: "invalid_timestamp"},
		{name: "timestamp with a leading zero", secrets: []string{svixSecret}, keys: []string{svixSecret}, change: setHeader(headerTimestamp, "0"+ts), err: "invalid_timestamp"},
		{name: "timestamp with a plus sign", secrets: []string{svixSecret}, keys: []string{svixSecret}, change: setHeader(headerTimestamp, "+"+ts), err: "invalid_timestamp"},
		{name: "timestamp in milliseconds", secrets: []string{svixSecret}, keys: []string{svixSecret}, change: setHeader(headerTimestamp, ts+"000"), err: "invalid_timestamp"},
		{name: "missing webhook-id", secrets: []string{svixSecret}, keys: []string{svixSecret}, change: deleteHeader(headerID), err: "missing_headers"},
		{name: "missing webhook-timestamp", secrets: []string{svixSecret}, keys: []string{svixSecret}, change: deleteHeader(headerTimestamp), err: "missing_headers"},
		{name: "missing webhook-signature", secrets: []string{svixSecretKey}, keys: []string{svixPublicKey}, change: deleteHeader(headerSignature), err: "missing_headers"},
		{name: "empty webhook-signature", secrets: []string{svixSecret}, keys: []string{svixSecret}, change: setHeader(headerSignature, ""), err: "missing_headers"},
	}
}

// buildConformanceFile signs every scenario with the library's signer.
func buildConformanceFile(t *testing.T) conformanceFile {
	t.Helper()
	file := conformanceFile{
		Description: []string{
			"Standard Webhooks requests signed by github.com/smartdrop/webhooks (v1: HMAC-SHA256, v1a: ed25519) and the verdict a receiver must reach on each.",
			"signed: the sender's keys in signing order (whsec_ secrets; whsk_ ed25519 secret keys, base64 of 64 bytes: seed then public key), the message id, timestamp (seconds) and body, and the webhook-signature header they sign to.",
			"received: the receiver's keys (whsec_ secrets, whpk_ public keys; a whsec_ prefix may be absent), its clock (now, seconds), the headers and body it got, and the verdict: valid, or error, one of the keys of errors.",
			"A request verifies when its three headers are present and non-empty, webhook-timestamp is the canonical decimal spelling of a number within tolerance_seconds of now, and some v1 or v1a entry of webhook-signature is a signature of id.timestamp.body under one of the receiver's keys.",
			"Generated by the tests of github.com/smartdrop/webhooks/verify; do not edit.",
		},
		ToleranceSeconds: int64(DefaultTolerance / time.Second),
		Errors: map[string]string{
			"missing_headers":   "webhook-id, webhook-timestamp or webhook-signature is absent or empty",
			"invalid_timestamp": "webhook-timestamp is not canonical or is outside the tolerance",
			"invalid_signature": "no entry of webhook-signature is a valid signature under one of the keys",
		},
	}
	for _, s := range conformanceScenarios() {
		body := s.body
		if body == "" {
			body = svixBody
		}
		h := signedHeader(t, svixMsgID, time.Unix(svixTimestamp, 0), []byte(body), s.secrets...)
		received := conformanceReceived{
			Keys: s.keys,
			Now:  svixTimestamp,
			Headers: map[string]string{
				headerID:        h.Get(headerID),
				headerTimestamp: h.Get(headerTimestamp),
				headerSignature: h.Get(headerSignature),
			},
			Body:  body,
			Valid: s.err == "",
			Error: s.err,
		}
		if s.change != nil {
			s.change(&received)
		}
		file.Cases = append(file.Cases, conformanceCase{
			Name: s.name,
			Signed: conformanceSigned{
				Secrets: s.secrets, ID: svixMsgID, Timestamp: svixTimestamp, Body: body, Signature: h.Get(headerSignature),
			},
			Received: received,
		})
	}
	return file
}

// TestConformanceFileIsTheSigners: testdata/signatures.json is what the library's signer makes of the
// scenarios today; with -update, it is rewritten.
func TestConformanceFileIsTheSigners(t *testing.T) {
	t.Parallel()
	const rewrite = "if the change is meant, run go test ./verify -run TestConformanceFileIsTheSigners -update"
	file := buildConformanceFile(t)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	require.NoError(t, enc.Encode(file))
	if *update {
		require.NoError(t, os.WriteFile(conformancePath, buf.Bytes(), 0o644))
		return
	}
	stored, err := os.ReadFile(conformancePath)
	require.NoError(t, err, rewrite)
	// Case by case first, for a readable difference; then the bytes, for the rest.
	var storedFile conformanceFile
	if json.Unmarshal(stored, &storedFile) == nil && len(storedFile.Cases) == len(file.Cases) {
		for i, c := range file.Cases {
			assert.Equal(t, c, storedFile.Cases[i], "case %q differs; %s", c.Name, rewrite)
		}
	}
	require.True(t, bytes.Equal(buf.Bytes(), stored), "the signer no longer makes testdata/signatures.json; %s", rewrite)
}

// TestConformanceFileVerifies: Verify reaches every case's verdict, and the signer's Svix cases carry
// Svix's published signatures.
func TestConformanceFileVerifies(t *testing.T) {
	t.Parallel()
	stored, err := os.ReadFile(conformancePath)
	require.NoError(t, err)
	var file conformanceFile
	require.NoError(t, json.Unmarshal(stored, &file))
	require.NotEmpty(t, file.Cases)
	require.Equal(t, int64(DefaultTolerance/time.Second), file.ToleranceSeconds)
	verdicts := map[string]int{}
	for _, c := range file.Cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Parallel()
			h := http.Header{}
			for name, value := range c.Received.Headers {
				h.Set(name, value)
			}
			v := verifierAt(t, time.Unix(c.Received.Now, 0), c.Received.Keys...)
			v.Tolerance = time.Duration(file.ToleranceSeconds) * time.Second
			err := v.Verify(h, []byte(c.Received.Body))
			sentinel, known := conformanceErrors[c.Received.Error]
			require.Equal(t, c.Received.Valid, !known, "verdict %q, valid %v", c.Received.Error, c.Received.Valid)
			requireVerdict(t, err, sentinel)
			for name, other := range conformanceErrors {
				if other != sentinel {
					assert.False(t, errors.Is(err, other), "also %s", name)
				}
			}
		})
		verdicts[c.Received.Error]++
		switch {
		case len(c.Signed.Secrets) == 1 && c.Signed.Secrets[0] == svixSecret && c.Signed.Body == svixBody:
			assert.Equal(t, svixV1Signature, c.Signed.Signature, c.Name)
		case len(c.Signed.Secrets) == 1 && c.Signed.Secrets[0] == svixSecretKey && c.Signed.Body == svixBody:
			assert.Equal(t, svixV1aSignature, c.Signed.Signature, c.Name)
		}
	}
	for _, verdict := range []string{"", "missing_headers", "invalid_timestamp", "invalid_signature"} {
		assert.NotZero(t, verdicts[verdict], "no case with verdict %q", verdict)
	}
}
