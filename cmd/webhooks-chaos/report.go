package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/smartdrop/webhooks/internal/worker"
)

// verdict prints the soak's figures and returns an error naming every failed check.
func (s *soak) verdict(ctx context.Context, r *sweepResult, dr drainResult) error {
	pairs := len(s.pairs)
	f := s.fleet
	f.mu.Lock()
	kills, retries, errorCount, errorLines := f.kills, f.retries, f.errorCount, f.errorLines
	f.mu.Unlock()
	fmt.Println("chaos: figures")
	fmt.Printf("  pairs            %d (%d producers × %d events × %d webhooks)\n", pairs, s.cfg.producers, s.cfg.events, len(endpoints))
	fmt.Printf("  delivered        %d (a 2xx answered)\n", r.delivered)
	fmt.Printf("  failed           %d (no 2xx, record failed)\n", r.failed)
	fmt.Printf("  not delivered    %d (no 2xx, record not failed)\n", r.undone)
	fmt.Printf("  records          success %d, failed %d, pending %d, missing %d, unread %d\n", r.states[recordSuccess],
		r.states[recordFailed], r.states[recordPending], r.states[recordMissing], r.states[recordUnread])
	fmt.Printf("  duplicates       %d extra 2xx on %d pairs (%.3f%% of pairs; bound %.3f%%)\n", r.extra2xx, r.dupPairs,
		100*float64(r.extra2xx)/float64(pairs), 100*s.cfg.maxDupRatio)
	dc := s.dupCauses(s.dupWindow())
	fmt.Printf("    by cause       %d after Redis restarts, %d after producer kills (%d requests in flight at those kills, %d answered within %s before them; %d of the duplicates with no 2xx of their pair answered within %s before a kill or %s after it, nor kept through a Redis outage by a producer killed within %s of Redis answering again), %d other (a 2xx within %s of the kill)\n",
		dc.byCause[killRedis], dc.byCause[killProducer], dc.inFlightAtProducerKills, dc.answeredBeforeProducerKills, s.lostWindow(),
		dc.unexplainedByProducerKill, s.lostWindow(), killAnswerWindow, s.keptWindow(), dc.byCause["other"], s.dupWindow())
	s.describeUnexplained(ctx, dc)
	drain := fmt.Sprintf("%.1fs after the last accept", dr.after.Seconds())
	if !dr.drained {
		drain = fmt.Sprintf("NOT drained: %d pairs not final %.1fs after the last accept", dr.left, dr.after.Seconds())
	}
	fmt.Printf("  drain            %s (bound %s)\n", drain, s.cfg.drainBound)
	for i, e := range endpoints {
		c := &s.recv.counts[i]
		o := s.openings(i)
		fmt.Printf("  %-8s         %d requests, %d 2xx, %d 500, %d hung, at most %d failed in a row (breaker counted up to %d); circuit openings: %d by hooks + %d seen only by Health polls, %d without %d failures in a row before\n",
			e.name, c.requests.Load(), c.ok.Load(), c.failed.Load(), c.hung.Load(), s.recv.longestRun(i), s.watch.maxFailures(i),
			o.hooks, o.polled, o.unexplained, s.recv.longRun)
	}
	polls, pollErrors := s.watch.pollCounts()
	fmt.Printf("  health polls     %d (%d failed: Redis down)\n", polls, pollErrors)
	fmt.Printf("  restarts         producers %d (SIGKILL), Redis %d (SIGKILL, AOF)\n", kills, s.redis.restarts)
	fmt.Printf("  not accepted     %d calls made again (Redis down or restarting)\n", retries)
	fmt.Printf("  bad requests     %d bad signatures, %d bad bodies, %d pairs never dispatched, %d producer errors\n",
		s.recv.badSignature.Load(), s.recv.badRequest.Load(), r.strangers, errorCount)
	for _, l := range errorLines {
		fmt.Printf("    %s\n", l)
	}
	if len(dc.offsets) > 0 {
		slices.Sort(dc.offsets)
		fmt.Printf("    after kills    the repeated pair's earlier 2xx, from the nearest producer kill: %s to %s (median %s)\n",
			dc.offsets[0].Round(time.Millisecond), dc.offsets[len(dc.offsets)-1].Round(time.Millisecond), dc.offsets[len(dc.offsets)/2].Round(time.Millisecond))
	}
	if s.cfg.verbose {
		fmt.Printf("    extra 2xx per second of the soak: %s\n", s.dupSeconds())
	}
	fmt.Printf("  wall time        %.1fs\n", time.Since(s.started).Seconds())
	return s.checks(r, dr, kills)
}

