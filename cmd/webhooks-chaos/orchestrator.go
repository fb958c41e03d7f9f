package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// soak is one run of the orchestrator: what it started and what it saw.
type soak struct {
	cfg     config
	started time.Time
	rng     *rand.Rand
	redis   *redisServer
	recv    *receiver
	d       *webhooks.Dispatcher // the orchestrator's own: setup, health polls, record reads
	ids     []string             // webhook id of each endpoint
	pairs   []pair
	watch   *circuitWatch
	fleet   *fleet
	tmp     string        // the temporary directory (Redis's AOF and log)
	rdb     *redis.Client // the orchestrator's client

	mu         sync.Mutex
	redisFails []error // the Redis process exited by itself
	kills      []kill  // every SIGKILL, in order

	lastAccept time.Time
}

func runOrchestrator(ctx context.Context, cfg config) (err error) {
	if cfg.seed == 0 {
		cfg.seed = uint64(time.Now().UnixNano())
	}
	s := &soak{cfg: cfg, started: time.Now(), rng: rand.New(rand.NewPCG(cfg.seed, 1))}
	fmt.Printf("chaos: seed %d; %d producers × %d events × %d webhooks; %d producer kills, %d Redis kills; Timeout %s, BreakAfter %d\n",
		cfg.seed, cfg.producers, cfg.events, len(endpoints), cfg.producerKills, cfg.redisKills, cfg.timeout, cfg.breakAfter)
	defer s.shutdown()
	if err := s.setUp(ctx); err != nil {
		return err
	}
	pollCtx, stopPolls := context.WithCancel(ctx)
	var polls sync.WaitGroup
	polls.Go(func() { s.watch.poll(pollCtx, s.d) })
	defer func() { stopPolls(); polls.Wait() }()

	if err := s.acceptPhase(ctx); err != nil {
		return err
	}
	dr := s.drain(ctx)
	s.fleet.stopAll(3 * s.cfg.timeout)
	stopPolls()
	polls.Wait()
	res, err := s.sweep(ctx)
	if err != nil {
		return err
	}
	return s.verdict(ctx, res, dr)
}

// setUp starts Redis and the receiver, creates the three webhooks and starts the producers.
func (s *soak) setUp(ctx context.Context) error {
	dir, err := os.MkdirTemp("", "webhooks-chaos-")
	if err != nil {
		return err
	}
	s.tmp = dir
	s.redis, err = startRedis(ctx, s.cfg.redisBin, dir, func(c *child) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.redisFails = append(s.redisFails, c.exitError())
	})
	if err != nil {
		return err
	}
	if s.recv, err = startReceiver(3*s.cfg.timeout, s.cfg.breakAfter-1); err != nil {
		return err
	}
	s.rdb = newClient(s.redis.addr())
	if s.d, err = webhooks.New(s.rdb, dispatcherOptions(s.cfg, webhooks.Hooks{})); err != nil {
		return err
	}
	for i, e := range endpoints {
		wh, err := s.d.Webhooks().Create(ctx, webhooks.Webhook{URL: s.recv.url(i), Events: []string{eventType}, Description: "chaos " + e.name})
		if err != nil {
			return fmt.Errorf("create webhook %s: %w", e.name, err)
		}
		s.recv.setSecret(i, wh.Secret)
		s.ids = append(s.ids, wh.ID)
	}
	for p := range s.cfg.producers {
		for i := range s.cfg.events {
			for e := range endpoints {
				s.pairs = append(s.pairs, pair{e, eventID(p, i)})
			}
		}
	}
	fmt.Printf("chaos: redis-server pid %d on %s (AOF in %s); receiver on %s\n", s.redis.proc.pid(), s.redis.addr(), s.redis.dir, s.recv.ln.Addr())
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	s.watch = newCircuitWatch(s.ids)
	s.fleet = newFleet(s.cfg, exe, s.redis.addr(), s.watch)
	for p := range s.cfg.producers {
		if err := s.fleet.start(p, 0); err != nil {
			return err
		}
	}
	return nil
}

// killPlan returns when (as shares of all events accepted) to kill: producers at random points in
// [0.05, 0.9], Redis spread evenly over [0.1, 0.8] with some jitter.
func (s *soak) killPlan() (producers, redis []float64) {
	for range s.cfg.producerKills {
		producers = append(producers, 0.05+0.85*s.rng.Float64())
	}
	slices.Sort(producers)
	for k := range s.cfg.redisKills {
		at := 0.1 + 0.7*float64(k+1)/float64(s.cfg.redisKills+1)
		redis = append(redis, at+0.1*(s.rng.Float64()-0.5))
	}
	slices.Sort(redis)
	return producers, redis
}

