package config

import (
	"errors"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var built = []string{"http"}

const key = "operator-key-0123456789"

func parse(args []string, env map[string]string) (Config, error) {
	return Parse(args, func(k string) string { return env[k] }, io.Discard, built)
}

// TestParse: every setting from its flag and from its variable, a flag winning over its variable,
// an empty flag unsetting it.
func TestParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, c Config)
	}{
		{"defaults: miniredis, a key made for the run", nil, nil, func(t *testing.T, c Config) {
			assert.True(t, c.Embedded())
			assert.Equal(t, "127.0.0.1:8080", c.Listen)
			assert.Equal(t, []string{"http"}, c.Destinations)
			assert.True(t, c.GeneratedKey)
			require.Len(t, c.APIKeys, 1)
			assert.GreaterOrEqual(t, len(c.APIKeys[0]), MinKeyLen)
			assert.Equal(t, slog.LevelInfo, c.LogLevel)
		}},
		{"flags", []string{"-redis", "rediss://:pw@redis.internal:6380/2", "-listen", ":9000", "-api-key", key + "," + key + "b",
			"-ingest-key", "producer-key-0123456789", "-allow-private-networks", "-allowed-networks", "10.1.0.0/16, fd00::/8",
			"-key-prefix", "wh", "-portal-key", strings.Repeat("k", 32), "-secret-keys", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
			"-retention", "10d", "-payload-retention", "36h", "-max-transform-cost", "5000", "-timeout", "30s", "-retry-schedule", "1s,1m", "-concurrency", "128", "-shards", "16",
			"-replica-acks", "1", "-replica-ack-timeout", "500ms", "-max-payload-bytes", "1048576", "-break-after", "-1",
			"-break-for", "1m", "-disable-after", "2d", "-max-webhooks-per-tenant", "7", "-require-https", "-require-event-types",
			"-replay-index", "-operational-events", "-block-key-on-failure", "-log-level", "debug", "-destinations", "http"},
			nil, func(t *testing.T, c Config) {
				o := c.Options
				assert.Equal(t, "rediss://:pw@redis.internal:6380/2", c.RedisURL)
				assert.False(t, c.Embedded())
				assert.Equal(t, ":9000", c.Listen)
				assert.Equal(t, []string{key, key + "b"}, c.APIKeys)
				assert.Equal(t, []string{"producer-key-0123456789"}, c.IngestKeys)
				assert.True(t, o.AllowPrivateNetworks)
				assert.Equal(t, []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16"), netip.MustParsePrefix("fd00::/8")}, o.AllowedNetworks)
				assert.Equal(t, "wh", o.KeyPrefix)
				assert.Len(t, o.PortalKey, 32)
				require.Len(t, o.SecretKeys, 1)
				assert.Len(t, o.SecretKeys[0], 32)
				assert.Equal(t, 240*time.Hour, o.Retention)
				assert.Equal(t, 36*time.Hour, o.PayloadRetention)
				assert.Equal(t, 5000, o.MaxTransformCost)
				assert.Equal(t, 30*time.Second, o.Timeout)
				assert.Equal(t, []time.Duration{time.Second, time.Minute}, o.RetrySchedule)
				assert.Equal(t, 128, o.Concurrency)
				assert.Equal(t, 16, o.Shards)
				assert.Equal(t, 1, o.ReplicaAcks)
				assert.Equal(t, 500*time.Millisecond, o.ReplicaAckTimeout)
				assert.Equal(t, 1<<20, o.MaxPayloadBytes)
				assert.Equal(t, -1, o.BreakAfter)
				assert.Equal(t, time.Minute, o.BreakFor)
				assert.Equal(t, 48*time.Hour, o.DisableAfter)
				assert.Equal(t, 7, o.MaxWebhooksPerTenant)
				assert.True(t, o.RequireHTTPS && o.RequireEventTypes && o.ReplayIndex && o.OperationalEvents && o.BlockKeyOnFailure)
				assert.Equal(t, slog.LevelDebug, c.LogLevel)
			}},
		{"environment", nil, map[string]string{"WEBHOOKS_REDIS_CLUSTER": "10.0.0.1:6379, 10.0.0.2:6379", "WEBHOOKS_API_KEY": key,
			"WEBHOOKS_ALLOW_PRIVATE_NETWORKS": "true", "WEBHOOKS_TIMEOUT": "2s", "WEBHOOKS_LISTEN": "127.0.0.1:0"},
			func(t *testing.T, c Config) {
				assert.Equal(t, []string{"10.0.0.1:6379", "10.0.0.2:6379"}, c.RedisCluster)
				assert.False(t, c.Embedded())
				assert.Equal(t, []string{key}, c.APIKeys)
				assert.True(t, c.Options.AllowPrivateNetworks)
				assert.Equal(t, 2*time.Second, c.Options.Timeout)
				assert.Equal(t, "127.0.0.1:0", c.Listen)
			}},
		{"a cluster URL: credentials and TLS", []string{"-redis-cluster", "rediss://u:pw@10.0.0.1:6379?addr=10.0.0.2:6379&addr=10.0.0.3:6379",
			"-api-key", key}, nil, func(t *testing.T, c Config) {
			assert.Equal(t, []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}, c.RedisCluster)
			assert.Equal(t, "rediss://u:pw@10.0.0.1:6379?addr=10.0.0.2:6379&addr=10.0.0.3:6379", c.RedisClusterURL)
			assert.False(t, c.Embedded())
		}},
		{"a flag wins over its variable", []string{"-timeout", "3s", "-allow-private-networks=false"},
			map[string]string{"WEBHOOKS_TIMEOUT": "9s", "WEBHOOKS_ALLOW_PRIVATE_NETWORKS": "true"}, func(t *testing.T, c Config) {
				assert.Equal(t, 3*time.Second, c.Options.Timeout)
				assert.False(t, c.Options.AllowPrivateNetworks)
			}},
		{"an empty flag unsets its variable", []string{"-redis", ""}, map[string]string{"WEBHOOKS_REDIS_URL": "redis://127.0.0.1:6379"},
			func(t *testing.T, c Config) { assert.True(t, c.Embedded()) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := parse(c.args, c.env)
			require.NoError(t, err)
			c.check(t, cfg)
		})
	}
}

