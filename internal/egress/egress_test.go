package egress

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Network safety of these tests: every guarded client gets a fake in-process DNS (no query leaves the
// process) and a fuse that refuses, before connect, anything but 127.0.0.0/8 and ::1, so that even a
// broken guard cannot reach a private or public address. Clients without the guard (allowPrivate)
// are only pointed at 127.0.0.1 literals.

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

func TestParseInetAton(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want string // "" = not an inet_aton address
	}{
		{"127.0.0.1", "127.0.0.1"},
		{"127.1", "127.0.0.1"},
		{"127.0.1", "127.0.0.1"},
		{"2130706433", "127.0.0.1"},
		{"0x7f000001", "127.0.0.1"},
		{"0X7F000001", "127.0.0.1"},
		{"0177.0.0.1", "127.0.0.1"},
		{"0x7f.1", "127.0.0.1"},
		{"017700000001", "127.0.0.1"},
		{"10.0x10.0377.1", "10.16.255.1"},
		{"0", "0.0.0.0"},
		{"4294967295", "255.255.255.255"},
		{"4294967296", ""},
		{"256.0.0.1", ""},
		{"1.2.3.256", ""},
		{"1.2.65536", ""},
		{"1.2.3.4.5", ""},
		{"08.0.0.1", ""}, // 8 is not octal
		{"0x", ""},
		{"0xg", ""},
		{"1..2", ""},
		{"", ""},
		{"+1.2.3.4", ""},
		{"1_000", ""},
		{"example.com", ""},
		{"1e100", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parseInetAton(tt.in)
			if tt.want == "" {
				assert.False(t, ok, "got %s", got)
				return
			}
			require.True(t, ok)
			assert.Equal(t, tt.want, got.String())
		})
	}
}

