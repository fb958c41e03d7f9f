package kafkadest

// A failed produce in words a tenant understands, with the kind of failure the engine acts on.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/internal/egress"
)

// failure is the attempt's failure for err, a produce's error or the attempt's context's: words
// naming what went wrong (never the password) and, where it is not Unavailable, its kind. When the
// attempt's time ran out, c's latest failed connection since start says why.
func failure(err error, t target, c *client, start time.Time, bodyLen int) error {
	behind := errors.Is(err, errGivenUpBehind)
	if behind || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		if cerr := c.failureSince(start); cerr != nil {
			var ke *kerr.Error
			if errors.As(cerr, &ke) {
				return brokerFailure(ke, t, bodyLen)
			}
			return fmt.Errorf("could not reach the Kafka brokers (%s): %s", t.brokers(), egress.Words(cerr))
		}
		switch {
		case behind:
			return fmt.Errorf("the Kafka brokers (%s) did not acknowledge an earlier message to the same partition "+
				"before its attempt's timeout, and the client gave up this message, queued behind it, with it", t.brokers())
		case errors.Is(err, context.Canceled):
			return errors.New("the attempt was canceled")
		}
		return fmt.Errorf("the Kafka brokers (%s) did not acknowledge the message within the timeout", t.brokers())
	}
	if errors.Is(err, kgo.ErrClientClosed) {
		return errClosed
	}
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return brokerFailure(ke, t, bodyLen)
	}
	if errors.Is(err, egress.ErrBlocked) {
		return fmt.Errorf("could not reach the Kafka brokers (%s): %w", t.brokers(), err)
	}
	if words := egress.Words(err); words != err.Error() { // a network failure egress.Words knows
		return fmt.Errorf("could not reach the Kafka brokers (%s): %s", t.brokers(), words)
	}
	return fmt.Errorf("the Kafka client gave up the message for brokers %s: %w", t.brokers(), err)
}

// errGivenUpBehind is a produce's error when the client gave its record up with an earlier record
// of the same partition whose Send had ended.
var errGivenUpBehind = errors.New("given up with an earlier record of its partition")

// brokerFailure is a Kafka error code's failure.
func brokerFailure(ke *kerr.Error, t target, bodyLen int) error {
	switch ke {
	case kerr.UnknownTopicOrPartition, kerr.UnknownTopicID:
		return fmt.Errorf("topic %q does not exist: create it (the destination never creates a topic)", t.topic)
	case kerr.TopicAuthorizationFailed:
		return &destination.Error{Kind: destination.Rejected, Err: fmt.Errorf(
			"the Kafka brokers refused to let %s write to topic %q: grant it WRITE on the topic", who(t), t.topic)}
	case kerr.ClusterAuthorizationFailed:
		return &destination.Error{Kind: destination.Rejected, Err: fmt.Errorf(
			"the Kafka brokers refused %s idempotent writes: grant it IDEMPOTENT_WRITE on the cluster", who(t))}
	case kerr.SaslAuthenticationFailed, kerr.IllegalSaslState, kerr.UnsupportedSaslMechanism:
		return &destination.Error{Kind: destination.Rejected, Err: fmt.Errorf(
			"the Kafka brokers refused the credentials of %s (SASL %s): check the URL's user and password", who(t), t.mech)}
	case kerr.MessageTooLarge, kerr.RecordListTooLarge:
		return &destination.Error{Kind: destination.Permanent, Err: fmt.Errorf(
			"the message of %d bytes is larger than topic %q takes (its max.message.bytes): raise the limit or send smaller events", bodyLen, t.topic)}
	case kerr.InvalidRecord, kerr.InvalidTopicException:
		return &destination.Error{Kind: destination.Permanent, Err: fmt.Errorf(
			"the Kafka brokers refused the message for topic %q: %s", t.topic, ke.Description)}
	}
	return fmt.Errorf("the Kafka brokers answered %s: %s", ke.Message, ke.Description)
}

// who names the client to the brokers in words: its user, or "this client" without credentials.
func who(t target) string {
	if t.user == "" {
		return "this client"
	}
	return fmt.Sprintf("user %q", t.user)
}
