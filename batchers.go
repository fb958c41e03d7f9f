package webhooks

import (
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/internal/rdb"
)

// newBatchers are a Dispatcher's script batchers on client: the lanes every script call goes through,
// and the one lane of the circuit counts sent on their own (countNow), so that they merge. Both merge
// the circuit counts a batch carries (mergeCounts).
func newBatchers(client redis.UniversalClient) (*rdb.LaneBatcher, *rdb.ScriptBatcher) {
	return rdb.NewLaneBatcher(client, mergeCounts), rdb.NewScriptBatcher(client, mergeCounts)
}
