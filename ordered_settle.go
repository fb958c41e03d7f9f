package webhooks

import (
	"github.com/smartdrop/webhooks/internal/rdb"

	"github.com/redis/go-redis/v9"
)

// outcomeScriptFor returns the script that records the outcomes idx of recs, given rdb.Outcome's
// keys and arguments (rdb.OutcomeRun), with its keys and arguments, and how many reply items it
// gives beyond one per outcome: rdb.Outcome's (0), or rdb.OrderedOutcome's when one of them is of
// an ordered delivery (1: how many deliveries it queued).
func (d *Dispatcher) outcomeScriptFor(shard int, recs []*rdb.Record, idx []int, keys []string, args []any) (*redis.Script, []string, []any, int) {
	ordered := false
	for _, i := range idx {
		ordered = ordered || recs[i].OrderKey != ""
	}
	if !ordered {
		return rdb.Outcome, keys, args, 0
	}
	seqKeys, seqArgs := d.orderedOutcomes(shard, recs, idx)
	return rdb.OrderedOutcome, append(keys, seqKeys...), append(args, seqArgs...), 1
}

// orderedOutcomes returns the keys and arguments rdb.OrderedOutcome takes beyond rdb.Outcome's
// for the outcomes idx of recs.
func (d *Dispatcher) orderedOutcomes(shard int, recs []*rdb.Record, idx []int) ([]string, []any) {
	mode := rdb.OrderOnFinal
	if d.opts.BlockKeyOnFailure {
		mode = rdb.OrderOnSuccess
	}
	keys := make([]string, 0, len(idx)+1)
	modes, members := make([]any, 0, 2*len(idx)+1), make([]any, 0, len(idx))
	for _, i := range idx {
		r := recs[i]
		if r.OrderKey == "" {
			keys, modes, members = append(keys, d.keys.Queue(shard, r.WebhookID)), append(modes, rdb.OrderNone), append(members, "")
			continue
		}
		keys = append(keys, d.keys.Seq(shard, r.WebhookID, r.OrderKey))
		modes, members = append(modes, mode), append(members, rdb.BlockedMember(r.WebhookID, r.OrderKey))
	}
	return append(keys, d.keys.Blocked(shard)), append(append(modes, members...), d.opts.Retention.Milliseconds())
}
