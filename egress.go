package webhooks

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// maxWebhookURLLen bounds Webhook.URL, in bytes.
const maxWebhookURLLen = 2048

// maxConnectTimeout bounds the TCP connect of one attempt.
const maxConnectTimeout = 10 * time.Second

// egressPolicy decides which resolved IPs an attempt may connect to.
type egressPolicy struct {
	allowPrivate bool           // Options.AllowPrivateNetworks: no checks at all
	allowed      []netip.Prefix // Options.AllowedNetworks: ranges allowed even though blocked by default

	// Test hooks; nil in production.
	resolver *net.Resolver              // resolver of the guarded dialer (nil: net.DefaultResolver)
	fuse     func(netip.AddrPort) error // runs after a passed check, still before connect
}

// check returns nil when ip may be connected to, otherwise an error wrapping ErrBlockedAddress that
// names ip and the range it falls in.
func (p egressPolicy) check(ip netip.Addr) error {
	if p.allowPrivate {
		return nil
	}
	why := blockedReason(ip)
	if why == "" || p.allows(ip) {
		return nil
	}
	return fmt.Errorf("%w: %s (%s)", ErrBlockedAddress, ip, why)
}

// allows reports whether one of the allowed prefixes contains ip, its unmapped IPv4 form or the IPv4
// address it embeds (IPv4-compatible, SIIT, NAT64, 6to4).
func (p egressPolicy) allows(ip netip.Addr) bool {
	if len(p.allowed) == 0 || !ip.IsValid() {
		return false
	}
	ip = ip.WithZone("") // Prefix.Contains never matches an address with a zone
	cands := []netip.Addr{ip, ip.Unmap()}
	if v4, _, ok := embeddedIPv4(ip); ok {
		cands = append(cands, v4)
	}
	for _, pfx := range p.allowed {
		for _, c := range cands {
			if pfx.Contains(c) {
				return true
			}
		}
	}
	return false
}

// blockedAddr reports whether ip is on the default deny list.
func blockedAddr(ip netip.Addr) bool { return blockedReason(ip) != "" }

type namedPrefix struct {
	pfx  netip.Prefix
	name string
}

func np(s, name string) namedPrefix { return namedPrefix{netip.MustParsePrefix(s), name} }

// blockedV4 is the IPv4 deny list. Documentation ranges are blocked: they are never a legitimate
// destination on the public internet.
var blockedV4 = []namedPrefix{
	np("0.0.0.0/8", "this network"),
	np("10.0.0.0/8", "private"),
	np("100.64.0.0/10", "carrier-grade NAT"),
	np("127.0.0.0/8", "loopback"),
	np("169.254.0.0/16", "link-local / cloud metadata"),
	np("172.16.0.0/12", "private"),
	np("192.0.0.0/24", "IETF protocol assignments"),
	np("192.0.2.0/24", "documentation"),
	np("192.88.99.0/24", "6to4 relay anycast"),
	np("192.168.0.0/16", "private"),
	np("198.18.0.0/15", "benchmarking"),
	np("198.51.100.0/24", "documentation"),
	np("203.0.113.0/24", "documentation"),
	np("224.0.0.0/4", "multicast"),
	np("255.255.255.255/32", "broadcast"),
	np("240.0.0.0/4", "reserved"),
}

// blockedV6 is the IPv6 deny list, consulted after the forms embedding an IPv4 address are handled.
// Anything else outside 2000::/3 (global unicast) is blocked too.
var blockedV6 = []namedPrefix{
	np("::/128", "unspecified"),
	np("::1/128", "loopback"),
	np("64:ff9b:1::/48", "local-use NAT64"),
	np("100::/64", "discard-only"),
	np("2001::/32", "Teredo"),
	np("2001:2::/48", "benchmarking"),
	np("2001:db8::/32", "documentation"),
	np("3fff::/20", "documentation"),
	np("fc00::/7", "unique-local"),
	np("fe80::/10", "link-local"),
	np("fec0::/10", "site-local"),
	np("ff00::/8", "multicast"),
}

var globalUnicastV6 = netip.MustParsePrefix("2000::/3")

