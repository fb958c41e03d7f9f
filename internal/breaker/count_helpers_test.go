package breaker

import (
	"context"
	"time"

	"github.com/smartdrop/webhooks/internal/rdb"
	"github.com/smartdrop/webhooks/internal/types"
)

// Test helpers over the circuit store: each runs rdb.Count on its own, where the library runs it
// beside the outcome write (runTogether).

// registered puts the outcomes' webhooks in the registry's hash, as the library's webhooks are:
// rdb.Count creates no circuit for a webhook the registry does not hold.
func (s *store) registered(ctx context.Context, outs ...Outcome) {
	for _, o := range outs {
		s.rdb.HSetNX(ctx, s.webhooks, o.WebhookID, "{}")
	}
}

// count applies outcomes to their circuits at now, in one script run of its own.
func (s *store) count(ctx context.Context, now time.Time, breakAfter int, breakFor time.Duration, outs ...Outcome) ([]Event, error) {
	s.registered(ctx, outs...)
	keys, args := s.countArgs(now, breakAfter, breakFor, outs)
	return countReply(rdb.Count.Run(ctx, s.rdb, keys, args...), now, outs)
}

// recordFailure records a failed attempt on webhookID: probeToken is "" for a normal attempt, or the
// token acquireProbe granted for the probe. opened is true when this call opened or reopened the circuit.
func (s *store) recordFailure(ctx context.Context, webhookID string, now time.Time, probeToken string, breakAfter int, breakFor time.Duration) (h types.Health, opened bool, err error) {
	ev, err := s.count(ctx, now, max(breakAfter, 1), breakFor, Outcome{WebhookID: webhookID, Kind: rdb.CountFailure, Probe: probeToken})
	if err != nil {
		return types.Health{}, false, err
	}
	return ev[0].Health, ev[0].Opened, nil
}

// recordSuccess records a success answered at now: it drops the failures sent at or before now and
// closes an open circuit; wasOpen when it was open or probing.
func (s *store) recordSuccess(ctx context.Context, webhookID string, now time.Time) (wasOpen bool, err error) {
	ev, err := s.count(ctx, now, 0, 0, Outcome{WebhookID: webhookID, Kind: rdb.CountSuccess})
	if err != nil {
		return false, err
	}
	return ev[0].Closed, nil
}
