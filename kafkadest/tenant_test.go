package kafkadest_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/destination/destinationtest"
	"github.com/smartdrop/webhooks/kafkadest"
	"github.com/smartdrop/webhooks/verify"
)

func init() {
	miniredis.DumpMaxLineLen = 1 << 20 // Dump shows every value whole: the tests search it
}

// TestUnknownTopicOpensTheCircuit: a webhook whose topic does not exist fails each attempt at once
// with words naming the topic, the topic is not created (although the brokers would create one on
// demand), and the failures count toward the breaker: the circuit opens after BreakAfter of them.
func TestUnknownTopicOpensTheCircuit(t *testing.T) {
	t.Parallel()
	const breakAfter = 3
	ctx := context.Background()
	c := newCluster(t, kfake.AllowAutoTopicCreation())
	topic := topicName(t)
	_, rdb := newRedis(t)
	d := newDispatcher(t, rdb, "missing", newDestination(t, kafkadest.Options{}), webhooks.Options{
		Timeout: 5 * time.Second, BreakAfter: breakAfter, RetrySchedule: repeat(time.Hour, 3)})
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: c.url(topic), Events: []string{"*"}})
	require.NoError(t, err)
	for i := range breakAfter {
		h, err := d.Webhooks().Health(ctx, w.ID)
		require.NoError(t, err)
		require.Equal(t, webhooks.CircuitClosed, h.State, "before failure %d", i+1)
		start := time.Now()
		res, err := d.Dispatch(ctx, webhooks.Event{Type: "t", ID: "e" + string(rune('a'+i))})
		require.NoError(t, err)
		require.Len(t, res, 1)
		dl := res[0].Delivery
		assert.Equal(t, webhooks.StatusPending, dl.Status, "retried later")
		assert.Equal(t, `topic "`+topic+`" does not exist: create it (the destination never creates a topic)`, dl.LastError)
		assert.Less(t, time.Since(start), 5*time.Second, "failed at the brokers' answer, not at the timeout")
	}
	h, err := d.Webhooks().Health(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, webhooks.CircuitOpen, h.State, "the breaker counted the failures")
	assert.False(t, c.topicExists(t, topic), "the destination never creates a topic")
}