// TestParseRefuses: a bad value is a *UsageError naming the flag, its variable and what to change,
// never showing a secret.
func TestParseRefuses(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		env  map[string]string
		flag string
		want string
	}{
		{[]string{"-timeout", "soon"}, nil, "timeout", "like 15s"},
		{[]string{"-timeout", "6m"}, nil, "timeout", "at most 5m"},
		{[]string{"-timeout", "0s"}, nil, "timeout", "above zero"},
		{nil, map[string]string{"WEBHOOKS_CONCURRENCY": "many"}, "concurrency", "whole number from 1"},
		{[]string{"-shards", "0"}, nil, "shards", "from 1 to 256"},
		{[]string{"-redis", "http://x"}, nil, "redis", "redis://host:6379"},
		{[]string{"-redis-cluster", "a,b"}, nil, "redis-cluster", "host:port"},
		{[]string{"-redis-cluster", "rediss://u:hunter2@10.0.0.1:bad"}, nil, "redis-cluster", "?addr=10.0.0.2:6379"},
		{[]string{"-listen", "8080"}, nil, "listen", ":8080"},
		{[]string{"-api-key", "a-short-one"}, nil, "api-key", "at least 16"},
		{[]string{"-api-key", "has a space in the key"}, nil, "api-key", "printable ASCII"},
		{[]string{"-redis", "redis://127.0.0.1:6379"}, nil, "api-key", "required with a Redis"},
		{[]string{"-portal-key", "too-short-a-secret"}, nil, "portal-key", "at least 32"},
		{[]string{"-secret-keys", "c2hvcnQ="}, nil, "secret-keys", "openssl rand -base64 32"},
		{[]string{"-allowed-networks", "10.0.0.0"}, nil, "allowed-networks", "10.1.0.0/16"},
		{[]string{"-allow-private-networks=maybe"}, nil, "allow-private-networks", "true or false"},
		{nil, map[string]string{"WEBHOOKS_REQUIRE_HTTPS": "yes please"}, "require-https", "true or false"},
		{[]string{"-retention", "1h"}, nil, "retention", "-disable-after"},
		{[]string{"-payload-retention", "30s"}, nil, "payload-retention", "in [1m0s, -retention"},
		{[]string{"-payload-retention", "8d"}, nil, "payload-retention", "in [1m0s, -retention 168h0m0s]"},
		{[]string{"-max-transform-cost", "0"}, nil, "max-transform-cost", "from 1 to 10000000"},
		{[]string{"-break-for", "11m"}, nil, "break-for", "-break-for must be in"},
		{[]string{"-destinations", "http,amqp"}, nil, "destinations", "built with the destinations http"},
		{[]string{"-log-level", "loud"}, nil, "log-level", "debug, info, warn or error"},
		{[]string{"-redis", "redis://a:1", "-redis-cluster", "b:1"}, nil, "redis", "not both"},
		{[]string{"stray"}, nil, "", "unexpected argument"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " ")+c.flag, func(t *testing.T) {
			t.Parallel()
			_, err := parse(c.args, c.env)
			var ue *UsageError
			require.True(t, errors.As(err, &ue), "%v", err)
			assert.Equal(t, c.flag, ue.Flag)
			assert.Contains(t, err.Error(), c.want)
			if c.flag != "" {
				assert.Contains(t, err.Error(), "-"+c.flag+" (WEBHOOKS_")
			}
		})
	}
	_, err := parse([]string{"-portal-key", "the-secret-portal-key"}, nil)
	assert.NotContains(t, err.Error(), "the-secret-portal-key", "a secret is never shown back")
	_, err = parse([]string{"-redis-cluster", "rediss://u:hunter2@10.0.0.1:bad"}, nil)
	assert.NotContains(t, err.Error(), "hunter2", "a cluster URL's password is never shown back")
	_, err = parse([]string{"-h"}, nil)
	assert.ErrorIs(t, err, ErrHelp)
}

// TestParseDuration: Go durations, and whole days first.
func TestParseDuration(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]time.Duration{"15s": 15 * time.Second, "7d": 7 * 24 * time.Hour, "1d12h": 36 * time.Hour,
		"90m": 90 * time.Minute} {
		got, err := parseDuration(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"d", "1.5d", "-1d", "7 days", "x1d", ""} {
		_, err := parseDuration(in)
		assert.Error(t, err, in)
	}
}