func TestValidateWebhookURL(t *testing.T) {
	t.Parallel()
	long := "https://example.com/" + strings.Repeat("a", MaxURLLen-len("https://example.com/"))
	require.Len(t, long, MaxURLLen)
	guard := Policy{}
	tests := []struct {
		name    string
		url     string
		https   bool
		policy  Policy
		blocked bool // also expect ErrBlocked
		ok      bool
	}{
		{name: "https", url: "https://example.com/hooks?x=1", ok: true},
		{name: "https require", url: "https://example.com/hooks", https: true, ok: true},
		{name: "https port", url: "https://example.com:8443/hooks", https: true, ok: true},
		{name: "upper-case scheme", url: "HTTPS://EXAMPLE.COM/", https: true, ok: true},
		{name: "http allowed", url: "http://example.com/hooks", ok: true},
		{name: "http refused", url: "http://example.com/hooks", https: true},
		{name: "ftp", url: "ftp://example.com/file"},
		{name: "javascript", url: "javascript:alert(1)"},
		{name: "mailto", url: "mailto:a@example.com"},
		{name: "relative", url: "/hooks"},
		{name: "scheme-relative", url: "//example.com/hooks"},
		{name: "empty", url: ""},
		{name: "no host", url: "https:///hooks"},
		{name: "opaque", url: "https:example.com"},
		{name: "port only", url: "https://:443/hooks"},
		{name: "user info", url: "https://user:pass@example.com/"},
		{name: "user only", url: "https://user@example.com/"},
		{name: "bad port", url: "https://example.com:99999/"},
		{name: "port zero", url: "https://example.com:0/"},
		{name: "non-numeric port", url: "https://example.com:https/"},
		{name: "space in host", url: "https://exa mple.com/"},
		{name: "control char", url: "https://example.com/\x00"},
		{name: "max length", url: long, ok: true},
		{name: "too long", url: long + "a"},
		{name: "public IPv4 literal", url: "https://8.8.8.8/hooks", ok: true},
		{name: "public IPv6 literal", url: "https://[2606:4700:4700::1111]:443/hooks", ok: true},
		{name: "hostname not resolved", url: "https://internal.corp.example/hooks", ok: true},
		{name: "hostname trailing dot", url: "https://example.com./hooks", ok: true},
		{name: "idn hostname", url: "https://bücher.example/hooks", ok: true},
		{name: "numeric-looking label", url: "https://1e100.net/", ok: true},

		{name: "loopback", url: "http://127.0.0.1:8080/", blocked: true},
		{name: "loopback short", url: "http://127.1/", blocked: true},
		{name: "loopback decimal", url: "http://2130706433/", blocked: true},
		{name: "loopback hex", url: "http://0x7f000001/", blocked: true},
		{name: "loopback octal", url: "http://0177.0.0.1/", blocked: true},
		{name: "loopback trailing dot", url: "http://127.0.0.1./", blocked: true},
		{name: "unspecified", url: "http://0.0.0.0/", blocked: true},
		{name: "zero", url: "http://0/", blocked: true},
		{name: "private", url: "https://10.0.0.1/", blocked: true},
		{name: "private 192.168", url: "https://192.168.0.10/", blocked: true},
		{name: "metadata", url: "http://169.254.169.254/latest/meta-data/", blocked: true},
		{name: "metadata decimal", url: "http://2852039166/", blocked: true},
		{name: "v6 loopback", url: "http://[::1]/", blocked: true},
		{name: "v6 loopback port", url: "http://[::1]:8080/", blocked: true},
		{name: "v6 mapped loopback", url: "http://[::ffff:127.0.0.1]/", blocked: true},
		{name: "v6 mapped hex", url: "http://[::ffff:7f00:1]/", blocked: true},
		{name: "v6 compatible", url: "http://[::127.0.0.1]/", blocked: true},
		{name: "v6 nat64 metadata", url: "http://[64:ff9b::a9fe:a9fe]/", blocked: true},
		{name: "v6 unspecified", url: "http://[::]/", blocked: true},
		{name: "v6 link-local zone", url: "http://[fe80::1%25eth0]/", blocked: true},
		{name: "v6 unique-local", url: "https://[fd00::1]/", blocked: true},
		{name: "localhost", url: "http://localhost:8080/", blocked: true},
		{name: "localhost dot", url: "http://localhost.:8080/", blocked: true},
		{name: "LOCALHOST", url: "http://LOCALHOST/", blocked: true},
		{name: "sub.localhost", url: "http://api.localhost/", blocked: true},
		{name: "ideographic dots", url: "http://127。0。0。1/", blocked: true},
		{name: "fullwidth dots", url: "http://127．0．0．1:8080/", blocked: true},
		{name: "halfwidth ideographic dots", url: "http://169｡254｡169｡254/", blocked: true},
		{name: "mixed dots", url: "http://10.0。0．1/", blocked: true},
		{name: "fullwidth digits", url: "http://１２７.0.0.1/", blocked: true},
		{name: "fullwidth localhost", url: "http://ｌｏｃａｌｈｏｓｔ/", blocked: true},
		{name: "ideographic dot trailing", url: "http://127.0.0.1。/", blocked: true},
		{name: "mathematical digits", url: "http://𝟏𝟐𝟕.0.0.1/"},
		{name: "idn with ideographic dot", url: "https://bücher。example/hooks", ok: true},

		{name: "loopback allowPrivate", url: "http://127.0.0.1:8080/", policy: Policy{AllowPrivate: true}, ok: true},
		{name: "localhost allowPrivate", url: "http://localhost/", policy: Policy{AllowPrivate: true}, ok: true},
		{name: "loopback allowed", url: "http://127.1:8080/",
			policy: Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, ok: true},
		{name: "private not in allowed", url: "http://10.0.0.1/",
			policy: Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, blocked: true},
		{name: "allowPrivate still needs https", url: "http://127.0.0.1/", https: true,
			policy: Policy{AllowPrivate: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := tt.policy
			if p.Allowed == nil && !p.AllowPrivate {
				p = guard
			}
			err := p.CheckURL(tt.url, tt.https)
			if tt.ok {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			if tt.blocked {
				assert.ErrorIs(t, err, ErrBlocked)
			} else {
				assert.NotErrorIs(t, err, ErrBlocked)
			}
		})
	}
}

// FuzzCheckURL: CheckURL never panics; what it accepts is an absolute http(s) URL within the bound,
// without user info, whose host is no blocked literal address in any spelling.
func FuzzCheckURL(f *testing.F) {
	for _, s := range []string{
		"https://example.com/hooks", "http://127.1/", "http://[::ffff:127.0.0.1]:80/", "http://0x7f000001/",
		"https://user@host/", "http://[fe80::1%25eth0]/", "http://localhost./", "ftp://x/", "//x", "",
		"http://127。0。0。1/", "http://１２７．1/",
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, https bool) {
		var guard Policy
		if guard.CheckURL(raw, https) != nil {
			return
		}
		u, perr := url.Parse(raw)
		if perr != nil || len(raw) > MaxURLLen || u.User != nil || u.Hostname() == "" ||
			(u.Scheme != "https" && (https || u.Scheme != "http")) {
			t.Fatalf("%q accepted", raw)
		}
		host, err := foldHost(u.Hostname())
		if err != nil {
			t.Fatalf("%q accepted although its host does not fold: %v", raw, err)
		}
		if ip, ok := literalHostIP(host); ok && guard.check(ip) != nil {
			t.Fatalf("%q accepted although its host is blocked", raw)
		}
	})
}

