package server

import (
	"errors"
	"fmt"
	"strings"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks/webhooksd/internal/config"
)

// store is the Redis webhooksd runs on: a client, and the embedded miniredis it talks to, if any.
type store struct {
	client redis.UniversalClient
	mini   *miniredis.Miniredis // miniredis mode only
	name   string               // for logs and /readyz: never a credential
}

// openStore makes the Redis client of cfg (go-redis dials lazily: no I/O), or starts an embedded
// miniredis on a loopback port when cfg names no Redis.
func openStore(cfg config.Config) (*store, error) {
	switch {
	case cfg.RedisURL != "":
		opts, err := redis.ParseURL(cfg.RedisURL) // checked by config
		if err != nil {
			return nil, fmt.Errorf("-redis: %w", err)
		}
		return &store{client: redis.NewClient(opts), name: config.RedisURLHost(cfg.RedisURL)}, nil
	case cfg.RedisClusterURL != "":
		opts, err := redis.ParseClusterURL(cfg.RedisClusterURL) // checked by config
		if err != nil {
			return nil, errors.New("-redis-cluster: not a Redis Cluster URL")
		}
		return &store{client: redis.NewClusterClient(opts), name: "cluster " + strings.Join(opts.Addrs, ",")}, nil
	case len(cfg.RedisCluster) > 0:
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.RedisCluster})
		return &store{client: c, name: "cluster " + strings.Join(cfg.RedisCluster, ",")}, nil
	}
	m := miniredis.NewMiniRedis()
	if err := m.Start(); err != nil {
		return nil, fmt.Errorf("start the embedded miniredis: %w", err)
	}
	return &store{client: redis.NewClient(&redis.Options{Addr: m.Addr()}), mini: m, name: "embedded miniredis"}, nil
}

// close closes the client, then stops the embedded miniredis.
func (s *store) close() {
	_ = s.client.Close()
	if s.mini != nil {
		s.mini.Close()
	}
}