// TestTenantBrokerBehindTheGuard: a tenant's broker URL on a private address is refused at Create by
// default (any host of its seed list), and let through by AllowedNetworks.
func TestTenantBrokerBehindTheGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, rdb := newRedis(t)
	kd := newDestination(t, kafkadest.Options{})
	d, err := webhooks.New(rdb, webhooks.Options{KeyPrefix: "guard", Destinations: []webhooks.Destination{kd}})
	require.NoError(t, err)
	for _, u := range []string{
		"kafka://tenant:s3cret@10.0.0.1:9092/orders",
		"kafka://broker.example:9092,10.0.0.1:9092/orders",
		"kafka://169.254.169.254:9092/orders",
	} {
		_, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: u, Tenant: "acme", Events: []string{"*"}})
		require.ErrorIs(t, err, webhooks.ErrInvalidWebhook, u)
		assert.ErrorIs(t, err, webhooks.ErrBlockedAddress, u)
		assert.NotContains(t, err.Error(), "s3cret")
	}
	allowed, err := webhooks.New(rdb, webhooks.Options{KeyPrefix: "guard2", Destinations: []webhooks.Destination{kd},
		AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/24")}})
	require.NoError(t, err)
	_, err = allowed.Webhooks().Create(ctx, webhooks.Webhook{URL: "kafka://tenant:s3cret@10.0.0.1:9092/orders", Tenant: "acme", Events: []string{"*"}})
	assert.NoError(t, err, "AllowedNetworks lets the range through")
}

// TestAdvertisedBrokersDialThroughTheGuard: the client dials every broker the metadata names, not
// only the seed, through Message.Dial; and a Dispatcher whose guard refuses the broker's address
// fails the attempt in the guard's words, before the attempt's timeout.
func TestAdvertisedBrokersDialThroughTheGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCluster(t, kfake.NumBrokers(3))
	// kfake picks each partition's leader at random: with 48, each of the 3 brokers leads one but
	// for odds of 3·(2/3)^48 (with 6, a run in 9 had a broker leading none, never dialed).
	topic := c.createTopic(t, 48)
	seed := c.addrs()[0]

	// Only the seed is in the URL: the client learns the two other brokers from the metadata, and
	// dials them with the message's Dial too.
	kd := newDestination(t, kafkadest.Options{})
	u, err := url.Parse("kafka://" + seed + "/" + topic)
	require.NoError(t, err)
	var mu sync.Mutex
	dialed := map[string]bool{}
	var plain net.Dialer
	for i := range 192 { // event ids hashing to partitions of every leader
		m := destinationtest.Message(u, fmt.Sprintf("msg-%d", i), []byte(`{}`))
		m.EventID = fmt.Sprintf("evt-%d", i)
		m.Dial = func(ctx context.Context, network, address string) (net.Conn, error) {
			mu.Lock()
			dialed[address] = true
			mu.Unlock()
			return plain.DialContext(ctx, network, address)
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		require.NoError(t, kd.Send(sctx, m))
		cancel()
	}
	assert.EqualValues(t, 192, c.count(t, topic))
	mu.Lock()
	for _, addr := range c.addrs() {
		assert.True(t, dialed[addr], "broker %s was not dialed through Message.Dial (dialed: %v)", addr, dialed)
	}
	mu.Unlock()

	// A Dispatcher with the default guard refuses loopback: no broker is reached, and the attempt
	// fails fast with the guard's words (it would not let the address through on a retry within
	// the attempt).
	// The webhook saved by a replica that lets loopback through; a replica with the default guard
	// sends its events.
	_, rdb := newRedis(t)
	open := newDispatcher(t, rdb, "strict", kd, webhooks.Options{})
	_, err = open.Webhooks().Create(ctx, webhooks.Webhook{URL: "kafka://" + seed + "/" + topic, Events: []string{"*"}})
	require.NoError(t, err)
	strict, err := webhooks.New(rdb, webhooks.Options{KeyPrefix: "strict", Destinations: []webhooks.Destination{newDestination(t, kafkadest.Options{})},
		Timeout: 5 * time.Second, BreakAfter: -1})
	require.NoError(t, err)
	start := time.Now()
	res, err := strict.Dispatch(ctx, webhooks.Event{Type: "t", ID: "blocked"})
	require.NoError(t, err)
	dl := res[0].Delivery
	assert.Equal(t, webhooks.StatusPending, dl.Status)
	assert.Contains(t, dl.LastError, "could not reach the Kafka brokers ("+seed+"): ")
	assert.Contains(t, dl.LastError, "blocked address: 127.0.0.1 (loopback)")
	assert.Less(t, time.Since(start), 5*time.Second, "the guard's refusal fails the attempt before its timeout")
	assert.EqualValues(t, 192, c.count(t, topic), "nothing written past the guard")
}

// TestBrokerPasswordIsSealedAndNeverShown: a tenant's broker with SASL SCRAM-SHA-512: the message
// is delivered with the URL's credentials, and the password is in no Redis key or value (with
// SecretKeys) and in no admin API answer.
func TestBrokerPasswordIsSealedAndNeverShown(t *testing.T) {
	t.Parallel()
	const user, password = "tenant-7", "pa55-kafka-Zq7"
	ctx := context.Background()
	auth := []kgo.Opt{kgo.SASL(scram.Auth{User: user, Pass: password}.AsSha512Mechanism())}
	c := newClusterAs(t, auth, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, password))
	topic := c.createTopic(t, 2)
	mr, rdb := newRedis(t)
	key := make([]byte, 32)
	_, _ = rand.Read(key)
	d := newDispatcher(t, rdb, "sealed", newDestination(t, kafkadest.Options{}), webhooks.Options{SecretKeys: [][]byte{key},
		Timeout: 10 * time.Second})
	raw := "kafka://" + user + ":" + password + "@" + strings.Join(c.addrs(), ",") + "/" + topic
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: raw, Tenant: "acme", Events: []string{"order.*"}})
	require.NoError(t, err)
	res, err := d.Dispatch(ctx, webhooks.Event{Type: "order.paid", ID: "o1", Tenant: "acme", Data: map[string]int{"n": 1}})
	require.NoError(t, err)
	dl := res[0].Delivery
	require.Equal(t, webhooks.StatusSuccess, dl.Status, dl.LastError)
	recs := c.records(t, topic, 1)
	require.Len(t, recs, 1)
	v, err := verify.New(w.Secret)
	require.NoError(t, err)
	assert.NoError(t, v.Verify(headerOf(recs[0]), recs[0].Value))

	keys := mr.Keys()
	require.NotEmpty(t, keys)
	dump := mr.Dump()
	for _, k := range keys {
		assert.NotContains(t, k, password)
	}
	assert.NotContains(t, dump, password, "a Redis value holds the password")
	for _, path := range []string{"/webhooks", "/webhooks/" + w.ID, "/deliveries/" + dl.ID, "/deliveries/" + dl.ID + "/request"} {
		rec := httptest.NewRecorder()
		d.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		require.Equal(t, http.StatusOK, rec.Code, "%s: %s", path, rec.Body.String())
		assert.NotContains(t, rec.Body.String(), password, path)
	}
	rec := httptest.NewRecorder()
	d.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/webhooks/"+w.ID, nil))
	assert.Contains(t, rec.Body.String(), "kafka://"+user+":xxxxx@", "the API shows the URL with the password masked")
}