// --- real clients ---------------------------------------------------------------------------------

// egressFakeDNS answers the queries of a Go resolver in process: its Dial returns one end of a net.Pipe, so
// no DNS packet ever reaches the network. Names are lower-case FQDNs ("a.test."); unknown names get
// fallback, or NXDOMAIN when fallback is empty.
type egressFakeDNS struct {
	names    map[string][]netip.Addr
	fallback []netip.Addr

	mu      sync.Mutex
	queried []string
}

func (f *egressFakeDNS) resolver() *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		client, server := net.Pipe()
		go f.serve(server)
		return client, nil
	}}
}

func (f *egressFakeDNS) queries() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.queried...)
}

// serve answers the DNS-over-stream queries (2-byte length prefix) of one connection.
func (f *egressFakeDNS) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	for range 4 { // the Go resolver sends one query per connection; bounded anyway
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		resp := f.answer(q)
		if resp == nil {
			return
		}
		if _, err := c.Write(append(binary.BigEndian.AppendUint16(nil, uint16(len(resp))), resp...)); err != nil {
			return
		}
	}
}

// answer builds the response to query q, or returns nil for a query it cannot parse.
func (f *egressFakeDNS) answer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	var labels []string
	i := 12
	for i < len(q) && q[i] != 0 { // each step consumes at least one byte: bounded by len(q)
		l := int(q[i])
		if l&0xc0 != 0 || i+1+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i+1:i+1+l]))
		i += 1 + l
	}
	if i+5 > len(q) {
		return nil
	}
	qend := i + 5 // root label, qtype, qclass
	qtype := binary.BigEndian.Uint16(q[i+1 : i+3])
	name := strings.ToLower(strings.Join(labels, ".")) + "."

	f.mu.Lock()
	f.queried = append(f.queried, name)
	f.mu.Unlock()

	addrs, known := f.names[name]
	if !known {
		addrs, known = f.fallback, len(f.fallback) > 0
	}
	var answers []byte
	count := 0
	for _, a := range addrs {
		var rtype uint16
		var rdata []byte
		switch {
		case qtype == 1 && a.Is4():
			rtype, rdata = 1, a.AsSlice()
		case qtype == 28 && a.Is6():
			rtype, rdata = 28, a.AsSlice()
		default:
			continue
		}
		answers = append(answers, 0xc0, 12) // name: pointer to the question
		answers = binary.BigEndian.AppendUint16(answers, rtype)
		answers = binary.BigEndian.AppendUint16(answers, 1) // IN
		answers = binary.BigEndian.AppendUint32(answers, 60)
		answers = binary.BigEndian.AppendUint16(answers, uint16(len(rdata)))
		answers = append(answers, rdata...)
		count++
	}
	flags := uint16(0x8180) | binary.BigEndian.Uint16(q[2:4])&0x0100 // QR, RA, RD copied
	if !known {
		flags |= 3 // NXDOMAIN
	}
	resp := append([]byte(nil), q[0:2]...)
	resp = binary.BigEndian.AppendUint16(resp, flags)
	resp = binary.BigEndian.AppendUint16(resp, 1)
	resp = binary.BigEndian.AppendUint16(resp, uint16(count))
	resp = binary.BigEndian.AppendUint32(resp, 0) // NSCOUNT, ARCOUNT
	resp = append(resp, q[12:qend]...)
	return append(resp, answers...)
}

