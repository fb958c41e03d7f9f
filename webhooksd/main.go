// Command webhooksd is the webhooks server: one binary and Redis. It takes events over HTTP
// (POST /v1/events, idempotent by event id), delivers them with the library's worker, and serves the
// admin API and UI, the tenant portal, health, readiness and Prometheus metrics. Run webhooksd -help
// for its flags (each has an environment variable); README.md says the rest.
//
//	cd webhooksd && go run .                     # embedded miniredis: nothing survives a restart
//	webhooksd -redis redis://127.0.0.1:6379 -api-key "$(openssl rand -hex 24)"
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/smartdrop/webhooks/webhooksd/internal/config"
	"github.com/smartdrop/webhooks/webhooksd/internal/server"
)

func main() { os.Exit(run(os.Args[1:], os.Getenv, os.Stderr)) }

// run is webhooksd: it returns the exit code, 0 after a shutdown on SIGTERM or SIGINT, 2 for a bad
// setting (the message names the flag and what to change), 1 when it cannot serve.
func run(args []string, getenv func(string) string, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := config.Parse(args, getenv, stderr, kindNames())
	if errors.Is(err, config.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 2
	}
	log := slog.New(slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))
	s, err := server.Open(ctx, cfg, destinationKinds, log)
	if err != nil {
		log.Error("webhooksd: cannot start", "error", err)
		return 1
	}
	defer s.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		log.Error("webhooksd: cannot listen: change -listen (WEBHOOKS_LISTEN)", "addr", cfg.Listen, "error", err)
		return 1
	}
	if err := s.Serve(ctx, ln); err != nil {
		log.Error("webhooksd: stopped", "error", err)
		return 1
	}
	return 0
}

func kindNames() []string {
	names := make([]string, len(destinationKinds))
	for i, k := range destinationKinds {
		names[i] = k.Name
	}
	return names
}