// TestWrongCredentialsAreRejectedInWords: brokers that refuse the URL's credentials (answering
// SASL_AUTHENTICATION_FAILED, as Kafka does; kfake itself only closes the connection) fail the
// attempt at once, as a refusal (Rejected: retried, not counted by the breaker), in words naming the
// user and the mechanism, without the password.
func TestWrongCredentialsAreRejectedInWords(t *testing.T) {
	t.Parallel()
	const user, password = "tenant-8", "wrong-pa55-Zq8"
	ctx := context.Background()
	c := newCluster(t, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, "the-right-one"))
	c.kf.ControlKey(int16(kmsg.SASLAuthenticate), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.kf.KeepControl()
		resp := req.(*kmsg.SASLAuthenticateRequest).ResponseKind().(*kmsg.SASLAuthenticateResponse)
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := "Authentication failed during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
		resp.ErrorMessage = &msg
		return resp, nil, true
	})
	_, rdb := newRedis(t)
	d := newDispatcher(t, rdb, "creds", newDestination(t, kafkadest.Options{}), webhooks.Options{
		Timeout: 10 * time.Second, BreakAfter: 2, RetrySchedule: repeat(time.Hour, 3)})
	w, err := d.Webhooks().Create(ctx, webhooks.Webhook{URL: "kafka://" + user + ":" + password + "@" + c.addrs()[0] + "/orders",
		Events: []string{"*"}})
	require.NoError(t, err)
	for _, id := range []string{"e1", "e2", "e3"} {
		start := time.Now()
		res, err := d.Dispatch(ctx, webhooks.Event{Type: "t", ID: id})
		require.NoError(t, err)
		require.Len(t, res, 1)
		dl := res[0].Delivery
		assert.Equal(t, webhooks.StatusPending, dl.Status)
		assert.Equal(t, `the Kafka brokers refused the credentials of user "tenant-8" (SASL SCRAM-SHA-512): check the URL's user and password`, dl.LastError)
		assert.Less(t, time.Since(start), 10*time.Second, "the refusal fails the attempt before its timeout")
	}
	h, err := d.Webhooks().Health(ctx, w.ID)
	require.NoError(t, err)
	assert.Equal(t, webhooks.CircuitClosed, h.State, "a refusal is not counted by the breaker")
}
