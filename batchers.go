package webhooks

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/breaker"
	"github.com/smartdrop/webhooks/internal/rdb"
)

// newBatchers are a Dispatcher's script batchers on client: the lanes every script call goes through,
// and the one lane of the circuit counts sent on their own (countNow), so that they merge. Both merge
// the circuit counts a batch carries (mergeCounts).
func newBatchers(client redis.UniversalClient) (*rdb.LaneBatcher, *rdb.ScriptBatcher) {
	return rdb.NewLaneBatcher(client, mergeCounts), rdb.NewScriptBatcher(client, mergeCounts)
}

// mergeCounts returns batch with its rdb.Count calls merged into one (breaker.MergeCounts), in the
// first's place, so that the outcomes of concurrent settles sent together read and write each
// webhook's circuit and hourly counters once. split, called once the batch's replies are in, gives
// each merged call its part of the reply (or the error).
func mergeCounts(batch []*rdb.ScriptCall) ([]*rdb.ScriptCall, func()) {
	var counts []*rdb.ScriptCall
	var calls []breaker.CountCall
	for _, c := range batch {
		if c.Script == rdb.Count {
			counts = append(counts, c)
			calls = append(calls, breaker.CountCall{Keys: c.Keys, Args: c.Args})
		}
	}
	m, parts, ok := breaker.MergeCounts(calls)
	if !ok {
		return batch, func() {}
	}
	merged := &rdb.ScriptCall{Ctx: context.WithoutCancel(counts[0].Ctx), Script: rdb.Count, Keys: m.Keys, Args: m.Args}
	out := make([]*rdb.ScriptCall, 0, len(batch)-len(counts)+1)
	for _, c := range batch {
		switch {
		case c == counts[0]:
			out = append(out, merged)
		case c.Script != rdb.Count:
			out = append(out, c)
		}
	}
	return out, func() {
		if merged.Cmd == nil {
			return // not sent (a panic): the batch's callers get the batcher's abort error
		}
		reply, err := merged.Cmd.Slice()
		var each [][]any
		if err == nil {
			each, err = parts(reply)
		}
		for i, c := range counts {
			c.Cmd = redis.NewCmd(c.Ctx)
			if err != nil {
				c.Cmd.SetErr(err)
				continue
			}
			c.Cmd.SetVal(each[i])
		}
	}
}
