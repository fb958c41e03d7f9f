package main

import (
	"encoding/json"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smartdrop/webhooks"
)

// endpoint is one of the receiver's three webhooks.
type endpoint struct {
	name     string
	failRate float64 // share of requests answered 500
	hangRate float64 // share of requests held past the Dispatcher's Timeout, then answered 503
}

// endpoints are the receiver's webhooks, in the order figures are printed.
var endpoints = []endpoint{
	{name: "healthy"},
	{name: "flaky", failRate: 0.10},
	{name: "hanging", hangRate: 0.01},
}

// pair is one (webhook, event) pair, the webhook by its index in endpoints.
type pair struct {
	endpoint int
	event    string
}

// endpointCounts are one endpoint's request figures.
type endpointCounts struct {
	requests, ok, failed, hung atomic.Int64
}

// answer is a 2xx: when it was answered, and to which producer (producerHeader; -1: none).
type answer struct {
	at       time.Time
	producer int
}

// dup is an extra 2xx: when it was answered, and the pair's 2xx before it.
type dup struct {
	at       time.Time
	producer int
	pair     pair
	previous answer
}

// receiver is the soak's subscriber: it verifies every request's signature and counts every 2xx it
// answers per pair.
type receiver struct {
	srv     *http.Server
	ln      net.Listener
	hangFor time.Duration

	mu      sync.Mutex
	secrets []string
	ok      map[pair]int
	run     []int // the current run of failed requests of each endpoint, in the order they were answered
	maxRun  []int // the longest such run
	longRun int   // a run at least this long is long: its failures' answer times are kept
	longAt  [][]time.Time
	lastOK  map[pair]answer     // each pair's latest 2xx
	dups    []dup               // every extra 2xx, in the order answered
	okAt    map[int][]time.Time // when each 2xx was answered to each producer (producerHeader), in order

	counts       []endpointCounts
	inFlight     atomic.Int64 // requests being answered now
	badSignature atomic.Int64
	badRequest   atomic.Int64
}

// startReceiver listens on a loopback port; a hanging request is held for hangFor (or until the
// client gives up). It keeps when each failure of a run of at least longRun failures was answered.
func startReceiver(hangFor time.Duration, longRun int) (*receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &receiver{ln: ln, hangFor: hangFor, secrets: make([]string, len(endpoints)), ok: make(map[pair]int), lastOK: make(map[pair]answer), okAt: map[int][]time.Time{},
		run: make([]int, len(endpoints)), maxRun: make([]int, len(endpoints)), longRun: max(longRun, 1),
		longAt: make([][]time.Time, len(endpoints)), counts: make([]endpointCounts, len(endpoints))}
	mux := http.NewServeMux()
	for i, e := range endpoints {
		mux.HandleFunc("POST /"+e.name, func(w http.ResponseWriter, req *http.Request) { r.serve(w, req, i) })
	}
	r.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// url is the URL of endpoint i.
func (r *receiver) url(i int) string {
	return "http://" + r.ln.Addr().String() + "/" + endpoints[i].name
}

// setSecret sets the signing secret requests to endpoint i must carry.
func (r *receiver) setSecret(i int, secret string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.secrets[i] = secret
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request, i int) {
	e, c := endpoints[i], &r.counts[i]
	c.requests.Add(1)
	r.inFlight.Add(1)
	defer r.inFlight.Add(-1)
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	var msg struct {
		ID string `json:"id"`
	}
	if err == nil {
		err = json.Unmarshal(body, &msg)
	}
	if err != nil || msg.ID == "" {
		r.badRequest.Add(1)
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	r.mu.Lock()
	secret := r.secrets[i]
	r.mu.Unlock()
	if err := webhooks.Verify(secret, req.Header, body); err != nil {
		r.badSignature.Add(1)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	x := rand.Float64()
	// In the order the receiver answers: a hung request's answer is its end (the client gave up), so
	// hung requests in flight when the Dispatchers stop starting new ones (Redis down) are answered
	// in a row, after every request that started with them. The breaker counts that order.
	defer r.countRun(i, x < e.failRate || x < e.hangRate)
	switch {
	case x < e.failRate:
		c.failed.Add(1)
		http.Error(w, "flaky", http.StatusInternalServerError)
		return
	case x < e.hangRate:
		c.hung.Add(1)
		select {
		case <-req.Context().Done():
		case <-time.After(r.hangFor):
		}
		http.Error(w, "hung", http.StatusServiceUnavailable)
		return
	}
	c.ok.Add(1)
	r.mu.Lock()
	p, now := pair{i, msg.ID}, time.Now()
	producer, err := strconv.Atoi(req.Header.Get(producerHeader))
	if err != nil {
		producer = -1
	}
	r.ok[p]++
	if r.ok[p] > 1 {
		r.dups = append(r.dups, dup{at: now, producer: producer, pair: p, previous: r.lastOK[p]})
	}
	r.lastOK[p] = answer{at: now, producer: producer}
	if producer >= 0 {
		r.okAt[producer] = append(r.okAt[producer], now)
	}
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// countRun counts a request of endpoint i that failed (or not), as it is answered, in its run of
// failures.
func (r *receiver) countRun(i int, fails bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !fails {
		r.run[i] = 0
		return
	}
	r.run[i]++
	r.maxRun[i] = max(r.maxRun[i], r.run[i])
	if r.run[i] >= r.longRun {
		r.longAt[i] = append(r.longAt[i], time.Now())
	}
}

// longRuns is when each failure of endpoint i's long runs was answered.
func (r *receiver) longRuns(i int) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.longAt[i])
}

// longestRun is the most requests of endpoint i that failed in a row, in the order they were answered.
func (r *receiver) longestRun(i int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.maxRun[i]
}

// okCount is how many 2xx the receiver answered for p.
func (r *receiver) okCount(p pair) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok[p]
}

// unseen returns the pairs of want no 2xx was answered for.
func (r *receiver) unseen(want []pair) []pair {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []pair
	for _, p := range want {
		if r.ok[p] == 0 {
			out = append(out, p)
		}
	}
	return out
}

// strangers counts the pairs answered 2xx that the soak never dispatched.
func (r *receiver) strangers(want []pair) int {
	known := make(map[pair]bool, len(want))
	for _, p := range want {
		known[p] = true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for p := range r.ok {
		if !known[p] {
			n++
		}
	}
	return n
}

// close stops the receiver, cutting held requests.
func (r *receiver) close() { _ = r.srv.Close() }