// IPv6 ranges whose addresses carry an IPv4 address (IPv4-mapped ::ffff:a.b.c.d is unmapped first).
var (
	v4CompatPrefix = netip.MustParsePrefix("::/96")           // deprecated IPv4-compatible ::a.b.c.d
	v4SIITPrefix   = netip.MustParsePrefix("::ffff:0:0:0/96") // SIIT IPv4-translated ::ffff:0:a.b.c.d
	nat64Prefix    = netip.MustParsePrefix("64:ff9b::/96")    // well-known NAT64 prefix
	sixToFourPfx   = netip.MustParsePrefix("2002::/16")       // 6to4: 2002:AABB:CCDD::/48
)

// embeddedIPv4 returns the IPv4 address an IPv6 address carries in one of the IPv4-compatible, SIIT,
// NAT64 or 6to4 forms, and the name of the form. ip must not be IPv4-mapped (Unmap it first).
func embeddedIPv4(ip netip.Addr) (netip.Addr, string, bool) {
	if !ip.Is6() || ip.Is4In6() {
		return netip.Addr{}, "", false
	}
	b := ip.As16()
	switch {
	case v4CompatPrefix.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), "IPv4-compatible", true
	case v4SIITPrefix.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), "IPv4-translated", true
	case nat64Prefix.Contains(ip):
		return netip.AddrFrom4([4]byte(b[12:16])), "NAT64", true
	case sixToFourPfx.Contains(ip):
		return netip.AddrFrom4([4]byte(b[2:6])), "6to4", true
	}
	return netip.Addr{}, "", false
}

// blockedReason names the deny-list range ip falls in, or returns "" when ip is not blocked.
func blockedReason(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid address"
	}
	ip = ip.WithZone("").Unmap()
	if ip.Is4() {
		return blockedV4Reason(ip)
	}
	switch ip {
	case netip.IPv6Unspecified():
		return "unspecified"
	case netip.IPv6Loopback():
		return "loopback"
	}
	if v4, form, ok := embeddedIPv4(ip); ok {
		if why := blockedV4Reason(v4); why != "" {
			return form + " " + v4.String() + ": " + why
		}
		return ""
	}
	for _, b := range blockedV6 {
		if b.pfx.Contains(ip) {
			return b.name
		}
	}
	if !globalUnicastV6.Contains(ip) {
		return "not global unicast"
	}
	return ""
}

func blockedV4Reason(ip netip.Addr) string {
	for _, b := range blockedV4 {
		if b.pfx.Contains(ip) {
			return b.name
		}
	}
	return ""
}

// control is the guarded dialer's ControlContext: it runs for every address the dialer tries, after
// name resolution and before the connect system call.
func (p egressPolicy) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable dial address %q", ErrBlockedAddress, address)
	}
	if err := p.check(ap.Addr()); err != nil {
		return err
	}
	if p.fuse != nil {
		return p.fuse(ap)
	}
	return nil
}

