package amqpdest

import (
	"errors"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestOpenWordsPeerClosed: a handshake that fails because the broker's side of the socket closed
// (the proxy of TestBrokerUnreachable going down mid-handshake: amqp091-go's reader closes the
// socket at the end it reads, and the handshake's next write fails with net.ErrClosed) says so in
// words, not in the socket's.
func TestOpenWordsPeerClosed(t *testing.T) {
	t.Parallel()
	k := connKey{addr: "127.0.0.1:5672", host: "127.0.0.1", vhost: "/"}
	for _, err := range []error{
		&net.OpError{Op: "write", Net: "tcp", Err: net.ErrClosed},
		io.EOF,
		io.ErrUnexpectedEOF,
		&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET},
		&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE},
	} {
		got := openWords(k, err)
		assert.Equal(t, "the connection to the broker at 127.0.0.1:5672 was closed during the AMQP handshake", got.Error(), "%v", err)
		assert.ErrorIs(t, got, err, "the cause is kept")
	}
	assert.Contains(t, openWords(k, errors.New("something else")).Error(), "the AMQP handshake with the broker at 127.0.0.1:5672 failed: ")
}
