package webhooks

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// CircuitState is the state of a webhook's circuit breaker.
type CircuitState string

const (
	CircuitClosed  CircuitState = "closed"  // attempts go out
	CircuitOpen    CircuitState = "open"    // attempts wait; one probe may go out once OpenUntil has passed
	CircuitProbing CircuitState = "probing" // open, and a replica holds the probe
)

// Health is a webhook's circuit breaker as every replica sees it.
type Health struct {
	WebhookID           string        `json:"webhook_id"`
	State               CircuitState  `json:"state"`
	ConsecutiveFailures int           `json:"consecutive_failures"`
	FailingSince        time.Time     `json:"failing_since,omitzero"` // start of the current run of failures
	OpenUntil           time.Time     `json:"open_until,omitzero"`    // when the next probe may go out
	OpenFor             time.Duration `json:"open_for,omitempty"`     // the current open period
}

const (
	circuitCacheTTL = 250 * time.Millisecond // how long a replica uses a circuit it read or put, unread
)

// circuitsKey is the hash of the circuits: field webhook id -> encoded circuit. It needs no TTL: a
// success deletes the webhook's field, and forget the field of a webhook deleted while failing.
func (k keyspace) circuitsKey() string { return k.registryTag() + ":circuits" }

// circuit is a webhook's circuit as stored: "failures:since:openUntil:openFor:probeUntil:token" (ms, 0 for
// none; the token last: any bytes); open when openFor > 0. Integers that are not 1 to 15 ASCII digits (Lua
// holds 15 exactly) make it corrupt: Go and the scripts read it as closed, 0 failures; a failure replaces it.
type circuit struct {
	failures, since, openUntil, openFor, probeUntil int64
	token                                           string
}

// decodeCircuit parses a stored circuit (the scripts write it); ok is false when it is corrupt.
func decodeCircuit(s string) (c circuit, ok bool) {
	var f [5]int64
	for i := range f {
		j := strings.IndexByte(s, ':')
		if j < 1 || j > 15 || strings.Trim(s[:j], "0123456789") != "" {
			return circuit{}, false
		}
		f[i], _ = strconv.ParseInt(s[:j], 10, 64)
		s = s[j+1:]
	}
	return circuit{failures: f[0], since: f[1], openUntil: f[2], openFor: f[3], probeUntil: f[4], token: s}, true
}

// circuitHealth is a stored circuit v as seen at now (nil, "" or corrupt: closed, 0 failures).
func circuitHealth(webhookID string, v any, now time.Time) Health {
	s, _ := v.(string)
	c, _ := decodeCircuit(s)
	h := Health{WebhookID: webhookID, State: CircuitClosed, ConsecutiveFailures: int(c.failures), FailingSince: msTime(c.since)}
	if c.openFor > 0 {
		h.State, h.OpenUntil, h.OpenFor = CircuitOpen, msTime(c.openUntil), time.Duration(c.openFor)*time.Millisecond
	}
	if c.openFor > 0 && c.probeUntil > now.UnixMilli() {
		h.State = CircuitProbing
	}
	return h
}

// circuitLua decodes (nil: missing or corrupt) and encodes as Go does; sets now and c, ARGV[1]'s circuit.
const circuitLua = `
local function decode(v)
  local c = {string.match(v or '', '^(%d+):(%d+):(%d+):(%d+):(%d+):(.*)$')}
  for i = 1, 5 do if #c ~= 6 or #c[i] > 15 then return nil end c[i] = tonumber(c[i]) end
  return c
end
local function encode(c) return string.format('%d:%d:%d:%d:%d:', c[1], c[2], c[3], c[4], c[5]) .. c[6] end
local now, c = tonumber(ARGV[2]), decode(redis.call('HGET', KEYS[1], ARGV[1]))
`

