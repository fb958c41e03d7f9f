package webhooks

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/internal/signing"
)

// officialModulesEnv names a folder containing node_modules/standardwebhooks,
// e.g. one where `npm install standardwebhooks` was run.
const officialModulesEnv = "WEBHOOKS_SW_NODE_MODULES"

// capturedRequest is a webhook request as a receiver sees it.
type capturedRequest struct {
	Header http.Header
	Body   []byte
}

// officialResult is the official verifier's verdict on one request.
type officialResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// officialVerifierScript reads {secret, requests: [{headers, body (base64)}]}
// from the file named by its argument and prints one officialResult per request.
const officialVerifierScript = `
const fs = require("fs");
const { Webhook } = require("standardwebhooks");
const input = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
const wh = new Webhook(input.secret);
const results = input.requests.map((r) => {
  try {
    wh.verify(Buffer.from(r.body, "base64").toString("utf8"), r.headers, { jsonParse: false });
    return { ok: true };
  } catch (e) {
    return { ok: false, error: String((e && e.message) || e) };
  }
});
process.stdout.write(JSON.stringify(results));
`

// verifyWithOfficial runs the official Standard Webhooks JS verifier (npm
// package "standardwebhooks", its Webhook(secret).verify(payload, headers))
// over every request; it fails t if any is rejected. It skips t when the env
// var WEBHOOKS_SW_NODE_MODULES (a folder that contains
// node_modules/standardwebhooks) is unset or node is not on PATH.
func verifyWithOfficial(t *testing.T, secret string, reqs []capturedRequest) {
	t.Helper()
	for i, res := range runOfficialVerifier(t, secret, reqs) {
		assert.True(t, res.OK, "request %d (webhook-id %q) rejected by the official verifier: %s",
			i, reqs[i].Header.Get("webhook-id"), res.Error)
	}
}

// runOfficialVerifier returns the official verifier's verdict on each request.
func runOfficialVerifier(t *testing.T, secret string, reqs []capturedRequest) []officialResult {
	t.Helper()
	modules := os.Getenv(officialModulesEnv)
	if modules == "" {
		t.Skipf("%s not set; run `npm install standardwebhooks` in a folder and point it there", officialModulesEnv)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found on PATH")
	}
	nodePath := filepath.Join(modules, "node_modules")
	_, err = os.Stat(filepath.Join(nodePath, "standardwebhooks"))
	require.NoError(t, err, "%s must contain node_modules/standardwebhooks", officialModulesEnv)

	type jsRequest struct {
		Headers map[string]string `json:"headers"`
		Body    []byte            `json:"body"` // base64: JSON strings cannot carry arbitrary bytes
	}
	input := struct {
		Secret   string      `json:"secret"`
		Requests []jsRequest `json:"requests"`
	}{Secret: secret, Requests: make([]jsRequest, len(reqs))}
	for i, r := range reqs {
		// The JS verifier signs payload strings as UTF-8; other bytes would not survive.
		require.True(t, utf8.Valid(r.Body), "request %d: the official verifier only handles UTF-8 bodies", i)
		input.Requests[i] = jsRequest{
			Headers: map[string]string{
				"webhook-id":        r.Header.Get("webhook-id"),
				"webhook-timestamp": r.Header.Get("webhook-timestamp"),
				"webhook-signature": r.Header.Get("webhook-signature"),
			},
			Body: r.Body,
		}
	}
	data, err := json.Marshal(input)
	require.NoError(t, err)
	inputFile := filepath.Join(t.TempDir(), "requests.json")
	require.NoError(t, os.WriteFile(inputFile, data, 0o600))

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, node, "-e", officialVerifierScript, inputFile)
	cmd.Env = append(os.Environ(), "NODE_PATH="+nodePath)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "official verifier failed: %s", stderr.String())

	var results []officialResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &results), "official verifier output: %s", stdout.String())
	require.Len(t, results, len(reqs))
	return results
}

// officialTestBodies are signed in the official verifier tests.
var officialTestBodies = [][]byte{
	[]byte(`{"type":"order.created","data":{"id":42,"total":"19.99"}}`),
	[]byte(`{"name":"Zoë Ångström","city":"東京","note":"🚀 ünïcödé \u00e9"}`),
	[]byte("{\n  \"pretty\": true,\n  \"list\": [1, 2, 3]\n}\n"),
	[]byte(`{}`),
	[]byte(`{"quote":"\"a\\b\"","tab":"\t"}`),
}

func signedTestRequest(msgID string, ts time.Time, body []byte, keys ...signing.Key) capturedRequest {
	h := http.Header{}
	signing.SetHeaders(h, msgID, ts, body, keys...)
	return capturedRequest{Header: h, Body: body}
}

