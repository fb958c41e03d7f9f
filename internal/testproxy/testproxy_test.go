package testproxy

import (
	"bufio"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// echoServer answers each line with the same line.
func echoServer(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return ln.Addr().String()
}

func roundTrip(c net.Conn, line string) (string, error) {
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Write([]byte(line + "\n")); err != nil {
		return "", err
	}
	return bufio.NewReader(c).ReadString('\n')
}

// TestProxyFaults: the proxy forwards, refuses while down, forwards again once up, and cuts the
// connection that carries the next reply.
func TestProxyFaults(t *testing.T) {
	t.Parallel()
	p, err := Start(echoServer(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })

	c, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	got, err := roundTrip(c, "one")
	require.NoError(t, err)
	assert.Equal(t, "one\n", got)

	p.Down()
	_, err = roundTrip(c, "two")
	assert.Error(t, err, "a connection is dropped when the proxy goes down")
	if c2, err := net.Dial("tcp", p.Addr()); err == nil {
		_, err = roundTrip(c2, "three")
		assert.Error(t, err, "a new connection is refused while down")
	}

	p.Up()
	c3, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	got, err = roundTrip(c3, "four")
	require.NoError(t, err)
	assert.Equal(t, "four\n", got)

	p.CutNextReply()
	_, err = roundTrip(c3, "five")
	assert.Error(t, err, "the reply is cut with its connection")
	c4, err := net.Dial("tcp", p.Addr())
	require.NoError(t, err)
	got, err = roundTrip(c4, "six")
	require.NoError(t, err, "only one reply was cut")
	assert.Equal(t, "six\n", got)
}
