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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Network safety of these tests: every guarded client gets a fake in-process DNS (no query leaves the
// process) and a fuse that refuses, before connect, anything but 127.0.0.0/8 and ::1, so that even a
// broken guard cannot reach a private or public address. Clients without the guard (allowPrivate)
// are only pointed at 127.0.0.1 literals.

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