// checks returns an error naming every assertion the soak failed.
func (s *soak) checks(r *sweepResult, dr drainResult, kills int) error {
	var failed []string
	fail := func(format string, args ...any) { failed = append(failed, fmt.Sprintf(format, args...)) }
	pairs := len(s.pairs)
	if r.undone > 0 {
		fail("%d of %d pairs neither delivered nor failed (e.g. %s)", r.undone, pairs, strings.Join(r.examples, ", "))
	}
	if n := r.states[recordPending]; n > 0 {
		fail("%d pairs stranded pending after the drain", n)
	}
	if n := r.states[recordMissing] + r.states[recordUnread]; n > 0 {
		fail("%d pairs have no readable record", n)
	}
	if !dr.drained || dr.after > s.cfg.drainBound {
		fail("not drained within %s of the last accept (%s)", s.cfg.drainBound, describeDrain(dr))
	}
	if float64(r.extra2xx) > s.cfg.maxDupRatio*float64(pairs) {
		fail("%d duplicate 2xx, more than %.3f%% of %d pairs", r.extra2xx, 100*s.cfg.maxDupRatio, pairs)
	}
	if r.lies > 0 {
		fail("%d records say success but the receiver never answered 2xx", r.lies)
	}
	if n := s.recv.badSignature.Load() + s.recv.badRequest.Load() + int64(r.strangers); n > 0 {
		fail("%d requests with a bad signature or body, or for pairs never dispatched", n)
	}
	for i, e := range endpoints {
		if o := s.openings(i); o.unexplained > 0 {
			fail("the %s webhook's circuit opened %d times without %d failures in a row within %s before (BreakAfter %d; %d openings by hooks, %d seen only by polls; at most %d failed in a row in the whole soak)",
				e.name, o.unexplained, s.recv.longRun, s.explainWindow(), s.cfg.breakAfter, o.hooks, o.polled, s.recv.longestRun(i))
		}
	}
	dc := s.dupCauses(s.dupWindow())
	if atKills := dc.inFlightAtProducerKills + dc.answeredBeforeProducerKills; float64(dc.byCause[killProducer]) > 1.05*float64(atKills) {
		fail("%d duplicate 2xx after producer kills, more than the %d attempts in flight at them (%d requests unanswered, %d answered within %s before, outcome perhaps not recorded) + 5%%",
			dc.byCause[killProducer], atKills, dc.inFlightAtProducerKills, dc.answeredBeforeProducerKills, s.lostWindow())
	}
	if dc.unexplainedByProducerKill > 0 {
		fail("%d of the %d duplicate 2xx after producer kills repeat a pair whose earlier 2xx was not answered within %s before a kill or %s after it, nor kept through a Redis outage by a producer killed within %s of Redis answering again: a kill lost more than the outcomes it could have held",
			dc.unexplainedByProducerKill, dc.byCause[killProducer], s.lostWindow(), killAnswerWindow, s.keptWindow())
	}
	if kills < s.cfg.producerKills || s.redis.restarts < s.cfg.redisKills {
		fail("only %d of %d producer kills and %d of %d Redis kills happened", kills, s.cfg.producerKills, s.redis.restarts, s.cfg.redisKills)
	}
	if len(failed) == 0 {
		fmt.Println("chaos: PASS")
		return nil
	}
	return errors.New(strings.Join(failed, "; "))
}

func describeDrain(dr drainResult) string {
	if dr.drained {
		return fmt.Sprintf("took %.1fs", dr.after.Seconds())
	}
	return fmt.Sprintf("%d pairs not final after %.1fs", dr.left, dr.after.Seconds())
}

// explainWindow is how long before a circuit opening a run of failures explains it: the run's last
// failure was answered (a hung request: when its attempt timed out), its outcome was recorded — after
// a Redis restart, once Redis answered again (the longest downtime, and a second's grace) — and the
// poll that saw it may be late by pollEvery.
func (s *soak) explainWindow() time.Duration {
	return 2*s.cfg.timeout + max(s.cfg.redisDown, s.cfg.redisDownMax) + 2*time.Second + pollEvery
}

// lostWindow is how long before a producer kill a 2xx can have been answered and its outcome not yet
// recorded, so that the kill loses it and the pair is sent again: the outcome batch's linger
// (worker.SettleLinger) and a quarter Timeout for the settle's round trip on a loaded machine.
func (s *soak) lostWindow() time.Duration {
	return worker.SettleLinger(s.cfg.timeout) + s.cfg.timeout/4
}

// keptWindow is how long after Redis answers again a producer may take to write the outcomes it kept
// through the outage (Run pings Redis every 100ms while it is down and writes them first once it
// answers): a Timeout, for a loaded machine. A producer killed before then loses them.
func (s *soak) keptWindow() time.Duration { return s.cfg.timeout }

// killAnswerWindow is how long after a producer kill the receiver may still answer a request the killed
// process had in flight (the receiver finishes a request whose client has gone; a 2xx is answered at
// once).
const killAnswerWindow = 250 * time.Millisecond

// dupWindow is how long after a SIGKILL an extra 2xx is put down to it: a lease (2 Timeouts), the
// longest Redis downtime, and a second for the worker to come round.
func (s *soak) dupWindow() time.Duration {
	return 2*s.cfg.timeout + max(s.cfg.redisDown, s.cfg.redisDownMax) + time.Second
}

// openings assesses endpoint i's circuit openings against the receiver's long runs of failures.
func (s *soak) openings(i int) openings {
	return s.watch.assess(i, s.recv.longRuns(i), s.explainWindow())
}

// dupSeconds lists how many extra 2xx were answered in each second of the soak ("12s:3 ..."), to
// match them with the kills that -v prints.
func (s *soak) dupSeconds() string {
	s.recv.mu.Lock()
	defer s.recv.mu.Unlock()
	var b strings.Builder
	last, n := -1, 0
	flush := func() {
		if n > 0 {
			fmt.Fprintf(&b, "%ds:%d ", last, n)
		}
	}
	for _, d := range s.recv.dups { // in the order answered
		if sec := int(d.at.Sub(s.started).Seconds()); sec != last {
			flush()
			last, n = sec, 0
		}
		n++
	}
	flush()
	return strings.TrimSpace(b.String())
}
