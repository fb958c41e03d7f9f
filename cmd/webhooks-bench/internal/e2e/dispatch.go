package e2e

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// Tally counts the pairs of one Dispatch of event id that went as wanted: each of the want targets
// delivered with success (fresh) or rejected as a duplicate (wantDup). With deferOK, a fresh pair
// whose first attempt Dispatch left to the worker (an error, and its delivery pending) is counted in
// deferred instead of failed: a worker delivers it, and the caller waits for that. (The library at
// ac27a5b never defers.)
func Tally(id string, results []webhooks.Result, want int, wantDup, deferOK bool) (ok, failed, deferred int, err error) {
	if len(results) != want {
		return 0, want, 0, fmt.Errorf("event %s: %d targets, want %d", id, len(results), want)
	}
	for _, r := range results {
		switch {
		case !wantDup && deferOK && r.Err != nil && r.Delivery != nil && !r.Duplicate &&
			r.Delivery.Status == webhooks.StatusPending:
			deferred++
		case r.Err != nil:
			failed++
			err = r.Err
		case r.Delivery == nil:
			failed++
			err = fmt.Errorf("event %s webhook %s: no delivery", id, r.WebhookID)
		case wantDup && r.Duplicate, !wantDup && !r.Duplicate && r.Delivery.Status == webhooks.StatusSuccess:
			ok++
		default:
			failed++
			err = fmt.Errorf("event %s webhook %s: duplicate=%t status %s (%s)", id, r.WebhookID, r.Duplicate,
				r.Delivery.Status, r.Delivery.LastError)
		}
	}
	return ok, failed, deferred, err
}

// Subscribe creates one webhook per listener of rc, subscribed to EventType, and gives rc their
// secrets.
func Subscribe(ctx context.Context, d *webhooks.Dispatcher, rc *Receiver) error {
	secrets := make([]string, len(rc.URLs))
	for i, u := range rc.URLs {
		wh, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: u, Events: []string{EventType}})
		if err != nil {
			return err
		}
		secrets[i] = wh.Secret
	}
	rc.SetSecrets(secrets)
	return nil
}

// StartReplica runs Run of a second Dispatcher with opts, on its own Redis client, in this process:
// a replica's worker. stop ends it (at most 30 s) and may be called more than once.
func StartReplica(ctx context.Context, addr string, pool int, opts webhooks.Options) (stop func(), err error) {
	rdb := redis.NewClient(&redis.Options{Addr: addr, PoolSize: pool})
	d, err := webhooks.New(rdb, opts)
	if err != nil {
		rdb.Close()
		return nil, err
	}
	wctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { defer close(stopped); _ = d.Run(wctx) }()
	var once atomic.Bool
	return func() {
		if once.Swap(true) {
			return
		}
		cancel()
		select {
		case <-stopped:
		case <-time.After(30 * time.Second):
		}
		d.CloseIdleConnections()
		rdb.Close()
	}, nil
}
