package config

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"
)

// MinKeyLen is the shortest operator or ingest key.
const MinKeyLen = 16

// setting is one flag and its environment variable.
type setting struct {
	flag, env string
	usage     string // what it sets, its default and bounds
	option    string // the webhooks.Options field it sets, for the library's errors about it
	boolean   bool
	secret    bool // never shown back in an error
	parse     func(c *Config, value string) error
}

// settings are webhooksd's flags, in the order -help lists them.
var settings = []setting{
	{flag: "redis", env: "WEBHOOKS_REDIS_URL", usage: "Redis URL: redis://[user:password@]host:port[/db] or rediss:// (TLS). " +
		"Empty, with no -redis-cluster: an embedded in-memory miniredis, and nothing survives a restart (demos and tests only)",
		secret: true, parse: func(c *Config, v string) error {
			if _, err := redis.ParseURL(v); err != nil || !(strings.HasPrefix(v, "redis://") || strings.HasPrefix(v, "rediss://")) {
				return fmt.Errorf("not a Redis URL: give redis://host:6379 (or rediss://host:6380 for TLS, redis://:password@host:6379/0 with a password)")
			}
			c.RedisURL = v
			return nil
		}},
	{flag: "redis-cluster", env: "WEBHOOKS_REDIS_CLUSTER", usage: "Redis Cluster seed nodes (instead of -redis): comma-separated " +
		"host:port, or a URL with credentials or TLS: rediss://[user:password@]host:port?addr=host2:port&addr=host3:port",
		secret: true, parse: func(c *Config, v string) error {
			c.RedisClusterURL = ""
			if strings.HasPrefix(v, "redis://") || strings.HasPrefix(v, "rediss://") {
				o, err := redis.ParseClusterURL(v)
				if err != nil { // its words may quote the URL, password and all
					return fmt.Errorf("not a Redis Cluster URL: give rediss://user:password@10.0.0.1:6379?addr=10.0.0.2:6379 (each further node as an addr)")
				}
				c.RedisClusterURL, c.RedisCluster = v, o.Addrs
				return nil
			}
			for _, a := range parseList(v) {
				if _, port, err := net.SplitHostPort(a); err != nil || port == "" {
					return fmt.Errorf("%q is not host:port: give the cluster's nodes as 10.0.0.1:6379,10.0.0.2:6379", a)
				}
			}
			c.RedisCluster = parseList(v)
			return nil
		}},
	{flag: "listen", env: "WEBHOOKS_LISTEN", usage: "address to serve HTTP on (default 127.0.0.1:8080; :8080 for every interface)",
		parse: func(c *Config, v string) error {
			if _, _, err := net.SplitHostPort(v); err != nil {
				return fmt.Errorf("not host:port: give 127.0.0.1:8080, or :8080 for every interface")
			}
			c.Listen = v
			return nil
		}},
	{flag: "api-key", env: "WEBHOOKS_API_KEY", secret: true, usage: "operator keys, comma-separated, each at least 16 characters, " +
		"sent as Authorization: Bearer <key>: they open the admin API and UI, ingest and portal tokens. " +
		"Required with a Redis; in miniredis mode without one, a key is made for the run and logged",
		parse: func(c *Config, v string) (err error) { c.APIKeys, err = parseKeys(v); return err }},
	{flag: "ingest-key", env: "WEBHOOKS_INGEST_KEY", secret: true, usage: "producer keys, comma-separated, each at least 16 " +
		"characters: they may only send events (POST /v1/events). Default none: the operator keys send events too",
		parse: func(c *Config, v string) (err error) { c.IngestKeys, err = parseKeys(v); return err }},
	{flag: "allow-private-networks", env: "WEBHOOKS_ALLOW_PRIVATE_NETWORKS", option: "AllowPrivateNetworks", boolean: true,
		usage: "true: deliver to loopback and private addresses too (tests and demos only). Default false",
		parse: func(c *Config, v string) (err error) { c.Options.AllowPrivateNetworks, err = parseBool(v); return err }},
	{flag: "allowed-networks", env: "WEBHOOKS_ALLOWED_NETWORKS", option: "AllowedNetworks",
		usage: "private ranges deliveries may reach all the same, comma-separated CIDR (10.1.0.0/16). Default none",
		parse: func(c *Config, v string) (err error) { c.Options.AllowedNetworks, err = parsePrefixes(v); return err }},
	{flag: "destinations", env: "WEBHOOKS_DESTINATIONS", usage: "destination kinds turned on, comma-separated, of those this " +
		"binary is built with (see -help's header). Default http; http (and https) is always on",
		parse: func(c *Config, v string) error {
			c.Destinations = []string{"http"}
			for _, name := range parseList(strings.ToLower(v)) {
				if name != "http" && !slices.Contains(c.Destinations, name) {
					c.Destinations = append(c.Destinations, name)
				}
			}
			return nil
		}},
	{flag: "key-prefix", env: "WEBHOOKS_KEY_PREFIX", option: "KeyPrefix", usage: "starts every Redis key; servers sharing a prefix " +
		"share webhooks and deliveries. Default webhooks",
		parse: func(c *Config, v string) error { c.Options.KeyPrefix = v; return nil }},
	{flag: "portal-key", env: "WEBHOOKS_PORTAL_KEY", option: "PortalKey", secret: true, usage: "signs the tenant portal's " +
		"tokens: at least 32 characters, kept secret. Default none: the portal (/portal/) refuses every token",
		parse: func(c *Config, v string) error {
			if len(v) < 32 {
				return fmt.Errorf("the portal key is %d characters: give at least 32 (e.g. openssl rand -hex 32)", len(v))
			}
			c.Options.PortalKey = []byte(v)
			return nil
		}},
	{flag: "secret-keys", env: "WEBHOOKS_SECRET_KEYS", option: "SecretKeys", secret: true, usage: "encrypt webhook secrets " +
		"at rest: comma-separated keys of 32 random bytes in base64 (openssl rand -base64 32); the first seals, " +
		"every one opens. Default none: secrets stored in clear",
		parse: func(c *Config, v string) error {
			c.Options.SecretKeys = nil
			for i, item := range parseList(v) {
				k, err := base64.StdEncoding.DecodeString(item)
				if err != nil || len(k) != 32 {
					return fmt.Errorf("key %d is not 32 bytes in base64: make one with openssl rand -base64 32", i+1)
				}
				c.Options.SecretKeys = append(c.Options.SecretKeys, k)
			}
			return nil
		}},
	{flag: "retention", env: "WEBHOOKS_RETENTION", option: "Retention", usage: "life of a delivery record, and so of an event " +
		"id's deduplication: 7d, 240h. At least the retry horizon (about 6d16h with the defaults). Default 7d",
		parse: func(c *Config, v string) (err error) { c.Options.Retention, err = parsePositive(v); return err }},
	{flag: "payload-retention", env: "WEBHOOKS_PAYLOAD_RETENTION", option: "PayloadRetention", usage: "life of an event's " +
		"payload: its bytes are dropped after it, its records keep their attempts and status until -retention. " +
		"From 1m to -retention, or 0. Default 0: as long as the records",
		parse: func(c *Config, v string) (err error) {
			if v == "0" {
				c.Options.PayloadRetention = 0
				return nil
			}
			c.Options.PayloadRetention, err = parsePositive(v)
			return err
		}},
	{flag: "timeout", env: "WEBHOOKS_TIMEOUT", option: "Timeout", usage: "bound of one attempt; SIGTERM waits this long " +
		"for attempts in flight. At most 5m. Default 15s",
		parse: func(c *Config, v string) (err error) {
			c.Options.Timeout, err = parsePositive(v)
			if err == nil && c.Options.Timeout > webhooks.MaxTimeout {
				err = fmt.Errorf("at most %s", webhooks.MaxTimeout)
			}
			return err
		}},
	{flag: "retry-schedule", env: "WEBHOOKS_RETRY_SCHEDULE", option: "RetrySchedule", usage: "delays after each failed attempt, " +
		"comma-separated: 5s,5m,30m,2h,5h,10h,10h (the default); each spread by ±20%",
		parse: func(c *Config, v string) error {
			c.Options.RetrySchedule = nil
			for _, item := range parseList(v) {
				d, err := parsePositive(item)
				if err != nil {
					return fmt.Errorf("delay %q: %w", item, err)
				}
				c.Options.RetrySchedule = append(c.Options.RetrySchedule, d)
			}
			return nil
		}},
	{flag: "max-transform-cost", env: "WEBHOOKS_MAX_TRANSFORM_COST", option: "MaxTransformCost", usage: "bound of one " +
		"evaluation of a webhook's transformation, in CEL cost units (about one per operation); a transformation " +
		"estimated over it is refused when saved. 1 to 10000000. Default 100000",
		parse: func(c *Config, v string) (err error) {
			c.Options.MaxTransformCost, err = parseInt(v, 1, webhooks.MaxTransformCost)
			return err
		}},
	{flag: "concurrency", env: "WEBHOOKS_CONCURRENCY", option: "Concurrency", usage: "attempts the worker makes at once. Default 64",
		parse: func(c *Config, v string) (err error) { c.Options.Concurrency, err = parseInt(v, 1, 100000); return err }},
	{flag: "shards", env: "WEBHOOKS_SHARDS", option: "Shards", usage: "event shards of a new key prefix (fixed once used; " +
		"spreads deliveries over a cluster's masters), 1 to 256. Default: the stored count, or 64",
		parse: func(c *Config, v string) (err error) {
			c.Options.Shards, err = parseInt(v, 1, webhooks.MaxShards)
			return err
		}},
	{flag: "replica-acks", env: "WEBHOOKS_REPLICA_ACKS", option: "ReplicaAcks", usage: "replicas that must acknowledge each " +
		"accepted event and outcome (WAIT) before it counts. Default 0",
		parse: func(c *Config, v string) (err error) { c.Options.ReplicaAcks, err = parseInt(v, 0, 100); return err }},
	{flag: "replica-ack-timeout", env: "WEBHOOKS_REPLICA_ACK_TIMEOUT", option: "ReplicaAckTimeout", usage: "bound of each " +
		"wait for -replica-acks. Default 1s",
		parse: func(c *Config, v string) (err error) { c.Options.ReplicaAckTimeout, err = parsePositive(v); return err }},
	{flag: "max-payload-bytes", env: "WEBHOOKS_MAX_PAYLOAD_BYTES", option: "MaxPayloadBytes", usage: "bound of one event's " +
		"encoded body; a larger event is answered 413. Default 262144 (256 KiB)",
		parse: func(c *Config, v string) (err error) {
			c.Options.MaxPayloadBytes, err = parseInt(v, 256, 64<<20)
			return err
		}},
	{flag: "break-after", env: "WEBHOOKS_BREAK_AFTER", option: "BreakAfter", usage: "consecutive failed attempts that open " +
		"a webhook's circuit, 1 to 100; -1: never. Default 5",
		parse: func(c *Config, v string) (err error) {
			c.Options.BreakAfter, err = parseInt(v, -1, webhooks.MaxBreakAfter)
			return err
		}},
	{flag: "break-for", env: "WEBHOOKS_BREAK_FOR", option: "BreakFor", usage: "a circuit's first open period, doubling up to 10m. Default 30s",
		parse: func(c *Config, v string) (err error) { c.Options.BreakFor, err = parsePositive(v); return err }},
	{flag: "disable-after", env: "WEBHOOKS_DISABLE_AFTER", option: "DisableAfter", usage: "how long a webhook's attempts may " +
		"all fail before it is disabled. Default 5d",
		parse: func(c *Config, v string) (err error) { c.Options.DisableAfter, err = parsePositive(v); return err }},
	{flag: "max-webhooks-per-tenant", env: "WEBHOOKS_MAX_WEBHOOKS_PER_TENANT", option: "MaxWebhooksPerTenant",
		usage: "webhooks one tenant may have. Default 100",
		parse: func(c *Config, v string) (err error) {
			c.Options.MaxWebhooksPerTenant, err = parseInt(v, 1, 1<<30)
			return err
		}},
	{flag: "require-https", env: "WEBHOOKS_REQUIRE_HTTPS", option: "RequireHTTPS", boolean: true,
		usage: "true: refuse webhook URLs that are not https. Default false",
		parse: func(c *Config, v string) (err error) { c.Options.RequireHTTPS, err = parseBool(v); return err }},
	{flag: "require-event-types", env: "WEBHOOKS_REQUIRE_EVENT_TYPES", option: "RequireEventTypes", boolean: true,
		usage: "true: refuse events whose type is not in the catalog of event types. Default false",
		parse: func(c *Config, v string) (err error) { c.Options.RequireEventTypes, err = parseBool(v); return err }},
	{flag: "replay-index", env: "WEBHOOKS_REPLAY_INDEX", option: "ReplayIndex", boolean: true,
		usage: "true: index accepted events per tenant, so a new webhook can replay them. Default false",
		parse: func(c *Config, v string) (err error) { c.Options.ReplayIndex, err = parseBool(v); return err }},
	{flag: "operational-events", env: "WEBHOOKS_OPERATIONAL_EVENTS", option: "OperationalEvents", boolean: true,
		usage: "true: send circuit.opened, webhook.disabled… to the webhooks that subscribe to them. Default false",
		parse: func(c *Config, v string) (err error) { c.Options.OperationalEvents, err = parseBool(v); return err }},
	{flag: "block-key-on-failure", env: "WEBHOOKS_BLOCK_KEY_ON_FAILURE", option: "BlockKeyOnFailure", boolean: true,
		usage: "true: an ordered delivery that fails for good blocks its order key until redelivered. Default false",
		parse: func(c *Config, v string) (err error) { c.Options.BlockKeyOnFailure, err = parseBool(v); return err }},
	{flag: "log-level", env: "WEBHOOKS_LOG_LEVEL", usage: "debug, info, warn or error; JSON logs go to stderr, every request " +
		"at debug (4xx at info, 5xx at warn). Default info",
		parse: func(c *Config, v string) error {
			if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
				return fmt.Errorf("give debug, info, warn or error")
			}
			return nil
		}},
}