// acceptPhase runs the kill plan while the producers accept their events, and returns once every
// producer's current incarnation has accepted them all (the last accept).
func (s *soak) acceptPhase(ctx context.Context) error {
	pkills, rkills := s.killPlan()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	bound := time.After(s.cfg.acceptBound)
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("accept phase: %w", ctx.Err())
		case <-bound:
			return fmt.Errorf("the producers did not accept all events within -accept-bound %s (%.1f%% accepted)", s.cfg.acceptBound, 100*s.fleet.progress())
		case <-tick.C:
		}
		if err := s.failure(); err != nil {
			return err
		}
		at := s.fleet.progress()
		if len(rkills) > 0 && at >= rkills[0] {
			rkills = rkills[1:]
			down := s.cfg.redisDown + time.Duration(s.rng.Int64N(int64(max(s.cfg.redisDownMax-s.cfg.redisDown, 0))+1))
			s.logf("Redis SIGKILLed (pid %d) at %.0f%% accepted, down for %s", s.redis.proc.pid(), 100*at, down.Round(time.Millisecond))
			s.noteKill(killRedis, -1)
			if err := s.redis.killRestart(ctx, down); err != nil {
				return err
			}
			s.noteBack()
			s.logf("Redis restarted on its AOF (pid %d)", s.redis.proc.pid())
		}
		if len(pkills) > 0 && at >= pkills[0] {
			pkills = pkills[1:]
			if err := s.fleet.killRestart(s.rng, func(i int) { s.noteKill(killProducer, i) }); err != nil {
				return err
			}
		}
		if len(pkills) == 0 && len(rkills) == 0 && s.fleet.allDone() {
			s.lastAccept = time.Now()
			fmt.Printf("chaos: every event accepted after %.1fs\n", s.lastAccept.Sub(s.started).Seconds())
			return nil
		}
	}
}

// failure is the first child that exited by itself, if any.
func (s *soak) failure() error {
	s.mu.Lock()
	err := errors.Join(s.redisFails...)
	s.mu.Unlock()
	return errors.Join(err, s.fleet.failure())
}

func (s *soak) logf(format string, args ...any) {
	if s.cfg.verbose {
		fmt.Printf("chaos: %5.1fs %s\n", time.Since(s.started).Seconds(), fmt.Sprintf(format, args...))
	}
}

// shutdown stops every child by pid (producers, then Redis), closes the receiver and removes the
// temporary directory. It runs on every return, failures included.
func (s *soak) shutdown() {
	if s.fleet != nil {
		s.fleet.stopAll(3 * s.cfg.timeout)
	}
	if s.recv != nil {
		s.recv.close()
	}
	if s.rdb != nil {
		_ = s.rdb.Close()
	}
	if err := s.redis.stop(); err != nil {
		fmt.Fprintf(os.Stderr, "webhooks-chaos: stop redis: %v\n", err)
	}
	if s.tmp != "" {
		_ = os.RemoveAll(s.tmp)
	}
}

// kill is one SIGKILL of the soak, and the requests the receiver was answering at that moment.
type kill struct {
	at       time.Time
	kind     string // killRedis or killProducer
	inFlight int64
	producer int       // the producer killed (killProducer)
	back     time.Time // when Redis answered again (killRedis)
}

const (
	killRedis    = "Redis"
	killProducer = "producer"
)

// noteKill records a SIGKILL about to be sent (to producer, for a producer kill).
func (s *soak) noteKill(kind string, producer int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.kills = append(s.kills, kill{at: time.Now(), kind: kind, inFlight: s.recv.inFlight.Load(), producer: producer})
}

// noteBack records that Redis answers again after the last Redis kill.
func (s *soak) noteBack() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.kills) - 1; i >= 0; i-- {
		if s.kills[i].kind == killRedis {
			s.kills[i].back = time.Now()
			return
		}
	}
}

