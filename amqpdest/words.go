package amqpdest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"

	amqp "github.com/rabbitmq/amqp091-go"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/internal/egress"
)

// ErrClosed is wrapped by Send's error once the Destination is closed.
var ErrClosed = errors.New("amqpdest: the destination is closed")

// ErrNotConfirmed is wrapped by Send's error when the broker did not confirm within the attempt's
// time (its context): the message may or may not have reached a queue, and the engine's next attempt
// publishes it again with the same message_id.
var ErrNotConfirmed = errors.New("the broker did not confirm within the timeout")

// failure is a failed attempt's words over the error that caused it (kept for errors.Is, never
// shown: its text may say less clearly, or carry more, than the words).
type failure struct {
	words string
	err   error
}

func (f *failure) Error() string { return f.words }
func (f *failure) Unwrap() error { return f.err }

// fail is a failure of kind Unavailable: retried, counted by the circuit breaker.
func fail(err error, format string, args ...any) error {
	return &failure{words: fmt.Sprintf(format, args...), err: err}
}

// failKind is a failure of another kind.
func failKind(kind destination.Kind, err error, format string, args ...any) error {
	return &destination.Error{Kind: kind, Err: fail(err, format, args...)}
}

// ctxWords says why an attempt ended while it waited for something ("connecting", "a free channel"):
// its time ran out or it was canceled.
func ctxWords(ctx context.Context, waiting string) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return fail(ctx.Err(), "the attempt was canceled while %s", waiting)
	}
	return fail(ctx.Err(), "no answer within the timeout while %s", waiting)
}

// dialWords says why the connection to the broker could not be made.
func dialWords(k connKey, err error) error {
	if errors.Is(err, egress.ErrBlocked) {
		return fail(err, "%s", egress.Words(err))
	}
	return fail(err, "could not connect to the broker at %s: %s", k.where(), egress.Words(err))
}

// openWords says why the AMQP handshake (after the TCP connect) failed.
func openWords(k connKey, err error) error {
	var ae *amqp.Error
	switch {
	case errors.Is(err, amqp.ErrCredentials):
		// amqp091-go's word for a socket closed at login: RabbitMQ closes it so when it refuses the
		// user name or password (amqp091-go cannot ask it to say why), and so does a lost connection.
		return failKind(destination.Rejected, err,
			"the broker at %s closed the connection at login: check the user name (%q) and password of the URL", k.where(), k.user)
	case errors.Is(err, amqp.ErrVhost):
		// amqp091-go's word for a socket closed without a word at connection.open: RabbitMQ says
		// why it refuses a virtual host (below), so the connection was lost.
		return fail(err, "the connection to the broker at %s was closed during the AMQP handshake", k.where())
	case errors.Is(err, amqp.ErrSASL):
		return failKind(destination.Rejected, err,
			"the broker at %s does not offer the PLAIN login mechanism", k.where())
	case errors.As(err, &ae) && ae.Server:
		if ae.Code == amqp.NotAllowed && strings.Contains(ae.Reason, "not found") {
			return failKind(destination.Rejected, err, "virtual host %q does not exist on the broker at %s: create it, or change the URL's path",
				k.vhost, k.addr)
		}
		if ae.Code == amqp.AccessRefused || ae.Code == amqp.NotAllowed {
			return failKind(destination.Rejected, err, "the broker at %s refused the connection: %s", k.where(), ae.Reason)
		}
		return fail(err, "the broker at %s closed the connection while it was opened: %s", k.where(), ae.Reason)
	}
	if errors.As(err, &ae) || peerClosed(err) {
		return fail(err, "the connection to the broker at %s was closed during the AMQP handshake", k.where())
	}
	return fail(err, "the AMQP handshake with the broker at %s failed: %s", k.where(), egress.Words(err))
}

// peerClosed tells whether err is a socket the broker (or a proxy before it) closed: amqp091-go's
// reader closes the socket when it reads the end, so a handshake's next write fails with
// net.ErrClosed.
func peerClosed(err error) bool {
	return errors.Is(err, net.ErrClosed) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// closedWords says why a publish's channel closed before the broker confirmed it: a channel
// exception about the message (no such exchange, access refused, too large) or the connection lost.
func closedWords(k connKey, t target, routingKey string, e *amqp.Error) error {
	if e == nil {
		return fail(amqp.ErrClosed, "the connection to the broker at %s was lost before it confirmed the message", k.where())
	}
	if !e.Server {
		return fail(e, "the connection to the broker at %s was lost before it confirmed the message", k.where())
	}
	switch {
	case e.Code == amqp.NotFound && strings.Contains(e.Reason, "exchange"):
		return fail(e, "%s does not exist on the broker at %s: declare it, or change the URL's exchange", exchangeWords(t.exchange), k.where())
	case e.Code == amqp.AccessRefused:
		return failKind(destination.Rejected, e, "the broker at %s refused user %q the publish to %s with routing key %s: %s",
			k.where(), k.user, exchangeWords(t.exchange), strconv.Quote(routingKey), e.Reason)
	case e.Code == amqp.PreconditionFailed && strings.Contains(e.Reason, "message size"):
		return failKind(destination.Permanent, e, "the message is larger than the broker at %s takes: %s", k.where(), e.Reason)
	case e.Code == amqp.ConnectionForced:
		return fail(e, "the broker at %s closed the connection before it confirmed the message: %s", k.where(), e.Reason)
	}
	return fail(e, "the broker at %s closed the channel before it confirmed the message: %s", k.where(), e.Reason)
}
