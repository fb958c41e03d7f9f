package promwebhooks_test

import (
	"log"
	"net/http"

	"github.com/alicebob/miniredis/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
	"github.com/smartdrop/webhooks"
	"github.com/smartdrop/webhooks/promwebhooks"
)

// Count attempts and failed deliveries through the Dispatcher's hooks, read the backlog from its
// Stats at each scrape, and serve them on /metrics.
func Example() {
	m, _ := miniredis.Run()
	defer m.Close()
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})

	metrics := promwebhooks.New(promwebhooks.Options{})
	d, err := webhooks.New(rdb, metrics.Instrument(webhooks.Options{}))
	if err != nil {
		log.Fatal(err)
	}
	metrics.Observe(d)
	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics)
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// Output:
}
