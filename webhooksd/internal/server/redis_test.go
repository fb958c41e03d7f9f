package server

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smartdrop/webhooks/webhooksd/internal/config"
)

// TestOpenStoreOfAClusterURL: -redis-cluster as a URL gives a cluster client with its credentials and
// TLS, every node as a seed, and a name for logs without the password; as host:port, the nodes alone.
func TestOpenStoreOfAClusterURL(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		cfg       config.Config
		user, pw  string
		tls       bool
		addrs     []string
		storeName string
	}{
		{"url", config.Config{RedisClusterURL: "rediss://ops:s3cret@10.0.0.1:6379?addr=10.0.0.2:6379",
			RedisCluster: []string{"10.0.0.1:6379", "10.0.0.2:6379"}},
			"ops", "s3cret", true, []string{"10.0.0.1:6379", "10.0.0.2:6379"}, "cluster 10.0.0.1:6379,10.0.0.2:6379"},
		{"nodes", config.Config{RedisCluster: []string{"10.0.0.1:6379", "10.0.0.2:6379"}},
			"", "", false, []string{"10.0.0.1:6379", "10.0.0.2:6379"}, "cluster 10.0.0.1:6379,10.0.0.2:6379"},
	} {
		st, err := openStore(tc.cfg)
		require.NoError(t, err, tc.name)
		c, ok := st.client.(*redis.ClusterClient)
		require.True(t, ok, "%s: a cluster client", tc.name)
		o := c.Options()
		assert.Equal(t, tc.user, o.Username, tc.name)
		assert.Equal(t, tc.pw, o.Password, tc.name)
		assert.Equal(t, tc.tls, o.TLSConfig != nil, tc.name)
		assert.Equal(t, tc.addrs, o.Addrs, tc.name)
		assert.Equal(t, tc.storeName, st.name, tc.name)
		assert.NotContains(t, st.name, "s3cret", tc.name)
		st.close()
	}
}
