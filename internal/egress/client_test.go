package egress

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

func TestClientDefaults(t *testing.T) {
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

func TestClientUserClient(t *testing.T) {
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
