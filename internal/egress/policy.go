// Package egress is the guard on where delivery attempts may connect: a Policy decides which IP
// addresses are allowed (by default none that is private, loopback, link-local, metadata, reserved,
// or an IPv6 form embedding such an IPv4 address), Client makes HTTP clients whose dialer checks
// every resolved address before connecting, and CheckURL refuses webhook URLs whose host is a
// blocked address in any spelling.
package egress

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// ErrBlocked is returned (wrapped) for an address the Policy does not allow. The root package's
// ErrBlocked is this error.
var ErrBlocked = errors.New("webhooks: blocked address")

// Policy decides which resolved IPs an attempt may connect to. The zero Policy blocks the default
// deny list.
type Policy struct {
	// AllowPrivate turns every check off.
	AllowPrivate bool
	// Allowed are ranges allowed even though the deny list blocks them.
	Allowed []netip.Prefix

	// Test hooks; nil in production.
	resolver *net.Resolver              // resolver of the guarded dialer (nil: net.DefaultResolver)
	fuse     func(netip.AddrPort) error // runs after a passed check, still before connect
}

// optionsHint names the root's options that let a blocked address through, for every refusal.
const optionsHint = "allow its range with Options.AllowedNetworks, or turn the egress guard off with Options.AllowPrivateNetworks (tests and local demos only)"

// check returns nil when ip may be connected to, otherwise an error wrapping ErrBlocked that names
// ip, the range it falls in and the options that would allow it.
func (p Policy) check(ip netip.Addr) error {
	why := p.blocked(ip)
	if why == "" {
		return nil
	}
	return fmt.Errorf("%w: %s (%s): %s", ErrBlocked, ip, why, optionsHint)
}

// blocked is why ip may not be connected to (the range it falls in), "" when it may.
func (p Policy) blocked(ip netip.Addr) string {
	if p.AllowPrivate {
		return ""
	}
	why := blockedReason(ip)
	if why == "" || p.allows(ip) {
		return ""
	}
	return why
}

// blockedHost is a URL's host that is a blocked address, in words that carry no package prefix, so a
// caller's error that wraps it reads once ("webhooks: invalid webhook: url host 127.0.0.1 is a blocked
// address …"); it wraps ErrBlocked.
type blockedHost struct{ msg string }

func (e *blockedHost) Error() string { return e.msg }
func (e *blockedHost) Unwrap() error { return ErrBlocked }

// allows reports whether one of the allowed prefixes contains ip, its unmapped IPv4 form or the IPv4
// address it embeds (IPv4-compatible, SIIT, NAT64, 6to4).
func (p Policy) allows(ip netip.Addr) bool {
	if len(p.Allowed) == 0 || !ip.IsValid() {
		return false
	}
	ip = ip.WithZone("") // Prefix.Contains never matches an address with a zone
	cands := []netip.Addr{ip, ip.Unmap()}
	if v4, _, ok := embeddedIPv4(ip); ok {
		cands = append(cands, v4)
	}
	for _, pfx := range p.Allowed {
		for _, c := range cands {
			if pfx.Contains(c) {
				return true
			}
		}
	}
	return false
}

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