// dupCauses attributes each extra 2xx to the last SIGKILL before it, when that was at most window
// earlier ("other" otherwise), and sums the attempts a producer kill can lose: the requests in flight
// at it and the 2xx answered to the killed producer within lostWindow before it (their outcomes perhaps
// not yet recorded). An extra 2xx put
// down to a producer kill is explained when the pair's 2xx before it was answered to the producer of
// some kill up to the extra one, within lostWindow before that kill or killAnswerWindow after it: the
// outcome a kill can lose (answered, not yet recorded) or a request the killed process had in flight.
// It is explained too when that 2xx was answered within lostWindow before a Redis kill, or while Redis
// was down, and its producer was killed before it could write the outcome it kept through the outage:
// at most keptWindow after Redis answered again.
func (s *soak) dupCauses(window time.Duration) (dc dupReport) {
	s.mu.Lock()
	kills := slices.Clone(s.kills)
	s.mu.Unlock()
	s.recv.mu.Lock()
	dups := slices.Clone(s.recv.dups)
	okAt := map[int][]time.Time{}
	for _, k := range kills {
		okAt[k.producer] = slices.Clone(s.recv.okAt[k.producer])
	}
	s.recv.mu.Unlock()
	dc.byCause, dc.kills = map[string]int{}, kills
	lost := s.lostWindow()
	for _, k := range kills {
		if k.kind == killProducer {
			from, _ := slices.BinarySearchFunc(okAt[k.producer], k.at.Add(-lost), time.Time.Compare)
			to, _ := slices.BinarySearchFunc(okAt[k.producer], k.at, time.Time.Compare)
			dc.inFlightAtProducerKills += k.inFlight
			dc.answeredBeforeProducerKills += int64(to - from)
		}
	}
	for _, d := range dups {
		cause := "other"
		for i := len(kills) - 1; i >= 0; i-- {
			if !kills[i].at.After(d.at) {
				if d.at.Sub(kills[i].at) <= window {
					cause = kills[i].kind
				}
				break
			}
		}
		dc.byCause[cause]++
		if cause != killProducer {
			continue
		}
		nearest := time.Duration(1 << 62)
		for _, k := range kills {
			if off := d.previous.at.Sub(k.at); k.kind == killProducer && !k.at.After(d.at) && abs(off) < abs(nearest) {
				nearest = off
			}
		}
		dc.offsets = append(dc.offsets, nearest)
		killedBy := func(k kill, from, to time.Time) bool { // the producer of d.previous, killed within [from, to]
			return k.kind == killProducer && k.producer == d.previous.producer && !k.at.After(d.at) &&
				!k.at.Before(from) && !k.at.After(to)
		}
		explained := slices.ContainsFunc(kills, func(k kill) bool {
			return killedBy(k, d.previous.at.Add(-killAnswerWindow), d.previous.at.Add(lost))
		}) || slices.ContainsFunc(kills, func(r kill) bool { // kept through a Redis outage, then killed
			return r.kind == killRedis && !r.back.IsZero() && !d.previous.at.Before(r.at.Add(-lost)) &&
				!d.previous.at.After(r.back) && slices.ContainsFunc(kills, func(k kill) bool {
				return killedBy(k, r.at, r.back.Add(s.keptWindow()))
			})
		})
		if !explained {
			dc.unexplainedByProducerKill++
			dc.unexplained = append(dc.unexplained, d)
		}
	}
	return dc
}

// dupReport is what dupCauses found: the extra 2xx by cause, the requests in flight at the producer
// kills, and the extra 2xx after a producer kill that no kill explains.
type dupReport struct {
	byCause                     map[string]int
	inFlightAtProducerKills     int64
	answeredBeforeProducerKills int64
	unexplainedByProducerKill   int
	// offsets is, for each extra 2xx after a producer kill, when the pair's 2xx before it was answered
	// relative to the nearest producer kill before the extra one (negative: before that kill).
	offsets []time.Duration
	// unexplained are the extra 2xx after a producer kill that no kill explains.
	unexplained []dup
	kills       []kill
}

// describeUnexplained prints, for at most 5 of the unexplained extra 2xx, when each of the pair's two
// 2xx was answered and to which producer, the kills within 3s of them, and the attempts its record
// holds: what the next such failure needs to be understood.
func (s *soak) describeUnexplained(ctx context.Context, dc dupReport) {
	at := func(t time.Time) string { return t.Sub(s.started).Round(time.Millisecond).String() }
	for _, d := range dc.unexplained[:min(5, len(dc.unexplained))] {
		fmt.Printf("    unexplained    %s/%s: 2xx to producer %d at %s, again to producer %d at %s\n", endpoints[d.pair.endpoint].name,
			d.pair.event, d.previous.producer, at(d.previous.at), d.producer, at(d.at))
		for _, k := range dc.kills {
			if !k.at.After(d.previous.at.Add(-3*time.Second)) || !k.at.Before(d.at.Add(time.Second)) {
				continue
			}
			fmt.Printf("      %s kill (producer %d) at %s, %d requests in flight", k.kind, k.producer, at(k.at), k.inFlight)
			if !k.back.IsZero() {
				fmt.Printf(", Redis answering again at %s", at(k.back))
			}
			fmt.Println()
		}
		dl, err := s.d.Deliveries().Find(ctx, s.ids[d.pair.endpoint], d.pair.event)
		if err != nil {
			fmt.Printf("      record: %v\n", err)
			continue
		}
		for _, a := range dl.History {
			fmt.Printf("      attempt at %s took %s: status %d %s\n", at(a.At), a.Duration.Round(time.Millisecond), a.StatusCode, a.Error)
		}
	}
}

func abs(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
