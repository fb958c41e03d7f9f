// Package server is webhooksd: the library's Dispatcher behind HTTP (ingest, the admin API and UI, the
// portal, health, readiness, metrics) with its worker in the same process, and the way it stops.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/smartdrop/webhooks"

	"github.com/smartdrop/webhooks/webhooksd/internal/config"
	"github.com/smartdrop/webhooks/webhooksd/internal/ingest"
)

// DestinationKind is a kind of destination the binary is built with: its -destinations name and how
// to make it. The table of kinds is webhooksd's destinations.go.
type DestinationKind struct {
	// Name is how -destinations names it.
	Name string
	// Schemes are the URL schemes it serves, for -help and the logs.
	Schemes []string
	// Open makes the destination for a server that turned it on; close is called once the worker has
	// stopped. nil for the built-in HTTP destination.
	Open func(ctx context.Context, env DestinationEnv) (d webhooks.Destination, close func() error, err error)
}

// DestinationEnv is what a destination kind's Open is given.
type DestinationEnv struct {
	Log     *slog.Logger
	Timeout time.Duration // Options.Timeout, with its default: one attempt's bound
}

// Server is webhooksd, opened (Open) and then served (Serve) until its context ends.
type Server struct {
	cfg      config.Config
	log      *slog.Logger
	store    string // the store's name, for logs and /readyz
	st       *store
	rdb      redis.UniversalClient
	d        *webhooks.Dispatcher
	metrics  *metrics
	handler  http.Handler
	closers  []func() error
	draining atomic.Bool // set by SIGTERM: ingest and /readyz answer 503
}

// Open makes the server of cfg: its Redis client (or the embedded miniredis, after logging that
// nothing survives a restart: the first line it logs), its destinations, the Dispatcher and the
// routes. It does no I/O with Redis: Serve's readiness and the first calls find out whether Redis
// answers. Close releases what it opened.
func Open(ctx context.Context, cfg config.Config, kinds []DestinationKind, log *slog.Logger) (*Server, error) {
	if cfg.Embedded() {
		log.Warn(NotPersistentWarning)
	}
	s := &Server{cfg: cfg, log: log, metrics: newMetrics()}
	st, err := openStore(cfg)
	if err != nil {
		return nil, err
	}
	s.st, s.rdb, s.store = st, st.client, st.name
	s.closers = append(s.closers, func() error { st.close(); return nil })
	opts := cfg.Options
	opts.Logger = log
	if opts.Timeout <= 0 {
		opts.Timeout = webhooks.DefaultTimeout
	}
	if opts.Destinations, err = s.openDestinations(ctx, kinds, opts.Timeout); err != nil {
		s.Close()
		return nil, err
	}
	if s.d, err = webhooks.New(s.rdb, s.metrics.lib.Instrument(opts)); err != nil {
		s.Close()
		return nil, err
	}
	s.metrics.lib.Observe(s.d)
	s.metrics.observe()
	s.handler = s.routes()
	if cfg.GeneratedKey {
		log.Warn("webhooksd: no -api-key given: this run's operator key is "+cfg.APIKeys[0]+
			" (send it as Authorization: Bearer <key>; the UI asks for it once per tab)", "api_key", cfg.APIKeys[0])
	}
	return s, nil
}

// openDestinations makes the destinations -destinations turns on, beyond the built-in HTTP one.
func (s *Server) openDestinations(ctx context.Context, kinds []DestinationKind, timeout time.Duration) ([]webhooks.Destination, error) {
	var out []webhooks.Destination
	for _, name := range s.cfg.Destinations {
		for _, k := range kinds {
			if k.Name != name || k.Open == nil {
				continue
			}
			d, closeFn, err := k.Open(ctx, DestinationEnv{Log: s.log, Timeout: timeout})
			if err != nil {
				return nil, fmt.Errorf("destination %s: %w", name, err)
			}
			out = append(out, d)
			if closeFn != nil {
				s.closers = append(s.closers, closeFn)
			}
		}
	}
	return out, nil
}

// Handler is the server's HTTP handler (every route), for tests.
func (s *Server) Handler() http.Handler { return s.handler }

// Dispatcher is the server's Dispatcher, for tests.
func (s *Server) Dispatcher() *webhooks.Dispatcher { return s.d }

