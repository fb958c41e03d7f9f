package egress

import (
	"net"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBlockedAddr(t *testing.T) {
	t.Parallel()
	mapped := func(s string) netip.Addr { // the 16-byte form net.ParseIP produces for IPv4
		a, ok := netip.AddrFromSlice(net.ParseIP(s))
		require.True(t, ok, s)
		return a
	}
	tests := []struct {
		name    string
		ip      netip.Addr
		blocked bool
	}{
		// IPv4.
		{"this network", netip.MustParseAddr("0.0.0.0"), true},
		{"this network /8", netip.MustParseAddr("0.1.2.3"), true},
		{"loopback", netip.MustParseAddr("127.0.0.1"), true},
		{"loopback /8", netip.MustParseAddr("127.255.255.254"), true},
		{"rfc1918 10", netip.MustParseAddr("10.0.0.1"), true},
		{"rfc1918 172.16", netip.MustParseAddr("172.16.0.1"), true},
		{"rfc1918 172.31", netip.MustParseAddr("172.31.255.255"), true},
		{"just outside 172.16/12", netip.MustParseAddr("172.32.0.1"), false},
		{"rfc1918 192.168", netip.MustParseAddr("192.168.1.1"), true},
		{"cgnat", netip.MustParseAddr("100.64.0.1"), true},
		{"cgnat top", netip.MustParseAddr("100.127.255.255"), true},
		{"just outside cgnat", netip.MustParseAddr("100.128.0.1"), false},
		{"link-local", netip.MustParseAddr("169.254.1.1"), true},
		{"cloud metadata", netip.MustParseAddr("169.254.169.254"), true},
		{"multicast", netip.MustParseAddr("224.0.0.1"), true},
		{"multicast top", netip.MustParseAddr("239.255.255.250"), true},
		{"reserved", netip.MustParseAddr("240.0.0.1"), true},
		{"broadcast", netip.MustParseAddr("255.255.255.255"), true},
		{"benchmarking", netip.MustParseAddr("198.18.0.1"), true},
		{"benchmarking /15", netip.MustParseAddr("198.19.255.255"), true},
		{"ietf", netip.MustParseAddr("192.0.0.8"), true},
		{"documentation 1", netip.MustParseAddr("192.0.2.1"), true},
		{"documentation 2", netip.MustParseAddr("198.51.100.1"), true},
		{"documentation 3", netip.MustParseAddr("203.0.113.1"), true},
		{"public", netip.MustParseAddr("8.8.8.8"), false},
		{"public 2", netip.MustParseAddr("93.184.216.34"), false},
		{"public 3", netip.MustParseAddr("1.1.1.1"), false},
		{"invalid (zero Addr)", netip.Addr{}, true},

		// IPv4 in IPv6 clothing.
		{"mapped loopback", netip.MustParseAddr("::ffff:127.0.0.1"), true},
		{"mapped loopback hex", netip.MustParseAddr("::ffff:7f00:1"), true},
		{"mapped private", netip.MustParseAddr("::ffff:10.0.0.1"), true},
		{"mapped metadata", netip.MustParseAddr("::ffff:169.254.169.254"), true},
		{"mapped public", netip.MustParseAddr("::ffff:8.8.8.8"), false},
		{"net.ParseIP 16-byte loopback", mapped("127.0.0.1"), true},
		{"net.ParseIP 16-byte private", mapped("192.168.0.1"), true},
		{"net.ParseIP 16-byte public", mapped("8.8.4.4"), false},
		{"compatible loopback", netip.MustParseAddr("::127.0.0.1"), true},
		{"compatible private", netip.MustParseAddr("::10.0.0.1"), true},
		{"compatible metadata hex", netip.MustParseAddr("::a9fe:a9fe"), true},
		{"compatible public", netip.MustParseAddr("::8.8.8.8"), false},
		{"siit loopback", netip.MustParseAddr("::ffff:0:127.0.0.1"), true},
		{"siit public", netip.MustParseAddr("::ffff:0:8.8.8.8"), false},
		{"nat64 loopback", netip.MustParseAddr("64:ff9b::127.0.0.1"), true},
		{"nat64 private hex", netip.MustParseAddr("64:ff9b::a00:1"), true},
		{"nat64 metadata", netip.MustParseAddr("64:ff9b::169.254.169.254"), true},
		{"nat64 public", netip.MustParseAddr("64:ff9b::8.8.8.8"), false},
		{"nat64 local-use", netip.MustParseAddr("64:ff9b:1::808:808"), true},
		{"6to4 private", netip.MustParseAddr("2002:a00:1::1"), true},
		{"6to4 loopback", netip.MustParseAddr("2002:7f00:1::"), true},
		{"6to4 metadata", netip.MustParseAddr("2002:a9fe:a9fe::1"), true},
		{"6to4 public", netip.MustParseAddr("2002:808:808::1"), false},

		// IPv6.
		{"v6 unspecified", netip.MustParseAddr("::"), true},
		{"v6 loopback", netip.MustParseAddr("::1"), true},
		{"v6 loopback long", netip.MustParseAddr("0:0:0:0:0:0:0:1"), true},
		{"v6 link-local", netip.MustParseAddr("fe80::1"), true},
		{"v6 link-local zone", netip.MustParseAddr("fe80::1%eth0"), true},
		{"v6 link-local top of /10", netip.MustParseAddr("febf::1"), true},
		{"v6 site-local", netip.MustParseAddr("fec0::1"), true},
		{"v6 unique-local fc", netip.MustParseAddr("fc00::1"), true},
		{"v6 unique-local fd", netip.MustParseAddr("fd12:3456::1"), true},
		{"v6 multicast", netip.MustParseAddr("ff02::1"), true},
		{"v6 multicast global", netip.MustParseAddr("ff0e::1"), true},
		{"teredo", netip.MustParseAddr("2001:0:4136:e378:8000:63bf:3fff:fdd2"), true},
		{"v6 benchmarking", netip.MustParseAddr("2001:2::1"), true},
		{"v6 documentation", netip.MustParseAddr("2001:db8::1"), true},
		{"v6 documentation 3fff", netip.MustParseAddr("3fff::1"), true},
		{"v6 discard", netip.MustParseAddr("100::1"), true},
		{"v6 outside 2000::/3", netip.MustParseAddr("4000::1"), true},
		{"v6 public google", netip.MustParseAddr("2001:4860:4860::8888"), false},
		{"v6 public cloudflare", netip.MustParseAddr("2606:4700:4700::1111"), false},
		{"v6 public zone stripped", netip.MustParseAddr("2606:4700:4700::1111%eth0"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.blocked, blockedReason(tt.ip) != "", "blockedReason(%s): %s", tt.ip, blockedReason(tt.ip))

			err := Policy{}.check(tt.ip)
			if tt.blocked {
				require.Error(t, err)
				assert.ErrorIs(t, err, ErrBlocked)
				assert.Contains(t, err.Error(), tt.ip.String())
			} else {
				assert.NoError(t, err)
			}
			assert.NoError(t, Policy{AllowPrivate: true}.check(tt.ip), "allowPrivate checks nothing")
		})
	}
}