func TestOfficialVerifierAcceptsSigner(t *testing.T) {
	t.Parallel()
	secret, other := mustNewSecret(t), mustNewSecret(t)
	key, otherKey := mustSigningKey(t, secret), mustSigningKey(t, other)
	now := time.Now()

	var reqs []capturedRequest
	for i, body := range officialTestBodies {
		reqs = append(reqs, signedTestRequest(fmt.Sprintf("msg_%d", i), now, body, key))
	}
	// Rotation: only the second signature is made with secret.
	reqs = append(reqs, signedTestRequest("msg_rotated", now, officialTestBodies[1], otherKey, key))

	verifyWithOfficial(t, secret, reqs)
}

// TestOfficialVerifierRejectsForgeries guards against a vacuous check: the
// official verifier must reject what our Verify rejects.
func TestOfficialVerifierRejectsForgeries(t *testing.T) {
	t.Parallel()
	secret, other := mustNewSecret(t), mustNewSecret(t)
	key, otherKey := mustSigningKey(t, secret), mustSigningKey(t, other)
	now := time.Now()
	body := officialTestBodies[0]

	tampered := signedTestRequest("msg_tampered", now, body, key)
	tampered.Body = bytes.Replace(body, []byte("42"), []byte("43"), 1)
	flipped := signedTestRequest("msg_flipped", now, body, key)
	sig := []byte(flipped.Header.Get("webhook-signature"))
	sig[5] ^= 1 // still base64, different signature
	flipped.Header.Set("webhook-signature", string(sig))
	wrongVersion := signedTestRequest("msg_v2", now, body, key)
	wrongVersion.Header.Set("webhook-signature", "v2"+wrongVersion.Header.Get("webhook-signature")[2:])

	reqs := []capturedRequest{
		tampered,
		flipped,
		wrongVersion,
		signedTestRequest("msg_other_secret", now, body, otherKey),
		signedTestRequest("msg_old", now.Add(-6*time.Minute), body, key),
		signedTestRequest("msg_future", now.Add(6*time.Minute), body, key),
		{Header: http.Header{}, Body: body},
	}
	for i, res := range runOfficialVerifier(t, secret, reqs) {
		assert.False(t, res.OK, "request %d (webhook-id %q) accepted by the official verifier", i, reqs[i].Header.Get("webhook-id"))
		assert.Error(t, verifyAt(secret, reqs[i].Header, reqs[i].Body, now), "request %d accepted by Verify", i)
	}
}

// TestOfficialVerifierAcceptsDispatchedRequests: the requests Dispatch sends to two webhooks (each
// signed with its own secret) pass the official verifier. It skips without the verifier; the
// dispatch itself is TestDispatchSequentialDuplicateSendsOnce's.
func TestOfficialVerifierAcceptsDispatchedRequests(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tr := newTestRedis(t)
	d := newTestDispatcher(t, tr, Options{})
	rc1, rc2 := newReceiver(t), newReceiver(t)
	w1 := mustCreate(t, d, rc1, "pool.created")
	w2 := mustCreate(t, d, rc2, "pool.*")
	res, err := d.Dispatch(ctx, Event{Type: "pool.created", ID: "evt-1", Data: map[string]any{"pool": 7}})
	require.NoError(t, err)
	require.Len(t, res, 2)
	require.Equal(t, 1, rc1.count())
	require.Equal(t, 1, rc2.count())
	verifyWithOfficial(t, w1.Secret, rc1.requests())
	verifyWithOfficial(t, w2.Secret, rc2.requests())
}

// TestOfficialVerifierMixedV1V1a: the official JS verifier (npm standardwebhooks 1.1.1) knows only
// v1 and skips other versions, so it cannot cross-check v1a signatures; what it can check is that a
// header also carrying v1a entries (an endpoint rotating between an HMAC secret and an ed25519 key)
// still verifies for a receiver holding the whsec_ secret, and that a v1a-only header does not.
func TestOfficialVerifierMixedV1V1a(t *testing.T) {
	secret := mustNewSecret(t)
	edSecret, _ := mustNewEd25519Key(t)
	hm, ed := mustSigningKey(t, secret), mustSigningKey(t, edSecret)
	now := time.Now()

	var mixed []capturedRequest
	for i, body := range officialTestBodies {
		mixed = append(mixed, signedTestRequest(fmt.Sprintf("msg_v1_v1a_%d", i), now, body, ed, hm))
	}
	mixed = append(mixed, signedTestRequest("msg_v1a_last", now, officialTestBodies[1], hm, ed))
	verifyWithOfficial(t, secret, mixed)

	edOnly := []capturedRequest{signedTestRequest("msg_v1a_only", now, officialTestBodies[0], ed)}
	for i, res := range runOfficialVerifier(t, secret, edOnly) {
		assert.False(t, res.OK, "request %d: a v1a-only header accepted with a whsec_ secret", i)
	}
}
