package egress

// The URL rule for Create and Update.

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode"
)

// MaxURLLen bounds a webhook URL, in bytes.
const MaxURLLen = 2048

// ParseURL is the URL rule every webhook URL passes, whatever its destination: an absolute URL with a
// scheme and a host, at most MaxURLLen bytes, each of whose hosts (a comma-separated list for a
// destination that takes several, kafka://a:9092,b:9092/topic) has a port of 1-65535 when it has one
// and, when it is a literal IP address in any spelling (Unicode dots and fullwidth forms included, as
// net/http maps them), passes p. A host with non-ASCII digits is refused: write it in its ASCII
// (punycode) form. Host names are not resolved here: the dialer checks what they resolve to at every
// connection. A refused address wraps ErrBlocked.
func (p Policy) ParseURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, errors.New("url is required")
	}
	if len(raw) > MaxURLLen {
		return nil, fmt.Errorf("url longer than %d bytes", MaxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if !u.IsAbs() {
		return nil, fmt.Errorf("url %q has no scheme: write it in full, e.g. https://%s", raw, strings.TrimPrefix(raw, "//"))
	}
	if u.Opaque != "" {
		return nil, fmt.Errorf("url %q is not of the form scheme://host/…: write https://%s (or http://)", raw, raw)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("url must have a host: %s://host/…", u.Scheme)
	}
	for _, hostPort := range strings.Split(u.Host, ",") {
		if err := p.checkHost(hostPort); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// checkHost is ParseURL's rule for one host[:port] of a URL.
func (p Policy) checkHost(hostPort string) error {
	host, port := hostPort, ""
	if i := strings.LastIndexByte(hostPort, ':'); i >= 0 && !strings.HasSuffix(hostPort, "]") {
		host, port = hostPort[:i], hostPort[i+1:]
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return errors.New("url must have a host")
	}
	if port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return fmt.Errorf("url port %q is not 1-65535", port)
		}
	}
	host, err := foldHost(host)
	if err != nil {
		return err
	}
	if ip, ok := literalHostIP(host); ok {
		if why := p.blocked(ip); why != "" {
			return &blockedHost{fmt.Sprintf("url host %s is a blocked address (%s): %s", ip, why, optionsHint)}
		}
	}
	return nil
}

// CheckURL is the rule of an HTTP URL the library sends to (an OAuth2 token URL): ParseURL's, and an
// https (or, unless requireHTTPS, http) URL without user-info.
func (p Policy) CheckURL(raw string, requireHTTPS bool) error {
	u, err := p.ParseURL(raw)
	if err != nil {
		return err
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http":
		if requireHTTPS {
			return errors.New("url must be https")
		}
	default:
		return fmt.Errorf("url scheme %q is not http or https", u.Scheme)
	}
	if u.User != nil {
		return errors.New("url must not carry user info")
	}
	return nil
}

// foldHost maps the forms of ASCII that IDNA (UTS #46, as net/http applies it before dialing) maps to
// ASCII in a host name: the ideographic and fullwidth full stops and the halfwidth ideographic full
// stop (U+3002, U+FF0E, U+FF61) to ".", and the fullwidth forms U+FF01-U+FF5E to their ASCII letters
// and digits; so "127。0。0。1" is 127.0.0.1. A host holding any other non-ASCII digit or number
// (mathematical, superscript, circled, ...) is refused.
func foldHost(host string) (string, error) {
	ascii := true
	for i := 0; i < len(host); i++ {
		ascii = ascii && host[i] < 0x80
	}
	if ascii {
		return host, nil
	}
	var b strings.Builder
	for _, r := range host {
		switch {
		case r == '\u3002' || r == '\uff0e' || r == '\uff61':
			r = '.'
		case r >= '\uff01' && r <= '\uff5e':
			r -= 0xfee0
		case r >= 0x80 && unicode.IsNumber(r):
			return "", fmt.Errorf("url host %q has the non-ASCII digit %q: write the host in ASCII", host, r)
		}
		b.WriteRune(r)
	}
	return b.String(), nil
}

// literalHostIP returns the address a URL host names without DNS: an IP literal in the spellings
// netip accepts, an inet_aton spelling the C resolver accepts ("127.1", "2130706433", "0x7f000001",
// "0177.0.0.1"), or a name that is loopback by definition (localhost, *.localhost; RFC 6761).
func literalHostIP(host string) (netip.Addr, bool) {
	if ip, err := netip.ParseAddr(host); err == nil {
		return ip, true
	}
	h := strings.TrimSuffix(host, ".")
	if ip, ok := parseInetAton(h); ok {
		return ip, true
	}
	lh := strings.ToLower(h)
	if lh == "localhost" || strings.HasSuffix(lh, ".localhost") {
		return netip.AddrFrom4([4]byte{127, 0, 0, 1}), true
	}
	return netip.Addr{}, false
}

// parseInetAton parses the IPv4 spellings of inet_aton(3): one to four parts separated by dots, each
// decimal, octal (leading 0) or hexadecimal (leading 0x), the last part filling the remaining bytes.
func parseInetAton(s string) (netip.Addr, bool) {
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	var vals [4]uint64
	for i, part := range parts {
		base := 10
		switch {
		case len(part) > 2 && (part[:2] == "0x" || part[:2] == "0X"):
			base, part = 16, part[2:]
		case len(part) > 1 && part[0] == '0':
			base, part = 8, part[1:]
		}
		v, err := strconv.ParseUint(part, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	n := len(parts)
	var out uint64
	for i := 0; i < n-1; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
		out |= vals[i] << (8 * (3 - i))
	}
	last := vals[n-1]
	if last >= 1<<(8*(5-n)) {
		return netip.Addr{}, false
	}
	out |= last
	return netip.AddrFrom4([4]byte{byte(out >> 24), byte(out >> 16), byte(out >> 8), byte(out)}), true
}