func TestEgressPolicyAllowed(t *testing.T) {
	t.Parallel()
	p := Policy{Allowed: []netip.Prefix{
		netip.MustParsePrefix("127.0.0.0/8"),
		netip.MustParsePrefix("10.1.0.0/16"),
		netip.MustParsePrefix("fd00:1::/32"),
	}}
	tests := []struct {
		ip      string
		allowed bool
	}{
		{"127.0.0.1", true},
		{"127.9.9.9", true},
		{"::ffff:127.0.0.1", true},
		{"::127.0.0.1", true},          // IPv4-compatible form of an allowed address
		{"64:ff9b::10.1.2.3", true},    // NAT64 form of an allowed address
		{"2002:a01:203::1", true},      // 6to4 form of 10.1.2.3
		{"10.1.255.255", true},         // in 10.1/16
		{"10.2.0.1", false},            // private, not allowed
		{"::1", false},                 // v6 loopback is not in 127/8
		{"169.254.169.254", false},     // metadata stays blocked
		{"fd00:1:2::3", true},          // ULA in the allowed /32
		{"fd00:1:2::3%eth0", true},     // with a zone
		{"fd00:2::3", false},           // ULA outside it
		{"8.8.8.8", true},              // public: never blocked
		{"2606:4700:4700::1111", true}, // public: never blocked
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			err := p.check(netip.MustParseAddr(tt.ip))
			if tt.allowed {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrBlocked)
			}
		})
	}
	assert.ErrorIs(t, p.check(netip.Addr{}), ErrBlocked, "the zero Addr is never allowed")
}

// TestBlockedErrorNamesTheOptions: a refused address, at Create (CheckURL) or at connect time (check),
// says which options would let it through.
func TestBlockedErrorNamesTheOptions(t *testing.T) {
	t.Parallel()
	for name, err := range map[string]error{
		"url":       Policy{}.CheckURL("http://127.0.0.1:8080/hook", false),
		"localhost": Policy{}.CheckURL("http://localhost/hook", false),
		"connect":   Policy{}.check(netip.MustParseAddr("10.0.0.7")),
	} {
		assert.ErrorIs(t, err, ErrBlocked, name)
		assert.ErrorContains(t, err, "Options.AllowedNetworks", name)
		assert.ErrorContains(t, err, "Options.AllowPrivateNetworks", name)
	}
}
