package signing

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyMaterial is the first byte of k's key material: the same pointer for two Keys is one parse.
func keyMaterial(k Key) *byte {
	if k.scheme == V1a {
		return &k.ed[0]
	}
	return &k.hmac[0]
}

// TestKeyCacheParsesOnce: a secret asked for again within a turn, or in the next, is the key parsed
// the first time (the same key material), and signs as ParseKey's; one not asked for during a whole
// turn, or asked for with the clock set back, is parsed again.
func TestKeyCacheParsesOnce(t *testing.T) {
	t.Parallel()
	hmacSecret, err := NewSecret(V1)
	require.NoError(t, err)
	edSecret, _ := mustNewEd25519Key(t)
	t0 := time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC)
	for _, secret := range []string{hmacSecret, edSecret, v1aSeedKey} {
		t.Run(SchemeOf(secret).String(), func(t *testing.T) {
			t.Parallel()
			var c KeyCache
			first, err := c.Parse(secret, t0)
			require.NoError(t, err)
			want, err := ParseKey(secret)
			require.NoError(t, err)
			assert.Equal(t, want.Sign("msg_1", t0.Unix(), []byte(`{}`)), first.Sign("msg_1", t0.Unix(), []byte(`{}`)))

			for _, tc := range []struct {
				name   string
				at     time.Time
				parsed bool // parsed again, not the first key
			}{
				{"same turn", t0.Add(KeyCacheTurn - time.Millisecond), false},
				{"the next turn", t0.Add(KeyCacheTurn), false},
				{"a whole turn later, asked for in the one before", t0.Add(2*KeyCacheTurn + time.Second), false},
				{"a whole turn unasked", t0.Add(4*KeyCacheTurn + 2*time.Second), true},
				{"clock set back", t0, true},
			} {
				k, err := c.Parse(secret, tc.at)
				require.NoError(t, err, tc.name)
				assert.Equal(t, tc.parsed, keyMaterial(k) != keyMaterial(first), tc.name)
				assert.Equal(t, want.Sign("msg_1", t0.Unix(), nil), k.Sign("msg_1", t0.Unix(), nil), tc.name)
				first = k
			}
		})
	}
}

// TestKeyCacheRefusesWhatParseKeyRefuses: a secret that does not parse fails every time, with
// ParseKey's error, and is not cached.
func TestKeyCacheRefusesWhatParseKeyRefuses(t *testing.T) {
	t.Parallel()
	var c KeyCache
	now := time.Now()
	for _, secret := range []string{"whsec_not base64!", v1aPublicKey, "whsk_AAAA", ""} {
		_, want := ParseKey(secret)
		require.Error(t, want, secret)
		for range 2 {
			_, err := c.Parse(secret, now)
			assert.EqualError(t, err, want.Error(), secret)
		}
	}
	assert.Empty(t, c.cur)
}

// TestKeyCacheBoundsItsKeys: past maxCachedKeys in one turn, the cache turns: it holds at most twice
// as many keys, whatever the number of secrets asked for.
func TestKeyCacheBoundsItsKeys(t *testing.T) {
	t.Parallel()
	var c KeyCache
	now := time.Now()
	for i := range 3*maxCachedKeys + 1 {
		_, err := c.Parse(fmt.Sprintf("whsec_%032x", i), now)
		require.NoError(t, err)
	}
	assert.LessOrEqual(t, len(c.cur)+len(c.prev), 2*maxCachedKeys)
	assert.Len(t, c.cur, 1, "the last secret, in a turn of its own")
}

// TestKeyCacheConcurrent: goroutines parsing the same secrets at once each get a key that signs as
// ParseKey's (run with -race).
func TestKeyCacheConcurrent(t *testing.T) {
	t.Parallel()
	var c KeyCache
	secrets := make([]string, 8)
	want := make([]string, len(secrets))
	for i := range secrets {
		s, err := NewSecret(Scheme(1 + i%2))
		require.NoError(t, err)
		k, err := ParseKey(s)
		require.NoError(t, err)
		secrets[i], want[i] = s, k.Sign("msg_1", 1, nil)
	}
	start := time.Now()
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			for i := range 200 {
				j := (g + i) % len(secrets)
				k, err := c.Parse(secrets[j], start.Add(time.Duration(i)*time.Second)) // turns as it goes
				if assert.NoError(t, err) {
					assert.Equal(t, want[j], k.Sign("msg_1", 1, nil))
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkSignRequest is what an attempt spends on its signature: the webhook's secret as a key,
// then the request's signature headers (a 512-byte body), parsing the secret each time as before
// KeyCache, or from a KeyCache.
func BenchmarkSignRequest(b *testing.B) {
	hmacSecret, err := NewSecret(V1)
	require.NoError(b, err)
	edSecret, _ := mustNewEd25519Key(b)
	body := make([]byte, 512)
	now := time.Now()
	for _, secret := range []string{hmacSecret, edSecret} {
		var c KeyCache
		for _, bc := range []struct {
			name  string
			parse func() (Key, error)
		}{
			{"ParseKey", func() (Key, error) { return ParseKey(secret) }},
			{"KeyCache", func() (Key, error) { return c.Parse(secret, now) }},
		} {
			b.Run(SchemeOf(secret).String()+"/"+bc.name, func(b *testing.B) {
				b.ReportAllocs()
				h := make(http.Header, 4)
				for b.Loop() {
					k, err := bc.parse()
					if err != nil {
						b.Fatal(err)
					}
					SetHeaders(h, "msg_2Lb5kUe1rLsAHZDeCyDrV5C0rRm", now, body, k)
				}
			})
		}
	}
}
