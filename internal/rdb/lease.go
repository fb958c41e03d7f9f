package rdb

import (
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// LeaseQueue is one webhook's part of a shard's lease: the ids read of its queue, and whether the
// lease retimes it (sets its ready score to its queue's head).
type LeaseQueue struct {
	Webhook string
	IDs     []string
	Retime  bool
}

// LeaseCandidate is a delivery a shard's lease tries to lease: the queue it is of (an index into the
// lease's queues), its id, and the lease token it is leased under.
type LeaseCandidate struct {
	Queue     int
	ID, Token string
}

// LeaseResult is what the lease said of one candidate: its record as leased (Leased), or that its
// key held no record (NotRecord: its queue entry is removed); neither when it was not due any more.
type LeaseResult struct {
	Leased    bool
	Record    string
	NotRecord bool
}

// ShardLease is a run of the lease script (lease.lua) over some webhooks' candidates in one shard.
type ShardLease struct {
	Shard      int
	Queues     []LeaseQueue
	Candidates []LeaseCandidate
	Run        ScriptRun
}

// NewShardLease prepares the lease at now, for lease, of the candidates of queues in shard, each under
// a token of its own (token makes them).
func NewShardLease(k Keys, shard int, now time.Time, lease time.Duration, queues []LeaseQueue, token func() string) *ShardLease {
	keys := []string{k.Ready(shard)}
	n := 0
	for _, q := range queues {
		n += len(q.IDs)
	}
	args := []any{now.UnixMilli(), now.Add(lease).UnixMilli(), len(queues), n}
	for _, q := range queues {
		retime := 0
		if q.Retime {
			retime = 1
		}
		keys = append(keys, k.Queue(shard, q.Webhook))
		args = append(args, q.Webhook, retime)
	}
	l := &ShardLease{Shard: shard, Queues: queues}
	for i, q := range queues {
		for _, id := range q.IDs {
			c := LeaseCandidate{Queue: i, ID: id, Token: token()}
			keys = append(keys, k.Delivery(shard, id))
			args = append(args, id, c.Token, i+1)
			l.Candidates = append(l.Candidates, c)
		}
	}
	l.Run = ScriptRun{Script: Lease, Keys: keys, Args: args}
	return l
}

// Reply reads the lease's reply: one result per candidate, and the new ready score of each webhook it
// retimed (0 when one left the ready zset), by webhook id.
func (l *ShardLease) Reply(cmd *redis.Cmd) ([]LeaseResult, map[string]int64, error) {
	retimed := 0
	for _, q := range l.Queues {
		if q.Retime {
			retimed++
		}
	}
	reply, err := cmd.Slice()
	if err == nil && len(reply) != len(l.Candidates)+retimed {
		err = fmt.Errorf("unexpected reply of %d items for %d deliveries", len(reply), len(l.Candidates))
	}
	if err != nil {
		return nil, nil, err
	}
	heads := make(map[string]int64, retimed)
	k := len(l.Candidates)
	for _, q := range l.Queues {
		if q.Retime {
			v, _ := reply[k].(string)
			f, _ := strconv.ParseFloat(v, 64)
			heads[q.Webhook] = int64(f)
			k++
		}
	}
	results := make([]LeaseResult, len(l.Candidates))
	for j, item := range reply[:len(l.Candidates)] {
		switch v := item.(type) {
		case string:
			results[j] = LeaseResult{Leased: true, Record: v}
		case int64:
			results[j].NotRecord = v == LeaseNotRecord
		}
	}
	return results, heads, nil
}
