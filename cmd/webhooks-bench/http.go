package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/smartdrop/webhooks"
)

// receiver is the loopback webhook endpoint: one listener (so one host:port, one connection pool in
// every client) per webhook, answering 204 at once over keep-alive connections. Every verifyEvery-th
// request is checked with webhooks.Verify against the secret of the system being measured.
type receiver struct {
	srvs    []*http.Server
	urls    []string
	count   atomic.Int64
	sampled atomic.Int64
	badSig  atomic.Int64
	secrets atomic.Pointer[[]string] // by listener index, "whsec_…"
}

const verifyEvery = 997

func startReceiver(n int) (*receiver, error) {
	rc := &receiver{}
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			rc.close()
			return nil, err
		}
		srv := &http.Server{Handler: rc.handler(i), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
		go func() { _ = srv.Serve(ln) }()
		rc.srvs = append(rc.srvs, srv)
		rc.urls = append(rc.urls, "http://"+ln.Addr().String()+"/hook")
	}
	return rc, nil
}

func (rc *receiver) handler(i int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := rc.count.Add(1)
		if s := rc.secrets.Load(); s != nil && n%verifyEvery == 0 {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			rc.sampled.Add(1)
			if webhooks.Verify((*s)[i], r.Header, body) != nil {
				rc.badSig.Add(1)
			}
		} else {
			_, _ = io.Copy(io.Discard, r.Body)
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func (rc *receiver) setSecrets(s []string) { rc.secrets.Store(&s) }

func (rc *receiver) close() {
	for _, s := range rc.srvs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.Shutdown(ctx)
		cancel()
	}
}

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

func newBaselineHooks(rc *receiver) []baselineHook {
	hooks := make([]baselineHook, len(rc.urls))
	secrets := make([]string, len(rc.urls))
	for i, u := range rc.urls {
		key := make([]byte, 32)
		_, _ = rand.Read(key)
		hooks[i] = baselineHook{id: fmt.Sprintf("wh_%02d", i), url: u, key: key,
			secret: "whsec_" + base64.StdEncoding.EncodeToString(key)}
		secrets[i] = hooks[i].secret
	}
	rc.setSecrets(secrets)
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

// eventData is the event's data, padded so that it encodes to the -payload size.
type eventData struct {
	PoolID string `json:"pool_id"`
	Owner  string `json:"owner"`
	Region string `json:"region"`
	Note   string `json:"note"`
}

func newEventData(size int) eventData {
	d := eventData{PoolID: "pool_0000000042", Owner: "acct_7f3a9c", Region: "eu-west-1"}
	b, _ := json.Marshal(d)
	if pad := size - len(b); pad > 0 {
		d.Note = strings.Repeat("x", pad)
	}
	return d
}

const eventType = "pool.created"

// wireEvent is the request body the baselines send: the library's wire format.
type wireEvent struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Data      any       `json:"data"`
}

// eventID is the i-th event id of a phase: 29 bytes with the phase's 13-byte prefix, as long as a
// Stripe event id.
func eventID(idPrefix string, i int) string { return fmt.Sprintf("%s%016d", idPrefix, i) }
