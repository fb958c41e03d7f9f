package amqpdest

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

// maxShortString is AMQP's bound on a short string: an exchange name, a routing key, a virtual host,
// a header name.
const maxShortString = 255

// connKey names one broker connection: a Destination keeps one per key.
type connKey struct {
	tls                  bool
	addr                 string // host:port
	user, password, host string
	vhost                string
}

// target is where a webhook's URL publishes: its connection, exchange and routing key.
type target struct {
	key        connKey
	exchange   string
	routingKey string // "" with ownKey false: the event type
	ownKey     bool   // the URL gives the routing key
}

// where is the broker as the failure words and logs name it: its address and, unless it is the
// default "/", its virtual host. Never a credential.
func (k connKey) where() string {
	if k.vhost == "/" {
		return k.addr
	}
	return k.addr + ", virtual host " + strconv.Quote(k.vhost)
}

// parseTarget reads an amqp or amqps URL: amqp[s]://user:pass@host:port/vhost?exchange=X&routing_key=K.
// Its errors say what to change and never carry the password.
func parseTarget(u *url.URL) (target, error) {
	var t target
	if u == nil {
		return t, errors.New("the amqp URL is missing")
	}
	switch u.Scheme {
	case "amqp":
	case "amqps":
		t.key.tls = true
	default:
		return t, fmt.Errorf("url scheme %q is not amqp or amqps", u.Scheme)
	}
	if u.Opaque != "" {
		return t, errors.New("an amqp URL is amqp://user:password@host:port/vhost?exchange=X&routing_key=K")
	}
	host := u.Hostname()
	if host == "" {
		return t, errors.New("an amqp URL names the broker's host: amqp://user:password@host:port/vhost")
	}
	if strings.Contains(u.Host, ",") {
		return t, errors.New("an amqp URL names one broker host (no comma-separated list)")
	}
	port := 5672
	if t.key.tls {
		port = 5671
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return t, fmt.Errorf("port %q is not a port number (1 to 65535)", p)
		}
		port = n
	}
	t.key.host = host
	t.key.addr = net.JoinHostPort(host, strconv.Itoa(port))
	// As amqp091-go and RabbitMQ's URI spec: no user info means guest:guest.
	t.key.user, t.key.password = "guest", "guest"
	if u.User != nil {
		t.key.user = u.User.Username()
		if p, ok := u.User.Password(); ok {
			t.key.password = p
		}
	}
	// The path is the virtual host: none or "/" is the default one ("/"); "/%2f" names it too.
	t.key.vhost = "/"
	if len(u.Path) > 1 {
		t.key.vhost = u.Path[1:]
	}
	if len(t.key.vhost) > maxShortString {
		return t, fmt.Errorf("the virtual host is longer than %d bytes", maxShortString)
	}
	if u.Fragment != "" {
		return t, errors.New("an amqp URL has no #fragment")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return t, errors.New("the query of the amqp URL does not parse: it is ?exchange=X&routing_key=K")
	}
	for name, vs := range q {
		if name != "exchange" && name != "routing_key" {
			return t, fmt.Errorf("query parameter %q is not supported: an amqp URL takes exchange and routing_key only", name)
		}
		if len(vs) > 1 {
			return t, fmt.Errorf("query parameter %q is given %d times: give it once", name, len(vs))
		}
	}
	t.exchange = q.Get("exchange")
	if err := checkExchange(t.exchange); err != nil {
		return t, err
	}
	if q.Has("routing_key") {
		t.routingKey, t.ownKey = q.Get("routing_key"), true
		if len(t.routingKey) > maxShortString {
			return t, fmt.Errorf("routing_key is longer than %d bytes", maxShortString)
		}
	}
	return t, nil
}

// checkExchange refuses an exchange name RabbitMQ would refuse: longer than 255 bytes, or with
// characters other than letters, digits, '-', '_', '.' and ':'. "" is the default exchange.
func checkExchange(name string) error {
	if len(name) > maxShortString {
		return fmt.Errorf("exchange is longer than %d bytes", maxShortString)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:", r)) {
			return fmt.Errorf("exchange %q has the character %q: an exchange name has letters, digits, '-', '_', '.' and ':' only", name, r)
		}
	}
	return nil
}

// routingKey is the routing key of a message of eventType.
func (t target) routingKeyFor(eventType string) string {
	if t.ownKey {
		return t.routingKey
	}
	return eventType
}

// exchangeWords names the exchange in words: the default exchange has no name.
func exchangeWords(exchange string) string {
	if exchange == "" {
		return `exchange "" (the default exchange)`
	}
	return "exchange " + strconv.Quote(exchange)
}
