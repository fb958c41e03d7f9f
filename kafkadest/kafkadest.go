// Package kafkadest is the Kafka destination of github.com/smartdrop/webhooks: a webhook whose URL
// is kafka://host:port[,host:port]/TOPIC gets each delivery as one record of TOPIC, produced with
// github.com/twmb/franz-go.
//
//	kafka://[user:password@]host[:port][,host[:port]…]/TOPIC[?sasl=scram-sha-512|scram-sha-256]
//
// The hosts are seed brokers (port 9092 when none is written); the client learns the others from the
// metadata and dials every broker, seed or not, through Message.Dial, the Dispatcher's egress guard.
// Credentials authenticate with SASL SCRAM-SHA-512 (or SCRAM-SHA-256 with sasl=scram-sha-256), which
// never sends the password itself; the destination does not speak TLS.
//
// The record's key is the event's OrderKey, else its event id (the default partitioner hashes it as
// Kafka's Java client does, so one key's events share a partition and keep their order); its value is
// the Standard Webhooks body; its headers are the message's headers in lower case (webhook-id,
// webhook-timestamp, webhook-signature, content-type and the webhook's custom headers), so that a
// consumer rebuilds an http.Header from them and verifies the record with the verify package as an
// HTTP receiver does.
//
// Send returns nil once the brokers acknowledged the produce with acks=all (every in-sync replica
// has it), and sets Message.Response to the receipt, "partition 3, offset 1207". The producer is
// idempotent (franz-go's default, kept on): the client's own retries of a produce, after a lost
// connection or a lost answer, write the record once. A produce outlives its Send only when Send's
// context ends while the produce is in flight (the client cannot tell then whether the brokers have
// it): the destination remembers that produce (Options.MaxUnacked), and the next attempt of the same
// message through this Destination waits for it and succeeds with it rather than writing the record
// again. A record is written twice only when a later attempt is made elsewhere (another process, or
// after this one's Close) while the earlier produce was written but its answer lost: at most one
// repeat per such attempt, and every repeat carries the same webhook-id header, the consumer's
// deduplication key. Kafka itself drops no repeat across producers.
//
// Failures, in words: an unknown topic fails the attempt at once (the destination never creates a
// topic; kind Unavailable, so it is retried and counts toward the circuit breaker); a broker that
// cannot be reached or does not answer fails it when its context ends, naming the last failed dial;
// a refused user or topic ACL is Rejected; a message larger than the topic takes is Permanent.
package kafkadest

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/internal/egress"
)

// Destination sends messages to the Kafka topics of kafka:// URLs. Safe for concurrent use.
type Destination struct {
	opts    Options
	pool    *pool
	unacked *unacked

	closeOnce sync.Once
}

var _ destination.Destination = (*Destination)(nil)

// New returns a Destination with opts; it does no I/O (each client connects at its first Send).
// Close it when done.
func New(opts Options) (*Destination, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Destination{opts: opts, pool: newPool(opts), unacked: newUnacked(opts.MaxUnacked)}, nil
}

// Schemes is "kafka".
func (d *Destination) Schemes() []string { return []string{"kafka"} }

// Check tells whether u is a kafka URL this destination sends to: seed brokers, one topic of a
// valid name, credentials as user:password with a SASL mechanism it uses. It does no I/O: a topic
// that does not exist fails the attempts, in words.
func (d *Destination) Check(u *url.URL) error {
	_, err := parseTarget(u)
	return err
}

