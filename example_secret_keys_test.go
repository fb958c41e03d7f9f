package webhooks_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// Secrets are sealed in Redis with Options.SecretKeys, and a key is rotated: the new key first, the
// old one second, WebhookRepo.Reencrypt, then the old key dropped.
func ExampleWebhookRepo_Reencrypt() {
	m, err := miniredis.Run()
	if err != nil {
		panic(err)
	}
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()
	ctx := context.Background()
	oldKey, newKey := bytes.Repeat([]byte{1}, 32), bytes.Repeat([]byte{2}, 32) // in practice: 32 random bytes each

	d, err := webhooks.New(rdb, webhooks.Options{SecretKeys: [][]byte{oldKey}})
	if err != nil {
		panic(err)
	}
	wh, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: "https://example.com/hook", Events: []string{"*"}})
	if err != nil {
		panic(err)
	}
	raw, _ := rdb.HGet(ctx, "{webhooks:registry}:webhooks", wh.ID).Result()
	fmt.Println("secret in Redis:", bytes.Contains([]byte(raw), []byte(wh.Secret)))

	rotating, _ := webhooks.New(rdb, webhooks.Options{SecretKeys: [][]byte{newKey, oldKey}})
	n, err := rotating.Webhooks().Reencrypt(ctx)
	fmt.Println("re-sealed:", n, err)
	n, _ = rotating.Webhooks().Reencrypt(ctx)
	fmt.Println("again:", n)

	rotated, _ := webhooks.New(rdb, webhooks.Options{SecretKeys: [][]byte{newKey}})
	got, err := rotated.Webhooks().Get(ctx, wh.ID)
	fmt.Println("read with the new key only:", err == nil && got.Secret == wh.Secret)
	_, err = d.Webhooks().Get(ctx, wh.ID)
	fmt.Println("the old key alone:", errors.Is(err, webhooks.ErrSecretKey))
	// Output:
	// secret in Redis: false
	// re-sealed: 1 <nil>
	// again: 0
	// read with the new key only: true
	// the old key alone: true
}
