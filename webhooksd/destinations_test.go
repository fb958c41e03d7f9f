package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/verify"
)

// TestNATSDestination: a binary started with -destinations http,nats takes a webhook whose URL is a
// NATS subject, and an event sent to its ingest reaches the subject's JetStream stream once, with
// headers a consumer verifies; without nats turned on, the same webhook is refused in words.
func TestNATSDestination(t *testing.T) {
	t.Parallel()
	natsURL := os.Getenv("WEBHOOKS_NATS_URL")
	if natsURL == "" {
		skipOutsideCI(t, "WEBHOOKS_NATS_URL is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nc, err := nats.Connect(natsURL)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	name := "WEBHOOKSD_" + randomHex(6)
	subject := "webhooksd." + randomHex(6)
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Storage: jetstream.MemoryStorage})
	require.NoError(t, err)
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), name) })
	target := natsURL + "/" + subject

	off := startServer(t, serverArgs("", "nats-off-"+randomHex(4)))
	status, body, _, err := newAPI(t, func() string { return "http://" + off.addr }, testKey).do("POST", "/webhooks",
		map[string]any{"url": target, "events": []string{"*"}})
	require.NoError(t, err)
	require.Equal(t, http.StatusBadRequest, status, string(body))
	require.Contains(t, string(body), `url scheme \"nats\" is served by no destination`)

	srv := startServer(t, serverArgs("", "nats-"+randomHex(4), "-destinations", "http,nats"))
	a := newAPI(t, func() string { return "http://" + srv.addr }, testKey)
	_, secret := a.createWebhook(target, []string{"*"}, "")
	for range 2 { // the second is a duplicate: nothing more is sent
		a.must(http.StatusAccepted, "POST", "/v1/events", map[string]any{"id": "evt_nats_1", "type": "order.created", "data": map[string]int{"n": 1}})
	}
	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy})
	require.NoError(t, err)
	v, err := verify.New(secret)
	require.NoError(t, err)
	msgs, err := cons.Fetch(1, jetstream.FetchMaxWait(30*time.Second))
	require.NoError(t, err)
	var got []jetstream.Msg
	for m := range msgs.Messages() {
		got = append(got, m)
	}
	require.Len(t, got, 1, "the event reached the stream")
	require.NoError(t, v.Verify(http.Header(got[0].Headers()), got[0].Data()))
	var evt struct{ ID string }
	require.NoError(t, json.Unmarshal(got[0].Data(), &evt))
	require.Equal(t, "evt_nats_1", evt.ID)
	waitFor(t, "the stream holds what was sent", func() (bool, int64) {
		info, err := stream.Info(ctx)
		if err != nil {
			return false, -1
		}
		return info.State.Msgs >= 1, int64(info.State.Msgs)
	})
	info, err := stream.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, info.State.Msgs, "one message for the event sent twice")
}
