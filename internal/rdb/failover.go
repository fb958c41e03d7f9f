package rdb

// Failover: how the library tells a Redis failure that passes from one that does not, and what it
// does when Redis fails in transport.
//
// go-redis's ClusterClient learns a new slot map on a MOVED or ASK reply, or every minute; a
// connection error (a master killed, its replica being promoted) triggers neither, so on its own it
// would go on sending a failed-over shard's commands to the dead master for up to a minute. Every
// transport error the library sees against a *redis.ClusterClient therefore asks go-redis to reload
// the slot map (ReloadState: one CLUSTER SLOTS, at most one per 200ms), so commands reach the
// promoted replica as soon as the cluster has promoted it (cluster-node-timeout plus an election,
// about 3s with cluster-node-timeout 2000).

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// IsTransient reports whether a Redis call failed in transport (a timeout, a dropped connection), so
// that it may or may not have run.
func IsTransient(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, syscall.ECONNRESET)
}

// ReloadOnTransport asks client, when it is a cluster client, to reload its slot map after a transport
// error, or after a redirect its caller could not follow (a node client's MOVED or ASK).
func ReloadOnTransport(client redis.UniversalClient, err error) {
	if err == nil {
		return
	}
	if c, ok := client.(*redis.ClusterClient); ok && (IsTransient(err) || IsRedirect(err)) {
		c.ReloadState(context.Background())
	}
}

// IsRedirect reports whether err is a cluster redirect (MOVED, ASK) or a node's refusal while the
// cluster changes (CLUSTERDOWN, TRYAGAIN).
func IsRedirect(err error) bool {
	return redis.HasErrorPrefix(err, "MOVED") || redis.HasErrorPrefix(err, "ASK") ||
		redis.HasErrorPrefix(err, "CLUSTERDOWN") || redis.HasErrorPrefix(err, "TRYAGAIN")
}

// Retryable reports whether a write that failed with err may be run again to the same effect: it
// failed in transport, the cluster was changing, or Redis refused it for now (IsRefusedForNow).
func Retryable(err error) bool {
	return err != nil && (IsTransient(err) || IsRedirect(err) || IsRefusedForNow(err))
}

// IsRefusedForNow reports whether Redis refused a command for a reason that passes: it is out of
// memory under maxmemory-policy noeviction (OOM) or still loading its dataset after a restart
// (LOADING). A plain command wrote nothing; a script stops at its first command that adds data, and
// every script that writes may be run again to the same effect (by lease token or by the record it
// read), so the same write may be sent again later.
func IsRefusedForNow(err error) bool {
	return redis.HasErrorPrefix(err, "OOM") || redis.HasErrorPrefix(err, "LOADING")
}
