package natsdest

// A failed attempt in words a tenant understands, and its kind (destination.Error).

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/internal/egress"
)

// connectError is a failure to connect to the NATS server at hosts, in words: an authorization
// refused is Rejected (the server is up and says no: retried, not counted by the breaker), anything
// else Unavailable.
func connectError(err error, hosts string) error {
	at := "the NATS server at " + hosts
	switch {
	case errors.Is(err, nats.ErrAuthorization):
		return refused(at + " refused the credentials")
	case errors.Is(err, nats.ErrAuthExpired), errors.Is(err, nats.ErrAccountAuthExpired):
		return refused(at + " says the credentials expired")
	case errors.Is(err, nats.ErrAuthRevoked):
		return refused(at + " says the credentials were revoked")
	case errors.Is(err, nats.ErrSecureConnRequired):
		return fmt.Errorf("%s requires TLS: use a tls:// URL", at)
	case errors.Is(err, nats.ErrSecureConnWanted):
		return fmt.Errorf("%s does not offer TLS: use a nats:// URL", at)
	case errors.Is(err, nats.ErrMaxConnectionsExceeded), errors.Is(err, nats.ErrMaxAccountConnectionsExceeded):
		return fmt.Errorf("%s takes no more connections (%s)", at, trimNats(err))
	case errors.Is(err, nats.ErrNoServers):
		return fmt.Errorf("cannot connect to %s: no server answered", at)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("cannot connect to %s: %s", at, egress.Words(context.DeadlineExceeded))
	}
	return fmt.Errorf("cannot connect to %s: %s", at, egress.Words(err))
}

// refused is a refusal of the URL's credentials: Rejected (the server is up and says no).
func refused(what string) error {
	return &destination.Error{Kind: destination.Rejected,
		Err: errors.New(what + ": correct the user and password (or token) in the webhook's URL")}
}

// publishError is a failed publish to subject, in words, of its kind: a message the server will
// never take is Permanent; a publish refused for lack of permission is Rejected; everything else
// (no stream, no ack in time, the connection lost) Unavailable. size is the message's size with its
// headers; violation is a permission violation the server reported while the publish waited, or "".
func publishError(err error, subject, hosts string, size int, maxPayload int64, violation string) error {
	at := "the NATS server at " + hosts
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrNoStreamResponse), errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("no JetStream stream takes subject %q: create a stream whose subjects include it", subject)
	case errors.Is(err, errConnectionLost):
		return fmt.Errorf("the connection to %s was lost before JetStream acknowledged the message on subject %q", at, subject)
	case errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrReconnectBufExceeded), errors.Is(err, nats.ErrDisconnected):
		return fmt.Errorf("the connection to %s is lost: reconnecting", at)
	case errors.Is(err, nats.ErrConnectionClosed), errors.Is(err, nats.ErrConnectionDraining):
		return fmt.Errorf("the connection to %s was closed", at)
	case errors.Is(err, nats.ErrMaxPayload):
		return &destination.Error{Kind: destination.Permanent,
			Err: fmt.Errorf("the message (%d bytes with its headers) is larger than the max_payload of %s (%d bytes)", size, at, maxPayload)}
	case errors.As(err, &apiErr):
		words := fmt.Errorf("JetStream refused the message on subject %q: %s (error code %d)", subject, apiErr.Description, apiErr.ErrorCode)
		if apiErr.ErrorCode == jetstream.JSErrCodeStreamMessageExceedsMaximum {
			return &destination.Error{Kind: destination.Permanent, Err: words}
		}
		return words
	case violation != "":
		return &destination.Error{Kind: destination.Rejected,
			Err: fmt.Errorf("%s refused: %s: give the URL's user permission to publish to %q and to subscribe to _INBOX.> (the acks)", at, violation, subject)}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Errorf("JetStream did not acknowledge the message on subject %q within the timeout", subject)
	case errors.Is(err, context.Canceled):
		return errors.New("the attempt was canceled")
	case errors.Is(err, jetstream.ErrInvalidJSAck):
		return fmt.Errorf("the answer to the message on subject %q was not a JetStream ack: a service, not a stream, answers on that subject", subject)
	case errors.Is(err, nats.ErrBadSubject), errors.Is(err, nats.ErrBadHeaderMsg):
		return &destination.Error{Kind: destination.Permanent, Err: fmt.Errorf("the message cannot be published to subject %q: %s", subject, trimNats(err))}
	}
	return fmt.Errorf("publishing to subject %q failed: %s", subject, egress.Words(err))
}

// trimNats is err's text without nats.go's "nats: " prefix.
func trimNats(err error) string {
	s := err.Error()
	const p = "nats: "
	if len(s) > len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

// receipt is a PubAck in words, for the delivery page: "stream ORDERS, sequence 42", and
// ", duplicate" when the stream had the Nats-Msg-Id already (a repeat the duplicate window dropped).
func receipt(ack *jetstream.PubAck) string {
	s := "stream " + ack.Stream + ", sequence " + strconv.FormatUint(ack.Sequence, 10)
	if ack.Duplicate {
		s += ", duplicate"
	}
	return s
}
