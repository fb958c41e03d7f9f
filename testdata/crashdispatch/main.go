// Command crashdispatch is a helper of the crash test (crash_test.go): it dispatches one event to the
// webhooks registered under a key prefix and waits; the test kills it with SIGKILL while the receiver
// holds the first attempt.
//
// Usage: crashdispatch <key prefix> <event id> [<order key>], with WEBHOOKS_REDIS_ADDR or
// WEBHOOKS_REDIS_CLUSTER set.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks"
)

func main() {
	if len(os.Args) != 3 && len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: crashdispatch <key prefix> <event id> [<order key>]")
		os.Exit(2)
	}
	var rdb redis.UniversalClient
	if seeds := os.Getenv("WEBHOOKS_REDIS_CLUSTER"); seeds != "" {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: strings.Split(seeds, ",")})
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: os.Getenv("WEBHOOKS_REDIS_ADDR")})
	}
	d, err := webhooks.New(rdb, webhooks.Options{KeyPrefix: os.Args[1], AllowPrivateNetworks: true, Timeout: 5 * time.Second})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	evt := webhooks.Event{Type: "crash.test", ID: os.Args[2]}
	if len(os.Args) == 4 {
		evt.OrderKey = os.Args[3]
	}
	res, err := d.Dispatch(ctx, evt)
	fmt.Println(res, err) // only reached if the test failed to kill this process
}
