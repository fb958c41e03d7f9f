package pgxoutbox_test

import (
	"context"
	"log"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/pgxoutbox"
)

// Write an order and its webhook in one transaction: the webhook is delivered if and only if the
// order is committed. Every replica runs the relay. (Compiled, not run: it needs PostgreSQL.)
func Example() {
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Close()
	d, err := webhooks.New(redis.NewClient(&redis.Options{Addr: "127.0.0.1:6379"}), webhooks.Options{})
	if err != nil {
		log.Fatal(err)
	}
	if err := pgxoutbox.Migrate(ctx, pool, ""); err != nil { // or run schema.sql with your migration tool
		log.Fatal(err)
	}
	ob, err := pgxoutbox.New(pool, d, pgxoutbox.Options{})
	if err != nil {
		log.Fatal(err)
	}
	go func() { _ = d.Run(ctx) }()  // delivers
	go func() { _ = ob.Run(ctx) }() // relays committed events to d

	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, "UPDATE orders SET status = 'paid' WHERE id = $1", 42); err != nil {
		log.Fatal(err)
	}
	if err := ob.EnqueueTx(ctx, tx, webhooks.Event{Type: "order.paid", ID: "order-42-paid",
		Data: map[string]any{"order_id": 42}, OrderKey: "order-42"}); err != nil {
		log.Fatal(err) // an invalid event: nothing was written
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err) // not committed: never delivered
	}
}
