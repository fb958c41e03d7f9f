package natsdest_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/natsdest"
	"github.com/smartdrop/webhooks/verify"
)

// ExampleNew sends a webhook's deliveries to NATS JetStream and consumes one, verifying it with the
// verify package exactly as an HTTP receiver does. It needs a NATS server with JetStream at
// WEBHOOKS_NATS_URL (TestExample runs it).
func ExampleNew() {
	if err := natsExample(os.Getenv("WEBHOOKS_NATS_URL"), os.Stdout); err != nil {
		fmt.Println(err)
	}
}

// natsExample is ExampleNew against the NATS server at natsURL, writing to out.
func natsExample(natsURL string, out io.Writer) error {
	ctx := context.Background()

	// The destination: one for every nats:// (and tls://) webhook of the Dispatcher.
	nd, err := natsdest.New(natsdest.Options{})
	if err != nil {
		return err
	}
	defer nd.Close()
	mr, err := miniredis.Run() // Redis in-process, for the example: use yours
	if err != nil {
		return err
	}
	defer mr.Close()
	d, err := webhooks.New(redis.NewClient(&redis.Options{Addr: mr.Addr()}), webhooks.Options{
		Destinations:         []webhooks.Destination{nd},
		AllowPrivateNetworks: true, // the example's broker is on loopback
	})
	if err != nil {
		return err
	}

	// The subscriber's side: a stream that takes the webhook's subject.
	nc, err := nats.Connect(natsURL)
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	suffix := make([]byte, 4)
	_, _ = rand.Read(suffix)
	name, subject := "EXAMPLE_"+strings.ToUpper(hex.EncodeToString(suffix)), "example.orders."+hex.EncodeToString(suffix)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject},
		Duplicates: 2 * time.Minute}) // the duplicate window: longer than the retry delays that matter
	if err != nil {
		return err
	}
	defer js.DeleteStream(ctx, name)

	// The webhook: nats://[user:password@]host:port/SUBJECT.
	u, err := url.Parse(natsURL)
	if err != nil {
		return err
	}
	u.Path = "/" + subject
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: u.String(), Events: []string{"order.*"}})
	if err != nil {
		return err
	}
	res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "ord_1001", Data: map[string]any{"amount": 4200}})
	if err != nil {
		return err
	}
	dl := res[0].Delivery
	fmt.Fprintln(out, "delivery:", dl.Status)

	// The consumer verifies the message with the webhook's secret, as an HTTP receiver does: the
	// message's headers (a nats.Header is a map[string][]string) and its data.
	cons, err := stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return err
	}
	msg, err := cons.Next(jetstream.FetchMaxWait(10 * time.Second))
	if err != nil {
		return err
	}
	v, err := verify.New(w.Secret)
	if err != nil {
		return err
	}
	if err := v.Verify(http.Header(msg.Headers()), msg.Data()); err != nil {
		return fmt.Errorf("the message does not verify: %w", err)
	}
	fmt.Fprintln(out, "verified; Nats-Msg-Id is the webhook-id:", msg.Headers().Get("Nats-Msg-Id") == dl.ID)
	fmt.Fprintln(out, "body:", string(msg.Data()))
	return nil
}

// TestExample runs ExampleNew's code against the machine's NATS.
func TestExample(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	err := retryStoreFailure(context.Background(), t, "the example", func() error { // the server's fault: see retryStoreFailure
		out.Reset()
		return natsExample(natsURL(t).String(), &out)
	})
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Len(t, lines, 3, out.String())
	require.Equal(t, "delivery: success", lines[0])
	require.Equal(t, "verified; Nats-Msg-Id is the webhook-id: true", lines[1])
	require.Regexp(t, `^body: \{"id":"ord_1001","type":"order.paid","timestamp":"[^"]+","data":\{"amount":4200\}\}$`, lines[2])
}
