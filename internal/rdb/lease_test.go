package rdb

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestShardLeaseLayoutAndReply(t *testing.T) {
	t.Parallel()
	k := KeysOf("p", 4)
	now := time.UnixMilli(1_000_000)
	n := 0
	token := func() string { n++; return "tok" + strconv.Itoa(n) }
	l := NewShardLease(k, 1, now, time.Minute, []LeaseQueue{
		{Webhook: "w1", IDs: []string{"a", "b"}},
		{Webhook: "w2", IDs: nil, Retime: true},
	}, token)
	assert.Equal(t, []LeaseCandidate{{Queue: 0, ID: "a", Token: "tok1"}, {Queue: 0, ID: "b", Token: "tok2"}}, l.Candidates)
	assert.Equal(t, []string{k.Ready(1), k.Queue(1, "w1"), k.Queue(1, "w2"), k.Delivery(1, "a"), k.Delivery(1, "b")}, l.Run.Keys)
	assert.Equal(t, []any{now.UnixMilli(), now.Add(time.Minute).UnixMilli(), 2, 2, "w1", 0, "w2", 1,
		"a", "tok1", 1, "b", "tok2", 1}, l.Run.Args)

	cmd := redis.NewCmd(context.Background())
	cmd.SetVal([]any{"rec-a", int64(LeaseNotRecord), "1000500"})
	results, heads, err := l.Reply(cmd)
	require.NoError(t, err)
	assert.Equal(t, []LeaseResult{{Leased: true, Record: "rec-a"}, {NotRecord: true}}, results)
	assert.Equal(t, map[string]int64{"w2": 1000500}, heads)

	short := redis.NewCmd(context.Background())
	short.SetVal([]any{"rec-a"})
	_, _, err = l.Reply(short)
	assert.Error(t, err, "a reply of the wrong length is an error")
}
