package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/smartdrop/webhooks/cmd/webhooks-bench/internal/e2e"
)

// newBaselineClient is the HTTP client the baselines share: a tuned transport comparable to the
// library's default one (keep-alive, MaxIdleConnsPerHost ≥ 64), a timeout, no redirects.
func newBaselineClient(cfg config) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 1024
	tr.MaxIdleConnsPerHost = max(64, cfg.concurrency)
	tr.IdleConnTimeout = 90 * time.Second
	return &http.Client{Transport: tr, Timeout: 15 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// baselineHook is a webhook of a baseline: its URL and signing key.
type baselineHook struct {
	id     string
	url    string
	key    []byte
	secret string // "whsec_" + base64(key), for the receiver's Verify
}

func newBaselineHooks(rc *e2e.Receiver) []baselineHook {
	hooks := make([]baselineHook, len(rc.URLs))
	secrets := make([]string, len(rc.URLs))
	for i, u := range rc.URLs {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		hooks[i] = baselineHook{id: fmt.Sprintf("wh_%02d", i), url: u, key: key,
			secret: "whsec_" + base64.StdEncoding.EncodeToString(key)}
		secrets[i] = hooks[i].secret
	}
	rc.SetSecrets(secrets)
	return hooks
}

// sign is the Standard Webhooks signature, as a typical user writes it.
func sign(key []byte, msgID string, ts int64, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write([]byte(strconv.FormatInt(ts, 10)))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// post sends one signed request and returns its status code.
func post(ctx context.Context, c *http.Client, h *baselineHook, msgID string, body []byte) (int, error) {
	ts := time.Now().Unix()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("webhook-id", msgID)
	req.Header.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	req.Header.Set("webhook-signature", sign(h.key, msgID, ts, body))
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// wireEvent is the request body the baselines send: the library's wire format.
type wireEvent struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}