// unusedRedis is the client checkOptions gives webhooks.New, which does no I/O: it is never dialed.
var unusedRedis = redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})

// parseKeys parses comma-separated keys of at least MinKeyLen printable ASCII characters.
func parseKeys(v string) ([]string, error) {
	keys := parseList(v)
	for i, k := range keys {
		if len(k) < MinKeyLen {
			return nil, fmt.Errorf("key %d is %d characters: give keys of at least %d (e.g. openssl rand -hex 24)", i+1, len(k), MinKeyLen)
		}
		for _, c := range []byte(k) {
			if c <= ' ' || c >= 0x7f {
				return nil, fmt.Errorf("key %d holds a space, a control or a non-ASCII character: keys are printable ASCII", i+1)
			}
		}
	}
	return keys, nil
}

// newKey is an operator key for one run of miniredis mode.
func newKey() string { return "dev_" + base64.RawURLEncoding.EncodeToString(randomBytes(24)) }

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return b
}

func parseBool(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("give true or false")
	}
	return b, nil
}

func parseInt(v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("give a whole number from %d to %d", lo, hi)
	}
	return n, nil
}

func parsePositive(v string) (time.Duration, error) {
	d, err := parseDuration(v)
	if err != nil {
		return 0, err
	}
	if d <= 0 {
		return 0, fmt.Errorf("give a duration above zero, like 15s or 7d")
	}
	return d, nil
}

// RedisURLHost is the host:port of a Redis URL, for logs (never its credentials).
func RedisURLHost(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "?"
	}
	return u.Scheme + "://" + u.Host
}