// egressFuse refuses, before connect, every address outside 127.0.0.0/8 and ::1 and records it: a second
// line of defence that keeps these tests on loopback even when the guard under test is broken.
type egressFuse struct {
	mu      sync.Mutex
	refused []netip.AddrPort
}

var errEgressFuse = errors.New("test fuse: refused a non-loopback connect")

func (f *egressFuse) check(ap netip.AddrPort) error {
	if ip := ap.Addr().WithZone("").Unmap(); ip.Is4() && ip.As4()[0] == 127 || ip == netip.IPv6Loopback() {
		return nil
	}
	f.mu.Lock()
	f.refused = append(f.refused, ap)
	f.mu.Unlock()
	return fmt.Errorf("%w: %s", errEgressFuse, ap)
}

func (f *egressFuse) attempts() []netip.AddrPort {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]netip.AddrPort(nil), f.refused...)
}

// egressTestPolicy returns a guarded policy wired to dns and a fresh fuse.
func egressTestPolicy(dns *egressFakeDNS, allowed ...netip.Prefix) (Policy, *egressFuse) {
	if dns == nil {
		dns = &egressFakeDNS{}
	}
	fz := &egressFuse{}
	return Policy{Allowed: allowed, resolver: dns.resolver(), fuse: fz.check}, fz
}

type egressServer struct {
	*httptest.Server
	hits *atomic.Int64
	port string
}

// startEgressServer starts a counting HTTP server on addr ("127.0.0.1:0" or "[::1]:0"); ok is false when
// that address cannot be listened on.
func startEgressServer(t *testing.T, addr string, hits *atomic.Int64, h http.HandlerFunc) (egressServer, bool) {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return egressServer{}, false
	}
	if h == nil {
		h = func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }
	}
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		h(w, r)
	})}}
	srv.Start()
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(ln.Addr().String())
	require.NoError(t, err)
	return egressServer{Server: srv, hits: hits, port: port}, true
}

func egressGet(t *testing.T, c *http.Client, u string) (*http.Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
	return resp, err
}

// requireEgressGuarded stops the test unless c refuses the literal 0.0.0.0 (blocked by every policy used
// here), so that no request involving a host name is made by an unguarded client, which would use
// the system resolver instead of the fake DNS. Without the guard the probe only reaches port on this
// machine.
func requireEgressGuarded(t *testing.T, c *http.Client, port string) {
	t.Helper()
	_, err := egressGet(t, c, "http://0.0.0.0:"+port)
	require.ErrorIs(t, err, ErrBlocked, "the egress guard is not installed; stopping before any DNS use")
}

