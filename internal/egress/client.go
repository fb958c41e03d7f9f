package egress

// HTTP clients whose dialer checks every resolved address against a Policy before connecting.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// MaxConnectTimeout bounds the TCP connect of one attempt.
const MaxConnectTimeout = 10 * time.Second

// control is the guarded dialer's ControlContext: it runs for every address the dialer tries, after
// name resolution and before the connect system call.
func (p Policy) control(_ context.Context, _, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable dial address %q", ErrBlocked, address)
	}
	if err := p.check(ap.Addr()); err != nil {
		return err
	}
	if p.fuse != nil {
		return p.fuse(ap)
	}
	return nil
}

// Client returns the client attempts use. If user is nil, a new client with a clone of
// http.DefaultTransport tuned for many hosts; otherwise a shallow copy of *user with its Transport
// cloned (user settings kept; a nil Transport stands for http.DefaultTransport, as in net/http). The
// client never follows redirects, gets Timeout = timeout unless the user set one and, unless
// p.AllowPrivate, dials through a net.Dialer whose ControlContext checks every resolved IP against p
// before connecting (names resolving into private space and DNS rebinding are caught), with proxies
// disabled. A Transport that cannot be guarded (not an *http.Transport, or one with a custom
// DialTLS/DialTLSContext) is refused unless p.AllowPrivate.
func (p Policy) Client(user *http.Client, timeout time.Duration) (*http.Client, error) {
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
		if !p.AllowPrivate {
			return nil, fmt.Errorf("HTTPClient.Transport of type %T cannot be guarded against private addresses; "+
				"use an *http.Transport or set AllowPrivateNetworks", t)
		}
	}
	if tr != nil {
		if !p.AllowPrivate {
			//lint:ignore SA1019 DialTLS is deprecated but still honoured by net/http, so it must be refused
			if tr.DialTLSContext != nil || tr.DialTLS != nil {
				return nil, errors.New("HTTPClient.Transport with DialTLS/DialTLSContext cannot be guarded against " +
					"private addresses; remove it or set AllowPrivateNetworks")
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
// resolved IP before connecting (or by the dial function a request's context carries: WithDial), and
// proxies (which would connect on our behalf) are disabled.
func (p Policy) guard(tr *http.Transport, timeout time.Duration) {
	tr.Proxy = nil
	tr.OnProxyConnectResponse = nil
	//lint:ignore SA1019 cleared so that the deprecated hook cannot take precedence over DialContext
	tr.Dial = nil
	tr.DialContext = contextDial(p.Dialer(timeout))
}

// connectTimeout is the TCP connect timeout of an attempt whose overall timeout is timeout.
func connectTimeout(timeout time.Duration) time.Duration {
	if timeout > 0 && timeout < MaxConnectTimeout {
		return timeout
	}
	return MaxConnectTimeout
}
