package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// The producer role: a Dispatcher with Run going, dispatching events cfg.from..cfg.events-1 (even
// ones with Dispatch, odd ones with Enqueue) until each is accepted, then working as a worker until
// SIGTERM. It reports on stdout, one line each:
//
//	progress N            N events accepted so far (every 100)
//	done N RETRIES        every event accepted; RETRIES calls were not accepted and were made again
//	circuit-opened ID MS UNTIL  Hooks.CircuitOpened at MS: webhook ID open until UNTIL (Unix ms)
//	circuit-closed ID MS        Hooks.CircuitClosed at MS
//	error TEXT            something the orchestrator should show
//	taken I               (-fault skip-replay only) event I is about to be dispatched

// stdoutLines writes whole lines to stdout, one write each.
var stdoutLines sync.Mutex

func report(format string, args ...any) {
	line := fmt.Sprintf(format, args...) + "\n"
	stdoutLines.Lock()
	defer stdoutLines.Unlock()
	_, _ = os.Stdout.WriteString(line)
}

// dispatcherOptions are the options of every Dispatcher of the soak (the orchestrator's too).
// A producer's requests carry its number (producerHeader), so the receiver can tell what a producer kill
// could lose.
func dispatcherOptions(cfg config, hooks webhooks.Hooks) webhooks.Options {
	opts := webhooks.Options{
		KeyPrefix:            keyPrefix,
		Timeout:              cfg.timeout,
		RetrySchedule:        retrySchedule,
		AllowPrivateNetworks: true,
		BreakAfter:           cfg.breakAfter,
		Hooks:                hooks,
	}
	if cfg.role == "producer" {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConns, tr.MaxIdleConnsPerHost = 1024, 64 // as the library's own default transport
		tr.IdleConnTimeout, tr.ForceAttemptHTTP2 = 90*time.Second, true
		opts.HTTPClient = &http.Client{Transport: producerTransport{index: strconv.Itoa(cfg.index), next: tr}}
	}
	return opts
}

// producerHeader names the producer that sent a request.
const producerHeader = "Chaos-Producer"

// producerTransport adds producerHeader to every request.
type producerTransport struct {
	index string
	next  http.RoundTripper
}

// CloseIdleConnections closes the wrapped transport's idle connections (Dispatcher.CloseIdleConnections).
func (t producerTransport) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// RoundTrip sends req with producerHeader set.
func (t producerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set(producerHeader, t.index)
	return t.next.RoundTrip(req)
}

// quietRedisLog drops go-redis's own log lines ("failed to dial" while the soak's Redis is down):
// every call that fails is counted and made again by the soak itself.
type quietRedisLog struct{}

func (quietRedisLog) Printf(context.Context, string, ...any) {}

func init() { redis.SetLogger(quietRedisLog{}) }

// newClient is the go-redis client of every process of the soak: short timeouts, so a call to a
// killed Redis fails fast and is made again.
func newClient(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: addr, DialTimeout: time.Second, ReadTimeout: 2 * time.Second,
		WriteTimeout: 2 * time.Second, PoolSize: 128})
}

func runProducer(ctx context.Context, cfg config) error {
	rdb := newClient(cfg.redisAddr)
	defer rdb.Close()
	hooks := webhooks.Hooks{
		CircuitOpened: func(id string, until time.Time) {
			report("circuit-opened %s %d %d", id, time.Now().UnixMilli(), until.UnixMilli())
		},
		CircuitClosed: func(id string) { report("circuit-closed %s %d", id, time.Now().UnixMilli()) },
	}
	d, err := newDispatcher(ctx, rdb, dispatcherOptions(cfg, hooks))
	if err != nil {
		return err
	}
	defer d.CloseIdleConnections()
	var wg sync.WaitGroup
	if cfg.fault != "no-worker" {
		wg.Go(func() { _ = d.Run(ctx) }) // returns once ctx ends and its attempts are recorded
	}
	retries, err := dispatchAll(ctx, d, cfg)
	if err != nil && ctx.Err() == nil {
		report("error %v", err)
		return err
	}
	if err == nil {
		report("done %d %d", cfg.events, retries)
	}
	<-ctx.Done() // work as a worker until stopped
	wg.Wait()
	return nil
}

// newDispatcher calls New until it succeeds (New reads Redis, which may be down) or ctx ends.
func newDispatcher(ctx context.Context, rdb redis.UniversalClient, opts webhooks.Options) (*webhooks.Dispatcher, error) {
	for {
		d, err := webhooks.New(rdb, opts)
		if err == nil {
			return d, nil
		}
		if errors.Is(err, webhooks.ErrInvalidOptions) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("webhooks.New: %w (last error: %w)", ctx.Err(), err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// dispatchAll dispatches events cfg.from.. from cfg.senders goroutines at most cfg.rate a second, and
// returns how many calls were not accepted (and made again).
func dispatchAll(ctx context.Context, d *webhooks.Dispatcher, cfg config) (int64, error) {
	next := make(chan int)
	go func() {
		defer close(next)
		for i := cfg.from; i < cfg.events; i++ {
			select {
			case next <- i:
			case <-ctx.Done():
				return
			}
		}
	}()
	pace := time.NewTicker(time.Second / time.Duration(cfg.rate))
	defer pace.Stop()
	var accepted, retries atomic.Int64
	accepted.Store(int64(cfg.from))
	errs := make([]error, cfg.senders)
	var wg sync.WaitGroup
	for s := range cfg.senders {
		wg.Go(func() {
			for i := range next {
				select {
				case <-pace.C:
				case <-ctx.Done():
					errs[s] = ctx.Err()
					return
				}
				if cfg.fault == "skip-replay" {
					report("taken %d", i) // the fault: a restart resumes after the last event taken, accepted or not
				}
				n, err := dispatchOne(ctx, d, cfg.index, i)
				retries.Add(n)
				if err != nil {
					errs[s] = err
					return
				}
				if a := accepted.Add(1); a%100 == 0 {
					report("progress %d", a)
				}
			}
		})
	}
	wg.Wait()
	return retries.Load(), errors.Join(errs...)
}

// dispatchOne dispatches (even i) or enqueues (odd i) one event until all three webhooks' pairs are
// accepted, and returns how many calls were not.
func dispatchOne(ctx context.Context, d *webhooks.Dispatcher, producer, i int) (int64, error) {
	evt := webhooks.Event{Type: eventType, ID: eventID(producer, i), Data: map[string]int{"producer": producer, "seq": i}}
	var retries int64
	for {
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		var res []webhooks.Result
		var err error
		if i%2 == 0 {
			res, err = d.Dispatch(callCtx, evt)
		} else {
			res, err = d.Enqueue(callCtx, evt)
		}
		cancel()
		switch {
		case err == nil && len(res) == len(endpoints):
			return retries, nil
		case errors.Is(err, webhooks.ErrInvalidEvent):
			return retries, err
		case ctx.Err() != nil:
			return retries, ctx.Err()
		case err == nil:
			report("error event %s: %d results, want %d", evt.ID, len(res), len(endpoints))
		}
		retries++
		select {
		case <-ctx.Done():
			return retries, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// eventID names event i of a producer.
func eventID(producer, i int) string { return fmt.Sprintf("p%d-e%d", producer, i) }
