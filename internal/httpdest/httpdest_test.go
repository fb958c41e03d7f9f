package httpdest

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/destination"
	"github.com/smartdrop/webhooks/destination/destinationtest"
	"github.com/smartdrop/webhooks/internal/egress"
	"github.com/smartdrop/webhooks/internal/endpoint"
)

// newDestination is an HTTP destination whose egress guard lets loopback through (the test servers).
func newDestination(t *testing.T) *Destination {
	policy := egress.Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	client, err := endpoint.NewClient(nil, 5*time.Second, policy)
	require.NoError(t, err)
	return New(Config{Client: client, Auth: endpoint.NewAuthenticator(endpoint.Config{Client: client}), UserAgent: "test/1"})
}

// TestStatusKinds: each answer's status says what the engine does with the attempt.
func TestStatusKinds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status     int
		retryAfter string
		ok         bool
		kind       destination.Kind
		words      string
		wait       time.Duration
	}{
		{200, "", true, 0, "", 0},
		{204, "", true, 0, "", 0},
		{302, "", false, destination.Rejected, `HTTP 302 redirect to "/elsewhere" not followed`, 0},
		{400, "", false, destination.Rejected, "HTTP 400", 0},
		{404, "", false, destination.Rejected, "HTTP 404", 0},
		{410, "", false, destination.Gone, "HTTP 410 Gone", 0},
		{429, "120", false, destination.Unavailable, "HTTP 429", 120 * time.Second},
		{503, "", false, destination.Unavailable, "HTTP 503", 0},
		{500, "30", false, destination.Unavailable, "HTTP 500", 0}, // Retry-After is read on a 429 or 503 only
	} {
		t.Run(strconv.Itoa(c.status), func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Location", "/elsewhere")
				if c.retryAfter != "" {
					w.Header().Set("Retry-After", c.retryAfter)
				}
				w.WriteHeader(c.status)
				_, _ = io.WriteString(w, "answer "+strconv.Itoa(c.status))
			}))
			defer srv.Close()
			u, _ := url.Parse(srv.URL)
			m := destinationtest.Message(u, "msg_1", []byte(`{}`))
			err := newDestination(t).Send(context.Background(), m)
			assert.Equal(t, c.status, m.StatusCode)
			if c.status != 204 {
				assert.Equal(t, "answer "+strconv.Itoa(c.status), m.Response)
			}
			if c.ok {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			kind, wait := destination.Classify(err)
			assert.Equal(t, c.kind, kind)
			assert.Equal(t, c.wait, wait)
			assert.Equal(t, c.words, err.Error())
		})
	}
}

// TestConformance runs the destination conformance suite against an HTTP receiver.
func TestConformance(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	got := map[string][]destinationtest.Received{} // by path
	arrived := make(chan struct{}, 1024)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got[r.URL.Path] = append(got[r.URL.Path], destinationtest.Received{ID: r.Header.Get("Webhook-Id"), Header: r.Header, Body: body})
		mu.Unlock()
		select {
		case arrived <- struct{}{}:
		default: // Receive polls as well
		}
	}))
	t.Cleanup(srv.Close)
	var n int
	destinationtest.Run(t, destinationtest.Harness{
		New: func(t *testing.T) destination.Destination { return newDestination(t) },
		Target: func(t *testing.T) *url.URL {
			mu.Lock()
			defer mu.Unlock()
			n++
			u, _ := url.Parse(srv.URL + "/target/" + strconv.Itoa(n))
			return u
		},
		Receive: func(ctx context.Context, t *testing.T, u *url.URL, want int) []destinationtest.Received {
			for {
				mu.Lock()
				if len(got[u.Path]) >= want {
					out := got[u.Path]
					delete(got, u.Path)
					mu.Unlock()
					return out
				}
				mu.Unlock()
				select {
				case <-arrived:
				case <-time.After(10 * time.Millisecond):
				case <-ctx.Done():
					mu.Lock()
					defer mu.Unlock()
					return got[u.Path]
				}
			}
		},
		Unreachable: func(t *testing.T) *url.URL {
			gone := httptest.NewServer(http.NotFoundHandler())
			gone.Close()
			u, _ := url.Parse(gone.URL)
			return u
		},
		Invalid: []string{"http://user:pass@example.com/"},
		Timeout: 5 * time.Second,
	})
}

// TestSendKeepsCredentialsOutOfWords: a failure's words never carry the URL's query (which may hold a
// token).
func TestSendKeepsCredentialsOutOfWords(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	u, _ := url.Parse(gone.URL + "/hook?token=s3cret")
	err := newDestination(t).Send(context.Background(), destinationtest.Message(u, "msg_1", []byte(`{}`)))
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "s3cret")
}