func TestGuardedClientRefusesLoopback(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv, ok := startEgressServer(t, "127.0.0.1:0", &hits, nil)
	require.True(t, ok)
	srv6, has6 := startEgressServer(t, "[::1]:0", &hits, nil)
	port := srv.port

	// A hostile DNS: every name it is asked about resolves to loopback. Names in /etc/hosts (localhost)
	// never reach it.
	dns := &egressFakeDNS{fallback: []netip.Addr{netip.MustParseAddr("127.0.0.1"), netip.IPv6Loopback()}}
	p, fz := egressTestPolicy(dns)
	c, err := p.Client(nil, 5*time.Second)
	require.NoError(t, err)
	requireEgressGuarded(t, c, port)

	tests := []struct {
		url   string
		needs bool // needs IPv6 loopback
		// preDial: Go's resolver refuses the name itself (all-numeric names are not domain names to
		// it) before any lookup or dial; the request fails with a *net.DNSError "no such host".
		preDial bool
	}{
		{url: "http://127.0.0.1:" + port},
		{url: "http://127.1:" + port, preDial: true},
		{url: "http://2130706433:" + port, preDial: true},
		{url: "http://0x7f000001:" + port}, // a valid name to Go: resolved (by the hostile DNS) to loopback
		{url: "http://[::1]:" + srv6.port, needs: true},
		{url: "http://[::ffff:127.0.0.1]:" + port},
		{url: "http://[::ffff:7f00:1]:" + port},
		{url: "http://0.0.0.0:" + port},
		{url: "http://localhost.:" + port},
		{url: "http://localhost:" + port},
		{url: "http://rebind.example.test:" + port}, // any name resolving to loopback
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			if tt.needs && !has6 {
				t.Skip("no IPv6 loopback")
			}
			before := hits.Load()
			_, err := egressGet(t, c, tt.url)
			require.Error(t, err)
			if tt.preDial {
				var dnsErr *net.DNSError
				require.ErrorAs(t, err, &dnsErr, "%v", err)
				assert.True(t, dnsErr.IsNotFound, "%v", err)
				t.Logf("refused by Go's resolver before dialing: %v", err)
			} else {
				assert.ErrorIs(t, err, ErrBlocked)
			}
			assert.NotErrorIs(t, err, errEgressFuse)
			assert.Equal(t, before, hits.Load(), "the receiver must see no request")
		})
	}
	assert.Zero(t, hits.Load())
	assert.Empty(t, fz.attempts())
	assert.NotContains(t, dns.queries(), "127.1.", "Go does not look up all-numeric names")
	assert.Contains(t, dns.queries(), "0x7f000001.")
}

func TestGuardedClientReachesAllowedNetworks(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv, ok := startEgressServer(t, "127.0.0.1:0", &hits, nil)
	require.True(t, ok)

	t.Run("AllowPrivateNetworks", func(t *testing.T) {
		c, err := Policy{AllowPrivate: true}.Client(nil, 5*time.Second)
		require.NoError(t, err)
		before := hits.Load()
		resp, err := egressGet(t, c, srv.URL) // a 127.0.0.1 literal: no DNS
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, before+1, hits.Load())
	})

	t.Run("AllowedNetworks 127/8", func(t *testing.T) {
		dns := &egressFakeDNS{names: map[string][]netip.Addr{"hooks.example.test.": {netip.MustParseAddr("127.0.0.1")}}}
		p, fz := egressTestPolicy(dns, netip.MustParsePrefix("127.0.0.0/8"))
		c, err := p.Client(nil, 5*time.Second)
		require.NoError(t, err)
		requireEgressGuarded(t, c, srv.port)
		for _, u := range []string{
			srv.URL,
			"http://hooks.example.test:" + srv.port,
			"http://[::ffff:127.0.0.1]:" + srv.port,
		} {
			before := hits.Load()
			resp, err := egressGet(t, c, u)
			require.NoError(t, err, u)
			assert.Equal(t, http.StatusOK, resp.StatusCode, u)
			assert.Equal(t, before+1, hits.Load(), u)
		}
		// ::1 is not in 127.0.0.0/8.
		_, err = egressGet(t, c, "http://[::1]:"+srv.port)
		assert.ErrorIs(t, err, ErrBlocked)
		assert.Empty(t, fz.attempts())
	})
}

func TestGuardedClientRefusesNameResolvingToPrivate(t *testing.T) {
	t.Parallel()
	dns := &egressFakeDNS{names: map[string][]netip.Addr{
		"internal.example.test.": {netip.MustParseAddr("10.0.0.1")},
		"meta.example.test.":     {netip.MustParseAddr("169.254.169.254"), netip.MustParseAddr("fd00:ec2::254")},
	}}
	// Even though 127/8 is allowed, names resolving elsewhere in private space stay blocked.
	p, fz := egressTestPolicy(dns, netip.MustParsePrefix("127.0.0.0/8"))
	c, err := p.Client(nil, 5*time.Second)
	require.NoError(t, err)
	requireEgressGuarded(t, c, "9") // nothing listens there; the guard refuses before connect anyway

	for _, tt := range []struct {
		url string
		ips []string // the error names one of them (the dialer reports its first failure)
	}{
		{"http://internal.example.test:8080/hook", []string{"10.0.0.1"}},
		{"https://internal.example.test/hook", []string{"10.0.0.1"}},
		{"http://meta.example.test/latest/meta-data/", []string{"169.254.169.254", "fd00:ec2::254"}},
	} {
		_, err := egressGet(t, c, tt.url)
		require.Error(t, err, tt.url)
		assert.ErrorIs(t, err, ErrBlocked, tt.url)
		assert.NotErrorIs(t, err, errEgressFuse, tt.url)
		assert.True(t, slices.ContainsFunc(tt.ips, func(ip string) bool { return strings.Contains(err.Error(), ip) }),
			"%v names none of %v", err, tt.ips)
	}
	assert.Empty(t, fz.attempts(), "the guard, not the test fuse, must refuse")
	assert.Contains(t, dns.queries(), "internal.example.test.", "the name was resolved by the dialer")
	assert.Contains(t, dns.queries(), "meta.example.test.")
}

