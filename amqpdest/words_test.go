package amqpdest_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/amqpdest"
	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/destination/destinationtest"
)

// TestFailureWords: each way a publish fails is an attempt's failure in words a tenant understands,
// of the kind that tells the engine what to do, and never with the URL's password.
func TestFailureWords(t *testing.T) {
	t.Parallel()
	b := newBroker(t)
	d := newDestination(t, amqpdest.Options{})
	unbound := b.exchange("unbound", "topic")
	withPassword := func(u *url.URL, user, password string) *url.URL {
		c := *u
		c.User = url.UserPassword(user, password)
		return &c
	}
	vhost := func(u *url.URL, v string) *url.URL {
		c := *u
		c.Path = "/" + v
		return &c
	}
	for _, tc := range []struct {
		name  string
		url   *url.URL
		kind  destination.Kind
		words string
	}{
		{"unroutable on an exchange", b.target(url.Values{"exchange": {unbound}}), destination.Unavailable,
			`no queue is bound to exchange "` + unbound + `" with routing key "test.sent"`},
		{"unroutable on the default exchange", b.target(url.Values{"routing_key": {"no-such-queue"}}), destination.Unavailable,
			`no queue is bound to exchange "" (the default exchange) with routing key "no-such-queue"`},
		{"no such exchange", b.target(url.Values{"exchange": {b.name("missing")}}), destination.Unavailable,
			`does not exist on the broker at 127.0.0.1:5672: declare it, or change the URL's exchange`},
		{"login refused", withPassword(b.target(nil), "guest", "Wr0ng-pa55"), destination.Rejected,
			`closed the connection at login: check the user name ("guest") and password of the URL`},
		{"no such virtual host", vhost(b.target(nil), b.name("vhost")), destination.Rejected,
			"does not exist on the broker at 127.0.0.1:5672: create it, or change the URL's path"},
		{"nothing listens", withPassword(&url.URL{Scheme: "amqp", Host: freeAddr(t)}, "guest", "Wr0ng-pa55"), destination.Unavailable,
			"could not connect to the broker at 127.0.0.1:"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			err := d.Send(ctx, destinationtest.Message(tc.url, "msg_words", []byte(`{}`)))
			require.Error(t, err)
			kind, _ := destination.Classify(err)
			assert.Equal(t, tc.kind, kind, err.Error())
			assert.Contains(t, err.Error(), tc.words)
			assert.NotContains(t, err.Error(), "Wr0ng-pa55")
		})
	}
}

// TestCheck: Check takes the URL forms of the spec and refuses the others in words that say what to
// change.
func TestCheck(t *testing.T) {
	t.Parallel()
	d := newDestination(t, amqpdest.Options{})
	for raw, want := range map[string]string{
		"amqp://u:p@broker.example:5672/prod?exchange=orders&routing_key=order.paid": "",
		"amqps://u:p@broker.example/":                        "",
		"amqp://broker.example":                              "",
		"amqp://broker.example/?exchange=amq.topic":          "",
		"amqp://broker.example/?certfile=/etc/passwd":        `query parameter "certfile" is not supported: an amqp URL takes exchange and routing_key only`,
		"amqp://broker.example/?exchange=a%2Fb":              `exchange "a/b" has the character '/'`,
		"amqp://broker.example:0/":                           `port "0" is not a port number`,
		"amqp://a.example,b.example/":                        "one broker host",
		"amqp:///vhost":                                      "names the broker's host",
		"amqp://broker.example/?routing_key=a&routing_key=b": `query parameter "routing_key" is given 2 times`,
	} {
		u, err := url.Parse(raw)
		require.NoError(t, err)
		err = d.Check(u)
		if want == "" {
			assert.NoError(t, err, raw)
		} else if assert.Error(t, err, raw) {
			assert.Contains(t, err.Error(), want, raw)
		}
	}
}
