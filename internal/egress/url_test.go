package egress

import (
	"net/netip"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

func TestCheckURL(t *testing.T) {
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
