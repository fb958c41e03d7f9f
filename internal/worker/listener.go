package worker

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// How a sleeping worker hears of work: the scripts that make something due sooner than a worker may
// know publish when (lib/wake.lua, the schema comment's channels), and each Run's Listener, subscribed
// to every shard's channels on a connection of its own, lowers its scan hints (ScanHints.Lower) and
// wakes it. So an idle worker sends nothing for the deliveries others make due: it sleeps until the
// earliest time a hint names, a wake, or its sweep (ScanHints). A subscription (re)established makes
// the worker read every shard once (ScanHints.Resync): what was published while it was down is lost.
// The subscription is pinged when it has been quiet for PingEvery, so a dead connection is found and
// made again.

// PingEvery is how long the subscription may be quiet before the Listener pings it.
const PingEvery = 30 * time.Second

// ListenerConfig is what a Listener hears with.
type ListenerConfig struct {
	Redis redis.UniversalClient
	Keys  rdb.Keys
	// LoadKeys reads the keyspace's layout unless it has been read.
	LoadKeys func(ctx context.Context) error
	// Hints are the scan hints the wakes lower (Leaser.Hints), once the layout is loaded.
	Hints func() *ScanHints
	Log   *slog.Logger
}

// Listener is a Run's subscription to the wakes of the schedule (see the file comment).
type Listener struct {
	cfg ListenerConfig
}

// NewListener returns the Listener of cfg. It does no I/O.
func NewListener(cfg ListenerConfig) *Listener { return &Listener{cfg: cfg} }

// Listen subscribes to every shard's wake channels and, until ctx ends, lowers the hints by each wake
// heard and pokes wake. It calls ready once: when the subscription is first made, or when making it
// failed (the worker meets the same Redis). A subscription that fails, or does not answer a ping, is
// closed and made again (backing off up to 5s while Redis fails). It returns once ctx has ended and
// the subscription is closed.
func (l *Listener) Listen(ctx context.Context, wake *Wake, ready func()) {
	ready = sync.OnceFunc(ready)
	defer ready()
	backoff := minBackoff
	for ctx.Err() == nil {
		if err := l.cfg.LoadKeys(ctx); err != nil {
			ready()
			sleepCtx(ctx, backoff)
			backoff = min(2*backoff, maxErrorBackoff)
			continue
		}
		names, of := rdb.WakeChannels(l.cfg.Keys)
		err := l.subscribe(ctx, names, of, func() {
			l.cfg.Hints().Resync()
			backoff = minBackoff
			wake.Poke()
			ready()
		}, func(c rdb.WakeChannel, atMs int64) {
			l.cfg.Hints().Lower(c.Shard, c.Kind, atMs)
			wake.Poke()
		})
		if ctx.Err() != nil {
			return
		}
		ready()
		l.cfg.Log.Debug("webhooks: worker's wake subscription failed: subscribing again", "error", err)
		sleepCtx(ctx, backoff)
		backoff = min(2*backoff, maxErrorBackoff)
	}
}

// subscribe makes one subscription to names, on a connection of its own, and receives on it until ctx
// ends or it fails: subscribed is called when every channel is subscribed, heard with each wake. It
// returns why it failed, once the subscription is closed.
func (l *Listener) subscribe(ctx context.Context, names []string, of map[string]rdb.WakeChannel,
	subscribed func(), heard func(c rdb.WakeChannel, atMs int64)) error {
	ps := l.cfg.Redis.Subscribe(ctx, names...)
	closed := make(chan struct{})
	stop := context.AfterFunc(ctx, func() { _ = ps.Close(); close(closed) }) // ends a receive that waits
	defer func() {
		if stop() {
			_ = ps.Close()
		} else {
			<-closed
		}
	}()
	pinged := false // a ping is unanswered
	for {
		msg, err := ps.ReceiveTimeout(ctx, PingEvery)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if ne := (net.Error)(nil); err != nil && !pinged && errors.As(err, &ne) && ne.Timeout() {
			pinged = true // quiet for PingEvery: a live connection answers within the next
			err = ps.Ping(ctx)
		}
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Count == len(names) { // every channel: (re)subscribed
				subscribed()
			}
		case *redis.Message:
			if c, ok := of[m.Channel]; ok {
				if at, ok := rdb.ParseWake(m.Payload); ok {
					heard(c, at)
				}
			}
		}
		if msg != nil {
			pinged = false
		}
	}
}

// sleepCtx waits for d or ctx's end.
func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