// newHTTPClient returns the client attempts use. If user is nil, a new client with a clone of
// http.DefaultTransport tuned for many hosts; otherwise a shallow copy of *user with its Transport
// cloned (user settings kept; a nil Transport stands for http.DefaultTransport, as in net/http). The
// client never follows redirects, gets Timeout = timeout unless the user set one and, unless
// p.allowPrivate, dials through a net.Dialer whose ControlContext checks every resolved IP against p
// before connecting (names resolving into private space and DNS rebinding are caught), with proxies
// disabled. A Transport that cannot be guarded (not an *http.Transport, or one with a custom
// DialTLS/DialTLSContext) is refused with ErrInvalidOptions unless p.allowPrivate.
func newHTTPClient(user *http.Client, timeout time.Duration, p egressPolicy) (*http.Client, error) {
	var c *http.Client
	var tr *http.Transport
	if user == nil {
		c = &http.Client{}
	} else {
		cp := *user
		c = &cp
	}
	switch t := c.Transport.(type) {
	case nil:
		tr = defaultTransport()
	case *http.Transport:
		if t == nil {
			tr = defaultTransport()
		} else {
			tr = t.Clone()
		}
	default:
		if !p.allowPrivate {
			return nil, fmt.Errorf("%w: HTTPClient.Transport of type %T cannot be guarded against private addresses; "+
				"use an *http.Transport or set AllowPrivateNetworks", ErrInvalidOptions, t)
		}
	}
	if tr != nil {
		if !p.allowPrivate {
			//lint:ignore SA1019 DialTLS is deprecated but still honoured by net/http, so it must be refused
			if tr.DialTLSContext != nil || tr.DialTLS != nil {
				return nil, fmt.Errorf("%w: HTTPClient.Transport with DialTLS/DialTLSContext cannot be guarded against "+
					"private addresses; remove it or set AllowPrivateNetworks", ErrInvalidOptions)
			}
			p.guard(tr, timeout)
		}
		c.Transport = tr
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if c.Timeout == 0 {
		c.Timeout = timeout
	}
	return c, nil
}

// defaultTransport is a clone of http.DefaultTransport tuned for delivering to many hosts.
func defaultTransport() *http.Transport {
	var tr *http.Transport
	if dt, ok := http.DefaultTransport.(*http.Transport); ok && dt != nil {
		tr = dt.Clone()
	} else { // someone replaced http.DefaultTransport: start from net/http's documented defaults
		tr = &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ExpectContinueTimeout: time.Second,
		}
	}
	tr.MaxIdleConns = 1024
	tr.MaxIdleConnsPerHost = 64
	tr.IdleConnTimeout = 90 * time.Second
	tr.ForceAttemptHTTP2 = true
	return tr
}

// guard makes tr dial only addresses p accepts: its dialer is replaced by one that checks every
// resolved IP before connecting, and proxies (which would connect on our behalf) are disabled.
func (p egressPolicy) guard(tr *http.Transport, timeout time.Duration) {
	d := &net.Dialer{
		Timeout:        connectTimeout(timeout),
		KeepAlive:      30 * time.Second,
		Resolver:       p.resolver,
		ControlContext: p.control,
	}
	tr.Proxy = nil
	tr.OnProxyConnectResponse = nil
	//lint:ignore SA1019 cleared so that the deprecated hook cannot take precedence over DialContext
	tr.Dial = nil
	tr.DialContext = d.DialContext
}

// connectTimeout is the TCP connect timeout of an attempt whose overall timeout is timeout.
func connectTimeout(timeout time.Duration) time.Duration {
	if timeout > 0 && timeout < maxConnectTimeout {
		return timeout
	}
	return maxConnectTimeout
}

// validateWebhookURL is the URL rule for Create and Update: an absolute https (or, unless
// requireHTTPS, http) URL with a host, no user-info, at most 2048 bytes, whose host, when it is a
// literal IP address in any spelling, passes p. Host names are not resolved here: the dialer checks
// what they resolve to at every attempt.
func validateWebhookURL(raw string, requireHTTPS bool, p egressPolicy) error {
	if raw == "" {
		return fmt.Errorf("%w: url is required", ErrInvalidWebhook)
	}
	if len(raw) > maxWebhookURLLen {
		return fmt.Errorf("%w: url longer than %d bytes", ErrInvalidWebhook, maxWebhookURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%w: url: %v", ErrInvalidWebhook, err)
	}
	switch {
	case !u.IsAbs():
		return fmt.Errorf("%w: url must be absolute", ErrInvalidWebhook)
	case u.Scheme == "https":
	case u.Scheme == "http":
		if requireHTTPS {
			return fmt.Errorf("%w: url must be https", ErrInvalidWebhook)
		}
	default:
		return fmt.Errorf("%w: url scheme %q is not http or https", ErrInvalidWebhook, u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return fmt.Errorf("%w: url must have a host", ErrInvalidWebhook)
	}
	if u.User != nil {
		return fmt.Errorf("%w: url must not carry user info", ErrInvalidWebhook)
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
			return fmt.Errorf("%w: url port %q is not 1-65535", ErrInvalidWebhook, port)
		}
	}
	if ip, ok := literalHostIP(u.Hostname()); ok {
		if err := p.check(ip); err != nil {
			return fmt.Errorf("%w: url host: %w", ErrInvalidWebhook, err)
		}
	}
	return nil
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
