// Command metrics serves fitgo's view of its container on /metrics.
package main

import (
	"log"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fitgo/fitgo" // imported for its side effects too: fits GOMAXPROCS and GOMEMLIMIT
	"github.com/fitgo/fitgo/fitgoprom"
)

func main() {
	fits := fitgo.Startup()
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		fitgoprom.NewCollector(fitgoprom.WithFits(fits.MaxProcs, fits.MemLimit)),
		collectors.NewGoCollector(), // GOMAXPROCS and GOMEMLIMIT: go_sched_gomaxprocs_threads, go_gc_gomemlimit_bytes
	)
	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	log.Fatal(http.ListenAndServe(":9090", nil))
}