// The scripts reply {code, circuit}: the circuit after the call ("" if none; recordSuccessScript: before),
// and recordFailureScript's opened (1 if it opened or reopened it), acquireProbeScript's probe code, or 0.
const (
	replyCode, replyCircuit                            = 0, 1
	probeClosed, probeGranted, probeWaiting, probeHeld = 0, 1, 2, 3 // waiting: the open period has not ended
)

// recordFailureScript counts a failed attempt (a run of failures starts at now). A closed circuit opens
// after breakAfter; an open one reopens for twice as long (up to MaxBreakFor) on its probe's failure only.
//
// KEYS[1] -> {P:registry}:circuits
// ARGV[1], ARGV[2] -> webhook id, now (ms)
// ARGV[3] -> probe token ("" for an attempt that was not the probe)
// ARGV[4], ARGV[5], ARGV[6] -> breakAfter, breakFor (ms), MaxBreakFor (ms)
// returns {opened, circuit}
var recordFailureScript = redis.NewScript(circuitLua + `
c = c or {0, 0, 0, 0, 0, ''}
c[1], c[2] = c[1] + 1, c[2] == 0 and now or c[2]
local probe = c[4] > 0 and ARGV[3] ~= '' and ARGV[3] == c[6]
local opened = probe or (c[4] == 0 and c[1] >= tonumber(ARGV[4]))
if opened then
  c[4] = math.min(probe and 2 * c[4] or tonumber(ARGV[5]), tonumber(ARGV[6]))
  c[3], c[5], c[6] = now + c[4], 0, ''
end
redis.call('HSET', KEYS[1], ARGV[1], encode(c))
return {opened and 1 or 0, encode(c)}
`)

// acquireProbeScript grants an open circuit's probe once its open period has ended, unless it is held.
//
// KEYS[1] -> {P:registry}:circuits
// ARGV[1], ARGV[2] -> webhook id, now (ms)
// ARGV[3], ARGV[4] -> probe token (an error when empty), hold (ms): how long the probe is the caller's
// returns {probeGranted, probeClosed, probeWaiting or probeHeld, circuit}
var acquireProbeScript = redis.NewScript(circuitLua + `
if ARGV[3] == '' then return redis.error_reply('empty probe token') end
if not c or c[4] == 0 then return {0, c and encode(c) or ''} end
if now < c[3] then return {2, encode(c)} end
if c[5] > now then return {3, encode(c)} end
c[5], c[6] = now + tonumber(ARGV[4]), ARGV[3]
redis.call('HSET', KEYS[1], ARGV[1], encode(c))
return {1, encode(c)}
`)

// recordSuccessScript closes a circuit: it deletes the webhook's field.
//
// KEYS[1] -> {P:registry}:circuits
// ARGV[1] -> webhook id
// returns {0, circuit before}
var recordSuccessScript = redis.NewScript(`
local v = redis.call('HGET', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[1], ARGV[1])
return {0, v or ''}
`)

// circuitStore keeps the webhooks' circuit breakers in Redis (key circuitsKey), shared by all replicas.
type circuitStore struct {
	rdb redis.UniversalClient
	key string
}

// run runs a script on webhook id and returns its code and the circuit at now.
func (s *circuitStore) run(ctx context.Context, what string, script *redis.Script, id string, now time.Time, args ...any) (int64, Health, error) {
	reply, err := script.Run(ctx, s.rdb, []string{s.key}, append([]any{id, now.UnixMilli()}, args...)...).Slice()
	if err != nil || len(reply) != 2 {
		return 0, Health{}, fmt.Errorf("webhooks: %s circuit of %s: %w", what, id, cmp.Or(err, fmt.Errorf("reply %v", reply)))
	}
	code, _ := reply[replyCode].(int64)
	return code, circuitHealth(id, reply[replyCircuit], now), nil
}

