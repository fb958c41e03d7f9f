package natsdest

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"unicode"
)

// maxSubjectLen bounds a URL's subject, in bytes.
const maxSubjectLen = 1024

// reservedPrefixes start subjects a webhook may not publish to: the JetStream API, the system
// account's, and request replies.
var reservedPrefixes = []string{"$JS.", "$SYS.", "_INBOX."}

// subjectOf returns the subject a URL names (its path without the leading slash), or what is wrong
// with it, in words that say what to change.
func subjectOf(u *url.URL) (string, error) {
	subject := strings.TrimPrefix(u.Path, "/")
	if subject == "" {
		return "", fmt.Errorf("a %s URL names the subject to publish to as its path: %s://%s/orders.paid", u.Scheme, u.Scheme, u.Host)
	}
	if len(subject) > maxSubjectLen {
		return "", fmt.Errorf("the subject is longer than %d bytes", maxSubjectLen)
	}
	if i := strings.IndexFunc(subject, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }); i >= 0 {
		return "", fmt.Errorf("the subject %q has a space or a control character at byte %d: NATS subjects have none", subject, i)
	}
	for _, token := range strings.Split(subject, ".") {
		switch token {
		case "":
			return "", fmt.Errorf("the subject %q has an empty token: write tokens separated by single dots, e.g. orders.paid", subject)
		case "*", ">":
			return "", fmt.Errorf("the subject %q has the wildcard %q: a message is published to one subject, without wildcards", subject, token)
		}
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(subject, p) {
			return "", fmt.Errorf("the subject %q starts with %s, which NATS reserves: publish to a subject of your own", subject, p)
		}
	}
	return subject, nil
}

// checkURL is Check's rule: a subject, no query and no fragment.
func checkURL(u *url.URL) error {
	if _, err := subjectOf(u); err != nil {
		return err
	}
	if u.RawQuery != "" || u.ForceQuery {
		return errors.New("a NATS URL takes no query: nats://[user:password@]host:port/SUBJECT")
	}
	if u.Fragment != "" {
		return errors.New("a NATS URL takes no fragment (#…): nats://[user:password@]host:port/SUBJECT")
	}
	return nil
}

// servers are the server URLs nats.go connects to, one per host of u (a comma-separated list for a
// cluster: nats://a:4222,b:4222/orders), with the URL's scheme and without credentials.
func servers(u *url.URL) []string {
	hosts := strings.Split(u.Host, ",")
	out := make([]string, 0, len(hosts))
	for _, h := range hosts {
		if h != "" {
			out = append(out, u.Scheme+"://"+h)
		}
	}
	return out
}

// connKey is the key of the connection a URL's messages go through: its scheme, hosts and
// credentials.
func connKey(u *url.URL) string {
	if u.User == nil {
		return u.Scheme + "://" + u.Host
	}
	return u.Scheme + "://" + u.User.String() + "@" + u.Host
}