func TestGuardedClientDoesNotFollowRedirects(t *testing.T) {
	t.Parallel()
	var hitsA, hitsB atomic.Int64
	srvB, ok := startEgressServer(t, "127.0.0.1:0", &hitsB, nil)
	require.True(t, ok)
	srvA, ok := startEgressServer(t, "127.0.0.1:0", &hitsA, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, srvB.URL+"/elsewhere", http.StatusFound)
	})
	require.True(t, ok)

	for name, p := range map[string]Policy{
		"allowed 127/8": func() Policy { p, _ := egressTestPolicy(nil, netip.MustParsePrefix("127.0.0.0/8")); return p }(),
		"allowPrivate":  {AllowPrivate: true},
	} {
		t.Run(name, func(t *testing.T) {
			c, err := p.Client(nil, 5*time.Second)
			require.NoError(t, err)
			resp, err := egressGet(t, c, srvA.URL)
			require.NoError(t, err)
			assert.Equal(t, http.StatusFound, resp.StatusCode)
			assert.Equal(t, srvB.URL+"/elsewhere", resp.Header.Get("Location"))
		})
	}
	assert.Equal(t, int64(2), hitsA.Load())
	assert.Zero(t, hitsB.Load(), "the redirect target must never be contacted")
}

type egressRoundTripperFunc func(*http.Request) (*http.Response, error)

