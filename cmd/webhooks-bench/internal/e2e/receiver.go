package e2e

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/smartdrop/webhooks"
)

// Receiver is the loopback webhook endpoint: one listener (so one host:port, one connection pool in
// every client) per webhook, answering 204 at once over keep-alive connections. Every VerifyEvery-th
// request is checked with webhooks.Verify against the secret of the system being measured. It runs in
// the process that sends to it, so its CPU is in that process's CPU.
type Receiver struct {
	srvs    []*http.Server
	URLs    []string
	Count   atomic.Int64             // requests answered
	Sampled atomic.Int64             // requests whose signature was checked
	BadSig  atomic.Int64             // of those, the ones that failed
	secrets atomic.Pointer[[]string] // by listener index, "whsec_…"
}

// VerifyEvery is how often the receiver checks a request's signature.
const VerifyEvery = 997

// StartReceiver listens on n loopback ports.
func StartReceiver(n int) (*Receiver, error) {
	rc := &Receiver{}
	var err error
	rc.srvs, rc.URLs, err = Serve(n, rc.handler)
	return rc, err
}

// Serve starts n loopback HTTP servers, the i-th with handler(i), and returns them with their URLs.
// On an error it closes those it started.
func Serve(n int, handler func(i int) http.Handler) ([]*http.Server, []string, error) {
	var srvs []*http.Server
	var urls []string
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			for _, s := range srvs {
				_ = s.Close()
			}
			return nil, nil, err
		}
		srv := &http.Server{Handler: handler(i), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
		go func() { _ = srv.Serve(ln) }()
		srvs = append(srvs, srv)
		urls = append(urls, "http://"+ln.Addr().String()+"/hook")
	}
	return srvs, urls, nil
}

func (rc *Receiver) handler(i int) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := rc.Count.Add(1)
		if s := rc.secrets.Load(); s != nil && n%VerifyEvery == 0 {
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
			rc.Sampled.Add(1)
			if webhooks.Verify((*s)[i], r.Header, body) != nil {
				rc.BadSig.Add(1)
			}
		} else {
			_, _ = io.Copy(io.Discard, r.Body)
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// SetSecrets sets the signing secret of each listener's webhook, by listener index.
func (rc *Receiver) SetSecrets(s []string) { rc.secrets.Store(&s) }

// Close shuts every listener down.
func (rc *Receiver) Close() {
	for _, s := range rc.srvs {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = s.Shutdown(ctx)
		cancel()
	}
}
