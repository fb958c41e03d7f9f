package kafkadest

// A webhook's kafka:// URL: its seed brokers, its topic and its credentials.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// defaultPort is the port of a seed broker written without one.
const defaultPort = "9092"

// maxTopicLen is Kafka's longest topic name.
const maxTopicLen = 249

// SASL mechanisms a URL's sasl parameter names.
const (
	mechSCRAM512 = "SCRAM-SHA-512"
	mechSCRAM256 = "SCRAM-SHA-256"
)

// target is where a message goes: a kafka:// URL taken apart.
type target struct {
	seeds      []string // host:port, as written (the port 9092 added where none is)
	topic      string
	user, pass string
	mech       string // mechSCRAM512 or mechSCRAM256 when user is set, else ""
}

// parseTarget takes u (kafka://[user:pass@]host[:port][,host[:port]…]/TOPIC[?sasl=scram-sha-256])
// apart, or says in words what to change.
func parseTarget(u *url.URL) (target, error) {
	var t target
	if u.Scheme != "kafka" {
		return t, fmt.Errorf("scheme %q is not kafka: write kafka://host:9092/TOPIC", u.Scheme)
	}
	if u.Host == "" {
		return t, errors.New("a kafka URL names its seed brokers: kafka://host:9092[,host:9092]/TOPIC")
	}
	for hp := range strings.SplitSeq(u.Host, ",") {
		seed, err := seedAddress(hp)
		if err != nil {
			return t, err
		}
		t.seeds = append(t.seeds, seed)
	}
	topic := strings.TrimPrefix(u.Path, "/")
	if err := checkTopic(topic); err != nil {
		return t, err
	}
	t.topic = topic
	if u.Fragment != "" {
		return t, errors.New("a kafka URL has no #fragment: remove it")
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return t, fmt.Errorf("the query does not parse: %w", err)
	}
	for k := range q {
		if k != "sasl" {
			return t, fmt.Errorf("unknown parameter %q: a kafka URL takes only sasl=scram-sha-512 or sasl=scram-sha-256", k)
		}
	}
	if u.User == nil {
		if q.Has("sasl") {
			return t, errors.New("sasl is set but the URL has no credentials: write kafka://user:password@host:9092/TOPIC")
		}
		return t, nil
	}
	t.user = u.User.Username()
	pass, ok := u.User.Password()
	if t.user == "" || !ok || pass == "" {
		return t, errors.New("a kafka URL's credentials are user:password, both given: kafka://user:password@host:9092/TOPIC")
	}
	t.pass = pass
	switch m := strings.ToUpper(q.Get("sasl")); m {
	case "", mechSCRAM512:
		t.mech = mechSCRAM512
	case mechSCRAM256:
		t.mech = mechSCRAM256
	default:
		return t, fmt.Errorf("sasl=%s is not a mechanism this destination uses: write sasl=scram-sha-512 (the default) or sasl=scram-sha-256", q.Get("sasl"))
	}
	return t, nil
}

// seedAddress is one seed broker of a URL's host list as host:port, or why it is not one.
func seedAddress(hp string) (string, error) {
	if hp == "" {
		return "", errors.New("an empty seed broker in the host list: write kafka://host1:9092,host2:9092/TOPIC")
	}
	host, port, err := net.SplitHostPort(hp)
	if err != nil { // no port: the default one
		host, port = hp, ""
		if strings.HasPrefix(hp, "[") && strings.HasSuffix(hp, "]") {
			host = hp[1 : len(hp)-1]
		} else if strings.Contains(hp, ":") {
			return "", fmt.Errorf("seed broker %q is not host:port (an IPv6 address goes in brackets: [::1]:9092)", hp)
		}
	}
	if port == "" {
		port = defaultPort
	}
	if host == "" {
		return "", fmt.Errorf("seed broker %q has no host", hp)
	}
	return net.JoinHostPort(host, port), nil
}

// checkTopic says what is wrong with a topic name, Kafka's rule: 1-249 of [a-zA-Z0-9._-], not "."
// nor "..".
func checkTopic(topic string) error {
	switch {
	case topic == "":
		return errors.New("a kafka URL names its topic: kafka://host:9092/TOPIC")
	case strings.Contains(topic, "/"):
		return fmt.Errorf("topic %q has a '/': a kafka URL's path is one topic, kafka://host:9092/TOPIC", topic)
	case len(topic) > maxTopicLen:
		return fmt.Errorf("topic name is %d characters: Kafka takes at most %d", len(topic), maxTopicLen)
	case topic == "." || topic == "..":
		return fmt.Errorf("topic %q is not a valid name", topic)
	}
	for _, r := range topic {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Errorf("topic %q has the character %q: Kafka topic names take only letters, digits, '.', '_' and '-'", topic, r)
		}
	}
	return nil
}

// clientKey names the client a target's messages go through: its seed brokers (in any order) and
// its credentials, the password hashed so that the key never holds it.
func (t target) clientKey() string {
	seeds := slices.Clone(t.seeds)
	slices.Sort(seeds)
	key := strings.ToLower(strings.Join(seeds, ","))
	if t.user == "" {
		return key
	}
	sum := sha256.Sum256([]byte(t.mech + "\x00" + t.user + "\x00" + t.pass))
	return key + "|" + hex.EncodeToString(sum[:16])
}

// brokers names the seed brokers in words: "127.0.0.1:9092" or "a:9092, b:9092".
func (t target) brokers() string { return strings.Join(t.seeds, ", ") }
