package amqpdest_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"
	"github.com/redis/go-redis/v9"

	webhooks "github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/amqpdest"
	"github.com/smartdrop/webhooks/verify"
)

// A webhook whose URL is amqp:// gets each delivery published to RabbitMQ, confirmed by the broker;
// its consumer verifies each message with the verify package, exactly as an HTTP receiver verifies a
// request. (This example needs a Redis and a RabbitMQ on localhost, so it has no Output to check;
// TestExample runs the same code against the machine's broker.)
func ExampleNew() {
	rdb := redis.NewClient(&redis.Options{Addr: "localhost:6379"})
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := publishAndConsume(ctx, rdb, "amqp://guest:guest@localhost:5672/", os.Stdout); err != nil {
		log.Fatal(err)
	}
}

// publishAndConsume dispatches an event to an amqp webhook, then consumes and verifies its message.
func publishAndConsume(ctx context.Context, rdb redis.UniversalClient, brokerURL string, out io.Writer) error {
	// The consumer's side: a queue of its own (named by the broker, gone with its connection).
	conn, err := amqp.Dial(brokerURL)
	if err != nil {
		return err
	}
	defer conn.Close()
	ch, err := conn.Channel()
	if err != nil {
		return err
	}
	q, err := ch.QueueDeclare("", false, true, true, false, nil)
	if err != nil {
		return err
	}

	// The producer's side: the AMQP destination serves amqp and amqps webhooks.
	dest, err := amqpdest.New(amqpdest.Options{})
	if err != nil {
		return err
	}
	defer dest.Close()
	d, err := webhooks.New(rdb, webhooks.Options{
		Destinations:         []webhooks.Destination{dest},
		AllowPrivateNetworks: true, // the broker is on loopback here; a tenant's may not be, by default
	})
	if err != nil {
		return err
	}
	// amqp://user:password@host:port/vhost?exchange=X&routing_key=K: here the default exchange,
	// which routes a message to the queue its routing key names.
	u, err := url.Parse(brokerURL)
	if err != nil {
		return err
	}
	u.RawQuery = url.Values{"routing_key": {q.Name}}.Encode()
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: u.String(), Events: []string{"order.*"}})
	if err != nil {
		return err
	}
	res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "ord_1", Data: map[string]any{"total": 120}})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "delivery:", res[0].Delivery.Status) // success: the broker confirmed it

	// The consumer rebuilds an http.Header from the message's headers and verifies it.
	msgs, err := ch.ConsumeWithContext(ctx, q.Name, "", false, true, false, false, nil)
	if err != nil {
		return err
	}
	var m amqp.Delivery
	select {
	case m = <-msgs:
	case <-ctx.Done():
		return ctx.Err()
	}
	h := http.Header{}
	for name, value := range m.Headers {
		if s, ok := value.(string); ok {
			h.Set(name, s)
		}
	}
	v, err := verify.New(w.Secret)
	if err != nil {
		return err
	}
	if err := v.Verify(h, m.Body); err != nil {
		_ = m.Nack(false, false)
		return err
	}
	// message_id is the webhook-id, the same on every attempt: a consumer drops a repeat by it.
	fmt.Fprintln(out, "verified:", m.Type, m.ContentType, "message_id is the webhook-id:", m.MessageId == h.Get("webhook-id"))
	return m.Ack(false)
}
