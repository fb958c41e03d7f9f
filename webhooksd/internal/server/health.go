package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/smartdrop/webhooks"
)

// NotPersistentWarning is what the first log line and GET /readyz say in miniredis mode.
const NotPersistentWarning = "NOTHING SURVIVES A RESTART: no -redis or -redis-cluster was given, so webhooksd runs on an " +
	"embedded in-memory miniredis, and every webhook, event and delivery is lost when it stops. For anything but a demo " +
	"or a test, set -redis redis://host:6379 (WEBHOOKS_REDIS_URL) or -redis-cluster (WEBHOOKS_REDIS_CLUSTER)"

// readyTimeout bounds each of readiness's checks.
const readyTimeout = time.Second

// readyTenant is the tenant whose webhooks readiness reads: it exercises the registry's read (its
// script, its hash) at the cost of one small round trip; no webhook has it.
const readyTenant = "webhooksd.readyz"

// healthJSON is the answer of GET /healthz and GET /readyz.
type healthJSON struct {
	Status string `json:"status"` // ok, ready, unavailable, shutting_down
	// Redis names the store: its URL's scheme and host, the cluster's seed nodes, or "embedded miniredis".
	Redis string `json:"redis,omitempty"`
	// Persistent is false in miniredis mode: nothing survives a restart.
	Persistent bool   `json:"persistent"`
	Warning    string `json:"warning,omitempty"`
	Error      string `json:"error,omitempty"`
}

// healthz answers 200 while the process serves: it checks nothing else.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeHealth(w, http.StatusOK, s.health("ok", ""))
}

// readyz answers 200 when this server can take events now: Redis answers a PING, the registry of
// webhooks reads, and the key prefix's shard count agrees with -shards (one backlog read); else 503,
// saying which failed. While shutting down it answers 503 at once.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		writeHealth(w, http.StatusServiceUnavailable, s.health("shutting_down", "the server is shutting down"))
		return
	}
	if err := s.checkReady(r.Context()); err != nil {
		writeHealth(w, http.StatusServiceUnavailable, s.health("unavailable", err.Error()))
		return
	}
	writeHealth(w, http.StatusOK, s.health("ready", ""))
}

// checkReady runs readiness's checks, each within readyTimeout.
func (s *Server) checkReady(ctx context.Context) error {
	check := func(what string, f func(context.Context) error) error {
		ctx, cancel := context.WithTimeout(ctx, readyTimeout)
		defer cancel()
		if err := f(ctx); err != nil {
			if errors.Is(err, webhooks.ErrInvalidOptions) {
				return errors.New(what + ": " + err.Error())
			}
			return errors.New(what + " failed: Redis at " + s.store + " does not answer (" + err.Error() + ")")
		}
		return nil
	}
	if err := check("ping", func(ctx context.Context) error { return s.rdb.Ping(ctx).Err() }); err != nil {
		return err
	}
	if err := check("reading the webhooks", func(ctx context.Context) error {
		_, err := s.d.Webhooks().ListTenant(ctx, readyTenant)
		return err
	}); err != nil {
		return err
	}
	return check("reading the backlog", func(ctx context.Context) error {
		_, err := s.d.Stats(ctx)
		return err
	})
}

func (s *Server) health(status, problem string) healthJSON {
	h := healthJSON{Status: status, Redis: s.store, Persistent: !s.cfg.Embedded(), Error: problem}
	if s.cfg.Embedded() {
		h.Warning = NotPersistentWarning
	}
	return h
}

func writeHealth(w http.ResponseWriter, status int, h healthJSON) {
	b, _ := json.Marshal(h)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
