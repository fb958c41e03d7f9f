package server

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/smartdrop/webhooks/webhooksd/internal/reqid"
)

// logged gives every request an id (reqid), answers it in X-Request-Id, counts the answer by route
// (metrics) and logs it: at debug when it succeeded, at info for a 4xx, at warn for a 5xx.
func logged(log *slog.Logger, m *metrics, route func(*http.Request) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		id := reqid.Of(r)
		w.Header().Set(reqid.Header, id)
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(reqid.With(r.Context(), id)))
		status := rec.status
		if status == 0 {
			status = http.StatusOK
		}
		took := time.Since(began)
		m.served(route(r), status, took)
		level := slog.LevelDebug
		switch {
		case status >= 500:
			level = slog.LevelWarn
		case status >= 400:
			level = slog.LevelInfo
		}
		if log.Enabled(r.Context(), level) {
			log.LogAttrs(r.Context(), level, "webhooksd: request", slog.String("request_id", id), slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.Int("status", status), slog.Int64("bytes", rec.bytes),
				slog.Duration("took", took), slog.String("remote", r.RemoteAddr))
		}
	})
}

// recorder remembers an answer's status and size.
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection (flushes, deadlines).
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