// recordFailure records a failed attempt on webhookID: probeToken is "" for a normal attempt, or the
// token acquireProbe granted for the probe. opened is true when this call opened or reopened the circuit.
func (s *circuitStore) recordFailure(ctx context.Context, webhookID string, now time.Time, probeToken string, breakAfter int, breakFor time.Duration) (h Health, opened bool, err error) {
	code, h, err := s.run(ctx, "record failure in", recordFailureScript, webhookID, now, probeToken, max(breakAfter, 1),
		max(breakFor.Milliseconds(), 1), MaxBreakFor.Milliseconds())
	return h, code == 1, err
}

// recordSuccess closes webhookID's circuit and resets its failures; wasOpen when it was open or probing.
func (s *circuitStore) recordSuccess(ctx context.Context, webhookID string) (wasOpen bool, err error) {
	_, h, err := s.run(ctx, "record success in", recordSuccessScript, webhookID, time.Time{})
	return h.State != CircuitClosed, err
}

// acquireProbe asks for webhookID's probe under token (not empty). ok when the circuit is open, its
// open period has ended and no probe is held (or the held one's holdFor has passed): the caller may send
// one attempt, and report its outcome with this token (the probe's until another caller acquires one).
func (s *circuitStore) acquireProbe(ctx context.Context, webhookID string, now time.Time, token string, holdFor time.Duration) (ok bool, h Health, err error) {
	code, h, err := s.run(ctx, "acquire probe of", acquireProbeScript, webhookID, now, token, max(holdFor.Milliseconds(), 1))
	return code == probeGranted, h, err
}

// read returns the circuits of webhookIDs at now in one HMGET; one not stored is closed, 0 failures.
func (s *circuitStore) read(ctx context.Context, now time.Time, webhookIDs ...string) (map[string]Health, error) {
	out, vals, err := make(map[string]Health, len(webhookIDs)), []any(nil), error(nil)
	if len(webhookIDs) > 0 { // HMGET needs a field
		vals, err = s.rdb.HMGet(ctx, s.key, webhookIDs...).Result()
	}
	if err != nil {
		return nil, fmt.Errorf("webhooks: read circuits: %w", err)
	}
	for i, id := range webhookIDs {
		out[id] = circuitHealth(id, vals[i], now)
	}
	return out, nil
}

// forget deletes webhookID's circuit (for a webhook deleted while failing).
func (s *circuitStore) forget(ctx context.Context, webhookID string) error {
	_, _, err := s.run(ctx, "forget", recordSuccessScript, webhookID, time.Time{}) // HGET and HDEL
	return err
}

// circuitCache keeps circuits in memory for circuitCacheTTL (each State as of its read or put; a read
// stores nothing over a put made meanwhile). Safe for concurrent use; make it with newCircuitCache.
type circuitCache struct {
	mu      sync.Mutex
	entries map[string]Health
	at      map[string]time.Time // when each entry was read or put
}

func newCircuitCache() *circuitCache {
	return &circuitCache{entries: map[string]Health{}, at: map[string]time.Time{}}
}

// get returns the circuits of ids at now: from memory when cached within circuitCacheTTL, else in one HMGET.
func (c *circuitCache) get(ctx context.Context, s *circuitStore, now time.Time, ids []string) (map[string]Health, error) {
	out, missing := make(map[string]Health, len(ids)), []string(nil)
	c.mu.Lock()
	for _, id := range ids {
		if out[id] = c.entries[id]; now.Sub(c.at[id]) >= circuitCacheTTL { // not cached: at is 0
			missing = append(missing, id)
		}
	}
	c.mu.Unlock()
	read, err := s.read(ctx, now, missing...) // no round trip when none is missing
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) > 100_000 { // mostly webhooks no longer asked for; the others are read again
		clear(c.entries)
		clear(c.at)
	}
	for id, h := range read {
		if now.Sub(c.at[id]) >= circuitCacheTTL { // else put (or read) during this read: keep it
			c.entries[id], c.at[id] = h, now
		}
		out[id] = c.entries[id]
	}
	return out, nil
}

// put caches h as of now, so this replica sees at once the state it changed.
func (c *circuitCache) put(h Health, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[h.WebhookID], c.at[h.WebhookID] = h, now
}
