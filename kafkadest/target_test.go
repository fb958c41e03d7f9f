package kafkadest

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/smartdrop/webhooks/destination"
)

// TestParseTarget: what a kafka URL says (seed brokers with their default port, the topic, the
// credentials and their SASL mechanism), and the words for what it gets wrong.
func TestParseTarget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		raw   string
		want  target
		words string // the error's start, when it is refused
	}{
		{raw: "kafka://b1:9092/orders", want: target{seeds: []string{"b1:9092"}, topic: "orders"}},
		{raw: "kafka://b1,b2:9093/orders.v1_x-y", want: target{seeds: []string{"b1:9092", "b2:9093"}, topic: "orders.v1_x-y"}},
		{raw: "kafka://[::1]/t", want: target{seeds: []string{"[::1]:9092"}, topic: "t"}},
		{raw: "kafka://[::1]:9093/t", want: target{seeds: []string{"[::1]:9093"}, topic: "t"}},
		{raw: "kafka://b1:/t", want: target{seeds: []string{"b1:9092"}, topic: "t"}},
		{raw: "kafka://u:p@b1/t", want: target{seeds: []string{"b1:9092"}, topic: "t", user: "u", pass: "p", mech: mechSCRAM512}},
		{raw: "kafka://u:p@b1/t?sasl=SCRAM-SHA-256", want: target{seeds: []string{"b1:9092"}, topic: "t", user: "u", pass: "p", mech: mechSCRAM256}},
		{raw: "kafka://u:p@b1/t?sasl=scram-sha-512", want: target{seeds: []string{"b1:9092"}, topic: "t", user: "u", pass: "p", mech: mechSCRAM512}},
		{raw: "kafka://b1/", words: "a kafka URL names its topic"},
		{raw: "kafka://b1", words: "a kafka URL names its topic"},
		{raw: "kafka://b1/a/b", words: `topic "a/b" has a '/'`},
		{raw: "kafka://b1/a%20b", words: `topic "a b" has the character ' '`},
		{raw: "kafka://b1/..", words: `topic ".." is not a valid name`},
		{raw: "kafka://b1/" + strings.Repeat("x", 250), words: "topic name is 250 characters"},
		{raw: "kafka://b1,,b2/t", words: "an empty seed broker"},
		{raw: "kafka://b1:1:2/t", words: `seed broker "b1:1:2" is not host:port`},
		{raw: "kafka://b1/t?acks=0", words: `unknown parameter "acks"`},
		{raw: "kafka://b1/t#f", words: "a kafka URL has no #fragment"},
		{raw: "kafka://b1/t?sasl=scram-sha-512", words: "sasl is set but the URL has no credentials"},
		{raw: "kafka://u@b1/t", words: "a kafka URL's credentials are user:password"},
		{raw: "kafka://:p@b1/t", words: "a kafka URL's credentials are user:password"},
		{raw: "kafka://u:p@b1/t?sasl=plain", words: "sasl=plain is not a mechanism this destination uses"},
		{raw: "amqp://b1/t", words: `scheme "amqp" is not kafka`},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			u, err := url.Parse(tc.raw)
			require.NoError(t, err)
			got, err := parseTarget(u)
			if tc.words != "" {
				require.Error(t, err)
				assert.True(t, strings.HasPrefix(err.Error(), tc.words), "%q does not start with %q", err, tc.words)
				assert.NotContains(t, err.Error(), ":p@", "no password in the words")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestClientKey: one key for the same seeds in any order and the same credentials; another for
// other credentials or another mechanism; the password never in it.
func TestClientKey(t *testing.T) {
	t.Parallel()
	key := func(raw string) string {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		tg, err := parseTarget(u)
		require.NoError(t, err)
		return tg.clientKey()
	}
	assert.Equal(t, key("kafka://a:1,b:2/t1"), key("kafka://b:2,a:1/t2"), "seeds in any order, any topic")
	assert.Equal(t, key("kafka://A:1/t"), key("kafka://a:1/t"), "host names in any case")
	assert.NotEqual(t, key("kafka://a:1/t"), key("kafka://a:1,b:2/t"))
	assert.NotEqual(t, key("kafka://u:p1@a:1/t"), key("kafka://u:p2@a:1/t"))
	assert.NotEqual(t, key("kafka://u:p@a:1/t"), key("kafka://u:p@a:1/t?sasl=scram-sha-256"))
	assert.NotEqual(t, key("kafka://u:p@a:1/t"), key("kafka://a:1/t"))
	assert.NotContains(t, key("kafka://u:s3cret-pass@a:1/t"), "s3cret-pass")
}

// TestOptionsDefaultsAndBounds: each option's default, and New's words for one out of its bounds.
func TestOptionsDefaultsAndBounds(t *testing.T) {
	t.Parallel()
	o, err := Options{}.withDefaults()
	require.NoError(t, err)
	assert.Equal(t, Options{MaxClients: 64, IdleTimeout: 5 * time.Minute, MaxBufferedRecords: 10_000, MaxUnacked: 10_000,
		DialTimeout: 10 * time.Second, ClientID: "webhooks"}, o)
	for _, tc := range []struct {
		opts  Options
		words string
	}{
		{Options{MaxClients: -1}, "MaxClients is -1: it must be in [1, 4096]"},
		{Options{MaxClients: 4097}, "MaxClients is 4097"},
		{Options{MaxBufferedRecords: 1_000_001}, "MaxBufferedRecords is 1000001"},
		{Options{MaxUnacked: -5}, "MaxUnacked is -5"},
		{Options{IdleTimeout: time.Millisecond}, "IdleTimeout is 1ms: it must be in [1s, 24h0m0s]"},
		{Options{IdleTimeout: 25 * time.Hour}, "IdleTimeout is 25h0m0s"},
		{Options{DialTimeout: 2 * time.Minute}, "DialTimeout is 2m0s"},
		{Options{Linger: -time.Millisecond}, "Linger is -1ms: it must be in [0s, 1s]"},
		{Options{Linger: 2 * time.Second}, "Linger is 2s"},
		{Options{ClientID: strings.Repeat("c", 256)}, "ClientID is 256 bytes"},
	} {
		t.Run(fmt.Sprint(tc.words), func(t *testing.T) {
			_, err := New(tc.opts)
			require.ErrorIs(t, err, ErrInvalidOptions)
			assert.Contains(t, err.Error(), tc.words)
		})
	}
}

// TestUnackedKeepsTheNewest: at most max produces are remembered, the oldest forgotten first; take
// forgets what it returns.
func TestUnackedKeepsTheNewest(t *testing.T) {
	t.Parallel()
	u := newUnacked(3)
	ps := make([]*produce, 5)
	for i := range ps {
		ps[i] = newProduce()
		u.put(fmt.Sprint(i), ps[i])
	}
	assert.Equal(t, 3, u.len())
	assert.Nil(t, u.take("0"))
	assert.Nil(t, u.take("1"))
	assert.Same(t, ps[2], u.take("2"))
	assert.Nil(t, u.take("2"), "taken once")
	u.put("3", ps[0]) // in place of what was there
	assert.Equal(t, 2, u.len())
	assert.Same(t, ps[0], u.take("3"))
}

// TestBrokerFailureKinds: each Kafka error the brokers may answer with is a failure of the kind the
// engine acts on (a refusal is not counted by the breaker, a message too large is not retried), in
// words naming the topic or the user.
func TestBrokerFailureKinds(t *testing.T) {
	t.Parallel()
	tg := target{seeds: []string{"b:9092"}, topic: "orders", user: "acme", mech: mechSCRAM512}
	for _, tc := range []struct {
		err   *kerr.Error
		kind  destination.Kind
		words string
	}{
		{kerr.UnknownTopicOrPartition, destination.Unavailable, `topic "orders" does not exist: create it`},
		{kerr.UnknownTopicID, destination.Unavailable, `topic "orders" does not exist: create it`},
		{kerr.TopicAuthorizationFailed, destination.Rejected, `the Kafka brokers refused to let user "acme" write to topic "orders"`},
		{kerr.ClusterAuthorizationFailed, destination.Rejected, `the Kafka brokers refused user "acme" idempotent writes`},
		{kerr.SaslAuthenticationFailed, destination.Rejected, `the Kafka brokers refused the credentials of user "acme" (SASL SCRAM-SHA-512)`},
		{kerr.MessageTooLarge, destination.Permanent, `the message of 42 bytes is larger than topic "orders" takes`},
		{kerr.RecordListTooLarge, destination.Permanent, `the message of 42 bytes is larger than topic "orders" takes`},
		{kerr.InvalidRecord, destination.Permanent, `the Kafka brokers refused the message for topic "orders"`},
		{kerr.NotEnoughReplicas, destination.Unavailable, "the Kafka brokers answered NOT_ENOUGH_REPLICAS: Messages are rejected"},
	} {
		t.Run(tc.err.Message, func(t *testing.T) {
			err := failure(fmt.Errorf("produce: %w", tc.err), tg, &client{}, time.Now(), 42)
			kind, _ := destination.Classify(err)
			assert.Equal(t, tc.kind, kind)
			assert.True(t, strings.HasPrefix(err.Error(), tc.words), "%q does not start with %q", err, tc.words)
		})
	}
}

// TestGivenUpBehindInWords: the client fails a partition's batch with the context of its first
// record, so a record queued behind a message whose Send had ended comes back with that Send's
// context error while its own attempt still runs: its failure says what happened, not that the
// attempt was canceled or timed out; an attempt whose own context ended says that.
func TestGivenUpBehindInWords(t *testing.T) {
	t.Parallel()
	tg := target{seeds: []string{"b:9092"}, topic: "orders"}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	const behind = "the Kafka brokers (b:9092) did not acknowledge an earlier message to the same partition " +
		"before its attempt's timeout, and the client gave up this message, queued behind it, with it"
	for _, tc := range []struct {
		name  string
		ctx   context.Context // the attempt's own
		err   error           // the produce's
		words string
	}{
		{"behind a canceled record", context.Background(), context.Canceled, behind},
		{"behind an expired record", context.Background(), fmt.Errorf("produce: %w", context.DeadlineExceeded), behind},
		{"its own attempt canceled", canceled, context.Canceled, "the attempt was canceled"},
		{"its own attempt expired", expired, context.DeadlineExceeded,
			"the Kafka brokers (b:9092) did not acknowledge the message within the timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProduce()
			p.promise(&kgo.Record{}, tc.err)
			err := (&Destination{}).result(tc.ctx, p, tg, &client{}, &destination.Message{}, time.Now())
			assert.EqualError(t, err, tc.words)
			kind, _ := destination.Classify(err)
			assert.Equal(t, destination.Unavailable, kind, "retried like any outage")
		})
	}
}