func (f egressRoundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestNewHTTPClientDefaults(t *testing.T) {
	t.Parallel()
	p, _ := egressTestPolicy(nil)
	c, err := p.Client(nil, 7*time.Second)
	require.NoError(t, err)
	assert.Equal(t, 7*time.Second, c.Timeout)
	require.NotNil(t, c.CheckRedirect)
	assert.ErrorIs(t, c.CheckRedirect(nil, nil), http.ErrUseLastResponse)
	tr, ok := c.Transport.(*http.Transport)
	require.True(t, ok)
	assert.NotSame(t, http.DefaultTransport, tr)
	assert.Equal(t, 64, tr.MaxIdleConnsPerHost)
	assert.Equal(t, 1024, tr.MaxIdleConns)
	assert.Equal(t, 90*time.Second, tr.IdleConnTimeout)
	assert.True(t, tr.ForceAttemptHTTP2)
	assert.Nil(t, tr.Proxy, "a proxy would bypass the IP check")
	assert.NotNil(t, tr.DialContext)
	assert.NotNil(t, http.DefaultTransport.(*http.Transport).Proxy, "http.DefaultTransport is not modified")

	open, err := Policy{AllowPrivate: true}.Client(nil, 7*time.Second)
	require.NoError(t, err)
	assert.NotNil(t, open.Transport.(*http.Transport).Proxy, "allowPrivate keeps the environment's proxy")
	assert.ErrorIs(t, open.CheckRedirect(nil, nil), http.ErrUseLastResponse)
}

func TestNewHTTPClientUserClient(t *testing.T) {
	t.Parallel()
	var hits atomic.Int64
	srv, ok := startEgressServer(t, "127.0.0.1:0", &hits, nil)
	require.True(t, ok)
	proxy := func(*http.Request) (*url.URL, error) { return url.Parse("http://127.0.0.1:1") }

	t.Run("own *http.Transport keeps its settings and gets the guard", func(t *testing.T) {
		userTr := &http.Transport{MaxIdleConnsPerHost: 7, ResponseHeaderTimeout: 3 * time.Second, Proxy: proxy}
		user := &http.Client{Transport: userTr, Timeout: 42 * time.Second}
		p, fz := egressTestPolicy(nil)
		c, err := p.Client(user, 5*time.Second)
		require.NoError(t, err)
		assert.NotSame(t, user, c)
		assert.Equal(t, 42*time.Second, c.Timeout, "the user's timeout wins")
		assert.Nil(t, user.CheckRedirect, "the user's client is not modified")
		tr, ok := c.Transport.(*http.Transport)
		require.True(t, ok)
		assert.NotSame(t, userTr, tr, "the transport is cloned")
		assert.Equal(t, 7, tr.MaxIdleConnsPerHost)
		assert.Equal(t, 3*time.Second, tr.ResponseHeaderTimeout)
		assert.Nil(t, tr.Proxy)
		assert.NotNil(t, userTr.Proxy, "the user's transport is not modified")
		assert.Nil(t, userTr.DialContext, "the user's transport is not modified")

		_, err = egressGet(t, c, srv.URL)
		assert.ErrorIs(t, err, ErrBlocked)
		assert.Zero(t, hits.Load())
		assert.Empty(t, fz.attempts())
	})

	t.Run("nil Transport means http.DefaultTransport and is guarded", func(t *testing.T) {
		p, _ := egressTestPolicy(nil)
		c, err := p.Client(&http.Client{}, 5*time.Second)
		require.NoError(t, err)
		assert.Equal(t, 5*time.Second, c.Timeout)
		_, err = egressGet(t, c, srv.URL)
		assert.ErrorIs(t, err, ErrBlocked)
		assert.Zero(t, hits.Load())
	})

	t.Run("custom RoundTripper", func(t *testing.T) {
		rt := egressRoundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, errors.New("unused") })
		p, _ := egressTestPolicy(nil)
		_, err := p.Client(&http.Client{Transport: rt}, time.Second)
		assert.Error(t, err)

		c, err := Policy{AllowPrivate: true}.Client(&http.Client{Transport: rt}, time.Second)
		require.NoError(t, err)
		_, isFunc := c.Transport.(egressRoundTripperFunc)
		assert.True(t, isFunc, "kept as is")
		assert.ErrorIs(t, c.CheckRedirect(nil, nil), http.ErrUseLastResponse)
	})

	t.Run("custom DialTLSContext", func(t *testing.T) {
		tr := &http.Transport{DialTLSContext: func(context.Context, string, string) (net.Conn, error) {
			return nil, errors.New("unused")
		}}
		p, _ := egressTestPolicy(nil)
		_, err := p.Client(&http.Client{Transport: tr}, time.Second)
		assert.Error(t, err)
		_, err = Policy{AllowPrivate: true}.Client(&http.Client{Transport: tr}, time.Second)
		assert.NoError(t, err)
	})

	t.Run("custom DialContext is replaced by the guarded dialer", func(t *testing.T) {
		var called atomic.Bool
		tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			called.Store(true)
			return nil, errors.New("unused")
		}}
		p, _ := egressTestPolicy(nil)
		c, err := p.Client(&http.Client{Transport: tr}, time.Second)
		require.NoError(t, err)
		_, err = egressGet(t, c, srv.URL)
		assert.ErrorIs(t, err, ErrBlocked)
		assert.False(t, called.Load())
		assert.Zero(t, hits.Load())
	})
}

func TestGuardConnectTimeout(t *testing.T) {
	t.Parallel()
	// The guarded dialer's connect timeout is min(timeout, 10s).
	for _, tt := range []struct{ timeout, want time.Duration }{
		{0, MaxConnectTimeout},
		{time.Second, time.Second},
		{time.Minute, MaxConnectTimeout},
	} {
		t.Run(strconv.Itoa(int(tt.timeout/time.Second)), func(t *testing.T) {
			assert.Equal(t, tt.want, connectTimeout(tt.timeout))
		})
	}
}