// Send produces m to its URL's topic and returns nil once the brokers acknowledged it (acks=all),
// or the attempt's failure in words (see the package doc).
func (d *Destination) Send(ctx context.Context, m *destination.Message) error {
	t, err := parseTarget(m.URL)
	if err != nil {
		return &destination.Error{Kind: destination.Permanent, Err: fmt.Errorf("url: %w", err)}
	}
	if err := ctx.Err(); err != nil {
		return errors.New(egress.Words(err))
	}
	c, err := d.pool.acquire(t, m.Dial)
	if err != nil {
		return err
	}
	defer d.pool.release(c)
	start := time.Now()
	key := unackedKey(c.key, t.topic, m.ID)
	if earlier := d.unacked.take(key); earlier != nil {
		done, err := d.awaitEarlier(ctx, c, t, m, key, earlier, start)
		if done {
			return err
		}
	}
	// The record's context ends with Send: a record still waiting in the client then is failed
	// (unless it is in flight, when the idempotent producer must learn its outcome first).
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p := newProduce()
	failed := c.dialFailed()
	c.kc.Produce(rctx, record(t.topic, m), p.promise)
	for {
		select {
		case <-p.done:
			return d.result(ctx, p, t, c, m, start)
		case <-failed:
			ferr := c.failureSince(start)
			if !final(ferr) {
				failed = c.dialFailed() // another broker may answer: wait on
				continue
			}
			d.leave(c, key, p) // the same refusal would come again within the attempt
			return failure(ferr, t, c, start, len(m.Body))
		case <-ctx.Done():
			select {
			case <-p.done: // answered as the attempt's time ran out
				return d.result(ctx, p, t, c, m, start)
			default:
			}
			d.leave(c, key, p)
			return failure(ctx.Err(), t, c, start, len(m.Body))
		}
	}
}

// final reports whether a failed connection fails the attempt at once: the egress guard refused an
// address, or the brokers refused the credentials.
func final(err error) bool {
	return errors.Is(err, egress.ErrBlocked) || errors.Is(err, kerr.SaslAuthenticationFailed) ||
		errors.Is(err, kerr.UnsupportedSaslMechanism) || errors.Is(err, kerr.IllegalSaslState)
}

// awaitEarlier waits, within ctx, for the produce of an earlier attempt of m whose Send ended before
// its answer. done is false when m is to be produced again: the earlier produce failed.
func (d *Destination) awaitEarlier(ctx context.Context, c *client, t target, m *destination.Message, key string, earlier *produce, start time.Time) (done bool, err error) {
	select {
	case <-earlier.done:
		receipt, perr := earlier.outcome()
		if perr != nil {
			return false, nil
		}
		m.Response = receipt + " (written by an earlier attempt)"
		return true, nil
	case <-ctx.Done():
		d.unacked.put(key, earlier) // for the next attempt still
		return true, failure(ctx.Err(), t, c, start, len(m.Body))
	}
}

// leave remembers p, whose Send ends before its answer, for the message's next attempt; the client
// is kept open (not swept as idle) until the answer comes.
func (d *Destination) leave(c *client, key string, p *produce) {
	d.pool.hold(c)
	if !p.orphan(func() { d.pool.release(c) }) {
		d.pool.release(c) // answered meanwhile
	}
	d.unacked.put(key, p)
}

// result is Send's result for p, which the brokers answered or the client gave up.
func (d *Destination) result(ctx context.Context, p *produce, t target, c *client, m *destination.Message, start time.Time) error {
	receipt, err := p.outcome()
	if err != nil {
		if ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
			// Not this attempt's context: the client fails a partition's batch with the context of
			// its first record, an earlier message whose Send ended before its answer.
			err = errGivenUpBehind
		}
		return failure(err, t, c, start, len(m.Body))
	}
	m.Response = receipt
	return nil
}

// record is m as a Kafka record of topic: key OrderKey (else the event id), value the body (copied:
// the client may hold the record after Send returns), headers m's with their names in lower case.
func record(topic string, m *destination.Message) *kgo.Record {
	key := m.OrderKey
	if key == "" {
		key = m.EventID
	}
	n := 0
	for _, vs := range m.Header {
		n += len(vs)
	}
	headers := make([]kgo.RecordHeader, 0, n)
	for name, vs := range m.Header {
		lower := strings.ToLower(name)
		for _, v := range vs {
			headers = append(headers, kgo.RecordHeader{Key: lower, Value: []byte(v)})
		}
	}
	return &kgo.Record{Topic: topic, Key: []byte(key), Value: slices.Clone(m.Body), Headers: headers}
}

// Close closes every Kafka client and its connections (a produce still unanswered fails); a Send after
// it fails. franz-go's Close returns before the last of a client's connection goroutines has ended:
// they end moments later, none outlives the client. It returns nil.
func (d *Destination) Close() error {
	d.closeOnce.Do(d.pool.close)
	return nil
}