// Close releases what Open opened: the destinations, the Redis client, the embedded miniredis.
func (s *Server) Close() {
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i](); err != nil {
			s.log.Warn("webhooksd: close", "error", err)
		}
	}
	s.closers = nil
}

// routes are the server's routes, each behind its authentication.
func (s *Server) routes() http.Handler {
	k := newKeys(s.cfg.APIKeys, s.cfg.IngestKeys)
	maxPayload := s.cfg.Options.MaxPayloadBytes
	if maxPayload <= 0 {
		maxPayload = webhooks.DefaultMaxPayloadBytes
	}
	in := &ingest.Handler{D: s.d, MaxPayloadBytes: maxPayload, Log: s.log, Observe: s.metrics, Refusing: func() string {
		if s.draining.Load() {
			return "the server is shutting down"
		}
		return ""
	}}
	admin, portal := s.d.Handler(), http.StripPrefix("/portal", s.d.Portal())
	mux := http.NewServeMux()
	mux.Handle("/v1/events", k.producer(in))
	mux.Handle("POST /v1/portal-tokens", k.operatorOnly(http.HandlerFunc(s.portalToken)))
	mux.HandleFunc("GET /v1/openapi.json", serveOpenAPI)
	mux.HandleFunc("GET /healthz", s.healthz)
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.Handle("GET /metrics", s.metrics.handler())
	mux.Handle("/portal/", portal)
	mux.Handle("GET /portal", http.RedirectHandler("/portal/ui/", http.StatusFound))
	// The UI's static files and the admin API's OpenAPI document hold no data: a browser loads them
	// without a key, and the page then asks for one (it keeps it for the tab and sends it as Bearer).
	mux.Handle("GET /ui", admin)
	mux.Handle("GET /ui/", admin)
	mux.Handle("GET /openapi.json", admin)
	mux.Handle("GET /{$}", http.RedirectHandler("/ui/", http.StatusFound))
	mux.Handle("/", k.operatorOnly(admin))
	return logged(s.log, s.metrics, routeOf, mux)
}

// routeOf is a request's route label for the metrics.
func routeOf(r *http.Request) string {
	p := r.URL.Path
	switch {
	case p == "/v1/events":
		return "ingest"
	case p == "/v1/portal-tokens":
		return "portal_tokens"
	case p == "/v1/openapi.json":
		return "openapi"
	case p == "/healthz", p == "/readyz", p == "/metrics":
		return p[1:]
	case p == "/portal" || strings.HasPrefix(p, "/portal/"):
		return "portal"
	case p == "/ui" || strings.HasPrefix(p, "/ui/"):
		return "ui"
	}
	return "admin"
}

// shutdownGrace bounds the wait for HTTP requests in progress at shutdown, once the worker stopped.
const shutdownGrace = time.Second

// Serve serves HTTP on ln and runs the worker (Dispatcher.Run) until ctx ends; then it shuts down:
// ingest and /readyz answer 503 at once, the worker starts no attempt and waits for those in flight
// (each bounded by -timeout) to end and be recorded, then the HTTP server finishes the requests in
// progress (at most shutdownGrace) and Serve returns nil. A listener that fails returns its error,
// once the worker stopped.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	workCtx, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	worked := make(chan struct{})
	go func() { defer close(worked); _ = s.d.Run(workCtx) }()
	s.log.Info("webhooksd: serving", "addr", ln.Addr().String(), "redis", s.store, "persistent", !s.cfg.Embedded(),
		"destinations", strings.Join(s.cfg.Destinations, ","))
	var err error
	select {
	case <-ctx.Done():
	case err = <-served:
		err = fmt.Errorf("serve HTTP on %s: %w", ln.Addr(), err)
	}
	s.draining.Store(true)
	timeout := s.cfg.Options.Timeout
	if timeout <= 0 {
		timeout = webhooks.DefaultTimeout
	}
	s.log.Info("webhooksd: shutting down: ingest answers 503; attempts in flight finish within -timeout", "timeout", timeout.String())
	began := time.Now()
	stopWork()
	<-worked
	s.log.Info("webhooksd: worker stopped", "took", time.Since(began).String())
	shutCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if serr := srv.Shutdown(shutCtx); serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		_ = srv.Close()
	}
	s.d.CloseIdleConnections()
	s.log.Info("webhooksd: stopped", "took", time.Since(began).String())
	return err
}
