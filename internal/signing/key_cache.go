package signing

import (
	"sync"
	"time"
)

// KeyCache parses each secret once: an ed25519 secret key's parse derives its public half, a scalar
// multiplication that costs as much as the signature itself; an HMAC secret's decodes its base64. The
// keys asked for in one turn (KeyCacheTurn, or maxCachedKeys keys) are kept through the next; a key not
// asked for during a whole turn is dropped by the next Parse, so the key material of a rotated-out
// secret does not stay. Safe for concurrent use; the zero value is ready.
type KeyCache struct {
	mu        sync.Mutex
	cur, prev map[string]Key // asked for this turn, and the turn before
	turned    time.Time
}

// KeyCacheTurn is how often a KeyCache forgets the keys not asked for since the last turn.
const KeyCacheTurn = time.Minute

// maxCachedKeys bounds the keys a KeyCache holds in one turn: more turns it at once.
const maxCachedKeys = 10_000

// Parse is ParseKey(secret), from the cache when it holds it; now is the caller's clock. A secret
// that does not parse is not cached.
func (c *KeyCache) Parse(secret string, now time.Time) (Key, error) {
	c.mu.Lock()
	switch age := now.Sub(c.turned); {
	case age >= 2*KeyCacheTurn || age < 0: // nothing asked for during the last whole turn (or the clock went back)
		c.prev, c.cur, c.turned = nil, make(map[string]Key), now
	case age >= KeyCacheTurn || len(c.cur) >= maxCachedKeys:
		c.prev, c.cur, c.turned = c.cur, make(map[string]Key), now
	}
	k, ok := c.cur[secret]
	if !ok {
		if k, ok = c.prev[secret]; ok {
			c.cur[secret] = k
		}
	}
	c.mu.Unlock()
	if ok {
		return k, nil
	}
	k, err := ParseKey(secret)
	if err != nil {
		return Key{}, err
	}
	c.mu.Lock()
	c.cur[secret] = k
	c.mu.Unlock()
	return k, nil
}
